//! The `status --json` document, and the copy of it a running daemon keeps in the state dir
//! for `status`, which cannot open the store while the daemon holds it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{self, Durability};
use crate::series::{Quantity, Sums};
use crate::store::counts::IngestCounts;

/// The `status --json` document.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusJson {
    pub series: Vec<SeriesJson>,
    pub lines: LinesJson,
    /// Spend per series, currency and billing mode; never added across currencies.
    #[serde(default)]
    pub cost: Vec<CostJson>,
    /// Requests without a usable price, per series and reason.
    #[serde(default)]
    pub unpriced: Vec<UnpricedJson>,
    /// Where the running daemon serves `/metrics` (its bound address, so `--prometheus
    /// 127.0.0.1:0` can be found); only in the snapshot a running daemon writes, and shown by
    /// the `status` table, never by `status --json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SeriesJson {
    pub model_ref: String,
    pub provider: String,
    pub source: String,
    pub prompt: u64,
    pub completion: u64,
    pub reasoning: u64,
    pub cache_hit: u64,
    pub cache_miss: u64,
    pub total: u64,
    pub requests: u64,
    pub turns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CostJson {
    pub model_ref: String,
    pub provider: String,
    pub source: String,
    pub currency: String,
    pub billing_mode: String,
    /// The exact decimal: no exponent, no trailing zeros after the point, at most 9 decimals.
    pub amount: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct UnpricedJson {
    pub model_ref: String,
    pub provider: String,
    pub source: String,
    pub reason: String,
    pub requests: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LinesJson {
    pub read: u64,
    pub counted: u64,
    pub duplicate: u64,
    pub rejected: u64,
}

/// Where a running daemon leaves its latest committed totals for `status`, since the store
/// itself is locked while it runs.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join("status.json")
}

/// Writes the snapshot `status` reads while the daemon holds the store. A crash can lose it;
/// the next commit writes it again.
pub fn write(state_dir: &Path, doc: &StatusJson) -> std::io::Result<()> {
    files::replace_json(&path_in(state_dir), doc, Durability::ProcessCrash)
}

impl StatusJson {
    pub fn of(lifetime: &Sums, counts: &IngestCounts) -> StatusJson {
        let series = lifetime
            .tokens
            .iter()
            .map(|(a, t)| SeriesJson {
                model_ref: a.model_ref.clone(),
                provider: a.provider.clone(),
                source: a.source.clone(),
                prompt: t.get(Quantity::Prompt),
                completion: t.get(Quantity::Completion),
                reasoning: t.get(Quantity::Reasoning),
                cache_hit: t.get(Quantity::CacheHit),
                cache_miss: t.get(Quantity::CacheMiss),
                total: t.get(Quantity::Total),
                requests: t.get(Quantity::Requests),
                turns: t.get(Quantity::Turns),
            })
            .collect();
        let cost = lifetime
            .cost
            .iter()
            .filter(|(_, amount)| !amount.is_zero())
            .map(|(k, amount)| CostJson {
                model_ref: k.attrs.model_ref.clone(),
                provider: k.attrs.provider.clone(),
                source: k.attrs.source.clone(),
                currency: k.currency.clone(),
                billing_mode: k.billing_mode.clone(),
                amount: amount.to_string(),
            })
            .collect();
        let unpriced = lifetime
            .unpriced
            .iter()
            .filter(|(_, requests)| **requests > 0)
            .map(|(k, requests)| UnpricedJson {
                model_ref: k.attrs.model_ref.clone(),
                provider: k.attrs.provider.clone(),
                source: k.attrs.source.clone(),
                reason: k.reason.clone(),
                requests: *requests,
            })
            .collect();
        StatusJson {
            series,
            cost,
            unpriced,
            lines: LinesJson {
                read: counts.read(),
                counted: counts.counted,
                duplicate: counts.duplicate,
                rejected: counts.rejected_total(),
            },
            prometheus: None,
        }
    }
}

impl StatusJson {
    /// Requests priced by Reasonix (all requests less the unpriced ones), and the unpriced ones
    /// by reason.
    pub fn requests_by_pricing(&self) -> (u64, BTreeMap<&str, u64>) {
        let all = self
            .series
            .iter()
            .fold(0u64, |sum, s| sum.saturating_add(s.requests));
        let mut unpriced: BTreeMap<&str, u64> = BTreeMap::new();
        for u in &self.unpriced {
            let sum = unpriced.entry(u.reason.as_str()).or_default();
            *sum = sum.saturating_add(u.requests);
        }
        let priced = all.saturating_sub(unpriced.values().fold(0u64, |a, b| a.saturating_add(*b)));
        (priced, unpriced)
    }
}

impl SeriesJson {
    pub fn values(&self) -> [u64; 8] {
        [
            self.prompt,
            self.completion,
            self.reasoning,
            self.cache_hit,
            self.cache_miss,
            self.total,
            self.requests,
            self.turns,
        ]
    }
}

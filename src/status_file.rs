//! The `status --json` document, and the copy of it a running daemon keeps in the state dir
//! for `status`, which cannot open the store while the daemon holds it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::own_files::{self, Durability};
use crate::series::{Quantity, Sums, Totals};
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
    /// A field per quantity, named by its key, in [`Quantity::ALL`]'s order.
    #[serde(flatten, with = "quantities")]
    pub totals: Totals,
}

/// [`Totals`] as fields of the series they belong to.
mod quantities {
    use serde::de::Error as _;
    use serde::ser::SerializeMap as _;
    use serde::{Deserialize as _, Deserializer, Serializer};

    use super::{BTreeMap, Quantity, Totals};

    pub fn serialize<S: Serializer>(totals: &Totals, out: S) -> Result<S::Ok, S::Error> {
        let mut map = out.serialize_map(Some(Quantity::COUNT))?;
        for q in Quantity::ALL {
            map.serialize_entry(q.key(), &totals.get(q))?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(fields: D) -> Result<Totals, D::Error> {
        let fields = BTreeMap::<String, serde_json::Value>::deserialize(fields)?;
        let mut totals = Totals::default();
        for q in Quantity::ALL {
            let value = fields
                .get(q.key())
                .ok_or_else(|| D::Error::missing_field(q.key()))?;
            let value = value
                .as_u64()
                .ok_or_else(|| D::Error::custom(format!("{} is not a count", q.key())))?;
            totals.set(q, value);
        }
        Ok(totals)
    }
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
    own_files::replace_json(&path_in(state_dir), doc, Durability::ProcessCrash)
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
                totals: *t,
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
        let all = self.series.iter().fold(0u64, |sum, s| {
            sum.saturating_add(s.totals.get(Quantity::Requests))
        });
        let mut unpriced: BTreeMap<&str, u64> = BTreeMap::new();
        for u in &self.unpriced {
            let sum = unpriced.entry(u.reason.as_str()).or_default();
            *sum = sum.saturating_add(u.requests);
        }
        let priced = all.saturating_sub(unpriced.values().fold(0u64, |a, b| a.saturating_add(*b)));
        (priced, unpriced)
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
    use crate::series::AttrSet;

    #[test]
    fn a_series_is_its_attributes_then_every_quantity_in_order_and_reads_back() {
        let mut totals = Totals::default();
        for (i, q) in Quantity::ALL.into_iter().enumerate() {
            totals.set(q, i as u64 + 1);
        }
        let mut lifetime = Sums::default();
        lifetime.tokens.insert(AttrSet::folded(), totals);
        let doc = StatusJson::of(&lifetime, &IngestCounts::default());
        let text = serde_json::to_string(&doc.series[0]).unwrap();
        assert_eq!(
            text,
            r#"{"model_ref":"other","provider":"other","source":"other","prompt":1,"completion":2,"reasoning":3,"cache_hit":4,"cache_miss":5,"total":6,"requests":7,"turns":8}"#
        );
        let back: SeriesJson = serde_json::from_str(&text).unwrap();
        assert_eq!(back.totals, totals);
        let without_turns = text.replace(r#","turns":8"#, "");
        assert!(
            serde_json::from_str::<SeriesJson>(&without_turns).is_err(),
            "every quantity is required"
        );
    }
}

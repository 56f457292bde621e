//! The data model shared by the store and the exporters: which series a row belongs to
//! ([`AttrSet`]), the quantities counted for it ([`Totals`]), its spend per currency and
//! its unpriced requests ([`cost`]), and all of them together ([`Sums`]).
//!
//! - `totals.rs`: a series' counters, one per quantity of the catalog (`catalog.rs`);
//! - `cost.rs`: the cost and unpriced series, and the cap on their new attributes' values;
//! - `deltas.rs`: what a batch of rows adds, with the cardinality fold;
//! - `sums.rs`: the three families of sums as the store keeps and the exporters send them;
//! - `metrics.rs`: every exported metric of them, walked once for every output.

pub mod cost;
mod deltas;
mod metrics;
mod sums;
mod totals;

use std::hash::{BuildHasherDefault, Hasher};

pub use crate::catalog::MetricNames;
use crate::ledger::decode::Row;
pub use deltas::{Part, SeriesDeltas};
pub use metrics::{Families, FamilyKey, Metric, MetricWalk, Number, SumsByKey, walk, walk_sums};
pub use sums::{Counter, Family, Sums};
pub use totals::{Quantity, Totals};

/// The hasher of the per-line maps (raw labels to series, days to seen-set partitions): each
/// write one xxh3-64 call. xxhash-rust's own `Xxh3Builder` copies its whole streaming state for
/// every key, which showed in the backfill profile.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuickHasher(u64);

impl Hasher for QuickHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
}

pub type QuickHash = BuildHasherDefault<QuickHasher>;

/// Past this many distinct attribute sets, new ones fold into [`AttrSet::folded`], so that a bad
/// ledger cannot explode a backend's cardinality (the OTel SDK's own cap is 2,000 per metric).
pub const MAX_SERIES: usize = 1000;

/// A label value longer than this is replaced by `invalid`.
const MAX_LABEL_BYTES: usize = 256;

/// The three attributes of every increment: `model_ref`, `provider`, `source`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrSet {
    pub model_ref: String,
    pub provider: String,
    pub source: String,
}

impl AttrSet {
    /// The attributes of a row, by the table in docs/counting-rules.md.
    pub fn of_row(row: &Row<'_>) -> AttrSet {
        let model = row.model.as_deref().filter(|m| !m.is_empty());
        let provider = match model {
            None => "unknown",
            Some(model) => match model.find('/') {
                Some(slash) if slash > 0 => &model[..slash],
                _ => "default",
            },
        };
        let source = row.source.as_deref().filter(|s| !s.is_empty());
        AttrSet {
            model_ref: label(model.unwrap_or("unknown")),
            provider: label(provider),
            source: label(source.unwrap_or("unknown")),
        }
    }

    /// Where new attribute sets go once [`MAX_SERIES`] exist. All three values are `other`, so
    /// that the fold is one series however wild the ledger is.
    pub fn folded() -> AttrSet {
        AttrSet {
            model_ref: "other".into(),
            provider: "other".into(),
            source: "other".into(),
        }
    }

    /// A compact key: the three values joined by NUL, which a label can never contain.
    pub fn encode(&self) -> Vec<u8> {
        [
            self.model_ref.as_bytes(),
            self.provider.as_bytes(),
            self.source.as_bytes(),
        ]
        .join(&0u8)
    }

    pub fn decode(bytes: &[u8]) -> Option<AttrSet> {
        let mut parts = bytes
            .split(|b| *b == 0)
            .map(|p| String::from_utf8(p.to_vec()).ok());
        let set = AttrSet {
            model_ref: parts.next()??,
            provider: parts.next()??,
            source: parts.next()??,
        };
        parts.next().is_none().then_some(set)
    }

    /// `(name, value)` pairs in the order of docs/counting-rules.md, "Attributes".
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("model_ref", &self.model_ref),
            ("provider", &self.provider),
            ("source", &self.source),
        ]
    }
}

/// A label value as exported: as written, or `invalid` when too long or holding control
/// characters (which would break text formats and dashboards), bidirectional controls (which
/// make a label read as something else in a table or a legend) or characters that show as
/// nothing (which make a series that looks like another).
pub(crate) fn label(value: &str) -> String {
    if value.len() > MAX_LABEL_BYTES
        || value.chars().any(|c| {
            c.is_control() || crate::inert_text::is_bidi_control(c) || crate::inert_text::is_invisible(c)
        })
    {
        "invalid".to_owned()
    } else {
        value.to_owned()
    }
}

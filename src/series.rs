//! The data model shared by the store and the exporters: which series a row belongs to
//! ([`AttrSet`]) and the eight quantities counted for it ([`Totals`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use xxhash_rust::xxh3::Xxh3Builder;

use crate::ledger::decode::{Row, RowKind};

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
/// characters (which would break text formats and dashboards) or bidirectional controls (which
/// make a label read as something else in a table or a legend).
fn label(value: &str) -> String {
    if value.len() > MAX_LABEL_BYTES || value.chars().any(|c| c.is_control() || is_bidi_control(c)) {
        "invalid".to_owned()
    } else {
        value.to_owned()
    }
}

/// The Unicode bidirectional formatting characters: embeddings, overrides, isolates and marks.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Deltas by series for a batch of rows, with the two things that make that fast and bounded:
/// a cache from a row's raw labels to its series (one lookup a line, not three allocations),
/// and the cardinality fold past [`MAX_SERIES`].
#[derive(Debug, Default)]
pub struct SeriesDeltas {
    /// The raw `(model, source)` of each row seen → its slot in `series`.
    labels: HashMap<Box<str>, usize, Xxh3Builder>,
    /// Each attribute set added to → its slot in `series`.
    slots: HashMap<AttrSet, usize>,
    series: Vec<Slot>,
    /// Scratch for building a raw label key.
    key: String,
}

#[derive(Debug)]
struct Slot {
    attrs: AttrSet,
    delta: Totals,
    /// Increments here were folded by the cardinality limit.
    folded: bool,
}

impl SeriesDeltas {
    /// Adds `delta` to the series of `row`; `known` holds the series that exist already. A new
    /// attribute set past [`MAX_SERIES`] goes to [`AttrSet::folded`]; returns whether it did.
    pub fn add<V>(&mut self, known: &BTreeMap<AttrSet, V>, row: &Row<'_>, delta: &Totals) -> bool {
        self.key.clear();
        for label in [&row.model, &row.source] {
            // Length-prefixed, so that no label text can mimic the boundary between the two:
            // `-` for absent, `<byte length>:<text>` otherwise (an empty one is `0:`).
            match label {
                None => self.key.push('-'),
                Some(text) => {
                    let _ = write!(self.key, "{}:", text.len());
                    self.key.push_str(text);
                }
            }
        }
        let slot = match self.labels.get(self.key.as_str()) {
            Some(slot) => *slot,
            None => {
                let slot = self.slot_for(known, AttrSet::of_row(row));
                self.labels.insert(self.key.as_str().into(), slot);
                slot
            }
        };
        let slot = &mut self.series[slot];
        slot.delta.add(delta);
        slot.folded
    }

    fn slot_for<V>(&mut self, known: &BTreeMap<AttrSet, V>, attrs: AttrSet) -> usize {
        let exists = known.contains_key(&attrs) || self.slots.contains_key(&attrs);
        let new_series = self.slots.keys().filter(|a| !known.contains_key(*a)).count();
        let (attrs, folded) = if exists || known.len() + new_series < MAX_SERIES {
            (attrs, false)
        } else {
            (AttrSet::folded(), true)
        };
        // `(other, other, other)` never comes from a row (a model_ref of `other` has provider
        // `default`), so a slot's set tells whether it is the fold.
        if let Some(slot) = self.slots.get(&attrs) {
            return *slot;
        }
        self.series.push(Slot {
            attrs: attrs.clone(),
            delta: Totals::default(),
            folded,
        });
        self.slots.insert(attrs, self.series.len() - 1);
        self.series.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The deltas by attribute set (slots of the same set added together), zeros left out.
    pub fn by_series(&self) -> BTreeMap<AttrSet, Totals> {
        let mut out: BTreeMap<AttrSet, Totals> = BTreeMap::new();
        for slot in &self.series {
            if !slot.delta.is_zero() {
                out.entry(slot.attrs.clone()).or_default().add(&slot.delta);
            }
        }
        out
    }
}

/// One of the eight counted quantities, with its names in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Prompt,
    Completion,
    Reasoning,
    CacheHit,
    CacheMiss,
    Total,
    Requests,
    Turns,
}

impl Quantity {
    pub const ALL: [Quantity; 8] = [
        Quantity::Prompt,
        Quantity::Completion,
        Quantity::Reasoning,
        Quantity::CacheHit,
        Quantity::CacheMiss,
        Quantity::Total,
        Quantity::Requests,
        Quantity::Turns,
    ];

    /// The key in `status --json` (and in the ledger, for the token counts).
    pub fn key(self) -> &'static str {
        match self {
            Quantity::Prompt => "prompt",
            Quantity::Completion => "completion",
            Quantity::Reasoning => "reasoning",
            Quantity::CacheHit => "cache_hit",
            Quantity::CacheMiss => "cache_miss",
            Quantity::Total => "total",
            Quantity::Requests => "requests",
            Quantity::Turns => "turns",
        }
    }

    /// The OTLP metric name (README, "Metrics").
    pub fn otlp_name(self) -> &'static str {
        match self {
            Quantity::Prompt => "reasonix.prompt.tokens",
            Quantity::Completion => "reasonix.completion.tokens",
            Quantity::Reasoning => "reasonix.reasoning.tokens",
            Quantity::CacheHit => "reasonix.cache_hit.tokens",
            Quantity::CacheMiss => "reasonix.cache_miss.tokens",
            Quantity::Total => "reasonix.tokens",
            Quantity::Requests => "reasonix.requests",
            Quantity::Turns => "reasonix.turns",
        }
    }

    /// The Prometheus name (README, "Metrics").
    pub fn prom_name(self) -> &'static str {
        match self {
            Quantity::Prompt => "reasonix_prompt_tokens_total",
            Quantity::Completion => "reasonix_completion_tokens_total",
            Quantity::Reasoning => "reasonix_reasoning_tokens_total",
            Quantity::CacheHit => "reasonix_cache_hit_tokens_total",
            Quantity::CacheMiss => "reasonix_cache_miss_tokens_total",
            Quantity::Total => "reasonix_tokens_total",
            Quantity::Requests => "reasonix_requests_total",
            Quantity::Turns => "reasonix_turns_total",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Quantity::Requests => "{request}",
            Quantity::Turns => "{turn}",
            _ => "{token}",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Quantity::Prompt => "Input tokens, cached and uncached together.",
            Quantity::Completion => "Output tokens, reasoning included.",
            Quantity::Reasoning => "Reasoning tokens, a part of completion tokens.",
            Quantity::CacheHit => "Input tokens served from the provider's prefix cache.",
            Quantity::CacheMiss => "Input tokens not served from the provider's prefix cache.",
            Quantity::Total => "Total tokens as reported by the provider.",
            Quantity::Requests => "Provider requests.",
            Quantity::Turns => "Completed agent turns.",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The eight counters of one series. Sums saturate rather than wrap: a hostile ledger can pin a
/// counter at its maximum, never send it backwards.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals([u64; 8]);

impl Totals {
    pub const ENCODED_LEN: usize = 64;

    /// What one row adds; `None` for rows that count nothing.
    pub fn of_row(kind: &RowKind) -> Option<Totals> {
        let mut t = Totals::default();
        match kind {
            RowKind::Compaction => return None,
            RowKind::Turn => t.0[Quantity::Turns.index()] = 1,
            RowKind::Usage(c) => {
                t.0 = [
                    c.prompt,
                    c.completion,
                    c.reasoning,
                    c.cache_hit,
                    c.cache_miss,
                    c.total,
                    c.requests,
                    0,
                ]
            }
        }
        (!t.is_zero()).then_some(t)
    }

    pub fn get(&self, q: Quantity) -> u64 {
        self.0[q.index()]
    }

    pub fn set(&mut self, q: Quantity, value: u64) {
        self.0[q.index()] = value;
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|v| *v == 0)
    }

    pub fn add(&mut self, other: &Totals) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    /// `self - other` per quantity, never below zero.
    pub fn minus(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// The larger of `self` and `other`, per quantity.
    pub fn max(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = (*a).max(b);
        }
        out
    }

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0; Self::ENCODED_LEN];
        for (chunk, v) in out.chunks_exact_mut(8).zip(self.0) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Totals> {
        if bytes.len() != Self::ENCODED_LEN {
            return None;
        }
        let mut t = Totals::default();
        for (v, chunk) in t.0.iter_mut().zip(bytes.chunks_exact(8)) {
            *v = u64::from_le_bytes(chunk.try_into().ok()?);
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_and_differences_stop_at_zero() {
        let mut big = Totals::default();
        big.set(Quantity::Total, u64::MAX - 1);
        let mut five = Totals::default();
        five.set(Quantity::Total, 5);
        big.add(&five);
        assert_eq!(big.get(Quantity::Total), u64::MAX, "pinned, never wrapped");
        assert_eq!(five.minus(&big).get(Quantity::Total), 0, "never below zero");
        assert_eq!(Totals::decode(&big.encode()), Some(big));
    }
}

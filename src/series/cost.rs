//! The two cost families (docs/counting-rules.md, "Cost"): spend per currency and billing mode
//! ([`CostSeries`]), and requests that carry no usable price ([`UnpricedSeries`]), each under the
//! row's three attributes plus its own. Their new attributes follow the label rules of every
//! attribute. A currency is never folded; past [`MAX_VALUES`] distinct values of `billing_mode`
//! or `reason`, further values are `other`, but never one of [`NEVER_FOLDED`].

use std::collections::BTreeSet;

use super::{AttrSet, label};

/// Distinct values one of `billing_mode` and `reason` may take before further values become
/// [`OTHER`]. Currencies are never folded (the ISO list bounds them), nor are the two billing
/// modes Reasonix writes and the reasons of our own.
pub const MAX_VALUES: usize = 32;
pub const OTHER: &str = "other";

/// A row of no quote (no `cost_complete`).
pub const NO_QUOTE: &str = "no_quote";
/// A quote that is not valid (docs/counting-rules.md, "Cost").
pub const BAD_COST: &str = "bad_cost";
/// A complete quote in a code that is not an ISO 4217 currency.
pub const UNKNOWN_CURRENCY: &str = "unknown_currency";
/// The values of `billing_mode` and `reason` that are never folded into [`OTHER`].
pub const NEVER_FOLDED: [&str; 5] = [
    "payg",
    "subscription_equivalent",
    NO_QUOTE,
    BAD_COST,
    UNKNOWN_CURRENCY,
];

pub use crate::catalog::{COST, UNPRICED};

/// Spend of one series in one currency and billing mode: `reasonix.cost`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CostSeries {
    pub attrs: AttrSet,
    pub currency: String,
    pub billing_mode: String,
}

/// Unpriced requests of one series for one reason: `reasonix.requests.unpriced`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnpricedSeries {
    pub attrs: AttrSet,
    pub reason: String,
}

/// A series key of one of the three families: stored, sent and printed the same way.
pub trait SeriesKey: Ord + Clone {
    /// The row attributes it extends.
    fn attrs(&self) -> &AttrSet;
    /// `(name, value)` pairs: the three of [`AttrSet::pairs`], then its own.
    fn pairs(&self) -> Vec<(&'static str, &str)>;
    /// The values joined by NUL, which a label can never contain.
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl SeriesKey for AttrSet {
    fn attrs(&self) -> &AttrSet {
        self
    }
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        AttrSet::pairs(self).to_vec()
    }
    fn encode(&self) -> Vec<u8> {
        AttrSet::encode(self)
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        AttrSet::decode(bytes)
    }
}

impl SeriesKey for CostSeries {
    fn attrs(&self) -> &AttrSet {
        &self.attrs
    }
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        let mut pairs = self.attrs.pairs().to_vec();
        pairs.push(("currency", &self.currency));
        pairs.push(("billing_mode", &self.billing_mode));
        pairs
    }
    fn encode(&self) -> Vec<u8> {
        joined(&self.attrs, &[&self.currency, &self.billing_mode])
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        let (attrs, [currency, billing_mode]) = split(bytes)?;
        Some(CostSeries {
            attrs,
            currency,
            billing_mode,
        })
    }
}

impl SeriesKey for UnpricedSeries {
    fn attrs(&self) -> &AttrSet {
        &self.attrs
    }
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        let mut pairs = self.attrs.pairs().to_vec();
        pairs.push(("reason", &self.reason));
        pairs
    }
    fn encode(&self) -> Vec<u8> {
        joined(&self.attrs, &[&self.reason])
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        let (attrs, [reason]) = split(bytes)?;
        Some(UnpricedSeries { attrs, reason })
    }
}

fn joined(attrs: &AttrSet, own: &[&str]) -> Vec<u8> {
    let mut out = attrs.encode();
    for value in own {
        out.push(0);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// The row attributes (the first three values) and `N` values of its own.
fn split<const N: usize>(bytes: &[u8]) -> Option<(AttrSet, [String; N])> {
    let parts: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
    if parts.len() != 3 + N {
        return None;
    }
    let attrs = AttrSet::decode(&parts[..3].join(&0u8))?;
    let mut own: [String; N] = std::array::from_fn(|_| String::new());
    for (slot, part) in own.iter_mut().zip(&parts[3..]) {
        *slot = String::from_utf8(part.to_vec()).ok()?;
    }
    Some((attrs, own))
}

/// A new attribute's value as exported: the label rules of every attribute, `unknown` when
/// absent or empty.
pub fn value_label(value: Option<&str>) -> String {
    label(value.filter(|v| !v.is_empty()).unwrap_or("unknown"))
}

/// The values one new attribute has taken, for the cap of [`MAX_VALUES`].
#[derive(Debug, Default)]
pub struct ValueCap(BTreeSet<String>);

impl ValueCap {
    /// Starts from the values the store knows.
    pub fn of<'a>(known: impl Iterator<Item = &'a str>) -> ValueCap {
        let counted = known.filter(|v| *v != OTHER && !NEVER_FOLDED.contains(v));
        ValueCap(counted.map(str::to_owned).collect())
    }

    /// `value`, or [`OTHER`] when it would be one distinct value too many (one of
    /// [`NEVER_FOLDED`] never is, nor counts towards the cap).
    pub fn admit(&mut self, value: String) -> String {
        if self.0.contains(&value) || value == OTHER || NEVER_FOLDED.contains(&value.as_str()) {
            return value;
        }
        if self.0.len() >= MAX_VALUES {
            return OTHER.to_owned();
        }
        self.0.insert(value.clone());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_and_refuse_the_wrong_number_of_values() {
        let cost = CostSeries {
            attrs: AttrSet::folded(),
            currency: "CNY".into(),
            billing_mode: "payg".into(),
        };
        assert_eq!(CostSeries::decode(&cost.encode()), Some(cost.clone()));
        assert_eq!(UnpricedSeries::decode(&cost.encode()), None);
        let unpriced = UnpricedSeries {
            attrs: AttrSet::folded(),
            reason: "no_price".into(),
        };
        assert_eq!(UnpricedSeries::decode(&unpriced.encode()), Some(unpriced));
        assert_eq!(CostSeries::decode(&AttrSet::folded().encode()), None);
    }

    #[test]
    fn values_past_the_cap_become_other() {
        let mut cap = ValueCap::of(["m0", "payg", OTHER].into_iter());
        for i in 0..MAX_VALUES {
            assert_eq!(cap.admit(format!("m{i}")), format!("m{i}"));
        }
        assert_eq!(cap.admit("one too many".into()), OTHER);
        assert_eq!(cap.admit("m3".into()), "m3", "a known value stays");
        for value in NEVER_FOLDED {
            assert_eq!(cap.admit(value.into()), value, "never folded");
        }
        assert_eq!(value_label(Some("")), "unknown");
        assert_eq!(value_label(Some("a\u{7}")), "invalid");
    }
}

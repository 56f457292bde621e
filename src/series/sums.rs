//! [`Sums`]: the three families of counters (tokens, cost, unpriced requests) by series, as the
//! store keeps them (lifetime, delivered), an export carries them and the stream marks them.

use std::collections::{BTreeMap, BTreeSet};

use super::cost::{CostSeries, SeriesKey, UnpricedSeries};

use super::{AttrSet, Metric, Number, Totals};
use crate::bytes::Reader;
use crate::ledger::quote::Amount;

/// A counter value: added with saturation, subtracted down to zero, compared for the mark.
pub trait Counter: Copy + Default + PartialEq {
    /// The most bytes its layout takes.
    const MAX_ENCODED_LEN: usize;
    fn plus(self, other: Self) -> Self;
    /// `self - other`, never below zero.
    fn less(self, other: Self) -> Self;
    /// The larger, per quantity.
    fn larger(self, other: Self) -> Self;
    fn is_zero(&self) -> bool;
    /// What of `self` has never been above zero in `mark`, per quantity.
    fn unsent(self, mark: Self) -> Self {
        if mark.is_zero() { self } else { Self::default() }
    }
    fn encode_into(&self, out: &mut Vec<u8>);
    /// Reads what `encode_into` wrote off the front of `bytes`.
    fn read(bytes: &mut Reader) -> Option<Self>;
    /// The value of `metric`, one of this family's metrics.
    fn number(&self, metric: Metric) -> Number;
}

impl Counter for Totals {
    const MAX_ENCODED_LEN: usize = Totals::MAX_ENCODED_LEN;
    fn plus(mut self, other: Self) -> Self {
        self.add(&other);
        self
    }
    fn less(self, other: Self) -> Self {
        self.minus(&other)
    }
    fn larger(self, other: Self) -> Self {
        self.max(&other)
    }
    fn unsent(self, mark: Self) -> Self {
        self.where_zero_in(&mark)
    }
    fn is_zero(&self) -> bool {
        Totals::is_zero(self)
    }
    fn encode_into(&self, out: &mut Vec<u8>) {
        Totals::encode_into(self, out);
    }
    fn read(bytes: &mut Reader) -> Option<Self> {
        Totals::read(bytes)
    }
    fn number(&self, metric: Metric) -> Number {
        match metric {
            Metric::Tokens(q) => Number::Int(self.get(q)),
            Metric::Cost | Metric::Unpriced => Number::Int(0),
        }
    }
}

impl Counter for Amount {
    const MAX_ENCODED_LEN: usize = Amount::ENCODED_LEN;
    fn plus(self, other: Self) -> Self {
        self.saturating_add(other)
    }
    fn less(self, other: Self) -> Self {
        self.saturating_sub(other)
    }
    fn larger(self, other: Self) -> Self {
        self.max(other)
    }
    fn is_zero(&self) -> bool {
        Amount::is_zero(*self)
    }
    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.encode());
    }
    fn read(bytes: &mut Reader) -> Option<Self> {
        Amount::decode(bytes.take(Amount::ENCODED_LEN)?)
    }
    fn number(&self, _: Metric) -> Number {
        Number::Amount(*self)
    }
}

impl Counter for u64 {
    const MAX_ENCODED_LEN: usize = 8;
    fn plus(self, other: Self) -> Self {
        self.saturating_add(other)
    }
    fn less(self, other: Self) -> Self {
        self.saturating_sub(other)
    }
    fn larger(self, other: Self) -> Self {
        self.max(other)
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn read(bytes: &mut Reader) -> Option<Self> {
        bytes.u64()
    }
    fn number(&self, _: Metric) -> Number {
        Number::Int(*self)
    }
}

/// Which of the three families a stored entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Tokens,
    Cost,
    Unpriced,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Tokens, Family::Cost, Family::Unpriced];
}

/// Counters by series, in three families.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sums {
    pub tokens: BTreeMap<AttrSet, Totals>,
    pub cost: BTreeMap<CostSeries, Amount>,
    pub unpriced: BTreeMap<UnpricedSeries, u64>,
}

/// The [`Sums`] made by one generic function applied to each family of its arguments in turn.
macro_rules! per_family {
    ($f:ident ( $($arg:expr),* )) => {
        Sums {
            tokens: $f($(&$arg.tokens),*),
            cost: $f($(&$arg.cost),*),
            unpriced: $f($(&$arg.unpriced),*),
        }
    };
}

impl Sums {
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.cost.is_empty() && self.unpriced.is_empty()
    }

    /// Series of all families.
    pub fn len(&self) -> usize {
        self.tokens.len() + self.cost.len() + self.unpriced.len()
    }

    pub fn add(&mut self, other: &Sums) {
        add_into(&mut self.tokens, &other.tokens);
        add_into(&mut self.cost, &other.cost);
        add_into(&mut self.unpriced, &other.unpriced);
    }

    /// `self - other` per series, only where something remains.
    pub fn minus(&self, other: &Sums) -> Sums {
        per_family!(minus(self, other))
    }

    /// The points of `self` (a series' quantity with a value) that are zero or absent in
    /// `marks`: the backend series that `marks` has never seen.
    pub fn unsent(&self, marks: &Sums) -> Sums {
        per_family!(unsent(self, marks))
    }

    /// Raises every value to `other`'s where that is higher.
    pub fn raise_to(&mut self, other: &Sums) {
        raise_into(&mut self.tokens, &other.tokens);
        raise_into(&mut self.cost, &other.cost);
        raise_into(&mut self.unpriced, &other.unpriced);
    }

    /// The entries of `self` that `other` holds with the same value.
    pub fn agreeing_with(&self, other: &Sums) -> Sums {
        per_family!(agreeing(self, other))
    }

    /// The entries of `self` that differ from `other`'s (or that `other` lacks).
    pub fn differing_from(&self, other: &Sums) -> Sums {
        per_family!(differing(self, other))
    }

    /// For each series of `delta`: its value in `self` plus the delta.
    pub fn after_adding(&self, delta: &Sums) -> Sums {
        let mut out = self.agreeing_keys(delta);
        out.add(delta);
        out
    }

    /// The entries of `self` whose series `other` has.
    fn agreeing_keys(&self, other: &Sums) -> Sums {
        per_family!(same_keys(self, other))
    }

    /// Sets every series of `other` to its value there.
    pub fn overwrite_with(&mut self, other: Sums) {
        self.tokens.extend(other.tokens);
        self.cost.extend(other.cost);
        self.unpriced.extend(other.unpriced);
    }

    /// The series whose row attributes are in `sets`.
    pub fn only(&self, sets: &BTreeSet<&AttrSet>) -> Sums {
        let pick = |attrs: &AttrSet| sets.contains(attrs);
        Sums {
            tokens: filtered(&self.tokens, pick),
            cost: filtered(&self.cost, pick),
            unpriced: filtered(&self.unpriced, pick),
        }
    }

    /// The row attribute sets of every series, each once.
    pub fn attr_sets(&self) -> BTreeSet<&AttrSet> {
        let mut sets: BTreeSet<&AttrSet> = self.tokens.keys().collect();
        sets.extend(self.cost.keys().map(|k| &k.attrs));
        sets.extend(self.unpriced.keys().map(|k| &k.attrs));
        sets
    }

    /// Every entry as `(family, key, value)` bytes, for the store.
    pub fn encoded_entries(&self) -> Vec<(Family, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.len());
        entries(&mut out, Family::Tokens, &self.tokens);
        entries(&mut out, Family::Cost, &self.cost);
        entries(&mut out, Family::Unpriced, &self.unpriced);
        out
    }

    /// Adds one stored entry; `None` when its key or value is unreadable.
    pub fn insert_encoded(&mut self, family: Family, key: &[u8], value: &[u8]) -> Option<()> {
        self.insert_encoded_with(family, key, value, Totals::read)
    }

    /// [`Sums::insert_encoded`], its [`Totals`] read as `totals` reads them (an older layout's).
    pub fn insert_encoded_with(
        &mut self,
        family: Family,
        key: &[u8],
        value: &[u8],
        totals: ReadTotals,
    ) -> Option<()> {
        let mut value = Reader::new(value);
        match family {
            Family::Tokens => insert(&mut self.tokens, key, totals(&mut value)?)?,
            Family::Cost => insert(&mut self.cost, key, Amount::read(&mut value)?)?,
            Family::Unpriced => insert(&mut self.unpriced, key, u64::read(&mut value)?)?,
        }
        value.is_empty().then_some(())
    }

    /// Each family in turn: its entry count (u32), then per entry the key's length (u32), the
    /// key and the value, all little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.len() * 100);
        encode_family(&mut out, &self.tokens);
        encode_family(&mut out, &self.cost);
        encode_family(&mut out, &self.unpriced);
        out
    }

    /// Reads what [`Sums::encode`] wrote off the front of `bytes`.
    pub fn read(bytes: &mut Reader) -> Option<Sums> {
        Sums::read_families(bytes, &Family::ALL, Totals::read)
    }

    /// Reads the sections of `families` alone, in their order, each [`Totals`] read by `totals`
    /// (as older layouts wrote fewer families, and totals of a fixed width).
    pub fn read_families(bytes: &mut Reader, families: &[Family], totals: ReadTotals) -> Option<Sums> {
        let mut sums = Sums::default();
        for &family in families {
            for _ in 0..bytes.u32()? {
                let key = bytes.sized()?;
                match family {
                    Family::Tokens => insert(&mut sums.tokens, key, totals(bytes)?)?,
                    Family::Cost => insert(&mut sums.cost, key, Amount::read(bytes)?)?,
                    Family::Unpriced => insert(&mut sums.unpriced, key, u64::read(bytes)?)?,
                }
            }
        }
        Some(sums)
    }
}

/// How a layout's [`Totals`] are read: [`Totals::read`], or an older layout's reader.
pub type ReadTotals = fn(&mut Reader) -> Option<Totals>;

fn add_into<K: SeriesKey, V: Counter>(into: &mut BTreeMap<K, V>, other: &BTreeMap<K, V>) {
    for (key, value) in other {
        let entry = into.entry(key.clone()).or_default();
        *entry = entry.plus(*value);
    }
}

fn raise_into<K: SeriesKey, V: Counter>(into: &mut BTreeMap<K, V>, other: &BTreeMap<K, V>) {
    for (key, value) in other {
        let entry = into.entry(key.clone()).or_default();
        *entry = entry.larger(*value);
    }
}

fn minus<K: SeriesKey, V: Counter>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeMap<K, V> {
    a.iter()
        .map(|(key, value)| (key, value.less(b.get(key).copied().unwrap_or_default())))
        .filter(|(_, rest)| !rest.is_zero())
        .map(|(key, rest)| (key.clone(), rest))
        .collect()
}

fn unsent<K: SeriesKey, V: Counter>(a: &BTreeMap<K, V>, marks: &BTreeMap<K, V>) -> BTreeMap<K, V> {
    a.iter()
        .map(|(key, value)| (key, value.unsent(marks.get(key).copied().unwrap_or_default())))
        .filter(|(_, new)| !new.is_zero())
        .map(|(key, new)| (key.clone(), new))
        .collect()
}

fn agreeing<K: SeriesKey, V: Counter>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeMap<K, V> {
    a.iter()
        .filter(|(key, value)| b.get(*key) == Some(*value))
        .map(|(key, value)| (key.clone(), *value))
        .collect()
}

fn differing<K: SeriesKey, V: Counter>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeMap<K, V> {
    a.iter()
        .filter(|(key, value)| b.get(*key) != Some(*value))
        .map(|(key, value)| (key.clone(), *value))
        .collect()
}

fn same_keys<K: SeriesKey, V: Counter>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeMap<K, V> {
    b.keys()
        .filter_map(|key| Some((key.clone(), *a.get(key)?)))
        .collect()
}

fn filtered<K: SeriesKey, V: Counter>(
    map: &BTreeMap<K, V>,
    pick: impl Fn(&AttrSet) -> bool,
) -> BTreeMap<K, V> {
    map.iter()
        .filter(|(key, _)| pick(key.attrs()))
        .map(|(key, value)| (key.clone(), *value))
        .collect()
}

fn entries<K: SeriesKey, V: Counter>(
    out: &mut Vec<(Family, Vec<u8>, Vec<u8>)>,
    family: Family,
    map: &BTreeMap<K, V>,
) {
    for (key, value) in map {
        let mut bytes = Vec::with_capacity(V::MAX_ENCODED_LEN);
        value.encode_into(&mut bytes);
        out.push((family, key.encode(), bytes));
    }
}

fn encode_family<K: SeriesKey, V: Counter>(out: &mut Vec<u8>, map: &BTreeMap<K, V>) {
    out.extend_from_slice(&(map.len() as u32).to_le_bytes());
    for (key, value) in map {
        crate::bytes::put_sized(out, &key.encode());
        value.encode_into(out);
    }
}

fn insert<K: SeriesKey, V: Counter>(map: &mut BTreeMap<K, V>, key: &[u8], value: V) -> Option<()> {
    map.insert(K::decode(key)?, value);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Quantity;

    pub fn sample() -> Sums {
        let mut sums = Sums::default();
        let mut totals = Totals::default();
        totals.set(Quantity::Requests, 3);
        sums.tokens.insert(AttrSet::folded(), totals);
        sums.cost.insert(
            CostSeries {
                attrs: AttrSet::folded(),
                currency: "USD".into(),
                billing_mode: "payg".into(),
            },
            Amount::from_units(1_500_000_000),
        );
        sums.unpriced.insert(
            UnpricedSeries {
                attrs: AttrSet::folded(),
                reason: "no_price".into(),
            },
            2,
        );
        sums
    }

    #[test]
    fn sums_read_back_and_subtract_per_series() {
        let sums = sample();
        let bytes = sums.encode();
        let mut whole = Reader::new(&bytes);
        assert_eq!(Sums::read(&mut whole), Some(sums.clone()));
        assert!(whole.is_empty());
        assert_eq!(Sums::read(&mut Reader::new(&bytes[..bytes.len() - 1])), None);
        assert!(sums.minus(&sums).is_empty());
        let mut double = sums.clone();
        double.add(&sums);
        assert_eq!(double.minus(&sums), sums);
        assert_eq!(double.agreeing_with(&sums), Sums::default());
        assert_eq!(double.differing_from(&sums).len(), 3);
        let mut marks = sums.clone();
        marks.raise_to(&double);
        assert_eq!(marks, double);
    }
}

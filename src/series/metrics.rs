//! The exported metrics of the counted families, walked once for every output: each quantity of
//! the tokens (the catalog's order), then the spend, then the unpriced requests. OTLP
//! (`export/payload.rs`), `/metrics` (`export/prometheus.rs`) and `history` (`history/write.rs`)
//! each say what they do with one metric ([`MetricWalk`]); the order, the families and the value
//! of a series are here.

use std::collections::BTreeMap;

use super::cost::{COST, CostSeries, SeriesKey, UNPRICED, UnpricedSeries};
use super::{AttrSet, Counter, Family, MetricNames, Quantity, Sums, Totals};
use crate::ledger::quote::Amount;

/// One exported metric of the counted families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Tokens(Quantity),
    Cost,
    Unpriced,
}

impl Metric {
    pub fn names(self) -> MetricNames {
        match self {
            Metric::Tokens(q) => q.names(),
            Metric::Cost => COST,
            Metric::Unpriced => UNPRICED,
        }
    }

    pub fn family(self) -> Family {
        match self {
            Metric::Tokens(_) => Family::Tokens,
            Metric::Cost => Family::Cost,
            Metric::Unpriced => Family::Unpriced,
        }
    }

    /// The metric's value in `sum`, one of its family's sums.
    pub fn number<V: Counter>(self, sum: &V) -> Number {
        sum.number(self)
    }
}

/// One series' value of a metric, as every output writes it: a count, or an amount of money (an
/// exact decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Number {
    Int(u64),
    Amount(Amount),
}

impl Number {
    pub fn is_zero(self) -> bool {
        match self {
            Number::Int(n) => n == 0,
            Number::Amount(a) => a.is_zero(),
        }
    }
}

/// A family's series key: its sum's type, and where [`Sums`] keeps the family.
pub trait FamilyKey: SeriesKey {
    type Sum: Counter;
    fn of(sums: &Sums) -> &BTreeMap<Self, Self::Sum>;
}

impl FamilyKey for AttrSet {
    type Sum = Totals;
    fn of(sums: &Sums) -> &BTreeMap<Self, Totals> {
        &sums.tokens
    }
}

impl FamilyKey for CostSeries {
    type Sum = Amount;
    fn of(sums: &Sums) -> &BTreeMap<Self, Amount> {
        &sums.cost
    }
}

impl FamilyKey for UnpricedSeries {
    type Sum = u64;
    fn of(sums: &Sums) -> &BTreeMap<Self, u64> {
        &sums.unpriced
    }
}

/// What a walk is given of each family: its sums by series ([`SumsByKey`]), or anything else
/// per series (history's points).
pub trait Families {
    type Of<K: FamilyKey>;
}

/// Each family as [`Sums`] holds it.
pub struct SumsByKey;

impl Families for SumsByKey {
    type Of<K: FamilyKey> = BTreeMap<K, K::Sum>;
}

/// What an output does with one metric, `family` being its family as the walk was given it.
pub trait MetricWalk<F: Families> {
    type Error;
    fn metric<K: FamilyKey>(&mut self, metric: Metric, family: &F::Of<K>) -> Result<(), Self::Error>;
}

/// Walks every metric in the order of every output.
pub fn walk<F: Families, W: MetricWalk<F>>(
    walker: &mut W,
    tokens: &F::Of<AttrSet>,
    cost: &F::Of<CostSeries>,
    unpriced: &F::Of<UnpricedSeries>,
) -> Result<(), W::Error> {
    for q in Quantity::ALL {
        walker.metric::<AttrSet>(Metric::Tokens(q), tokens)?;
    }
    walker.metric::<CostSeries>(Metric::Cost, cost)?;
    walker.metric::<UnpricedSeries>(Metric::Unpriced, unpriced)
}

/// Walks every metric of `sums`.
pub fn walk_sums<W: MetricWalk<SumsByKey>>(walker: &mut W, sums: &Sums) -> Result<(), W::Error> {
    walk::<SumsByKey, W>(walker, &sums.tokens, &sums.cost, &sums.unpriced)
}

//! The history a block (a UTC day) at a time, in time order: each series' points in the block,
//! brought along from the blocks before, handed to a [`Sink`] family by family. A series'
//! points are in time order within and across blocks; its heartbeats after a quiet spell come
//! in the block of its next growth (or at the end), which every backend's way of taking the
//! past allows: each needs a series' samples in time order, not a family's together.
//!
//! A quantity the stream first sent as zero has no history (all its points would be zero): it is
//! not handed on, as the stream does not send zeros.

use std::collections::BTreeMap;

use super::HistoryError;
use super::grid::{Grid, Running};
use super::read::Timelines;
use crate::ledger::quote::Amount;
pub use crate::series::Number;
use crate::series::cost::{CostSeries, UnpricedSeries};
use crate::series::{
    AttrSet, Counter, Families, FamilyKey, Metric, MetricNames, MetricWalk, Quantity, Sums, Totals, walk,
};

/// Where the history goes.
pub trait Sink {
    /// One series of `names` with its labels `pairs`: its points in the block, in time order.
    fn series(
        &mut self,
        names: MetricNames,
        pairs: &[(&str, &str)],
        points: &[(i64, Number)],
    ) -> Result<(), HistoryError>;
    /// The block's series are all handed on.
    fn block_done(&mut self) -> Result<(), HistoryError> {
        Ok(())
    }
    /// The history is all handed on.
    fn finish(&mut self) -> Result<(), HistoryError>;
}

/// Writes the history block by block: [`Writer::block`] for each, in time order, then
/// [`Writer::finish`].
pub struct Writer<'a> {
    sink: &'a mut dyn Sink,
    labels: &'a [(String, String)],
    grid: &'a Grid,
    first: &'a Sums,
    running: Runs,
    points: u64,
}

/// Where each series' points have come to.
#[derive(Default)]
struct Runs {
    tokens: BTreeMap<AttrSet, Running<Totals>>,
    cost: BTreeMap<CostSeries, Running<Amount>>,
    unpriced: BTreeMap<UnpricedSeries, Running<u64>>,
}

/// The points of one block: each series' points there.
type Block<K, V> = Vec<(K, Vec<(i64, V)>)>;

impl<'a> Writer<'a> {
    /// A writer to `sink` of series capped by `first` (what the stream first sent), each with
    /// `labels` added, on `grid`.
    pub fn new(
        sink: &'a mut dyn Sink,
        labels: &'a [(String, String)],
        grid: &'a Grid,
        first: &'a Sums,
    ) -> Self {
        Writer {
            sink,
            labels,
            grid,
            first,
            running: Runs::default(),
            points: 0,
        }
    }

    /// Writes one block's growth (each series' growth put in time order in place).
    pub fn block(&mut self, growth: &mut Timelines) -> Result<(), HistoryError> {
        let (grid, first, running) = (self.grid, self.first, &mut self.running);
        let tokens = advance(&mut running.tokens, &mut growth.tokens, &first.tokens, grid);
        let cost = advance(&mut running.cost, &mut growth.cost, &first.cost, grid);
        let unpriced = advance(&mut running.unpriced, &mut growth.unpriced, &first.unpriced, grid);
        self.families(&tokens, &cost, &unpriced)?;
        self.sink.block_done()
    }

    /// Writes every series' points after its last growth, to the end of history, and ends the
    /// output; the number of points written.
    pub fn finish(mut self) -> Result<u64, HistoryError> {
        let grid = self.grid;
        let tokens = closing(&self.running.tokens, grid);
        let cost = closing(&self.running.cost, grid);
        let unpriced = closing(&self.running.unpriced, grid);
        self.families(&tokens, &cost, &unpriced)?;
        self.sink.block_done()?;
        self.sink.finish()?;
        Ok(self.points)
    }

    /// The series written: every quantity of every series the stream first sent above zero.
    pub fn series(&self) -> usize {
        let tokens: usize = (self.running.tokens.keys())
            .map(|k| self.first.tokens.get(k).copied().unwrap_or_default())
            .map(|cap| Quantity::ALL.iter().filter(|q| cap.get(**q) > 0).count())
            .sum();
        tokens
            + sent(&self.running.cost, &self.first.cost)
            + sent(&self.running.unpriced, &self.first.unpriced)
    }

    fn families(
        &mut self,
        tokens: &Block<AttrSet, Totals>,
        cost: &Block<CostSeries, Amount>,
        unpriced: &Block<UnpricedSeries, u64>,
    ) -> Result<(), HistoryError> {
        walk::<Blocks, Self>(self, tokens, cost, unpriced)
    }
}

/// Each family as a block holds it: each series' points there.
struct Blocks;

impl Families for Blocks {
    type Of<K: FamilyKey> = Block<K, K::Sum>;
}

impl MetricWalk<Blocks> for Writer<'_> {
    type Error = HistoryError;

    /// Hands on each series of `metric` with points in the block that the stream first sent
    /// above zero.
    fn metric<K: FamilyKey>(&mut self, metric: Metric, block: &Block<K, K::Sum>) -> Result<(), HistoryError> {
        let first = K::of(self.first);
        let sent = |k: &K| first.get(k).is_some_and(|v| !metric.number(v).is_zero());
        let mut numbers = Vec::new();
        for (key, points) in block.iter().filter(|(k, p)| !p.is_empty() && sent(k)) {
            let mut pairs: Vec<(&str, &str)> = key.pairs();
            pairs.extend(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            numbers.clear();
            numbers.extend(points.iter().map(|(at, v)| (*at, metric.number(v))));
            self.sink.series(metric.names(), &pairs, &numbers)?;
            self.points += points.len() as u64;
        }
        Ok(())
    }
}

/// Each series' points in one block, from its growth there, `running` brought along.
fn advance<K: Ord + Clone, V: Counter>(
    running: &mut BTreeMap<K, Running<V>>,
    growth: &mut BTreeMap<K, Vec<(i64, V)>>,
    first: &BTreeMap<K, V>,
    grid: &Grid,
) -> Block<K, V> {
    let block = growth.iter_mut().map(|(key, g)| {
        let cap = first.get(key).copied().unwrap_or_default();
        let mut out = Vec::new();
        grid.extend(running.entry(key.clone()).or_default(), g, cap, &mut out);
        (key.clone(), out)
    });
    block.collect()
}

/// The series of `running` the stream first sent above zero.
fn sent<K: Ord, V: Counter>(running: &BTreeMap<K, Running<V>>, first: &BTreeMap<K, V>) -> usize {
    running
        .keys()
        .filter(|k| first.get(*k).is_some_and(|v| !v.is_zero()))
        .count()
}

/// Each series' points after its last growth.
fn closing<K: Ord + Clone, V: Counter>(running: &BTreeMap<K, Running<V>>, grid: &Grid) -> Block<K, V> {
    let block = running.iter().map(|(key, r)| {
        let mut out = Vec::new();
        grid.close(r, &mut out);
        (key.clone(), out)
    });
    block.collect()
}

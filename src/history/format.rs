//! The history in each backend's own format for the past, a block (a UTC day) at a time, in
//! time order: in each block every series that has points there, its points in time order,
//! each family's series together. OpenMetrics as `promtool tsdb create-blocks-from openmetrics`
//! reads it (timestamps in seconds, `# EOF` at the end; a family's samples come in every block,
//! which promtool takes: it needs only each series' samples in time order), and
//! VictoriaMetrics' `/api/v1/import` JSON lines (a line per series and block, timestamps in ms).
//!
//! A quantity the stream first sent as zero has no history (all its points would be zero): it
//! is not written, as the stream does not send zeros. Integers past 2^63 are pinned at
//! `i64::MAX`, as the stream pins them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;

use super::grid::{Grid, Running};
use super::read::Timelines;
use crate::export::prometheus::labels;
use crate::ledger::quote::Amount;
use crate::series::cost::{COST, CostSeries, SeriesKey, UNPRICED, UnpricedSeries};
use crate::series::{AttrSet, Counter, MetricNames, Quantity, Sums, Totals};

/// Where the history goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `promtool tsdb create-blocks-from openmetrics`.
    OpenMetrics,
    /// VictoriaMetrics' `/api/v1/import`.
    VictoriaMetrics,
}

/// Writes the history block by block: [`Writer::block`] for each, in time order, then
/// [`Writer::finish`].
pub struct Writer<'a, W> {
    format: Format,
    labels: &'a [(String, String)],
    out: &'a mut W,
    grid: &'a Grid,
    first: &'a Sums,
    running: Runs,
    /// Families whose OpenMetrics header is written.
    headed: BTreeSet<&'static str>,
    points: u64,
    /// Scratch for one line.
    line: String,
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

/// Writes an integer as the stream sends it: pinned at `i64::MAX`.
fn pinned(n: u64, out: &mut String) {
    let _ = write!(out, "{}", n.min(i64::MAX as u64));
}

impl<'a, W: Write> Writer<'a, W> {
    pub fn new(
        (format, labels): (Format, &'a [(String, String)]),
        out: &'a mut W,
        grid: &'a Grid,
        first: &'a Sums,
    ) -> Self {
        Writer {
            format,
            labels,
            out,
            grid,
            first,
            running: Runs::default(),
            headed: BTreeSet::new(),
            points: 0,
            line: String::new(),
        }
    }

    /// Writes one block's growth (each series' growth put in time order in place).
    pub fn block(&mut self, growth: &mut Timelines) -> std::io::Result<()> {
        let (grid, first, running) = (self.grid, self.first, &mut self.running);
        let tokens = advance(&mut running.tokens, &mut growth.tokens, &first.tokens, grid);
        let cost = advance(&mut running.cost, &mut growth.cost, &first.cost, grid);
        let unpriced = advance(&mut running.unpriced, &mut growth.unpriced, &first.unpriced, grid);
        self.families(&tokens, &cost, &unpriced)
    }

    /// Writes every series' points after its last growth, to the end of history, and the end of
    /// the output; the number of points written.
    pub fn finish(mut self) -> std::io::Result<u64> {
        let grid = self.grid;
        let tokens = closing(&self.running.tokens, grid);
        let cost = closing(&self.running.cost, grid);
        let unpriced = closing(&self.running.unpriced, grid);
        self.families(&tokens, &cost, &unpriced)?;
        if self.format == Format::OpenMetrics {
            self.out.write_all(b"# EOF\n")?;
        }
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
    ) -> std::io::Result<()> {
        for quantity in Quantity::ALL {
            let first = &self.first.tokens;
            let sent = |k: &_| first.get(k).is_some_and(|t: &Totals| t.get(quantity) > 0);
            self.family(quantity.names(), tokens, sent, |t, out| {
                pinned(t.get(quantity), out)
            })?;
        }
        let first = &self.first.cost;
        self.family(
            COST,
            cost,
            |k| first.get(k).is_some_and(|a| !a.is_zero()),
            |a, out| {
                let _ = write!(out, "{a}");
            },
        )?;
        let first = &self.first.unpriced;
        self.family(
            UNPRICED,
            unpriced,
            |k| first.get(k).is_some_and(|n| *n > 0),
            |n, out| pinned(*n, out),
        )
    }

    fn family<K: SeriesKey, V>(
        &mut self,
        names: MetricNames,
        block: &Block<K, V>,
        sent: impl Fn(&K) -> bool,
        value: impl Fn(&V, &mut String),
    ) -> std::io::Result<()> {
        let name = names.prom_name;
        for (key, points) in block.iter().filter(|(k, p)| !p.is_empty() && sent(k)) {
            if self.format == Format::OpenMetrics && self.headed.insert(name) {
                let base = name.trim_end_matches("_total");
                writeln!(self.out, "# HELP {base} {}", names.description)?;
                writeln!(self.out, "# TYPE {base} counter")?;
            }
            let mut pairs: Vec<(&str, &str)> = key.pairs();
            pairs.extend(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            match self.format {
                Format::OpenMetrics => self.openmetrics(name, &pairs, points, &value)?,
                Format::VictoriaMetrics => self.victoria(name, &pairs, points, &value)?,
            }
            self.points += points.len() as u64;
        }
        Ok(())
    }

    fn openmetrics<V>(
        &mut self,
        name: &str,
        pairs: &[(&str, &str)],
        points: &[(i64, V)],
        value: &impl Fn(&V, &mut String),
    ) -> std::io::Result<()> {
        let series = format!("{name}{} ", labels(pairs));
        self.line.clear();
        for (at, v) in points {
            self.line.push_str(&series);
            value(v, &mut self.line);
            let sign = if *at < 0 { "-" } else { "" };
            let (s, ms) = (at.unsigned_abs() / 1000, at.unsigned_abs() % 1000);
            let _ = writeln!(self.line, " {sign}{s}.{ms:03}");
        }
        self.out.write_all(self.line.as_bytes())
    }

    fn victoria<V>(
        &mut self,
        name: &str,
        pairs: &[(&str, &str)],
        points: &[(i64, V)],
        value: &impl Fn(&V, &mut String),
    ) -> std::io::Result<()> {
        let mut metric = serde_json::Map::new();
        metric.insert("__name__".into(), name.into());
        for (k, v) in pairs {
            metric.insert((*k).into(), (*v).into());
        }
        self.line.clear();
        self.line.push_str("{\"metric\":");
        self.line.push_str(&serde_json::Value::Object(metric).to_string());
        self.line.push_str(",\"values\":[");
        for (i, (_, v)) in points.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            // A JSON number as the decimal it is (the spend's too: exact to its last digit).
            value(v, &mut self.line);
        }
        self.line.push_str("],\"timestamps\":[");
        for (i, (at, _)) in points.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            let _ = write!(self.line, "{at}");
        }
        self.line.push_str("]}\n");
        self.out.write_all(self.line.as_bytes())
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

//! The history in each backend's own format for the past. Every series is written whole, its
//! points in time order, each family's series together: OpenMetrics as `promtool tsdb
//! create-blocks-from openmetrics` reads it (timestamps in seconds, `# EOF` at the end), and
//! VictoriaMetrics' `/api/v1/import` JSON lines (one line per series, timestamps in ms).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use super::Grid;
use super::read::Timelines;
use crate::export::prometheus::labels;
use crate::series::cost::{COST, SeriesKey, UNPRICED};
use crate::series::{Counter, MetricNames, Quantity, Sums};

/// Where the history goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `promtool tsdb create-blocks-from openmetrics`.
    OpenMetrics,
    /// VictoriaMetrics' `/api/v1/import`.
    VictoriaMetrics,
}

/// Writes every series of `timelines`, capped by `first`, with `labels` added; the number of
/// points written. Each series' growth is put in time order in place, once for its eight
/// quantities.
pub fn write(
    timelines: &mut Timelines,
    first: &Sums,
    grid: &Grid,
    (format, labels): (Format, &[(String, String)]),
    out: &mut impl Write,
) -> std::io::Result<u64> {
    let mut writer = Writer {
        format,
        labels,
        out,
        points: 0,
        line: String::new(),
    };
    for quantity in Quantity::ALL {
        let value = |t: &crate::series::Totals| t.get(quantity).to_string();
        writer.family(
            quantity.names(),
            &mut timelines.tokens,
            &first.tokens,
            grid,
            value,
        )?;
    }
    writer.family(COST, &mut timelines.cost, &first.cost, grid, |a| a.to_string())?;
    writer.family(UNPRICED, &mut timelines.unpriced, &first.unpriced, grid, |n| {
        n.to_string()
    })?;
    if format == Format::OpenMetrics {
        writer.out.write_all(b"# EOF\n")?;
    }
    Ok(writer.points)
}

struct Writer<'a, W> {
    format: Format,
    labels: &'a [(String, String)],
    out: &'a mut W,
    points: u64,
    /// Scratch for one line.
    line: String,
}

impl<W: Write> Writer<'_, W> {
    fn family<K: SeriesKey, V: Counter>(
        &mut self,
        names: MetricNames,
        timelines: &mut BTreeMap<K, Vec<(i64, V)>>,
        first: &BTreeMap<K, V>,
        grid: &Grid,
        value: impl Fn(&V) -> String,
    ) -> std::io::Result<()> {
        let name = names.prom_name;
        if self.format == Format::OpenMetrics && !timelines.is_empty() {
            let base = name.trim_end_matches("_total");
            writeln!(self.out, "# HELP {base} {}", names.description)?;
            writeln!(self.out, "# TYPE {base} counter")?;
        }
        for (key, growth) in timelines {
            let cap = first.get(key).copied().unwrap_or_default();
            let points = grid.points(growth, cap);
            let mut pairs: Vec<(&str, &str)> = key.pairs();
            pairs.extend(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            match self.format {
                Format::OpenMetrics => self.openmetrics(name, &pairs, &points, &value)?,
                Format::VictoriaMetrics => self.victoria(name, &pairs, &points, &value)?,
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
        value: &impl Fn(&V) -> String,
    ) -> std::io::Result<()> {
        let series = format!("{name}{}", labels(pairs));
        for (at, v) in points {
            self.line.clear();
            let sign = if *at < 0 { "-" } else { "" };
            let (s, ms) = (at.unsigned_abs() / 1000, at.unsigned_abs() % 1000);
            let _ = writeln!(self.line, "{series} {} {sign}{s}.{ms:03}", value(v));
            self.out.write_all(self.line.as_bytes())?;
        }
        Ok(())
    }

    fn victoria<V>(
        &mut self,
        name: &str,
        pairs: &[(&str, &str)],
        points: &[(i64, V)],
        value: &impl Fn(&V) -> String,
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
            self.line.push_str(&value(v));
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

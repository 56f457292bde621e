//! The history as text, in each backend's own format for the past: OpenMetrics as `promtool
//! tsdb create-blocks-from openmetrics` reads it (timestamps in seconds, `# EOF` at the end; a
//! family's samples come in every block, which promtool takes: it needs only each series'
//! samples in time order), and VictoriaMetrics' `/api/v1/import` JSON lines (a line per series
//! and block, timestamps in ms). Counts past 2^63 are written as `i64::MAX`, as the stream pins
//! them; an amount as the exact decimal it is.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write;

use super::HistoryError;
use super::write::{Number, Sink};
use crate::export::prometheus::labels;
use crate::series::MetricNames;

/// The text formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    /// `promtool tsdb create-blocks-from openmetrics`.
    OpenMetrics,
    /// VictoriaMetrics' `/api/v1/import`.
    VictoriaMetrics,
}

/// The history written as `format` to `out`.
pub struct TextSink<'a, W> {
    format: Text,
    out: &'a mut W,
    /// Families whose OpenMetrics header is written.
    headed: BTreeSet<&'static str>,
    /// Scratch for one series' lines.
    line: String,
}

impl<'a, W: Write> TextSink<'a, W> {
    pub fn new(format: Text, out: &'a mut W) -> Self {
        TextSink {
            format,
            out,
            headed: BTreeSet::new(),
            line: String::new(),
        }
    }

    fn openmetrics(&mut self, name: &str, pairs: &[(&str, &str)], points: &[(i64, Number)]) {
        let series = format!("{name}{} ", labels(pairs));
        for (at, v) in points {
            self.line.push_str(&series);
            number(v, &mut self.line);
            let sign = if *at < 0 { "-" } else { "" };
            let (s, ms) = (at.unsigned_abs() / 1000, at.unsigned_abs() % 1000);
            let _ = writeln!(self.line, " {sign}{s}.{ms:03}");
        }
    }

    fn victoria(&mut self, name: &str, pairs: &[(&str, &str)], points: &[(i64, Number)]) {
        let mut metric = serde_json::Map::new();
        metric.insert("__name__".into(), name.into());
        for (k, v) in pairs {
            metric.insert((*k).into(), (*v).into());
        }
        self.line.push_str("{\"metric\":");
        self.line.push_str(&serde_json::Value::Object(metric).to_string());
        self.line.push_str(",\"values\":[");
        for (i, (_, v)) in points.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            // A JSON number as the decimal it is (the spend's too: exact to its last digit).
            number(v, &mut self.line);
        }
        self.line.push_str("],\"timestamps\":[");
        for (i, (at, _)) in points.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            let _ = write!(self.line, "{at}");
        }
        self.line.push_str("]}\n");
    }
}

/// A value as the decimal it is.
fn number(value: &Number, out: &mut String) {
    let _ = match value {
        Number::Int(n) => write!(out, "{}", crate::export::payload::pinned(*n)),
        Number::Amount(a) => write!(out, "{a}"),
    };
}

impl<W: Write> Sink for TextSink<'_, W> {
    fn series(
        &mut self,
        names: MetricNames,
        pairs: &[(&str, &str)],
        points: &[(i64, Number)],
    ) -> Result<(), HistoryError> {
        let name = names.prom_name;
        self.line.clear();
        match self.format {
            Text::OpenMetrics => {
                if self.headed.insert(name) {
                    let base = name.trim_end_matches("_total");
                    let _ = writeln!(self.line, "# HELP {base} {}", names.description);
                    let _ = writeln!(self.line, "# TYPE {base} counter");
                }
                self.openmetrics(name, pairs, points);
            }
            Text::VictoriaMetrics => self.victoria(name, pairs, points),
        }
        self.out
            .write_all(self.line.as_bytes())
            .map_err(HistoryError::Output)
    }

    fn finish(&mut self) -> Result<(), HistoryError> {
        if self.format == Text::OpenMetrics {
            self.out.write_all(b"# EOF\n").map_err(HistoryError::Output)?;
        }
        self.out.flush().map_err(HistoryError::Output)
    }
}

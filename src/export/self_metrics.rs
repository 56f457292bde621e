//! The exporter's own metrics (`reasonix_exporter.*`, README "Metrics"): lines read, duplicate and
//! rejected (by reason), bytes read, label folds, export failures, files tracked, the last poll's
//! duration and end, the store's size, and how the last delivery to each sink went (as
//! node_exporter says of each collector), and the build (`build_info`, as every Prometheus
//! exporter has). One definition serves OTLP and Prometheus.

use crate::ledger::decode::Rejection;
use crate::store::counts::IngestCounts;

/// A self-metric's kind: a monotonic counter, or a gauge that goes up and down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A lifetime count, kept in the store: one stream for the store's life, like the ledger's.
    Counter,
    /// A count since this process started: served on `/metrics` (where a restart is a process
    /// restart, as for any Prometheus target), not sent over OTLP (where it would start a new
    /// stream with every run).
    ProcessCounter,
    Gauge,
}

/// One self-metric: names in both worlds, and its values (one per label set).
#[derive(Debug, Clone)]
pub struct SelfMetric {
    /// OTLP name, e.g. `reasonix_exporter.lines.read`.
    pub otlp_name: &'static str,
    /// Prometheus name without `_total`, e.g. `reasonix_exporter_lines_read`.
    pub prom_name: &'static str,
    pub unit: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// The name of the one label its values may have: `reason`, or `sink`.
    pub label: &'static str,
    /// `(label value, value)`; the label is `None` for unlabelled metrics.
    pub values: Vec<(Option<&'static str>, f64)>,
    /// Labels every value carries (`build_info`'s).
    pub constant: &'static [(&'static str, &'static str)],
}

/// What `reasonix_exporter_build_info` says: the version, the commit it was built from and the
/// compiler that built it (build.rs).
pub const BUILD: [(&str, &str); 3] = [
    ("version", env!("CARGO_PKG_VERSION")),
    ("revision", env!("REASONIX_EXPORTER_COMMIT")),
    ("rustc", env!("REASONIX_EXPORTER_RUSTC")),
];

/// A backend the daemon delivers to, as the `sink` label names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// OTLP, pushed: an export prepared, sent and answered.
    Otlp,
    /// `/metrics`, pulled: a commit handed to the scrape view.
    Prometheus,
}

impl Sink {
    pub const ALL: [Sink; 2] = [Sink::Otlp, Sink::Prometheus];

    pub fn label(self) -> &'static str {
        match self {
            Sink::Otlp => "otlp",
            Sink::Prometheus => "prometheus",
        }
    }
}

/// How the last delivery to one sink went.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SinkRun {
    pub seconds: f64,
    pub success: bool,
}

/// A moment's view of the exporter's own metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SelfStats {
    /// Line counts over the store's lifetime.
    pub counts: IngestCounts,
    pub export_failures: u64,
    pub files_tracked: u64,
    pub last_poll_seconds: f64,
    /// When the last poll ended, as a Unix time (0: none yet).
    pub last_poll_end: f64,
    pub store_bytes: u64,
    /// By [`Sink::ALL`]: how its last delivery went; `None` for a sink that is off or has not
    /// delivered yet in this process.
    pub sinks: [Option<SinkRun>; 2],
}

impl SelfStats {
    /// A poll's end as a Unix time, for [`SelfStats::last_poll_end`].
    pub fn unix_seconds(at: Option<std::time::SystemTime>) -> f64 {
        at.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

impl SelfStats {
    pub fn metrics(&self) -> Vec<SelfMetric> {
        let mut metrics = self.counters();
        metrics.push(build_info());
        metrics.extend(self.gauges());
        metrics
    }

    /// The counters: lines by outcome, bytes, folds and export failures.
    fn counters(&self) -> Vec<SelfMetric> {
        let c = &self.counts;
        let counter = |otlp_name, prom_name, unit, help, value: u64| SelfMetric {
            otlp_name,
            prom_name,
            unit,
            help,
            kind: Kind::Counter,
            label: "reason",
            values: vec![(None, value as f64)],
            constant: &[],
        };
        let mut export_failures = counter(
            "reasonix_exporter.export.failures",
            "reasonix_exporter_export_failures",
            "{request}",
            "OTLP export requests that failed (since this process started).",
            self.export_failures,
        );
        export_failures.kind = Kind::ProcessCounter;
        vec![
            counter(
                "reasonix_exporter.lines.read",
                "reasonix_exporter_lines_read",
                "{line}",
                "Complete, non-blank ledger lines read (counted + duplicate + rejected).",
                c.read(),
            ),
            counter(
                "reasonix_exporter.lines.counted",
                "reasonix_exporter_lines_counted",
                "{line}",
                "New ledger lines accepted.",
                c.counted,
            ),
            counter(
                "reasonix_exporter.lines.duplicate",
                "reasonix_exporter_lines_duplicate",
                "{line}",
                "Ledger lines skipped because their bytes were counted before.",
                c.duplicate,
            ),
            SelfMetric {
                otlp_name: "reasonix_exporter.lines.rejected",
                prom_name: "reasonix_exporter_lines_rejected",
                unit: "{line}",
                help: "Ledger lines that count nothing, by reason.",
                kind: Kind::Counter,
                label: "reason",
                values: Rejection::ALL
                    .iter()
                    .zip(c.rejected)
                    .map(|(why, n)| (Some(why.as_str()), n as f64))
                    .collect(),
                constant: &[],
            },
            counter(
                "reasonix_exporter.bytes.read",
                "reasonix_exporter_read_bytes",
                "By",
                "Ledger bytes read, re-reads included.",
                c.bytes,
            ),
            counter(
                "reasonix_exporter.label.folds",
                "reasonix_exporter_label_folds",
                "{increment}",
                "Increments folded into the attribute set `other` by the cardinality limit.",
                c.folded,
            ),
            export_failures,
        ]
    }

    /// The gauges: files tracked, the last poll, the store's size, each sink's last delivery.
    fn gauges(&self) -> Vec<SelfMetric> {
        let gauge = |otlp_name, prom_name, unit, help, value: f64| SelfMetric {
            otlp_name,
            prom_name,
            unit,
            help,
            kind: Kind::Gauge,
            label: "reason",
            values: vec![(None, value)],
            constant: &[],
        };
        let per_sink = |value: fn(&SinkRun) -> f64| -> Vec<(Option<&'static str>, f64)> {
            let runs = Sink::ALL.iter().zip(&self.sinks);
            runs.filter_map(|(sink, run)| Some((Some(sink.label()), value(run.as_ref()?))))
                .collect()
        };
        vec![
            gauge(
                "reasonix_exporter.files.tracked",
                "reasonix_exporter_files_tracked",
                "{file}",
                "Ledger files in the stats folder.",
                self.files_tracked as f64,
            ),
            gauge(
                "reasonix_exporter.poll.duration",
                "reasonix_exporter_poll_duration_seconds",
                "s",
                "How long the last poll of the ledger took.",
                self.last_poll_seconds,
            ),
            gauge(
                "reasonix_exporter.last_poll_end.timestamp",
                "reasonix_exporter_last_poll_end_timestamp_seconds",
                "s",
                "When the last poll ended (Unix time): lines written before it are counted, so `time() - this` bounds the lag.",
                self.last_poll_end,
            ),
            gauge(
                "reasonix_exporter.store.size",
                "reasonix_exporter_store_size_bytes",
                "By",
                "The store's size on disk.",
                self.store_bytes as f64,
            ),
            SelfMetric {
                label: "sink",
                values: per_sink(|run| run.seconds),
                ..gauge(
                    "reasonix_exporter.sink.duration",
                    "reasonix_exporter_sink_duration_seconds",
                    "s",
                    "How long the last delivery to each sink took: otlp an export prepared, sent and answered; prometheus a commit handed to /metrics.",
                    0.0,
                )
            },
            SelfMetric {
                label: "sink",
                values: per_sink(|run| if run.success { 1.0 } else { 0.0 }),
                ..gauge(
                    "reasonix_exporter.sink.success",
                    "reasonix_exporter_sink_success",
                    // Not "1", which the collector's translation names `_ratio`.
                    "{delivery}",
                    "Whether the last delivery to each sink succeeded (1) or failed (0): otlp an export the collector took, prometheus a commit handed to /metrics with what it served noted in the stream record.",
                    0.0,
                )
            },
        ]
    }
}

/// `build_info`: always 1, what was built as its labels.
fn build_info() -> SelfMetric {
    SelfMetric {
        otlp_name: "reasonix_exporter.build_info",
        prom_name: "reasonix_exporter_build_info",
        // Not "1", which the collector's translation names `_ratio`.
        unit: "{build}",
        help: "Always 1; the exporter's version, the commit it was built from and the Rust compiler that built it, as labels.",
        kind: Kind::Gauge,
        label: "reason",
        values: vec![(None, 1.0)],
        constant: &BUILD,
    }
}

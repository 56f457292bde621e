//! `reasonix-exporter history`: the store's history written as points at their own time, for a
//! backend to load (deploy/README.md, "Bring your history").
//!
//! A store counts the ledger it finds before it first exports: a year of history arrives as the
//! counters' first value, and every range panel starts on the day of installation. The history
//! frontier (`store/records/history.rs`) says which lines those were and what the stream first
//! sent; this module reads exactly those lines again and writes each series as the cumulative
//! values it would have had, one point per grid step with growth in it:
//!
//! - `grid.rs`: where points go (every local midnight of any zone is a point), and the point
//!   times of a series: its zero, its growth, a heartbeat twice a day;
//! - `read.rs`: the frontier's lines, read again, checked, counted once each, by series, a day
//!   at a time; `days.rs`: the days a file's lines fall on, found without decoding them;
//! - `write.rs`: each series' points a block at a time, handed to a sink:
//! - `format.rs`: OpenMetrics for `promtool tsdb create-blocks-from openmetrics`, and
//!   VictoriaMetrics' JSON lines import;
//! - `otlp.rs`: OTLP to the live stream's endpoint, for a backend with an out-of-order window.

pub mod check;
mod days;
mod format;
mod grid;
mod otlp;
mod read;
mod write;

use std::path::{Path, PathBuf};

use crate::inert_text::ShowPath;
use crate::store::StoreError;
use crate::store::history::{self as frontier, HistoryFrontier};
use crate::store::stream;
pub use format::{Text, TextSink};
pub use grid::Grid;
pub use otlp::OtlpSink;
pub use write::{Number, Sink, Writer};

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "the store in {} has not exported or served anything yet, so it has no history: run the exporter (`reasonix-exporter run`, or `once`) first, then this",
        .0.shown()
    )]
    NotSent(PathBuf),
    #[error(
        "the store in {} went out before this version kept its history frontier, so which lines are history is not known: its history cannot be written without counting lines twice (its lines stay in Lifetime)",
        .0.shown()
    )]
    NoFrontier(PathBuf),
    #[error(
        "history frontier {} is damaged, or written by a newer reasonix-exporter: its history cannot be written (the live stream is not affected); use the version that wrote it",
        .0.shown()
    )]
    Unreadable(PathBuf),
    #[error(
        "ledger file {0} changed while its history was being written (it no longer holds what the store counted): run `history` again"
    )]
    Changed(String),
    #[error(
        "ledger file {0} read differently the second time (a line on a day the first reading did not find): this is a fault of reasonix-exporter, please report it; the history written so far ends at the day before"
    )]
    Misread(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read the stats dir: {0}; check --stats-dir and its permissions")]
    StatsDir(std::io::Error),
    #[error("cannot read ledger file {file}: {error}; check the stats dir's permissions (--stats-dir)")]
    Ledger { file: String, error: std::io::Error },
    #[error("cannot write the history: {0}")]
    Output(std::io::Error),
    #[error(
        "the history did not all go through to {endpoint}: {detail}; {hint}; what went before stays, and sending it all again is harmless"
    )]
    Send {
        endpoint: String,
        detail: String,
        hint: &'static str,
    },
    #[error(
        "cannot ask {url} for the live series (--check): {detail}; give the backend's Prometheus query API, e.g. http://prometheus:9090 or VictoriaMetrics' http://vm:8428"
    )]
    Check { url: String, detail: String },
    #[error("history --check: {0}")]
    Labels(String),
}

/// What was written, for the closing line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub lines: u64,
    pub series: usize,
    pub points: u64,
    /// Ledger files of the history that are gone or have changed since they were counted.
    pub files_missing: Vec<String>,
}

/// The history frontier of the store under `state_dir`, or why there is none.
pub fn frontier_of(state_dir: &Path) -> Result<HistoryFrontier, HistoryError> {
    let path = frontier::path_in(state_dir);
    match frontier::read(&path) {
        Ok(Some(frontier)) => return Ok(frontier),
        Ok(None) => {}
        Err(StoreError::Corrupt { .. }) => return Err(HistoryError::Unreadable(path)),
        Err(e) => return Err(e.into()),
    }
    if !state_dir.join("store").is_dir() {
        return Err(StoreError::Missing {
            path: state_dir.to_path_buf(),
        }
        .into());
    }
    let sent = stream::read(&stream::path_in(state_dir))?.is_some_and(|s| !s.never_sent());
    Err(if sent {
        HistoryError::NoFrontier(state_dir.to_path_buf())
    } else {
        HistoryError::NotSent(state_dir.to_path_buf())
    })
}

/// Hands the history of `frontier` (its ledger files in `stats_dir`) to `sink`, each series
/// with `labels` added, on `grid`; `progress` hears of each file read.
pub fn write(
    stats_dir: &Path,
    frontier: &HistoryFrontier,
    grid: &Grid,
    labels: &[(String, String)],
    sink: &mut dyn Sink,
    progress: impl FnMut(&read::Progress),
) -> Result<Summary, HistoryError> {
    let mut writer = Writer::new(sink, labels, grid, &frontier.first_values);
    let mut summary = read::read(stats_dir, frontier, grid, progress, |mut block| {
        writer.block(&mut block)
    })?;
    summary.series = writer.series();
    summary.points = writer.finish()?;
    Ok(summary)
}

pub use read::Progress;

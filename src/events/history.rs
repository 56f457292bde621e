//! `history`: its progress, what it wrote, the resource it sends under, and what the backend said.

/// How far reading the ledger has come, after each file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `checked` on the first reading, `counted` on the second.
    pub pass: &'static str,
    pub files_done: usize,
    pub files: usize,
    pub bytes_done: u64,
    pub bytes: u64,
    pub lines: u64,
}

/// A pass of the history's read, every few seconds.
pub fn progress(p: &Progress) {
    tracing::info!(
        event = "history.progress",
        pass = p.pass,
        files = p.files_done,
        lines = p.lines,
        "history: {} {} of {} ledger files ({} of {} MiB), {} lines",
        p.pass,
        p.files_done,
        p.files,
        p.bytes_done >> 20,
        p.bytes >> 20,
        p.lines
    );
}

/// The backend (`endpoint`) took a request and said something (`said`, one inert line).
pub fn endpoint_said(endpoint: &str, said: &str) {
    tracing::warn!(event = "history.endpoint_said", "history: {endpoint}: {said}");
}

/// `--check`: all `series` series of the history are live series at `url` (redacted).
pub fn checked(series: usize, url: &str) {
    tracing::info!(
        event = "history.checked",
        series,
        "history: all {series} series of the history are live series in {url}, labels and all"
    );
}

/// The resource the history is sent under (`attributes`, shown inert).
pub fn resource(attributes: &str) {
    tracing::info!(
        event = "history.resource",
        "history: sent as the live stream is, under the resource {attributes} (from this run's settings and environment: run it with the exporter's own)"
    );
}

/// A ledger file changed since the store counted it: its lines are not in the history. `file` is
/// its name as the history shows it (one inert line already).
pub fn file_changed(file: &str) {
    tracing::warn!(
        event = "history.file_changed",
        file = %file,
        "history: ledger file {file} is gone or no longer holds what the store counted; its lines are not in the history (each series still ends at or below what the stream first sent)"
    );
}

/// What `history` wrote: `lines` as `points` of `series`, in `seconds`, at a step of `step_s`.
pub struct Written {
    pub lines: u64,
    pub points: u64,
    pub series: usize,
    pub seconds: f64,
    pub step_s: u64,
}

/// The history is written, `to` where.
pub fn written(written: Written, to: &str) {
    let Written {
        lines,
        points,
        series,
        seconds,
        step_s,
    } = written;
    tracing::info!(
        event = "history.written",
        lines,
        series,
        points,
        "history: {lines} lines as {points} points of {series} series, in {seconds:.1} s, to {to}, every point before the stream's first (step {step_s} s)"
    );
}

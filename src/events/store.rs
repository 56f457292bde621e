//! The store and the state dir: counting paused and resumed, upgrades, what recovery found, and
//! the exporter's own files that could not be written.

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::Path;
use std::time::Duration;

use crate::inert_text::ShowPath;

/// Counting stops while the store cannot be written (`reason`: a full disk, no descriptors, the
/// state dir gone or read-only); it is tried again in `retry`, then less often up to `max`.
pub fn paused(reason: &str, state_dir: &Path, error: &dyn Display, retry: Duration, max: Duration) {
    tracing::warn!(event = "store.paused", reason, error = %error, retry_ms = retry.as_millis() as u64,
        "counting paused: {reason} (the store in {}: {error}); nothing is lost, it resumes from the ledger on its own; retrying in {retry:.1?}, then less often up to every {max:?}",
        state_dir.shown(),
    );
}

/// Counting goes on after a pause of `lasted`.
pub fn resumed(lasted: Duration) {
    tracing::info!(
        event = "store.resumed",
        duration_ms = lasted.as_millis() as u64,
        "counting resumed after {lasted:.0?}"
    );
}

/// The store was copied into a new database that took its place: `before` bytes on disk, now
/// `after`, in `lasted`.
pub fn compacted(before: u64, after: u64, lasted: Duration) {
    tracing::info!(
        event = "store.compacted",
        bytes_before = before,
        bytes = after,
        duration_ms = lasted.as_millis() as u64,
        "store compacted from {:.1} MB to {:.1} MB in {lasted:.0?}",
        before as f64 / 1e6,
        after as f64 / 1e6,
    );
}

/// A compaction failed; the store is left as it was.
pub fn compaction_failed(error: &dyn Display) {
    tracing::warn!(event = "store.compaction_failed", error = %error,
        "the store could not be compacted ({error}); it is left as it was, and compaction is tried again when the exporter next starts");
}

/// The store was converted to `format`; the cost quotes of what it counted are read again from
/// `files` ledger files.
pub fn upgraded(store: &Path, format: u32, files: usize) {
    tracing::info!(
        event = "store.upgraded",
        count = files,
        "store at {} upgraded to format {format}: the cost quotes of the lines it counted are read again from {files} ledger files",
        store.shown()
    );
}

/// The store is behind its export record (a power cut lost its last commits): `recorded` exports
/// were recorded, `stored` are in the store.
pub fn behind_record(store: &Path, recorded: u64, stored: u64) {
    tracing::warn!(
        event = "store.behind_record",
        count = recorded - stored,
        "store at {} is behind its export record (export {recorded} recorded, {stored} in the store): the export is settled again and lines since are read again",
        store.shown()
    );
}

/// The stream's points were dated `ahead` of the clock, which has come back.
pub fn clock_back(ahead: Duration) {
    tracing::warn!(
        event = "stream.clock_back",
        duration_ms = ahead.as_millis() as u64,
        "the store's stream was dated {} ahead of the clock (the clock ran fast, and has come back): its points carry the clock's time again",
        humantime::format_duration(ahead)
    );
}

/// Other users could write the state dir (`mode`); it was made 0700.
pub fn state_dir_made_private(state_dir: &Path, mode: u32) {
    tracing::warn!(
        event = "state_dir.made_private",
        "state dir {} could be written by other users (mode {mode:o}); made private (0700)",
        state_dir.shown()
    );
}

/// How often a write of the exporter's own files is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tried {
    /// When something changes: a failure is news.
    OnChange,
    /// At every publication or export: a failure is said at debug (the store's own pause says a
    /// disk that is full).
    Repeatedly,
}

/// One of the exporter's own files in the state dir (`file`) could not be written; `what` says
/// what was being noted.
pub fn state_write_failed(file: &str, what: &str, error: &dyn Display, tried: Tried) {
    if tried == Tried::Repeatedly {
        tracing::debug!(event = "state.write_failed", file, error = %error, "cannot {what} in the state dir: {error}");
    } else {
        tracing::warn!(event = "state.write_failed", file, error = %error, "cannot {what} in the state dir: {error}");
    }
}

/// The cost pass (docs/counting-rules.md, "Cost") could not read a ledger file this time.
pub fn cost_pass_unreadable(file: &OsStr, error: &dyn Display) {
    let file = super::file_name(file);
    tracing::debug!(event = "cost_pass.unreadable", file = %file, error = %error,
        "cost pass: ledger file {file} cannot be read ({error}); retrying at the next poll"
    );
}

/// The cost pass is over.
pub fn cost_pass_over() {
    tracing::info!(
        event = "cost_pass.over",
        "cost pass over: the store has the cost of every line it counted"
    );
}

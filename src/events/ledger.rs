//! The stats folder and the ledger files in it: found, missing, unreadable, watched, and what
//! each poll read.

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::Path;
use std::time::Duration;

use crate::inert_text::ShowPath;

/// The stats dir, found at the start (from `origin`), is watched.
pub fn stats_dir_watching(dir: &Path, origin: &dyn Display) {
    tracing::info!(event = "stats_dir.watching", origin = %origin,
        "watching {} (from {origin})",
        dir.shown()
    );
}

/// The stats dir is there again.
pub fn stats_dir_present(dir: &Path) {
    tracing::info!(
        event = "stats_dir.present",
        "stats dir {} is available again",
        dir.shown()
    );
}

/// The stats dir (from `origin`) does not exist: `run` waits for it, `once` has nothing to read.
pub fn stats_dir_missing(dir: &Path, origin: &dyn Display, reader: Reader) {
    let then = match reader {
        Reader::Run => "waiting for it",
        Reader::Once => "nothing to read",
    };
    tracing::warn!(event = "stats_dir.missing", origin = %origin,
        "stats dir {} (from {origin}) does not exist yet; {then}. Is Reasonix installed? Set --stats-dir or REASONIX_HOME if it lives elsewhere",
        dir.shown()
    );
}

/// The stats dir cannot be listed (`error`); tried again every `poll`. `hint` says more about
/// permissions, when the sandbox has something to say.
pub fn stats_dir_unreadable(dir: &Path, error: &str, poll: Duration, hint: &str) {
    tracing::warn!(
        event = "stats_dir.unreadable",
        error,
        "stats dir {} cannot be read ({error}); retrying every {poll:?}. Check its permissions{hint}",
        dir.shown()
    );
}

/// File events cannot be had for the stats dir (`error`): polling every `poll` alone.
pub fn watch_unavailable(dir: &Path, error: &str, poll: Duration) {
    tracing::warn!(
        event = "watch.unavailable",
        error,
        "file events are not available for {} ({error}); polling every {poll:?} instead",
        dir.shown()
    );
}

/// Which reader met a condition of the ledger, and so what comes next: `run` tries again on
/// every poll, `once` on its next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `run`: it polls again, and waits for what is missing.
    Run,
    /// `once`: it is over; its next run reads again.
    Once,
}

/// A poll's lines: new ones counted, duplicates, rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lines {
    pub counted: u64,
    pub duplicate: u64,
    pub rejected: u64,
}

/// `failed` ledger files cannot be read, `first` for `cause` among them (said once while it
/// lasts); `hint` says more where the cause is a permission.
pub fn unreadable(failed: usize, first: &OsStr, cause: &str, reader: Reader, hint: &str) {
    let file = super::file_name(first);
    let others = match failed {
        0 | 1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    let retry = match reader {
        Reader::Run => "retrying on every poll",
        Reader::Once => "retried on the next run",
    };
    tracing::warn!(event = "ledger.unreadable", file = %file, count = failed, error = cause,
        "ledger file {file}{others} cannot be read ({cause}); {retry}, the lines are counted once they can be{hint}"
    );
}

/// A full verification found bytes of `name` that were read before changed (a rewrite in the
/// middle, then an append): it is read again from its start, and its changed lines count then.
pub fn rewritten(name: &OsStr) {
    let file = super::file_name(name);
    tracing::warn!(event = "ledger.rewritten", file = %file,
        "ledger file {file} was changed before its end since it was read; reading it again from its start (its unchanged lines are not counted twice)"
    );
}

/// `run`'s full verifications of growing files cannot go on (`why`): a rewrite in the middle of a
/// day file followed by an append is then found only when the file is read from its start.
pub fn verification_stopped(why: &str) {
    tracing::warn!(
        event = "ledger.verification_stopped",
        error = why,
        "the full verifications of the ledger's checkpoints stopped ({why}); a day file rewritten in its middle and then appended to is counted again only once it is read from its start (restart to resume them)"
    );
}

/// Every ledger file can be read again.
pub fn readable() {
    tracing::info!(event = "ledger.readable", "every ledger file can be read again");
}

/// What a poll of `run` read, when it read anything.
pub fn polled(lines: Lines, took: Duration) {
    let Lines {
        counted,
        duplicate,
        rejected,
    } = lines;
    tracing::debug!(
        event = "ingest.poll",
        counted,
        duplicate,
        rejected,
        duration_ms = took.as_millis() as u64,
        "ingested {counted} new lines ({duplicate} duplicate, {rejected} rejected) in {took:?}"
    );
}

/// What `once` read: `lines` from `files_read` of the `files` listed, in `took`, the listing in
/// `listed_in`.
pub struct ReadOnce {
    pub lines: Lines,
    pub files_read: usize,
    pub files: usize,
    pub took: Duration,
    pub listed_in: Duration,
}

/// What `once` read.
pub fn read_once(read: ReadOnce) {
    let ReadOnce {
        lines: Lines {
            counted,
            duplicate,
            rejected,
        },
        files_read,
        files,
        took,
        listed_in,
    } = read;
    tracing::info!(
        event = "ingest.once",
        counted,
        duplicate,
        rejected,
        count = files_read,
        duration_ms = took.as_millis() as u64,
        "ingested {counted} new lines ({duplicate} duplicate, {rejected} rejected) from {files_read} of {files} files in {:.3} ms (the files listed in {:.3} ms beside the store's open)",
        took.as_secs_f64() * 1000.0,
        listed_in.as_secs_f64() * 1000.0
    );
}

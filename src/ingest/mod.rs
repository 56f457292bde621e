//! A poll: the ledger's new lines become one or more atomic store commits.
//!
//! For every file whose size or identity changed, the bytes after its checkpoint are read up to
//! the last `\n`; each line is hashed, decoded and, if its hash is new, counted. A commit holds
//! the new hashes, the total deltas and the checkpoints together. (A store upgraded from before
//! cost reads its cost pass first, as a phase of its own: `daemon::read_ledger`.)

mod parallel;
pub mod verify;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::inert_text::ShowPath;
use crate::ledger::decode::Decoded;
use crate::ledger::discover::{LedgerFile, ledger_files};
use crate::ledger::tail::{self, FullCheck};
use crate::ledger::timestamp::unix_ms_of_rfc3339;
use crate::series::Part;
use crate::store::counts::IngestCounts;
use crate::store::seen::LineHash;
use crate::store::{Batch, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("stats dir {path} cannot be read: {source}")]
    StatsDir { path: String, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A ledger file that could not be read this time.
#[derive(Debug, Clone)]
pub struct FileFailure {
    pub name: std::ffi::OsString,
    pub kind: std::io::ErrorKind,
    pub cause: String,
}

/// What one poll did, for logs and self-metrics.
#[derive(Debug, Default, Clone)]
pub struct PollReport {
    pub files: usize,
    pub files_read: usize,
    /// Files that could not be read this time (permission, deleted mid-read); retried next poll.
    pub files_failed: usize,
    /// The first of them, by file name (the stats folder is said once at start; the full path
    /// stays out of every message), and why it could not be read.
    pub first_failure: Option<FileFailure>,
    pub counts: IngestCounts,
    /// Listing the files (a `stat` each).
    pub listed_in: std::time::Duration,
    /// Reading what is new and committing it, after the listing.
    pub elapsed: std::time::Duration,
    /// When the poll ended: everything in the ledger before then is committed.
    pub finished: Option<std::time::SystemTime>,
    /// The files written in the two days before the poll, which [`poll_recent`] reads again.
    pub recent: Vec<LedgerFile>,
}

/// How near now a day file's date, or its last write, makes it one a quick poll reads (Reasonix
/// appends to today's file, and yesterday's until a few seconds past midnight, in its own zone).
const RECENT_NS: i64 = 2 * 24 * 3600 * 1_000_000_000;

/// Besides the files named for a recent day, how many of those written last a quick poll reads.
const RECENT_BY_WRITE: usize = 8;

/// The files a quick poll reads again (see `daemon/stats_dir.rs`): the day files Reasonix may be
/// appending to, `YYYY-MM-DD.jsonl` for a day within two of now (its own file for today, and
/// yesterday's just past midnight, in its local time), and the [`RECENT_BY_WRITE`] others written
/// last within that time (a sync tool's edit of an older one, or of a copy, in place). A handful,
/// whatever the number of day files: thousands of them written at once (a restored backup, a
/// synced folder's conflict copies) would otherwise each be `stat`ed every poll. Any other is
/// read by the next full poll.
fn recent_of(files: Vec<LedgerFile>, now_ns: i64) -> Vec<LedgerFile> {
    let since = now_ns.saturating_sub(RECENT_NS);
    let named_recent = |file: &LedgerFile| {
        let name = file.name.as_encoded_bytes();
        let day = name
            .strip_suffix(b".jsonl")
            .filter(|day| day.len() == 10)
            .and_then(|day| std::str::from_utf8(day).ok());
        let midnight_ms = day.and_then(|d| unix_ms_of_rfc3339(&format!("{d}T00:00:00Z")));
        midnight_ms.is_some_and(|ms| {
            ms.saturating_mul(1_000_000)
                .saturating_sub(now_ns)
                .saturating_abs()
                <= RECENT_NS
        })
    };
    let (mut recent, others): (Vec<LedgerFile>, Vec<LedgerFile>) = files.into_iter().partition(named_recent);
    let mut written: Vec<LedgerFile> = others.into_iter().filter(|f| f.stat.mtime_ns >= since).collect();
    if written.len() > RECENT_BY_WRITE {
        written.select_nth_unstable_by_key(RECENT_BY_WRITE, |f| std::cmp::Reverse(f.stat.mtime_ns));
        written.truncate(RECENT_BY_WRITE);
    }
    recent.extend(written);
    recent
}

/// Reads everything new under `stats_dir` into `store` (an upgraded store's cost pass is left to
/// `daemon::read_ledger`, which `run` and `once` use).
pub fn poll(store: &mut Store, stats_dir: &Path) -> Result<PollReport, IngestError> {
    poll_listed(
        store,
        list(stats_dir),
        &AtomicBool::new(false),
        FullCheck::WhenDue,
    )
}

/// [`poll_listed`] over `recent` alone, files of `stats_dir` each `stat`ed again: what `run`
/// does between full polls (see `daemon/stats_dir.rs`), where listing tens of thousands of old
/// day files every two seconds was most of an idle daemon's work. A file gone since is left to
/// the next full poll.
pub fn poll_recent(
    store: &mut Store,
    stats_dir: &Path,
    recent: &[LedgerFile],
    stop: &AtomicBool,
) -> Result<PollReport, IngestError> {
    let started = Instant::now();
    let files = recent
        .iter()
        .filter_map(|file| {
            let meta = std::fs::metadata(file.path(stats_dir))
                .ok()
                .filter(|m| m.is_file())?;
            Some(LedgerFile {
                stat: crate::ledger::checkpoint::FileStat::of(&meta),
                ..file.clone()
            })
        })
        .collect();
    let listing = Listing {
        dir: stats_dir.to_path_buf(),
        files: Ok(files),
        elapsed: started.elapsed(),
    };
    poll_listed(store, listing, stop, FullCheck::InBackground)
}

/// The ledger's files, for [`poll_listed`]: a listing is a `stat` per file and needs no store,
/// so `once` takes it on a second thread while the store opens.
pub fn list(stats_dir: &Path) -> Listing {
    let started = Instant::now();
    let files = ledger_files(stats_dir).map_err(|source| IngestError::StatsDir {
        path: stats_dir.shown().to_string(),
        source,
    });
    Listing {
        dir: stats_dir.to_path_buf(),
        files,
        elapsed: started.elapsed(),
    }
}

/// The files of a ledger as they were listed, and what listing them took.
#[derive(Debug)]
pub struct Listing {
    /// The stats folder the files are in.
    dir: PathBuf,
    files: Result<Vec<LedgerFile>, IngestError>,
    elapsed: std::time::Duration,
}

impl Listing {
    /// The files listed, unless the folder could not be listed.
    pub fn files(&self) -> Option<&[LedgerFile]> {
        self.files.as_deref().ok()
    }

    /// The stats folder the files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Reads everything new in `listing`'s files into `store`, or what it can before `stop` is set
/// (with what was read so far committed: a signal during a backfill of millions of lines ends it
/// within one chunk). A growing file's prefix is verified in full where that is due, or left to
/// the background ([`FullCheck`]).
pub fn poll_listed(
    store: &mut Store,
    listing: Listing,
    stop: &AtomicBool,
    full_check: FullCheck,
) -> Result<PollReport, IngestError> {
    let started = Instant::now();
    let (dir, files) = (listing.dir, listing.files?);
    let mut report = PollReport {
        files: files.len(),
        listed_in: listing.elapsed,
        ..PollReport::default()
    };
    let before = *store.counts();
    let mut batch = Batch::default();
    let mut buf = Vec::new();
    for file in &files {
        match read_file(
            store,
            &mut batch,
            &mut buf,
            &file.path(&dir),
            file,
            (stop, full_check),
        )? {
            FileOutcome::Idle => {}
            FileOutcome::Read => report.files_read += 1,
            // Gone between the listing and the open (renamed, deleted, a sync tool's temporary
            // file): it has no lines to read, and nothing is wrong with the ledger.
            FileOutcome::Failed((ErrorKind::NotFound, _)) => {}
            FileOutcome::Failed((kind, cause)) => {
                report.files_failed += 1;
                report.first_failure.get_or_insert(FileFailure {
                    name: file.name.clone(),
                    kind,
                    cause,
                });
            }
            FileOutcome::Stopped => break,
        }
    }
    store.commit(batch)?;
    report.counts = store.counts().since(&before);
    report.elapsed = started.elapsed();
    let finished = std::time::SystemTime::now();
    report.finished = Some(finished);
    let now_ns = finished
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    report.recent = recent_of(files, now_ns);
    Ok(report)
}

impl PollReport {
    /// The whole poll: listing, reading and committing.
    pub fn duration(&self) -> std::time::Duration {
        self.listed_in + self.elapsed
    }
}

enum FileOutcome {
    Idle,
    Read,
    Failed((std::io::ErrorKind, String)),
    /// Asked to stop: what was read is in the batch, its checkpoint with it.
    Stopped,
}

/// Reads one file's new lines into `batch`, committing along the way for a large file.
///
/// A file that cannot be opened or read is left for the next poll: its checkpoint only moves
/// over lines that were fully processed, so nothing is skipped. Store errors are fatal.
fn read_file(
    store: &mut Store,
    batch: &mut Batch,
    buf: &mut Vec<u8>,
    path: &Path,
    file: &LedgerFile,
    (stop, full_check): (&AtomicBool, FullCheck),
) -> Result<FileOutcome, StoreError> {
    let stat = file.stat;
    let checkpoint = store.checkpoint(&file.name)?;
    let mut tail = match tail::open(path, &stat, checkpoint.as_ref(), full_check) {
        Ok(Some(tail)) => tail,
        Ok(None) => return Ok(FileOutcome::Idle),
        Err(e) => return Ok(FileOutcome::Failed((e.kind(), e.to_string()))),
    };
    // One buffer for the whole poll, sized for what this file has to give: a new line does not
    // cost a megabyte of zeroes.
    let wanted = stat
        .size
        .saturating_sub(tail.consumed())
        .clamp(4096, tail::CHUNK as u64) as usize;
    if buf.len() < wanted {
        buf.resize(wanted, 0);
    }
    loop {
        let mut failure = None;
        let read = tail.next_chunk(buf, |lines, prefix| {
            let count = |(hash, decoded)| count_line(store, batch, hash, decoded);
            failure = parallel::decode_and_count(lines, prefix, count).err();
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for (hash, why) in tail.take_skipped() {
            count_line(store, batch, LineHash(hash), Decoded::Rejected(why))?;
        }
        let read = match read {
            Ok(read) => read,
            Err(e) => return Ok(FileOutcome::Failed((e.kind(), e.to_string()))),
        };
        batch.counts.bytes += read as u64;
        let checkpoint = match tail.checkpoint() {
            Ok(checkpoint) => checkpoint,
            Err(e) => return Ok(FileOutcome::Failed((e.kind(), e.to_string()))),
        };
        batch.set_checkpoint(file.name.clone(), checkpoint);
        if read == 0 {
            return Ok(FileOutcome::Read);
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(FileOutcome::Stopped);
        }
        if batch.is_full() {
            store.commit(std::mem::take(batch))?;
        }
    }
}

/// Dedupes and counts one hashed, decoded line.
fn count_line(
    store: &Store,
    batch: &mut Batch,
    hash: LineHash,
    decoded: Decoded<'_>,
) -> Result<(), StoreError> {
    let day = match &decoded {
        Decoded::Blank => return Ok(()),
        Decoded::Row(row) => row.day,
        Decoded::Rejected(_) => None,
    };
    if !store.mark_seen(batch, day, hash)? {
        batch.counts.duplicate += 1;
        return Ok(());
    }
    match decoded {
        Decoded::Row(row) => {
            batch.counts.counted += 1;
            batch.add(store.fold_known(), &row, Part::Whole);
        }
        Decoded::Rejected(why) => batch.counts.reject(why),
        Decoded::Blank => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::checkpoint::FileStat;

    fn file(name: &str, mtime_ns: i64) -> LedgerFile {
        LedgerFile {
            name: name.into(),
            stat: FileStat {
                dev: 1,
                ino: 1,
                size: 1,
                mtime_ns,
                ctime_ns: mtime_ns,
            },
        }
    }

    #[test]
    fn a_quick_poll_reads_a_handful_of_files_whatever_the_folder_holds() {
        const DAY_NS: i64 = 86_400 * 1_000_000_000;
        // 2026-12-04T12:00:00Z.
        let now = 1_796_385_600 * 1_000_000_000;
        let mut files = vec![
            file("2026-12-04.jsonl", now),
            file("2026-12-03.jsonl", now - DAY_NS),
            file("2026-12-06.jsonl", now - 3 * DAY_NS),
            file("2026-11-20.jsonl", now - 14 * DAY_NS),
            file("2026-11-30.jsonl", now - 4 * DAY_NS),
        ];
        // Thousands of conflict copies of today's file, restored at once.
        files.extend((0..5_000).map(|i| file(&format!("2026-12-04 ({i}).jsonl"), now - i)));
        let recent = recent_of(files, now);
        let names: Vec<String> = recent
            .iter()
            .map(|f| f.name.to_string_lossy().into_owned())
            .collect();
        assert_eq!(recent.len(), 3 + RECENT_BY_WRITE, "{names:?}");
        for name in [
            "2026-12-04.jsonl",
            "2026-12-03.jsonl",
            "2026-12-06.jsonl",
            "2026-12-04 (0).jsonl",
            "2026-12-04 (7).jsonl",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        assert!(
            !names
                .iter()
                .any(|n| n == "2026-11-20.jsonl" || n == "2026-11-30.jsonl")
        );
    }

    /// More small files of one day than a commit holds checkpoints of (contract §4): every line
    /// counted once across the commits, and a second poll finds nothing new in any file.
    #[test]
    fn files_past_a_commits_checkpoints_are_counted_once_across_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("stats");
        std::fs::create_dir(&stats).unwrap();
        const FILES: u64 = 4_100;
        for i in 0..FILES {
            let line = format!("{{\"ts\":\"2026-08-01T10:00:00Z\",\"model\":\"m/x\",\"total\":{i}}}\n");
            std::fs::write(stats.join(format!("2026-08-01 ({i}).jsonl")), line).unwrap();
        }
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        let first = poll(&mut store, &stats).unwrap();
        assert_eq!((first.files_read, first.counts.counted), (FILES as usize, FILES));
        assert_eq!(store.checkpoints().unwrap().len(), FILES as usize);
        let again = poll(&mut store, &stats).unwrap();
        assert_eq!((again.files_read, again.counts.read()), (0, 0));
    }
}

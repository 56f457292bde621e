//! sled, behind the few calls the store makes: how it is opened, the keys and their layouts, and
//! how a batch of writes reaches the disk.
//!
//! Keys (all values little-endian):
//! - `version` (u32), `created` (u64 ns since the epoch), `counts` ([`IngestCounts`]),
//!   `exports` (u64: delta exports begun; the export record outside sled has the last one's
//!   number), `pending.delta` ([`PendingExport`]);
//! - `t/<series key>` lifetime [`Totals`], `d/<series key>` delivered [`Totals`];
//! - `$/<cost key>` lifetime spend (u128, 10^-9 units), `$d/<cost key>` delivered spend;
//! - `u/<unpriced key>` lifetime unpriced requests (u64), `ud/<unpriced key>` delivered;
//! - `c/<file name>` a [`Checkpoint`]; `s/<day>/<bucket>` (`s/<day>/<depth>/<bucket>` once the
//!   day is split deeper than four) a seen-set [`Partition`], `sd/<day>` that depth (u8);
//! - while the cost pass of an upgraded store lasts (`cost_pass.rs`): `q/<file name>` its
//!   progress in that file, `p/<day>/…` and `pd/<day>` the lines whose cost it added.
//!
//! [`IngestCounts`]: super::counts::IngestCounts
//! [`PendingExport`]: super::pending::PendingExport
//! [`Totals`]: crate::series::Totals
//! [`Checkpoint`]: crate::ledger::checkpoint::Checkpoint
//! [`Partition`]: super::seen::Partition

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use super::StoreError;
use crate::series::{Family, Sums};

pub const KEY_VERSION: &[u8] = b"version";
pub const KEY_CREATED: &[u8] = b"created";
pub const KEY_COUNTS: &[u8] = b"counts";
pub const KEY_PENDING: &[u8] = b"pending.delta";
pub const KEY_EXPORTS: &[u8] = b"exports";
pub const PREFIX_CHECKPOINT_PASS: &[u8] = b"q/";
pub const PREFIX_CHECKPOINT: &[u8] = b"c/";

/// sled's page cache. The working set is a few day partitions and the totals; more cache only
/// grows the resident size.
const CACHE_BYTES: u64 = 16 << 20;

/// sled's log segment size for a new store (an existing one keeps the size it was made with).
/// Smaller segments keep most tree nodes in blob files, and with 64 KiB a `once` on a full disk
/// once hung for good inside sled (all threads parked); sled's default stays.
const SEGMENT_BYTES: usize = 512 << 10;

/// sled's log, in the store folder: the file it locks, and the one a flush writes.
pub const SLED_LOG: &str = "db";

/// How long an open waits for sled's lock on its log to be let go (see `wait_for_sled_release`).
const SLED_RELEASE_WAIT: Duration = Duration::from_secs(5);

/// Opens (or creates) the sled database in `path`.
pub fn open(path: &Path) -> Result<sled::Db, StoreError> {
    wait_for_sled_release(&path.join(SLED_LOG));
    sled::Config::new()
        .path(path)
        .cache_capacity(CACHE_BYTES)
        .flush_every_ms(None)
        .segment_size(existing_segment_size(path).unwrap_or(SEGMENT_BYTES))
        .open()
        .map_err(|e| sled_error(path, e))
}

/// Writes `write` atomically into sled's buffers; the next flush takes it to the log.
pub fn apply(db: &sled::Db, path: &Path, write: sled::Batch) -> Result<(), StoreError> {
    db.apply_batch(write).map_err(|e| sled_error(path, e))
}

/// Writes sled's buffers to the log and waits for them (sled's `flush`: `sync_file_range`, not
/// `fsync`).
pub fn flush(db: &sled::Db, path: &Path) -> Result<(), StoreError> {
    db.flush().map(drop).map_err(|e| sled_error(path, e))
}

/// Starts writing the dirty pages of `file` to disk, without waiting for them. sled rewrites
/// every free segment of its log at open (7 MB on a 1M-line store) and nothing needs those pages
/// on disk, but whoever syncs the file next pays for them all: sled itself, early in the next
/// open, if the kernel has not written them by then (it waits up to 30 s). Started once the
/// export record is on disk, or at the end of a run: not at open, where the writing would delay
/// the record's `fsync` behind it. Best effort: a failure costs time only.
pub fn start_writeback(file: &Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(file) {
        use std::os::fd::AsRawFd as _;
        // SAFETY: `file` is open for the whole call; `SYNC_FILE_RANGE_WRITE` over the whole
        // file only queues its dirty pages for writing, and touches no memory of ours.
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Waits until no one holds sled's lock on its log `db`, up to [`SLED_RELEASE_WAIT`]. sled lets
/// go of that lock from one of its pool threads, a moment after the last handle to a store is
/// dropped (spacejam/sled#1234), and fails an open that finds it held. The caller holds the state
/// lock, so a holder can only be a store this process has just closed. On a timeout, or a log
/// that cannot be opened, sled's open reports the problem.
fn wait_for_sled_release(db: &Path) {
    let Ok(log) = std::fs::File::open(db) else {
        return;
    };
    let deadline = Instant::now() + SLED_RELEASE_WAIT;
    // Our lock on `log`, when we get it, goes with `log` at the end of this function.
    while let Err(std::fs::TryLockError::WouldBlock) = log.try_lock() {
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The segment size an existing store was made with (sled refuses to open it with another),
/// from the `conf` file sled writes beside its log.
fn existing_segment_size(store: &Path) -> Option<usize> {
    let conf = std::fs::read(store.join("conf")).ok()?;
    let text = String::from_utf8_lossy(&conf);
    text.lines()
        .find_map(|line| line.strip_prefix("segment_size: "))
        .and_then(|n| n.trim().parse().ok())
}

/// Where the lifetime (or, with `delivered`, the delivered) sums of `family` live.
pub fn family_prefix(family: Family, delivered: bool) -> &'static [u8] {
    match (family, delivered) {
        (Family::Tokens, false) => b"t/",
        (Family::Tokens, true) => b"d/",
        (Family::Cost, false) => b"$/",
        (Family::Cost, true) => b"$d/",
        (Family::Unpriced, false) => b"u/",
        (Family::Unpriced, true) => b"ud/",
    }
}

/// Writes every entry of `sums` under the lifetime (or delivered) prefixes.
pub fn write_sums(write: &mut sled::Batch, sums: &Sums, delivered: bool) {
    for (family, key, value) in sums.encoded_entries() {
        write.insert([family_prefix(family, delivered), &key].concat(), value);
    }
}

pub fn checkpoint_key(name: &OsString) -> Vec<u8> {
    [PREFIX_CHECKPOINT, name.as_encoded_bytes()].concat()
}

/// A file name as stored (its OS bytes).
pub fn os_string_from_bytes(bytes: &[u8]) -> OsString {
    crate::paths::os_string_of(bytes.to_vec())
}

/// sled's I/O errors are the disk's (full, gone, out of descriptors): a store error that pauses
/// counting. Anything else is sled finding its log damaged.
pub fn sled_error(path: &Path, error: sled::Error) -> StoreError {
    match error {
        sled::Error::Io(source) => StoreError::io(path, source),
        other => StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: other.to_string(),
        },
    }
}

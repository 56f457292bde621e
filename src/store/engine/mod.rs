//! sled, behind the few calls the store makes: how it is opened and read, and how a [`Write`]
//! of the store's parts reaches the disk, atomically. Nothing else in the exporter names sled;
//! every key is in `keys.rs`.

pub mod keys;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::StoreError;
use crate::series::Sums;

/// sled's page cache. The working set is a few day partitions, the totals and the checkpoints a
/// poll asks for; more cache only grows the resident size (with the checkpoints held in memory,
/// 16 MiB kept an idle daemon over 50,000 day files at 41 MB and 4 MiB at 32 MB; the 1M-line
/// backfill's time is the same with either).
const CACHE_BYTES: u64 = 4 << 20;

/// sled's log segment size for a new store (an existing one keeps the size it was made with).
/// Smaller segments keep most tree nodes in blob files, and with 64 KiB a `once` on a full disk
/// once hung for good inside sled (all threads parked); sled's default stays.
const SEGMENT_BYTES: usize = 512 << 10;

/// sled's log, in the store folder: the file it locks, and the one a flush writes.
pub const SLED_LOG: &str = "db";

/// How long an open waits for sled's lock on its log to be let go (see `wait_for_sled_release`).
const SLED_RELEASE_WAIT: Duration = Duration::from_secs(5);

/// The store's database, open. A clone is another handle to the same database (see
/// `delivered.rs`).
#[derive(Clone)]
pub struct Engine {
    db: sled::Db,
    path: PathBuf,
}

/// Writes that reach the database together or not at all (see [`Engine::apply`]).
#[derive(Default)]
pub struct Write(sled::Batch);

impl Write {
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.0.insert(key.as_ref(), value.as_ref());
    }

    pub fn remove(&mut self, key: impl AsRef<[u8]>) {
        self.0.remove(key.as_ref());
    }

    /// Every entry of `sums` under the lifetime (or delivered) prefixes.
    pub fn sums(&mut self, sums: &Sums, delivered: bool) {
        for (family, key, value) in sums.encoded_entries() {
            self.insert([keys::family_prefix(family, delivered), &key].concat(), value);
        }
    }
}

/// A value (or key) as the database holds it.
pub struct Bytes(sled::IVec);

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Engine {
    /// Opens (or creates) the database in the folder `path`.
    pub fn open(path: &Path) -> Result<Engine, StoreError> {
        wait_for_sled_release(&path.join(SLED_LOG));
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(CACHE_BYTES)
            .flush_every_ms(None)
            .segment_size(existing_segment_size(path).unwrap_or(SEGMENT_BYTES))
            .open()
            .map_err(|e| sled_error(path, e))?;
        Ok(Engine {
            db,
            path: path.to_path_buf(),
        })
    }

    /// The store's folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The log a flush writes.
    pub fn log(&self) -> PathBuf {
        self.path.join(SLED_LOG)
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>, StoreError> {
        let value = self.db.get(key).map_err(|e| sled_error(&self.path, e))?;
        Ok(value.map(Bytes))
    }

    /// Every entry whose key starts with `prefix`, in key order, the prefix cut off the keys.
    pub fn scan<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = Result<(Bytes, Bytes), StoreError>> + 'a {
        self.db.scan_prefix(prefix).map(move |entry| {
            let (key, value) = entry.map_err(|e| sled_error(&self.path, e))?;
            Ok((
                Bytes(key.subslice(prefix.len(), key.len() - prefix.len())),
                Bytes(value),
            ))
        })
    }

    /// Adds to `write` the removal of every key that starts with `prefix`.
    pub fn remove_all(&self, write: &mut Write, prefix: &[u8]) -> Result<(), StoreError> {
        for key in self.db.scan_prefix(prefix).keys() {
            write.0.remove(key.map_err(|e| sled_error(&self.path, e))?);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.db.is_empty()
    }

    /// Writes `write` atomically into sled's buffers; the next flush takes it to the log.
    pub fn apply(&self, write: Write) -> Result<(), StoreError> {
        self.db
            .apply_batch(write.0)
            .map_err(|e| sled_error(&self.path, e))
    }

    /// Writes sled's buffers to the log and waits for them (sled's `flush`: `sync_file_range`,
    /// not `fsync`).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map(drop).map_err(|e| sled_error(&self.path, e))
    }

    /// Bytes the database takes on disk.
    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }

    /// Lets go of the database without the `fsync` sled makes on drop: only for a process about
    /// to exit, whose end closes it (see `Store::close_without_fsync`).
    pub fn leave_open(self) {
        std::mem::forget(self.db);
    }
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
pub(super) fn wait_for_sled_release(db: &Path) {
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
    // sled's configuration is a few lines: a larger file is not one it wrote.
    let conf = crate::own_files::read_own(&store.join("conf"), 4096).ok()?;
    let text = String::from_utf8_lossy(&conf);
    text.lines()
        .find_map(|line| line.strip_prefix("segment_size: "))
        .and_then(|n| n.trim().parse().ok())
}

/// sled's I/O errors are the disk's (full, gone, out of descriptors): a store error that pauses
/// counting. Anything else is sled finding its log damaged.
fn sled_error(path: &Path, error: sled::Error) -> StoreError {
    match error {
        sled::Error::Io(source) => StoreError::io(path, source),
        other => StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// What a backfill writes: batches of new partitions in key order (each a few KiB of
    /// hashes, the size of a day's partition), with a few small values every batch rewrites.
    fn backfill_like(engine: &Engine, batches: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut written = Vec::new();
        for batch in 0..batches {
            let mut write = Write::default();
            for partition in 0..130u32 {
                let key = [b"p".as_slice(), &batch.to_be_bytes(), &partition.to_be_bytes()].concat();
                let bytes = 3072 + (partition as usize * 97) % 3072;
                let seed = xxhash_rust::xxh3::xxh3_64(&key);
                let value: Vec<u8> = (0..bytes as u64)
                    .map(|i| (seed.wrapping_mul(i + 1) >> 56) as u8)
                    .collect();
                write.insert(&key, &value);
                written.push((key, value));
            }
            for small in 0..20u32 {
                write.insert(
                    [b"s".as_slice(), &small.to_be_bytes()].concat(),
                    batch.to_le_bytes(),
                );
            }
            engine.apply(write).unwrap();
        }
        written
    }

    #[test]
    fn large_values_written_in_key_order_take_little_more_than_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path()).unwrap();
        let written = backfill_like(&engine, 24);
        engine.flush().unwrap();
        let values: usize = written.iter().map(|(key, value)| key.len() + value.len()).sum();
        let disk = engine.size_on_disk() as usize;
        // 1.20 times its values here, the bound a little above; sled as published logs it at
        // 1.7 times, every split of a leaf and every tenth link writing its values again
        // (third_party/sled/PATCHES.md).
        assert!(
            disk * 3 < values * 4,
            "{disk} bytes on disk for {values} of values"
        );
    }

    /// Every entry of `engine`.
    fn entries(engine: &Engine) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let entries = engine.scan(&[]).map(|entry| entry.unwrap());
        entries
            .map(|(key, value)| (key.to_vec(), value.to_vec()))
            .collect()
    }

    #[test]
    fn batches_of_inserts_overwrites_and_removals_read_back_as_a_map_of_them_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path()).unwrap();
        let mut model = BTreeMap::new();
        let mut drawn = 0u64;
        let mut draw = |below: u64| {
            drawn += 1;
            xxhash_rust::xxh3::xxh3_64(&drawn.to_le_bytes()) % below
        };
        for batch in 0..60u32 {
            let mut write = Write::default();
            let mut writes = BTreeMap::new();
            // Keys anywhere, new and held, small values and large, some removed...
            for _ in 0..draw(150) {
                let key = format!("k{:04}", draw(3000)).into_bytes();
                if draw(5) == 0 {
                    write.remove(&key);
                    writes.insert(key, None);
                } else {
                    let len = if draw(3) == 0 { 1024 + draw(5000) } else { draw(64) };
                    let value = vec![draw(256) as u8; len as usize];
                    write.insert(&key, &value);
                    writes.insert(key, Some(value));
                }
            }
            // ... and new keys in order, as a backfill writes its days.
            for at in 0..draw(40) {
                let key = format!("n{batch:03}{at:03}").into_bytes();
                let value = vec![at as u8; 1024 + draw(5000) as usize];
                write.insert(&key, &value);
                writes.insert(key, Some(value));
            }
            engine.apply(write).unwrap();
            for (key, value) in writes {
                match value {
                    Some(value) => model.insert(key, value),
                    None => model.remove(&key),
                };
            }
        }
        assert_eq!(entries(&engine), model);
        engine.flush().unwrap();
        drop(engine);
        wait_for_sled_release(&dir.path().join(SLED_LOG));
        assert_eq!(entries(&Engine::open(dir.path()).unwrap()), model);
    }
}

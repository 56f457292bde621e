//! The store: the only durable state. A sled database under the state dir holding the seen set,
//! lifetime totals per attribute set, what has been delivered to the collector, per-file
//! checkpoints and ingestion counts. Every batch commits atomically, so a crash never leaves a
//! line counted without its hash, or a hash without its count.
//!
//! sled 0.34 is unmaintained; nothing outside `engine/` sees it (every call, and in `keys.rs`
//! every key), so a change of engine stays inside that folder.
//!
//! - `engine/`: sled's configuration, reads and writes ([`engine::Write`]), and the key table;
//! - `batch.rs`: what a poll has read and not yet committed;
//! - `partitions.rs`: the seen set's partitions as committed, and how a commit writes them;
//! - `pending.rs`: what the collector has (the delta export in flight, the stream record);
//! - `recovery.rs`: opening a store that was there, and refusing one that was damaged;
//! - `reopen.rs`: a store let go of after a fault, and opened again with what it must keep;
//! - `records/`: the small files beside the store that must survive a power cut (the stream
//!   record, the export record), in one checksummed frame;
//! - `upgrade/`: older formats converted where they are loaded, and the cost pass's store side.

mod batch;
pub mod counts;
mod engine;
#[cfg(test)]
mod formats;
pub mod lock;
mod partitions;
mod pending;
mod pending_export;
mod private_dir;
mod records;
mod recovery;
mod reopen;
pub mod seen;
pub mod upgrade;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::ledger::checkpoint::Checkpoint;
use crate::series::{AttrSet, Family, Sums, Totals};
pub use batch::Batch;
use counts::IngestCounts;
use engine::{Engine, Write, keys};
use lock::StateLock;
pub use pending_export::PendingExport;
use records::export_record;
pub use records::{history, stream};
pub use reopen::Released;
use stream::StreamRecord;

/// The layout of the store's keys and values (see `engine/keys.rs`). An older format this build
/// reads is upgraded where it is loaded (`upgrade/`); any other is refused with `--reset-state`
/// as the fix (the ledger is read again).
pub const FORMAT_VERSION: u32 = 5;

/// Beside the store: the creation time of the store that lives here.
const MARKER_FILE: &str = "store.created";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "state dir {path} is in use by another reasonix-exporter{}; stop it, or give this one its own --state-dir",
        owner.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked { path: PathBuf, owner: Option<u32> },
    #[error(
        "no store in {path}: nothing has been counted there; check --state-dir, or run `reasonix-exporter once` to count the ledger"
    )]
    Missing { path: PathBuf },
    #[error(
        "store at {path} is corrupted ({detail}); run once with --reset-state to rebuild it from the ledger"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "store at {path} was written by a newer reasonix-exporter (format {found}, this one reads {FORMAT_VERSION}); upgrade, or run with --reset-state to rebuild it"
    )]
    NewerFormat { path: PathBuf, found: u32 },
    #[error(
        "store at {path}: {error}; check that the state dir is writable and its disk has room, or choose another with --state-dir"
    )]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{0}")]
    InTheWay(String),
    #[error(
        "state dir {path} can be written by other users and is not the exporter's to fix (another user's, or shared like /tmp); choose a folder of your own with --state-dir"
    )]
    NotPrivate { path: PathBuf },
}

impl StoreError {
    /// The disk said no at `path` (full, gone, out of descriptors, not allowed), or a folder is
    /// where the exporter keeps a file.
    pub fn io(path: &Path, error: std::io::Error) -> StoreError {
        // Only where the exporter said so (`files::in_the_way`): sled's own paths are the store's.
        if error.kind() == std::io::ErrorKind::IsADirectory && error.get_ref().is_some() {
            return StoreError::InTheWay(error.to_string());
        }
        StoreError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// The open store. One per state dir per machine, enforced by [`StateLock`].
pub struct Store {
    db: Engine,
    created: SystemTime,
    lifetime: Sums,
    delivered: Sums,
    /// What the cost pass of an upgraded store has still to read (see `store/upgrade/cost_pass.rs`).
    cost_pass: BTreeMap<OsString, upgrade::cost_pass::PassFile>,
    counts: IngestCounts,
    pending: Option<PendingExport>,
    /// Exports ever begun.
    exports: u64,
    /// Commits wait for the next flush (see [`Store::defer_commit_flush`]).
    defer_commit_flush: bool,
    /// The last delta export begun, kept outside sled (see `export_record`).
    record: PathBuf,
    /// The cumulative stream, kept outside sled (see `stream`).
    stream: StreamRecord,
    stream_path: PathBuf,
    history_path: PathBuf,
    /// With a stream that published attribute sets this store has not counted (yet): those and
    /// the lifetime's, for the cardinality fold (see [`Store::fold_known`]).
    fold_known: Option<BTreeMap<AttrSet, Totals>>,
    _lock: StateLock,
}

impl Store {
    /// Opens (or creates) the store under `state_dir`. With `reset`, an existing store is deleted
    /// first: the ledger is then read again from the start.
    pub fn open(state_dir: &Path, reset: bool) -> Result<Store, StoreError> {
        Store::open_as(state_dir, reset, false)
    }

    /// Opens the store to read it for a moment (`status`, `doctor`): a `run` or `once` starting
    /// meanwhile waits for it rather than fail (see [`lock`]).
    pub fn open_briefly(state_dir: &Path) -> Result<Store, StoreError> {
        Store::open_as(state_dir, false, true)
    }

    fn open_as(state_dir: &Path, reset: bool, brief: bool) -> Result<Store, StoreError> {
        // A brief reader never creates a store: a mistyped --state-dir is an error, not zeros.
        if brief && !state_dir.join("store").is_dir() {
            return Err(StoreError::Missing {
                path: state_dir.to_path_buf(),
            });
        }
        std::fs::create_dir_all(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
        private_dir::private_state_dir(state_dir)?;
        // The store's folder is the engine's to open, which follows links: none is taken.
        let store_dir = state_dir.join("store");
        if std::fs::symlink_metadata(&store_dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StoreError::io(
                &store_dir,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a symbolic link, which the exporter never follows: remove it",
                ),
            ));
        }
        let lock = StateLock::acquire(state_dir, brief)?;
        let path = state_dir.join("store");
        let marker = state_dir.join(MARKER_FILE);
        let record = export_record::path_in(state_dir);
        let stream_path = stream::path_in(state_dir);
        if reset {
            for target in [&path, &marker, &record] {
                recovery::remove_if_present(target)?;
            }
        }
        // The stream outlives the store: a rebuilt store continues it. Only a damaged record is
        // replaced, and only when asked to (`--reset-state`).
        let stream = match stream::read(&stream_path) {
            Err(StoreError::Corrupt { .. }) if reset => {
                recovery::remove_if_present(&stream_path)?;
                None
            }
            other => other?,
        };
        // A store folder that is gone was deleted (start over); one that is there but opens
        // empty was damaged (refuse).
        let existed = path.exists();
        let db = Engine::open(&path)?;
        let mut store = Store {
            db,
            created: SystemTime::now(),
            lifetime: Sums::default(),
            delivered: Sums::default(),
            cost_pass: BTreeMap::new(),
            counts: IngestCounts::default(),
            pending: None,
            exports: 0,
            defer_commit_flush: false,
            record,
            stream: StreamRecord::default(),
            stream_path,
            history_path: records::history::path_in(state_dir),
            fold_known: None,
            _lock: lock,
        };
        store.load(&marker, existed)?;
        // A store without a stream record (new, or whose record was deleted) starts its stream
        // at its own creation: what `/metrics` gives as `_created`.
        store.stream = stream.unwrap_or_else(|| StreamRecord::starting(store.created_ns()));
        store.refresh_fold_known();
        Ok(store)
    }

    /// The attribute sets that exist for the cardinality fold (docs/counting-rules.md,
    /// "Attributes"): the lifetime's, and every set the stream has sent or served. A store
    /// rebuilt from the ledger reads it in another order than it first grew, and would otherwise
    /// keep other sets than the 1,000 its backend has, and fold some the backend holds.
    pub fn fold_known(&self) -> &BTreeMap<AttrSet, Totals> {
        self.fold_known.as_ref().unwrap_or(&self.lifetime.tokens)
    }

    /// Takes the stream record's attribute sets into the fold (see [`Store::fold_known`]): at
    /// open, and when a store made anew takes on the stream of the one before.
    pub fn refresh_fold_known(&mut self) {
        self.fold_known = self.published_but_not_counted();
    }

    /// The lifetime's attribute sets and those of the stream record, when the record has some
    /// the lifetime has not.
    fn published_but_not_counted(&self) -> Option<BTreeMap<AttrSet, Totals>> {
        let born = self
            .stream
            .births
            .keys()
            .filter(|(family, _)| *family == Family::Tokens);
        let published: Vec<AttrSet> = born
            .filter_map(|(_, key)| AttrSet::decode(key))
            .chain(self.stream.marks.tokens.keys().cloned())
            .chain(self.stream.served.tokens.keys().cloned())
            .filter(|attrs| !self.lifetime.tokens.contains_key(attrs))
            .collect();
        if published.is_empty() {
            return None;
        }
        let mut known = self.lifetime.tokens.clone();
        known.extend(published.into_iter().map(|attrs| (attrs, Totals::default())));
        Some(known)
    }

    fn get(&self, key: &[u8]) -> Result<Option<engine::Bytes>, StoreError> {
        self.db.get(key)
    }

    /// Writes `batch` atomically, and flushes it unless told to wait for the next flush (see
    /// [`Store::defer_commit_flush`]); only then does the in-memory view move.
    pub fn commit(&mut self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut write = Write::default();
        self.write_partitions(&mut write, &batch.partitions)?;
        let lifetime = self
            .lifetime
            .after_adding(&batch.series.by_series(&self.lifetime));
        write.sums(&lifetime, false);
        let cost_pass = match &batch.pass {
            Some(pass) => Some(self.write_cost_pass(&mut write, &pass.costed, &pass.progress)?),
            None => None,
        };
        let mut counts = self.counts;
        counts.add(&batch.counts);
        write.insert(keys::COUNTS, counts.encode());
        self.apply_without_flush(write)?;
        self.write_checkpoints(&batch.checkpoints)?;
        if !self.defer_commit_flush {
            self.flush()?;
        }

        if let Some(known) = &mut self.fold_known {
            known.extend(
                lifetime
                    .tokens
                    .keys()
                    .map(|attrs| (attrs.clone(), Totals::default())),
            );
        }
        self.lifetime.overwrite_with(lifetime);
        if let Some(cost_pass) = cost_pass {
            self.cost_pass = cost_pass;
        }
        self.counts = counts;
        Ok(())
    }

    /// Writes the checkpoints of a commit after what it counted, a few hundred to a write. sled
    /// keeps every version of a node that one write touches until the write ends, so one write of
    /// thousands of small files' checkpoints cost kilobytes of memory a file (50,000 files of the
    /// same three days: 262 MB). A checkpoint is a read position, never an identity: one lost
    /// after the lines it covers were committed makes the file read again from where the last
    /// one said, and every line read again is a duplicate, never counted twice.
    fn write_checkpoints(&self, checkpoints: &HashMap<OsString, Checkpoint>) -> Result<(), StoreError> {
        const PER_WRITE: usize = 256;
        let all: Vec<(&OsString, &Checkpoint)> = checkpoints.iter().collect();
        for chunk in all.chunks(PER_WRITE) {
            let mut write = Write::default();
            for (name, checkpoint) in chunk {
                write.insert(keys::checkpoint(name), checkpoint.encode());
            }
            self.apply_without_flush(write)?;
        }
        Ok(())
    }

    /// Closes the store at the end of the process without the `fsync` sled makes on drop: what
    /// has to survive a power cut already did (see [`Store::begin_export`]), and everything
    /// committed is in the kernel's hands, which a `kill -9` at this point would also leave.
    /// That `fsync` is half of a short `once`'s wall time.
    ///
    /// Only for a process about to exit: sled's threads and the state lock live on until then,
    /// so no other process can open the store while they might still write.
    pub fn close_without_fsync(self) -> Result<(), StoreError> {
        self.flush()?;
        engine::start_writeback(&self.db.log());
        let Store { db, _lock, .. } = self;
        db.leave_open();
        std::mem::forget(_lock);
        Ok(())
    }

    fn apply(&self, write: Write) -> Result<(), StoreError> {
        self.apply_without_flush(write)?;
        self.flush()
    }

    fn apply_without_flush(&self, write: Write) -> Result<(), StoreError> {
        self.db.apply(write)
    }

    /// Writes `write` atomically, and flushes it unless [`Store::defer_commit_flush`] leaves
    /// that to the next flush: for commits, and for what marks an export delivered, which needs
    /// no flush of its own (lost, the record's pending export is replayed when cumulative or
    /// counted as delivered when delta, as after a power cut), so that a `once` waits for the
    /// disk once after its send, not twice.
    fn apply_unless_deferred(&self, write: Write) -> Result<(), StoreError> {
        if self.defer_commit_flush {
            self.apply_without_flush(write)
        } else {
            self.apply(write)
        }
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()
    }

    /// For a process that ingests once and then ends (`once`): commits stay in sled's buffers
    /// until the next flush — the export's record, or [`Store::close_without_fsync`] — which then
    /// writes them all at once instead of one wait per commit. A `kill -9` in between loses
    /// those commits, and the next run reads the same lines again: nothing is lost or doubled.
    /// The same goes for what marks an export delivered (see `apply_unless_deferred`), and the
    /// writeback of what sled dirtied at open starts at the close rather than before the send.
    /// Not for `run`, whose `/metrics` serves what is committed.
    pub fn defer_commit_flush(&mut self) {
        self.defer_commit_flush = true;
    }

    /// Lifetime sums per series: everything ever counted.
    pub fn lifetime(&self) -> &Sums {
        &self.lifetime
    }

    /// What has been delivered to the collector, per series.
    pub fn delivered(&self) -> &Sums {
        &self.delivered
    }

    /// Token series (attribute sets) known.
    pub fn series_count(&self) -> usize {
        self.lifetime.tokens.len()
    }

    /// Where reading `file` stopped, read from the store when asked: tens of thousands of day
    /// files' checkpoints held in memory were most of an idle daemon's resident size, and sled's
    /// cache keeps the ones a poll asks for often. One that cannot be decoded is none: a
    /// checkpoint is a read position, and the file read again from its start counts nothing twice.
    pub fn checkpoint(&self, file: &OsString) -> Result<Option<Checkpoint>, StoreError> {
        Ok(self
            .get(&keys::checkpoint(file))?
            .and_then(|bytes| Checkpoint::decode(&bytes)))
    }

    /// Every file's checkpoint, by name.
    pub(super) fn checkpoints(&self) -> Result<Vec<(OsString, Checkpoint)>, StoreError> {
        self.load_by_file(keys::CHECKPOINTS, Checkpoint::decode, "checkpoint")
    }

    pub fn counts(&self) -> &IngestCounts {
        &self.counts
    }

    /// When the store's counters started: the start of its cumulative stream.
    pub fn stream_start(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(self.stream.start_ns)
    }

    fn created_ns(&self) -> u64 {
        self.created
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64
    }

    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// Bytes the store takes on disk.
    pub fn disk_size(&self) -> u64 {
        self.db.size_on_disk()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::series::{AttrSet, Quantity, Totals};

    fn export(store: &mut Store, lines: u64) {
        let mut delivered_after = Sums::default();
        let mut totals = Totals::default();
        totals.set(Quantity::Requests, lines);
        delivered_after.tokens.insert(AttrSet::folded(), totals);
        let pending = PendingExport { delivered_after };
        store.begin_export(pending).unwrap();
    }

    #[test]
    fn a_store_behind_its_export_record_takes_the_recorded_export_as_pending() {
        let dir = tempfile::tempdir().unwrap();
        let backup = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path(), false).unwrap();
            export(&mut store, 1);
            store.finish_export().unwrap();
        }
        copy(&dir.path().join("store"), &backup.path().join("store"));
        {
            let mut store = Store::open(dir.path(), false).unwrap();
            export(&mut store, 2);
            export(&mut store, 3);
        }
        // sled loses the last two exports; the record keeps the last one.
        std::fs::remove_dir_all(dir.path().join("store")).unwrap();
        copy(&backup.path().join("store"), &dir.path().join("store"));
        let mut store = Store::open(dir.path(), false).unwrap();
        assert_eq!(store.exports, 3);
        let pending = store.pending_export().expect("the recorded export is pending");
        assert_eq!(
            pending.delivered_after.tokens[&AttrSet::folded()].get(Quantity::Requests),
            3
        );
        store.finish_export().unwrap();
        assert_eq!(
            store.delivered().tokens[&AttrSet::folded()].get(Quantity::Requests),
            3
        );
        drop(store);
        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!((store.exports, store.pending_export()), (3, None));
    }

    /// What a `kill -9` leaves of a store still open: its files as the kernel has them.
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.file_name().unwrap());
            if path.is_dir() {
                copy(&path, &target);
            } else {
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }

    #[test]
    fn in_once_an_export_outcome_lost_to_a_kill_leaves_the_export_pending_and_exact() {
        for once in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let killed = tempfile::tempdir().unwrap();
            let mut store = Store::open(dir.path(), false).unwrap();
            if once {
                store.defer_commit_flush();
            }
            export(&mut store, 1);
            store.finish_export().unwrap();
            copy(dir.path(), killed.path());
            drop(store);

            let mut store = Store::open(killed.path(), false).unwrap();
            assert_eq!(store.exports, 1);
            if once {
                // The answer's write waited for the close's flush, which the kill prevented.
                let pending = store.pending_export().expect("the export is still pending");
                assert_eq!(
                    pending.delivered_after.tokens[&AttrSet::folded()].get(Quantity::Requests),
                    1
                );
                store.finish_export().unwrap();
            } else {
                assert!(store.pending_export().is_none(), "`run` flushes it at once");
            }
            assert_eq!(
                store.delivered().tokens[&AttrSet::folded()].get(Quantity::Requests),
                1
            );
        }
    }

    #[test]
    fn in_once_a_refused_export_is_forgotten_before_a_kill_can_lose_that() {
        // Left pending, a refused delta export would count as delivered on the next run.
        let dir = tempfile::tempdir().unwrap();
        let killed = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), false).unwrap();
        store.defer_commit_flush();
        export(&mut store, 1);
        store.abandon_export().unwrap();
        copy(dir.path(), killed.path());
        drop(store);
        let store = Store::open(killed.path(), false).unwrap();
        assert!(store.pending_export().is_none());
    }

    #[test]
    fn an_open_waits_for_a_just_closed_store_to_let_go_of_sleds_lock() {
        // sled lets go of its lock a moment after the drop, from a pool thread of its own. Here
        // the test holds that lock instead, for a while after the next open has begun.
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path(), false).unwrap());
        let log = std::fs::File::open(dir.path().join("store").join(engine::SLED_LOG)).unwrap();
        log.lock().unwrap();
        let state_lock = dir.path().join("lock");
        std::fs::remove_file(&state_lock).unwrap();
        let state_dir = dir.path().to_path_buf();
        let opener = std::thread::spawn(move || Store::open(&state_dir, false).map(drop));
        // The opener writes its pid into the state lock once it holds it; sled's open follows.
        while std::fs::read(&state_lock).map_or(true, |pid| pid.is_empty()) && !opener.is_finished() {
            std::thread::yield_now();
        }
        let watch_until = Instant::now() + Duration::from_millis(200);
        while !opener.is_finished() && Instant::now() < watch_until {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!opener.is_finished(), "the open ended while sled's lock was held");
        drop(log);
        let opened = opener.join().unwrap();
        assert!(opened.is_ok(), "{}", opened.unwrap_err());
    }
}

//! The count store: what was counted (the seen set, the lifetime sums, checkpoints, counts),
//! opened, committed to and closed. What backends have received is `delivery/`'s.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use super::batch::Batch;
use super::counts::IngestCounts;
use super::delivered::DeliveredTable;
use super::engine::{self, Engine, Write, keys};
use super::error::StoreError;
use super::lock::StateLock;
use super::pass_regions::PassFile;
use super::records::export_record;
use super::{compaction, partitions, private_dir};
use crate::events;
use crate::ledger::checkpoint::Checkpoint;
use crate::series::{AttrSet, Sums, Totals};

/// Beside the store: the creation time of the store that lives here.
const MARKER_FILE: &str = "store.created";

/// The open store. One per state dir per machine, enforced by [`StateLock`].
pub struct Store {
    pub(super) db: Engine,
    pub(super) created: SystemTime,
    pub(super) lifetime: Sums,
    /// What the cost pass of an upgraded store has still to read (see `store/upgrade/before_cost.rs`).
    pub(super) cost_pass: BTreeMap<OsString, PassFile>,
    pub(super) counts: IngestCounts,
    /// Commits wait for the next flush (see [`Store::defer_commit_flush`]).
    pub(super) defer_commit_flush: bool,
    /// The last delta export begun, kept outside sled (see `export_record`): removed with the
    /// store it belongs to.
    pub(super) record: PathBuf,
    /// With a stream that published attribute sets this store has not counted (yet): those and
    /// the lifetime's, for the cardinality fold (see [`Store::fold_known`]).
    pub(super) fold_known: Option<BTreeMap<AttrSet, Totals>>,
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
        let present = |name: &str| state_dir.join(name).is_dir();
        // ... but one a swap left between its renames is finished (`compaction.rs`).
        let swapping = present(compaction::OLD) && present(compaction::NEXT);
        if brief && !present("store") && !swapping {
            return Err(StoreError::Missing {
                path: state_dir.to_path_buf(),
            });
        }
        std::fs::create_dir_all(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
        private_dir::private_state_dir(state_dir)?;
        // The store's folder is the engine's to open, which follows links: none is taken, the
        // folder's own nor one planted among its files (its log, its configuration, its
        // snapshots, its blobs).
        refuse_links(&state_dir.join("store"))?;
        let lock = StateLock::acquire(state_dir, brief)?;
        compaction::finish_interrupted(state_dir)?;
        if brief && !present("store") {
            return Err(StoreError::Missing {
                path: state_dir.to_path_buf(),
            });
        }
        if reset {
            let path = state_dir.join("store");
            let marker = state_dir.join(MARKER_FILE);
            let record = export_record::path_in(state_dir);
            for target in [&path, &marker, &record] {
                crate::own_files::remove_if_present(target).map_err(|e| StoreError::io(target, e))?;
            }
        }
        Store::open_locked(state_dir, lock, !brief)
    }

    /// Opens the store under `state_dir`, whose lock is `lock`; compacted first when it is due
    /// and `may_compact` (see `compaction.rs`).
    fn open_locked(state_dir: &Path, lock: StateLock, may_compact: bool) -> Result<Store, StoreError> {
        let path = state_dir.join("store");
        let marker = state_dir.join(MARKER_FILE);
        // A store folder that is gone was deleted (start over); one that is there but opens
        // empty was damaged (refuse).
        let existed = path.exists();
        let db = Engine::open(&path)?;
        let mut store = Store {
            db,
            created: SystemTime::now(),
            lifetime: Sums::default(),
            cost_pass: BTreeMap::new(),
            counts: IngestCounts::default(),
            defer_commit_flush: false,
            record: export_record::path_in(state_dir),
            fold_known: None,
            _lock: lock,
        };
        store.load(&marker, existed)?;
        if may_compact && store.compaction_wanted() {
            return store.compacted();
        }
        Ok(store)
    }

    /// The state dir: the folder the store is in.
    pub fn state_dir(&self) -> PathBuf {
        match self.path().parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    /// Whether the store is due for compaction and this process may still compact
    /// (`compaction::allowed`).
    fn compaction_wanted(&self) -> bool {
        self.compaction_due() && compaction::allowed()
    }

    /// Whether sled's log has grown far past what the store holds (see `compaction.rs`).
    pub(super) fn compaction_due(&self) -> bool {
        let lines = self.counts.counted + self.counts.rejected_total();
        compaction::is_due(self.disk_size(), lines)
    }

    /// The store copied into a new database that takes its place, and opened again. A copy that
    /// fails leaves the store as it was, said once; what the store holds is the same either way.
    pub(super) fn compacted(self) -> Result<Store, StoreError> {
        let state_dir = &self.state_dir();
        let started = Instant::now();
        // What a deferred commit left in sled's buffers is on disk before the store is let go,
        // and an error writing it is this store's, not the copy's.
        self.flush()?;
        let before = self.disk_size();
        let copied = compaction::copy(&self.db, state_dir);
        let Store { db, _lock, .. } = self;
        drop(db);
        let result = copied.and_then(|()| compaction::swap(state_dir));
        // Said, and no other tried, before the store opens again: on a disk the copy filled,
        // that open can fail too (sled writes as it opens), and a daemon that retries it must
        // not copy again each time.
        if let Err(error) = &result {
            events::store::compaction_failed(error);
            compaction::give_up();
        }
        compaction::finish_interrupted(state_dir)?;
        let store = Store::open_locked(state_dir, _lock, false)?;
        if result.is_ok() {
            events::store::compacted(before, store.disk_size(), started.elapsed());
            if store.compaction_due() {
                compaction::give_up();
            }
        }
        Ok(store)
    }

    /// Closes the store and opens it again, compacted if that is due (and allowed: see
    /// `compaction::allowed`), without letting go of the
    /// state lock: sled's page table and cache start afresh (after a backfill, most of a
    /// daemon's resident size). What the store holds is the same.
    pub fn reopen(self) -> Result<Store, StoreError> {
        let state_dir = self.state_dir();
        let defer_commit_flush = self.defer_commit_flush;
        let Store { db, _lock, .. } = self;
        drop(db);
        let mut store = Store::open_locked(&state_dir, _lock, true)?;
        store.defer_commit_flush = defer_commit_flush;
        Ok(store)
    }

    /// Delivery's handle on the database (see `delivered.rs`).
    pub fn delivered_table(&self) -> DeliveredTable {
        DeliveredTable::new(self.db.clone(), self.defer_commit_flush)
    }

    /// The attribute sets that exist for the cardinality fold (docs/counting-rules.md,
    /// "Attributes"): the lifetime's, and every set a backend has been sent or served. A store
    /// rebuilt from the ledger reads it in another order than it first grew, and would otherwise
    /// keep other sets than the 1,000 its backend has, and fold some the backend holds.
    pub fn fold_known(&self) -> &BTreeMap<AttrSet, Totals> {
        self.fold_known.as_ref().unwrap_or(&self.lifetime.tokens)
    }

    /// Takes the attribute sets backends have (`delivery/`) into the fold (see
    /// [`Store::fold_known`]): at open, and when a store made anew takes on the stream of the
    /// one before.
    pub fn take_published(&mut self, published: impl IntoIterator<Item = AttrSet>) {
        self.fold_in(published);
    }

    /// Adds `sets` to those the fold knows: the lifetime's token series by default, and with
    /// them the sets only a cost family has (rows with a quote and no counts: a set is one of
    /// the 1,000 whichever family holds it) and those a stream published.
    pub(super) fn fold_in(&mut self, sets: impl IntoIterator<Item = AttrSet>) {
        let sets: Vec<AttrSet> = sets
            .into_iter()
            .filter(|attrs| !self.fold_known().contains_key(attrs))
            .collect();
        if sets.is_empty() {
            return;
        }
        let mut known = self
            .fold_known
            .take()
            .unwrap_or_else(|| self.lifetime.tokens.clone());
        known.extend(sets.into_iter().map(|attrs| (attrs, Totals::default())));
        self.fold_known = Some(known);
    }

    pub(super) fn get(&self, key: &[u8]) -> Result<Option<engine::Bytes>, StoreError> {
        self.db.get(key)
    }

    /// Writes `batch` atomically, and flushes it unless told to wait for the next flush (see
    /// [`Store::defer_commit_flush`]); only then does the in-memory view move.
    pub fn commit(&mut self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut write = Write::default();
        partitions::write(&self.db, &mut write, &batch.partitions)?;
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
        let sets: Vec<AttrSet> = lifetime.attr_sets().into_iter().cloned().collect();
        self.lifetime.overwrite_with(lifetime);
        self.fold_in(sets);
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
    /// has to survive a power cut already did (see `Delivery::begin_export`), and everything
    /// committed is in the kernel's hands, which a `kill -9` at this point would also leave.
    /// That `fsync` is half of a short `once`'s wall time.
    ///
    /// Only for a process about to exit: sled's threads and the state lock live on until then,
    /// so no other process can open the store while they might still write.
    ///
    /// A store whose log has grown far past what it holds (a busy day's backfill) is compacted
    /// first, so that the next open does not pay for that log (see `compaction.rs`): no other
    /// handle on the database may be left (delivery's is dropped before).
    pub fn close_without_fsync(self) -> Result<(), StoreError> {
        let store = if self.compaction_wanted() {
            self.compacted()?
        } else {
            self
        };
        store.flush()?;
        engine::start_writeback(&store.db.log());
        let Store { db, _lock, .. } = store;
        db.leave_open();
        std::mem::forget(_lock);
        Ok(())
    }

    pub(super) fn apply(&self, write: Write) -> Result<(), StoreError> {
        self.apply_without_flush(write)?;
        self.flush()
    }

    pub(super) fn apply_without_flush(&self, write: Write) -> Result<(), StoreError> {
        self.db.apply(write)
    }

    pub(super) fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()
    }

    /// For a process that ingests once and then ends (`once`): commits stay in sled's buffers
    /// until the next flush — the export's record, or [`Store::close_without_fsync`] — which then
    /// writes them all at once instead of one wait per commit. A `kill -9` in between loses
    /// those commits, and the next run reads the same lines again: nothing is lost or doubled.
    /// The same goes for what marks an export delivered (see `DeliveredTable::settle`, whose
    /// handle is taken after this is set), and the writeback of what sled dirtied at open starts at the close rather than before the send.
    /// Not for `run`, whose `/metrics` serves what is committed.
    pub fn defer_commit_flush(&mut self) {
        self.defer_commit_flush = true;
    }

    /// Lifetime sums per series: everything ever counted.
    pub fn lifetime(&self) -> &Sums {
        &self.lifetime
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
    pub fn checkpoints(&self) -> Result<Vec<(OsString, Checkpoint)>, StoreError> {
        self.load_by_file(keys::CHECKPOINTS, Checkpoint::decode, "checkpoint")
    }

    /// Up to `limit` checkpoints whose full verification is due at `now_ns`
    /// (`Checkpoint::verification_due`), by name, after the name `after` if given (a search goes
    /// on where the last one stopped); read as the store is scanned, none held.
    pub fn due_checkpoints(
        &self,
        now_ns: u64,
        limit: usize,
        after: Option<&OsString>,
    ) -> Result<Vec<(OsString, Checkpoint)>, StoreError> {
        let after = after.map(|name| name.as_encoded_bytes());
        let mut due = Vec::new();
        for entry in self.db.scan(keys::CHECKPOINTS) {
            let (name, value) = entry?;
            if after.is_some_and(|after| &*name <= after) {
                continue;
            }
            let Some(checkpoint) = Checkpoint::decode(&value).filter(|c| c.verification_due(now_ns)) else {
                continue;
            };
            due.push((crate::paths::os_string_of(name.to_vec()), checkpoint));
            if due.len() == limit {
                break;
            }
        }
        Ok(due)
    }

    pub fn counts(&self) -> &IngestCounts {
        &self.counts
    }

    /// When the store was made, in Unix nanoseconds.
    pub fn created_ns(&self) -> u64 {
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

/// An error when `store` (the engine's folder), or an entry of it or of its blobs' folder, is a
/// symbolic link: sled opens them by name and would follow it.
fn refuse_links(store: &Path) -> Result<(), StoreError> {
    let link = |path: &Path| {
        StoreError::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link, which the exporter never follows: remove it",
            ),
        )
    };
    let is_link = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link(store) {
        return Err(link(store));
    }
    for folder in [store.to_path_buf(), store.join("blobs")] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            // Not there yet (a new store), or not a folder: the engine's open says what is wrong.
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
                return Err(link(&entry.path()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

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

    /// Every key and value of `store` but its format version.
    fn contents(store: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
        let entries = store.db.scan(&[]).map(|entry| entry.unwrap());
        let entries = entries.map(|(key, value)| (key.to_vec(), value.to_vec()));
        entries
            .filter(|(key, _)| key.as_slice() != keys::VERSION)
            .collect()
    }

    #[test]
    fn a_store_of_format_6_gains_this_formats_version_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let before = {
            let store = Store::open(dir.path(), false).unwrap();
            let mut write = Write::default();
            write.insert(keys::VERSION, 6u32.to_le_bytes());
            store.apply(write).unwrap();
            contents(&store)
        };
        let store = Store::open(dir.path(), false).unwrap();
        let version = store.get(keys::VERSION).unwrap().unwrap();
        assert_eq!(&*version, &keys::FORMAT_VERSION.to_le_bytes()[..]);
        assert_eq!(keys::FORMAT_VERSION, 7);
        assert_eq!(contents(&store), before);
    }
}

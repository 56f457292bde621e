//! The store: the only durable state. A sled database under the state dir holding the seen set,
//! lifetime totals per attribute set, what has been delivered to the collector, per-file
//! checkpoints and ingestion counts. Every batch commits atomically, so a crash never leaves a
//! line counted without its hash, or a hash without its count.
//!
//! sled 0.34 is unmaintained; nothing outside this module sees it, so a change of engine touches
//! this file alone.

pub mod counts;
mod durable;
mod export_record;
pub mod lock;
pub mod seen;
pub mod stream;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use xxhash_rust::xxh3::Xxh3Builder;

use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
use crate::ledger::timestamp::Day;
use crate::series::{AttrSet, MAX_SERIES, Totals};
use counts::IngestCounts;
use export_record::ExportRecord;
use lock::StateLock;
use seen::{LineHash, Partition, PartitionKey};
use stream::StreamRecord;

/// The on-disk format this build writes. A store with a higher number was written by a newer
/// release and is refused rather than misread.
pub const FORMAT_VERSION: u32 = 3;

const KEY_VERSION: &[u8] = b"version";
const KEY_CREATED: &[u8] = b"created";
const KEY_COUNTS: &[u8] = b"counts";
const KEY_PENDING: &[u8] = b"pending.delta";
/// Format 2's pending export, of either temporality (see `migrate_from_2`).
const KEY_PENDING_2: &[u8] = b"pending";
/// How many exports were ever begun: the export record outside sled has the last one's number.
const KEY_EXPORTS: &[u8] = b"exports";
const PREFIX_TOTALS: &[u8] = b"t/";
const PREFIX_DELIVERED: &[u8] = b"d/";
const PREFIX_CHECKPOINT: &[u8] = b"c/";

/// Beside the store: the creation time of the store that lives here.
const MARKER_FILE: &str = "store.created";

/// sled's page cache. The working set is a few day partitions and the totals; more cache only
/// grows the resident size.
const CACHE_BYTES: u64 = 16 << 20;

/// sled's log segment size for a new store (an existing one keeps the size it was made with).
/// Smaller segments keep most tree nodes in blob files, and with 64 KiB a `once` on a full disk
/// once hung for good inside sled (all threads parked, in CI); sled's default stays.
/// BENCHMARKS.md has the measurements.
const SEGMENT_BYTES: usize = 512 << 10;

/// sled's log, in the store folder: the file it locks, and the one a flush writes.
const SLED_LOG: &str = "db";

/// How long an open waits for sled's lock on its log to be let go (see `wait_for_sled_release`).
const SLED_RELEASE_WAIT: Duration = Duration::from_secs(5);

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
}

/// A delta export that was sent, or is about to be, and not yet confirmed. Kept durably so that
/// a run that dies before the collector's answer leaves it for the next run to settle: its
/// outcome is unknown, so it counts as delivered (delta may under-count, never over-count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingExport {
    /// `delivered` per series once the collector has it.
    pub delivered_after: BTreeMap<AttrSet, Totals>,
}

impl PendingExport {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.delivered_after.len() * 96);
        for (attrs, totals) in &self.delivered_after {
            let key = attrs.encode();
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(&key);
            out.extend_from_slice(&totals.encode());
        }
        out
    }

    fn decode(mut bytes: &[u8]) -> Option<PendingExport> {
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = bytes.split_at_checked(n)?;
            bytes = tail;
            Some(head)
        };
        let mut delivered_after = BTreeMap::new();
        while let Some(len) = take(4) {
            let key_len = u32::from_le_bytes(len.try_into().ok()?) as usize;
            let attrs = AttrSet::decode(take(key_len)?)?;
            let totals = Totals::decode(take(Totals::ENCODED_LEN)?)?;
            delivered_after.insert(attrs, totals);
        }
        // Whatever is left is shorter than a length: a cut record.
        take(1).is_none().then_some(PendingExport { delivered_after })
    }
}

/// Work read from the ledger, not yet committed: new hashes, total deltas, checkpoints, counts.
#[derive(Debug, Default)]
pub struct Batch {
    partitions: HashMap<PartitionKey, Partition, Xxh3Builder>,
    /// The raw `(model, source)` of each row seen in this batch → its slot in `series`, so that
    /// a line's labels cost one lookup, not three allocations.
    labels: HashMap<Box<str>, usize, Xxh3Builder>,
    /// Each attribute set this batch adds to → its slot in `series`.
    slots: HashMap<AttrSet, usize>,
    series: Vec<Slot>,
    /// Scratch for building a raw label key.
    key: String,
    checkpoints: HashMap<OsString, Checkpoint>,
    pub counts: IngestCounts,
}

#[derive(Debug)]
struct Slot {
    attrs: AttrSet,
    delta: Totals,
    /// Increments here were folded by the cardinality limit.
    folded: bool,
}

impl Batch {
    /// Seen-set partitions this batch holds (each one a sled value rewritten at commit).
    pub fn partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Adds `delta` to the series of `row`, folding a new attribute set past [`MAX_SERIES`].
    pub fn add(&mut self, store: &Store, row: &Row<'_>, delta: &Totals) {
        self.key.clear();
        for label in [&row.model, &row.source] {
            // Length-prefixed, so that no label text can mimic the boundary between the two:
            // `-` for absent, `<byte length>:<text>` otherwise (an empty one is `0:`).
            match label {
                None => self.key.push('-'),
                Some(text) => {
                    let _ = write!(self.key, "{}:", text.len());
                    self.key.push_str(text);
                }
            }
        }
        let slot = match self.labels.get(self.key.as_str()) {
            Some(slot) => *slot,
            None => {
                let slot = self.slot_for(store, AttrSet::of_row(row));
                self.labels.insert(self.key.as_str().into(), slot);
                slot
            }
        };
        let slot = &mut self.series[slot];
        slot.delta.add(delta);
        if slot.folded {
            self.counts.folded += 1;
        }
    }

    fn slot_for(&mut self, store: &Store, attrs: AttrSet) -> usize {
        let known = store.has_series(&attrs) || self.slots.contains_key(&attrs);
        let new_series = self.slots.keys().filter(|a| !store.has_series(a)).count();
        let (attrs, folded) = if known || store.series_count() + new_series < MAX_SERIES {
            (attrs, false)
        } else {
            (AttrSet::folded(), true)
        };
        // `(other, other, other)` never comes from a row (a model_ref of `other` has provider
        // `default`), so a slot's set tells whether it is the fold.
        if let Some(slot) = self.slots.get(&attrs) {
            return *slot;
        }
        self.series.push(Slot {
            attrs: attrs.clone(),
            delta: Totals::default(),
            folded,
        });
        self.slots.insert(attrs, self.series.len() - 1);
        self.series.len() - 1
    }

    pub fn set_checkpoint(&mut self, file: OsString, checkpoint: Checkpoint) {
        self.checkpoints.insert(file, checkpoint);
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.checkpoints.is_empty() && self.counts == IngestCounts::default()
    }

    /// The total deltas by attribute set (slots of the same set added together).
    fn deltas(&self) -> BTreeMap<AttrSet, Totals> {
        let mut out: BTreeMap<AttrSet, Totals> = BTreeMap::new();
        for slot in &self.series {
            if !slot.delta.is_zero() {
                out.entry(slot.attrs.clone()).or_default().add(&slot.delta);
            }
        }
        out
    }
}

/// The open store. One per state dir per machine, enforced by [`StateLock`].
pub struct Store {
    db: sled::Db,
    path: PathBuf,
    created: SystemTime,
    lifetime: BTreeMap<AttrSet, Totals>,
    delivered: BTreeMap<AttrSet, Totals>,
    checkpoints: HashMap<OsString, Checkpoint>,
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
        std::fs::create_dir_all(state_dir).map_err(|source| StoreError::Io {
            path: state_dir.to_path_buf(),
            error: source,
        })?;
        let lock = StateLock::acquire(state_dir, brief)?;
        let path = state_dir.join("store");
        let marker = state_dir.join(MARKER_FILE);
        let record = export_record::path_in(state_dir);
        let stream_path = stream::path_in(state_dir);
        if reset {
            for target in [&path, &marker, &record] {
                remove_if_present(target)?;
            }
        }
        // The stream outlives the store: a rebuilt store continues it. Only a damaged record is
        // replaced, and only when asked to (`--reset-state`).
        let stream = match stream::read(&stream_path) {
            Err(StoreError::Corrupt { .. }) if reset => {
                remove_if_present(&stream_path)?;
                None
            }
            other => other?,
        };
        // A store folder that is gone was deleted (start over); one that is there but opens
        // empty was damaged (refuse).
        let existed = path.exists();
        wait_for_sled_release(&path.join(SLED_LOG));
        let db = sled::Config::new()
            .path(&path)
            .cache_capacity(CACHE_BYTES)
            .flush_every_ms(None)
            .segment_size(existing_segment_size(&path).unwrap_or(SEGMENT_BYTES))
            .open()
            .map_err(|e| sled_error(&path, e))?;
        let mut store = Store {
            db,
            path,
            created: SystemTime::now(),
            lifetime: BTreeMap::new(),
            delivered: BTreeMap::new(),
            checkpoints: HashMap::new(),
            counts: IngestCounts::default(),
            pending: None,
            exports: 0,
            defer_commit_flush: false,
            record,
            stream: StreamRecord::default(),
            stream_path,
            _lock: lock,
        };
        store.load(&marker, existed)?;
        // A store without a stream record (new, or made before streams were recorded) starts
        // its stream at its own creation: what `/metrics` has always given as `_created`.
        store.stream = stream.unwrap_or_else(|| StreamRecord::starting(store.created_ns()));
        Ok(store)
    }

    /// Loads the store's state; a new store is initialised. `marker` (outside sled) records that
    /// a store was created here: sled opens a store whose log it cannot read as empty, and that
    /// must be an error, never a silent start from zero.
    fn load(&mut self, marker: &Path, existed: bool) -> Result<(), StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt {
            path: self.path.clone(),
            detail: format!("unreadable {what}"),
        };
        // Bytes, not text: a marker damaged into invalid UTF-8 is a damaged marker, not an I/O
        // error.
        let recorded =
            match std::fs::read(marker) {
                Ok(_) if !existed => None,
                Ok(bytes) => Some(Marker::parse(&String::from_utf8_lossy(&bytes)).ok_or_else(|| {
                    StoreError::Corrupt {
                        path: self.path.clone(),
                        detail: format!("unreadable marker {}", marker.display()),
                    }
                })?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(StoreError::Io {
                        path: marker.to_path_buf(),
                        error: source,
                    });
                }
            };
        match self.get(KEY_VERSION)? {
            None if self.db.is_empty() && recorded.is_some() => {
                return Err(StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: format!(
                        "it opens empty, but {} says a store was created here",
                        marker.display()
                    ),
                });
            }
            None if self.db.is_empty() => {
                let created = self
                    .created
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                let created_ns = created.as_nanos() as u64;
                let mut init = sled::Batch::default();
                init.insert(KEY_VERSION, &FORMAT_VERSION.to_le_bytes());
                init.insert(KEY_CREATED, &created_ns.to_le_bytes());
                self.apply(init)?;
                // Once per store: sled's `flush` leaves the new log's length and folder entries
                // to the kernel, and a marker that outlived its store would refuse the next run.
                for path in [self.path.join(SLED_LOG), self.path.clone()] {
                    sync_file(&path)?;
                }
                // An export record left by a store that was deleted is not this one's.
                remove_if_present(&self.record)?;
                return write_marker(marker, created_ns);
            }
            None => return Err(corrupt("format version")),
            Some(v) => {
                let found = u32::from_le_bytes(v.as_ref().try_into().map_err(|_| corrupt("format version"))?);
                if found > FORMAT_VERSION {
                    return Err(StoreError::NewerFormat {
                        path: self.path.clone(),
                        found,
                    });
                }
                if found == 1 {
                    self.migrate_from_1()?;
                }
                if found <= 2 {
                    self.migrate_from_2()?;
                }
            }
        }
        let created = self.get(KEY_CREATED)?.ok_or_else(|| corrupt("creation time"))?;
        let nanos = u64::from_le_bytes(
            created
                .as_ref()
                .try_into()
                .map_err(|_| corrupt("creation time"))?,
        );
        self.created = SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(nanos);
        if let Some(bytes) = self.get(KEY_EXPORTS)? {
            self.exports =
                u64::from_le_bytes(bytes.as_ref().try_into().map_err(|_| corrupt("export count"))?);
        }
        let record = export_record::read(&self.record, &self.path)?;
        if record.as_ref().is_some_and(|r| r.created_ns != nanos) {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail: format!("{} belongs to another store", self.record.display()),
            });
        }
        let recorded_exports = record.as_ref().map_or(0, |r| r.number).max(self.exports);
        match recorded {
            Some(recorded) if recorded.created_ns != nanos => {
                return Err(StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: format!("it is not the store {} says was created here", marker.display()),
                });
            }
            // A marker written by a build before the export record counted exports itself. The
            // store lost some and no record says what they delivered: guessing could count an
            // export twice.
            Some(recorded) if recorded.exports > recorded_exports => {
                return Err(StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: format!(
                        "it records {} exports but {} says {} were sent: it was truncated or restored from an older copy",
                        self.exports,
                        marker.display(),
                        recorded.exports
                    ),
                });
            }
            // A store from before the marker existed, or a crash right after creating it.
            None => write_marker(marker, nanos)?,
            Some(_) => {}
        }
        if let Some(bytes) = self.get(KEY_COUNTS)? {
            self.counts = IngestCounts::decode(&bytes).ok_or_else(|| corrupt("ingestion counts"))?;
        }
        if let Some(bytes) = self.get(KEY_PENDING)? {
            self.pending = Some(PendingExport::decode(&bytes).ok_or_else(|| corrupt("pending export"))?);
        }
        if let Some(record) = record.filter(|r| r.number > self.exports) {
            // sled lost writes made after the record (a power cut; or an older copy of the store
            // put back): its export may have reached the collector, so it is pending again, and
            // the lines sled lost are read again from the ledger.
            tracing::warn!(
                "store at {} is behind its export record (export {} recorded, {} in the store): the export is settled again and lines since are read again",
                self.path.display(),
                record.number,
                self.exports
            );
            self.exports = record.number;
            self.pending = Some(record.pending);
        }
        for (prefix, into_delivered) in [(PREFIX_TOTALS, false), (PREFIX_DELIVERED, true)] {
            for entry in self.db.scan_prefix(prefix) {
                let (key, value) = entry.map_err(|e| sled_error(&self.path, e))?;
                let attrs = AttrSet::decode(&key[prefix.len()..]).ok_or_else(|| corrupt("series key"))?;
                let totals = Totals::decode(&value).ok_or_else(|| corrupt("totals"))?;
                let map = if into_delivered {
                    &mut self.delivered
                } else {
                    &mut self.lifetime
                };
                map.insert(attrs, totals);
            }
        }
        for entry in self.db.scan_prefix(PREFIX_CHECKPOINT) {
            let (key, value) = entry.map_err(|e| sled_error(&self.path, e))?;
            let name = os_string_from_bytes(&key[PREFIX_CHECKPOINT.len()..]);
            let checkpoint = Checkpoint::decode(&value).ok_or_else(|| corrupt("checkpoint"))?;
            self.checkpoints.insert(name, checkpoint);
        }
        Ok(())
    }

    /// Format 1 kept a whole day's hashes in one value; format 2 splits each day into buckets.
    /// One atomic batch per day (remove the old value, write its buckets), so an interrupted
    /// migration simply goes on at the next open; the version moves last.
    fn migrate_from_1(&self) -> Result<(), StoreError> {
        let legacy: Vec<sled::IVec> = self
            .db
            .scan_prefix(b"s/")
            .keys()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| sled_error(&self.path, e))?
            .into_iter()
            .filter(|key| seen::is_legacy_key(key))
            .collect();
        for key in legacy {
            let Some(bytes) = self.get(&key)? else { continue };
            let buckets = seen::split_legacy_partition(&bytes).ok_or_else(|| StoreError::Corrupt {
                path: self.path.clone(),
                detail: "unreadable seen-set partition".into(),
            })?;
            let mut write = sled::Batch::default();
            for (bucket, value) in buckets {
                write.insert(seen::bucket_key(&key, bucket), value);
            }
            write.remove(key);
            self.apply_without_flush(write)?;
        }
        let mut write = sled::Batch::default();
        write.insert(KEY_VERSION, &FORMAT_VERSION.to_le_bytes());
        self.apply(write)
    }

    /// Format 2 kept every export's request for a replay; the stream record made that needless.
    /// Its unconfirmed export, if any, counts as delivered: a cumulative one is superseded by the
    /// stream, and a delta one has an unknown outcome. Format 2's layout was the run's start (8
    /// bytes), the temporality (1), the request's length (8) and bytes, then what is now a
    /// [`PendingExport`]. Its record beside the store goes too.
    fn migrate_from_2(&self) -> Result<(), StoreError> {
        let mut write = sled::Batch::default();
        if let Some(old) = self.get(KEY_PENDING_2)? {
            let tail = old
                .get(9..17)
                .and_then(|len| usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok())
                .and_then(|len| old.get(17usize.checked_add(len)?..))
                .and_then(PendingExport::decode);
            for (attrs, totals) in tail.map(|p| p.delivered_after).unwrap_or_default() {
                write.insert(series_key(PREFIX_DELIVERED, &attrs), &totals.encode()[..]);
            }
            write.remove(KEY_PENDING_2);
        }
        write.insert(KEY_VERSION, &FORMAT_VERSION.to_le_bytes());
        self.apply(write)?;
        remove_if_present(&self.record)
    }

    fn get(&self, key: &[u8]) -> Result<Option<sled::IVec>, StoreError> {
        self.db.get(key).map_err(|e| sled_error(&self.path, e))
    }

    /// Records `hash` as seen in `batch`; `false` when it was seen before, here or in the store.
    pub fn mark_seen(&self, batch: &mut Batch, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        let key = PartitionKey::of(day, hash);
        let partition = match batch.partitions.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let stored = self.get(&key.store_key())?;
                let partition = match stored {
                    None => Partition::default(),
                    Some(bytes) => Partition::decode(&bytes).ok_or_else(|| StoreError::Corrupt {
                        path: self.path.clone(),
                        detail: "unreadable seen-set partition".into(),
                    })?,
                };
                e.insert(partition)
            }
        };
        Ok(partition.insert(hash))
    }

    /// Writes `batch` atomically, and flushes it unless told to wait for the next flush (see
    /// [`Store::defer_commit_flush`]); only then does the in-memory view move.
    pub fn commit(&mut self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut write = sled::Batch::default();
        for (key, partition) in &batch.partitions {
            if partition.is_dirty() {
                write.insert(key.store_key(), partition.encode());
            }
        }
        let deltas = batch.deltas();
        let mut lifetime = Vec::with_capacity(deltas.len());
        for (attrs, delta) in deltas {
            let mut total = self.lifetime.get(&attrs).copied().unwrap_or_default();
            total.add(&delta);
            write.insert(series_key(PREFIX_TOTALS, &attrs), &total.encode()[..]);
            lifetime.push((attrs, total));
        }
        for (name, checkpoint) in &batch.checkpoints {
            write.insert(checkpoint_key(name), &checkpoint.encode()[..]);
        }
        let mut counts = self.counts;
        counts.add(&batch.counts);
        write.insert(KEY_COUNTS, counts.encode());
        self.apply_unless_deferred(write)?;

        self.lifetime.extend(lifetime);
        self.checkpoints.extend(batch.checkpoints);
        self.counts = counts;
        Ok(())
    }

    /// The export sent but not yet confirmed, if any.
    pub fn pending_export(&self) -> Option<&PendingExport> {
        self.pending.as_ref()
    }

    /// Durably records a delta export's `pending` before it is sent (replacing an older one).
    ///
    /// This write must survive a power cut as well as a `kill -9`: were it lost after the
    /// collector took the export, the next run would send the same increments again. Everything
    /// else is safe to lose to a power cut (a lost commit is read again, a lost `finish_export`
    /// leaves the record's export pending), so only the export record beside the store pays for
    /// an `fsync` (see `export_record`); sled's copy is for the run itself and for `kill -9`.
    pub fn begin_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        let exports = self.exports + 1;
        let mut write = sled::Batch::default();
        write.insert(KEY_PENDING, pending.encode());
        write.insert(KEY_EXPORTS, &exports.to_le_bytes());
        self.apply(write)?;
        let record = ExportRecord {
            created_ns: self.created_ns(),
            number: exports,
            pending,
        };
        export_record::write(&self.record, &record).map_err(|source| StoreError::Io {
            path: self.record.clone(),
            error: source,
        })?;
        self.start_writeback_unless_deferred();
        self.exports = exports;
        self.pending = Some(record.pending);
        Ok(())
    }

    /// The record is on disk: what sled left dirty (its rewrite at open) can go now, during the
    /// send, instead of queueing in front of the record's `fsync`. A `once` starts it at its
    /// close instead, so that the one flush after its send does not queue behind it.
    fn start_writeback_unless_deferred(&self) {
        if !self.defer_commit_flush {
            start_writeback(&self.path.join(SLED_LOG));
        }
    }

    /// The cumulative stream as last exported.
    pub fn stream(&self) -> &StreamRecord {
        &self.stream
    }

    /// Durably records `stream` before the export it describes is sent (see `stream`).
    pub fn record_stream(&mut self, stream: StreamRecord) -> Result<(), StoreError> {
        stream::write(&self.stream_path, &stream)?;
        self.start_writeback_unless_deferred();
        self.stream = stream;
        Ok(())
    }

    /// The collector confirmed a cumulative export of `lifetime`: that much is delivered, should
    /// the store ever export delta. Needs no flush of its own: lost, it is written again by the
    /// next export.
    pub fn confirm_delivered(&mut self, lifetime: &BTreeMap<AttrSet, Totals>) -> Result<(), StoreError> {
        let mut write = sled::Batch::default();
        let mut changed = Vec::new();
        for (attrs, totals) in lifetime {
            if self.delivered.get(attrs) != Some(totals) {
                write.insert(series_key(PREFIX_DELIVERED, attrs), &totals.encode()[..]);
                changed.push((attrs.clone(), *totals));
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        self.apply_without_flush(write)?;
        self.delivered.extend(changed);
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
        start_writeback(&self.path.join(SLED_LOG));
        let Store { db, _lock, .. } = self;
        std::mem::forget(db);
        std::mem::forget(_lock);
        Ok(())
    }

    /// The collector has the pending export: its totals are delivered, in one atomic write.
    pub fn finish_export(&mut self) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        self.settle_export(pending)
    }

    /// Settles the pending export of which only the series in `taken` (with their values) were
    /// delivered: the collector refused the rest, which the next export carries again.
    pub fn finish_export_of(&mut self, taken: &BTreeMap<AttrSet, Totals>) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let delivered_after: BTreeMap<AttrSet, Totals> = pending
            .delivered_after
            .into_iter()
            .filter(|(attrs, totals)| taken.get(attrs) == Some(totals))
            .collect();
        if delivered_after.is_empty() {
            return self.abandon_export();
        }
        self.settle_export(PendingExport { delivered_after })
    }

    fn settle_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        let mut write = sled::Batch::default();
        for (attrs, totals) in &pending.delivered_after {
            write.insert(series_key(PREFIX_DELIVERED, attrs), &totals.encode()[..]);
        }
        write.remove(KEY_PENDING);
        // A count taken from the export record moves into sled here.
        write.insert(KEY_EXPORTS, &self.exports.to_le_bytes());
        if let Err(e) = self.apply_unless_deferred(write) {
            self.pending = Some(pending);
            return Err(e);
        }
        self.delivered.extend(pending.delivered_after);
        Ok(())
    }

    /// The pending export certainly did not reach the collector: forget it.
    pub fn abandon_export(&mut self) -> Result<(), StoreError> {
        let mut write = sled::Batch::default();
        write.remove(KEY_PENDING);
        // Flushed at once even in a `once`: lost, a delta export would count as delivered.
        self.apply(write)?;
        self.pending = None;
        Ok(())
    }

    fn apply(&self, write: sled::Batch) -> Result<(), StoreError> {
        self.apply_without_flush(write)?;
        self.flush()
    }

    /// Writes `write` atomically into sled's buffers; the next flush takes it to the log.
    fn apply_without_flush(&self, write: sled::Batch) -> Result<(), StoreError> {
        self.db.apply_batch(write).map_err(|e| sled_error(&self.path, e))
    }

    /// Writes `write` atomically, and flushes it unless [`Store::defer_commit_flush`] leaves
    /// that to the next flush: for commits, and for what marks an export delivered, which needs
    /// no flush of its own (lost, the record's pending export is replayed when cumulative or
    /// counted as delivered when delta, as after a power cut), so that a `once` waits for the
    /// disk once after its send, not twice.
    fn apply_unless_deferred(&self, write: sled::Batch) -> Result<(), StoreError> {
        if self.defer_commit_flush {
            self.apply_without_flush(write)
        } else {
            self.apply(write)
        }
    }

    /// Writes sled's buffers to the log and waits for them (sled's `flush`: `sync_file_range`,
    /// not `fsync`).
    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map_err(|e| sled_error(&self.path, e))?;
        Ok(())
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

    /// Lifetime totals per attribute set: everything ever counted.
    pub fn lifetime(&self) -> &BTreeMap<AttrSet, Totals> {
        &self.lifetime
    }

    /// What has been delivered to the collector, per attribute set.
    pub fn delivered(&self) -> &BTreeMap<AttrSet, Totals> {
        &self.delivered
    }

    pub fn has_series(&self, attrs: &AttrSet) -> bool {
        self.lifetime.contains_key(attrs)
    }

    pub fn series_count(&self) -> usize {
        self.lifetime.len()
    }

    pub fn checkpoint(&self, file: &OsString) -> Option<&Checkpoint> {
        self.checkpoints.get(file)
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
        &self.path
    }

    /// Bytes the store takes on disk.
    pub fn disk_size(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

/// What the marker beside the store (outside sled) records: which store was created here.
/// Written as `<created_ns>`; builds before the export record also counted exports begun in it
/// (`<created_ns> <exports>`, then a third number no longer used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marker {
    created_ns: u64,
    exports: u64,
}

impl Marker {
    fn parse(text: &str) -> Option<Marker> {
        let mut fields = text.split_whitespace();
        let created_ns = fields.next()?.parse().ok()?;
        let mut number = || fields.next().map(|n| n.parse::<u64>().ok()).unwrap_or(Some(0));
        let (exports, _blobs_synced) = (number()?, number()?);
        fields.next().is_none().then_some(Marker { created_ns, exports })
    }
}

/// Replaces the marker atomically (written, synced, renamed over the old one).
fn write_marker(marker: &Path, created_ns: u64) -> Result<(), StoreError> {
    let io_error = |source| StoreError::Io {
        path: marker.to_path_buf(),
        error: source,
    };
    let tmp = marker.with_extension("tmp");
    std::fs::write(&tmp, format!("{created_ns}\n")).map_err(io_error)?;
    sync_file(&tmp)?;
    std::fs::rename(&tmp, marker).map_err(io_error)
}

/// Starts writing the dirty pages of `file` to disk, without waiting for them. sled rewrites
/// every free segment of its log at open (7 MB on a 1M-line store) and nothing needs those pages
/// on disk, but whoever syncs the file next pays for them all: sled itself, early in the next
/// open, if the kernel has not written them by then (it waits up to 30 s). Started once the
/// export record is on disk, or at the end of a run: not at open, where the writing would delay
/// the record's `fsync` behind it. Best effort: a failure costs time only.
fn start_writeback(file: &Path) {
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

/// Deletes the file or folder at `path`, if there is one.
fn remove_if_present(path: &Path) -> Result<(), StoreError> {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(StoreError::Io {
            path: path.to_path_buf(),
            error,
        }),
        _ => Ok(()),
    }
}

/// `fsync`s the file or folder at `path`.
fn sync_file(path: &Path) -> Result<(), StoreError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            error: source,
        })
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

fn series_key(prefix: &[u8], attrs: &AttrSet) -> Vec<u8> {
    [prefix, &attrs.encode()].concat()
}

fn checkpoint_key(name: &OsString) -> Vec<u8> {
    [PREFIX_CHECKPOINT, name.as_encoded_bytes()].concat()
}

fn os_string_from_bytes(bytes: &[u8]) -> OsString {
    #[cfg(unix)]
    return std::os::unix::ffi::OsStringExt::from_vec(bytes.to_vec());
    #[cfg(not(unix))]
    return OsString::from(String::from_utf8_lossy(bytes).into_owned());
}

fn sled_error(path: &Path, error: sled::Error) -> StoreError {
    match error {
        sled::Error::Io(source) => StoreError::Io {
            path: path.to_path_buf(),
            error: source,
        },
        other => StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::timestamp::day_of_rfc3339;
    use crate::series::Quantity;

    #[test]
    fn marker_reads_its_three_formats_and_nothing_else() {
        let marker = |created_ns, exports| Some(Marker { created_ns, exports });
        assert_eq!(
            Marker::parse("1764500000123456789\n"),
            marker(1764500000123456789, 0)
        );
        assert_eq!(Marker::parse("17 42\n"), marker(17, 42));
        assert_eq!(Marker::parse("17 42 9\n"), marker(17, 42));
        for bad in ["", "x", "17 x", "17 42 x", "17 42 9 1"] {
            assert_eq!(Marker::parse(bad), None, "{bad:?}");
        }
    }

    fn export(store: &mut Store, lines: u64) {
        let mut delivered_after = BTreeMap::new();
        let mut totals = Totals::default();
        totals.set(Quantity::Requests, lines);
        delivered_after.insert(AttrSet::folded(), totals);
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
            pending.delivered_after[&AttrSet::folded()].get(Quantity::Requests),
            3
        );
        store.finish_export().unwrap();
        assert_eq!(store.delivered()[&AttrSet::folded()].get(Quantity::Requests), 3);
        drop(store);
        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!((store.exports, store.pending_export()), (3, None));
    }

    #[test]
    fn an_old_marker_counting_more_exports_than_store_and_record_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let created_ns = {
            let mut store = Store::open(dir.path(), false).unwrap();
            export(&mut store, 1);
            store.finish_export().unwrap();
            store
                .created
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        };
        let marker = dir.path().join(MARKER_FILE);
        std::fs::write(&marker, format!("{created_ns} 1 0\n")).unwrap();
        assert!(Store::open(dir.path(), false).is_ok(), "as many as the store has");
        std::fs::write(&marker, format!("{created_ns} 2 0\n")).unwrap();
        let error = Store::open(dir.path(), false).err().expect("refused").to_string();
        assert!(error.contains("restored from an older copy"), "{error}");
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
                    pending.delivered_after[&AttrSet::folded()].get(Quantity::Requests),
                    1
                );
                store.finish_export().unwrap();
            } else {
                assert!(store.pending_export().is_none(), "`run` flushes it at once");
            }
            assert_eq!(store.delivered()[&AttrSet::folded()].get(Quantity::Requests), 1);
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
        let log = std::fs::File::open(dir.path().join("store").join(SLED_LOG)).unwrap();
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

    #[test]
    fn a_store_made_with_another_segment_size_still_opens() {
        // 64 KiB: what stores made by builds between fc04443 and this one use.
        let dir = tempfile::tempdir().unwrap();
        drop(
            sled::Config::new()
                .path(dir.path().join("store"))
                .segment_size(64 << 10)
                .open()
                .unwrap(),
        );
        assert_eq!(existing_segment_size(&dir.path().join("store")), Some(64 << 10));
        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!(store.exports, 0);
        drop(store);
        // A new store gets ours.
        let fresh = tempfile::tempdir().unwrap();
        drop(Store::open(fresh.path(), false).unwrap());
        assert_eq!(
            existing_segment_size(&fresh.path().join("store")),
            Some(SEGMENT_BYTES)
        );
    }

    #[test]
    fn a_format_1_store_is_migrated_and_still_knows_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        let day = day_of_rfc3339("2026-08-07T00:00:00Z");
        let known = [LineHash(3), LineHash(0xC << 124 | 9)];
        {
            // Write what format 1 wrote: one sorted value per day.
            let store = Store::open(dir.path(), false).unwrap();
            let mut legacy = Vec::new();
            for h in known {
                legacy.extend_from_slice(&h.0.to_be_bytes());
            }
            let mut write = sled::Batch::default();
            write.insert(b"s/2026-08-07".to_vec(), legacy);
            write.insert(KEY_VERSION, &1u32.to_le_bytes());
            store.apply(write).unwrap();
        }
        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!(
            store.get(KEY_VERSION).unwrap().unwrap().as_ref(),
            FORMAT_VERSION.to_le_bytes()
        );
        assert!(
            store.get(b"s/2026-08-07").unwrap().is_none(),
            "the whole-day value is gone"
        );
        let mut batch = Batch::default();
        for h in known {
            assert!(
                !store.mark_seen(&mut batch, day, h).unwrap(),
                "{h:?} is still known"
            );
        }
        assert!(store.mark_seen(&mut batch, day, LineHash(4)).unwrap());
    }

    #[test]
    fn a_format_2_store_counts_its_unconfirmed_export_as_delivered_and_drops_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let mut totals = Totals::default();
        totals.set(Quantity::Requests, 7);
        {
            // Write what format 2 wrote: the run's start, the temporality, the request, then the
            // delivered totals; and a record beside the store.
            let store = Store::open(dir.path(), false).unwrap();
            let request = b"the request's bytes";
            let mut old = 5u64.to_le_bytes().to_vec();
            old.push(1);
            old.extend_from_slice(&(request.len() as u64).to_le_bytes());
            old.extend_from_slice(request);
            let mut delivered_after = BTreeMap::new();
            delivered_after.insert(AttrSet::folded(), totals);
            old.extend_from_slice(&PendingExport { delivered_after }.encode());
            let mut write = sled::Batch::default();
            write.insert(KEY_PENDING_2, old);
            write.insert(KEY_VERSION, &2u32.to_le_bytes());
            store.apply(write).unwrap();
            std::fs::write(&store.record, b"a format-2 record").unwrap();
        }
        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!(store.delivered()[&AttrSet::folded()], totals);
        assert!(store.pending_export().is_none());
        assert!(store.get(KEY_PENDING_2).unwrap().is_none());
        assert!(!store.record.exists(), "its record went with it");
        assert_eq!(
            store.get(KEY_VERSION).unwrap().unwrap().as_ref(),
            FORMAT_VERSION.to_le_bytes()
        );
    }
}

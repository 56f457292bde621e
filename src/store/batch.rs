//! Work read from the ledger and not yet committed: new hashes, total deltas, checkpoints and
//! line counts, which [`Store::commit`](super::Store::commit) writes in one atomic batch.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

use super::counts::IngestCounts;
use super::seen::{LineHash, LineSet, Partition, PartitionKey};
use super::upgrade::cost_pass::{PassFile, PassProgress};
use super::{Store, StoreError};
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
use crate::ledger::timestamp::Day;
use crate::series::{AttrSet, Part, QuickHash, SeriesDeltas, Totals};

#[derive(Debug)]
pub struct Batch {
    pub(super) partitions: Partitions,
    pub(super) series: SeriesDeltas,
    pub(super) checkpoints: HashMap<OsString, Checkpoint>,
    pub counts: IngestCounts,
    /// What this batch holds of an upgrade's cost pass; `None` (nothing to pay for) unless one
    /// is under way.
    pub(super) pass: Option<Box<PassBatch>>,
}

/// A batch's part of the cost pass (see `upgrade/cost_pass.rs`).
#[derive(Debug)]
pub(super) struct PassBatch {
    /// The pass's set: lines whose quote it added.
    pub costed: Partitions,
    pub progress: PassProgress,
}

/// A batch is committed once it holds this many ledger bytes: large enough that a backfill makes
/// few fsyncs, small enough that memory stays flat whatever the ledger's size.
const COMMIT_BYTES: u64 = 32 << 20;

/// ... or this many days of the seen set: years of small day files would otherwise make one
/// commit of tens of thousands of sled values (each day's partitions it touched).
const COMMIT_DAYS: usize = 256;

impl Default for Batch {
    fn default() -> Batch {
        Batch {
            partitions: Partitions::new(LineSet::Seen),
            series: SeriesDeltas::default(),
            checkpoints: HashMap::new(),
            counts: IngestCounts::default(),
            pass: None,
        }
    }
}

impl Batch {
    /// Days of the seen set (and the cost pass's set) this batch holds: each of their partitions
    /// it touched is a sled value rewritten at commit.
    pub fn days(&self) -> usize {
        self.partitions.days.len() + self.pass.as_ref().map_or(0, |pass| pass.costed.days.len())
    }

    /// Whether the batch holds enough to be committed now ([`COMMIT_BYTES`], [`COMMIT_DAYS`]).
    pub fn is_full(&self) -> bool {
        self.counts.bytes >= COMMIT_BYTES || self.days() >= COMMIT_DAYS
    }

    /// Records `hash` as seen; `false` when it was seen before, in this batch or in the store.
    /// A partition not yet in the batch is read once from `store`.
    pub fn mark_seen(&mut self, store: &Store, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        Ok(self.partitions.of(store, day, hash)?.insert(hash))
    }

    /// Adds what `row` counts (its `part`) to its series; `known` holds the store's series (for
    /// the fold).
    pub fn add(&mut self, known: &BTreeMap<AttrSet, Totals>, row: &Row<'_>, part: Part) {
        // A line's fold is counted once, when the line is: not again for its quote alone.
        if self.series.add(known, row, part) && part == Part::Whole {
            self.counts.folded += 1;
        }
    }

    /// Whether the store (or this batch) has seen `hash`.
    pub fn was_seen(&mut self, store: &Store, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        Ok(self.partitions.of(store, day, hash)?.contains(hash))
    }

    /// Records that the cost pass added the quote of `hash`; `false` when it already had.
    pub fn mark_costed(
        &mut self,
        store: &Store,
        day: Option<Day>,
        hash: LineHash,
    ) -> Result<bool, StoreError> {
        Ok(self.pass().costed.of(store, day, hash)?.insert(hash))
    }

    /// The cost pass read `file` up to `region.done` (`None`: all of its region).
    pub fn set_pass_progress(&mut self, file: OsString, region: Option<PassFile>) {
        self.pass().progress.files.insert(file, region);
    }

    /// The cost pass ends with this batch.
    pub fn finish_pass(&mut self) {
        self.pass().progress.finished = true;
    }

    fn pass(&mut self) -> &mut PassBatch {
        self.pass.get_or_insert_with(|| {
            Box::new(PassBatch {
                costed: Partitions::new(LineSet::Costed),
                progress: PassProgress::default(),
            })
        })
    }

    pub fn set_checkpoint(&mut self, file: OsString, checkpoint: Checkpoint) {
        self.checkpoints.insert(file, checkpoint);
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
            && self.checkpoints.is_empty()
            && self.counts == IngestCounts::default()
            && self
                .pass
                .as_ref()
                .is_none_or(|pass| pass.progress.files.is_empty() && !pass.progress.finished)
    }
}

/// The partitions of one set a batch holds, by day, with the last day's at hand by bucket: a day
/// file's lines all land on its day, and hashing a key for every line showed in the backfill
/// profile.
#[derive(Debug)]
pub(super) struct Partitions {
    set: LineSet,
    all: Vec<(PartitionKey, Partition)>,
    index: HashMap<PartitionKey, usize, QuickHash>,
    /// Each day's depth, as the store had it, and its partitions' places in `all`.
    pub(super) days: HashMap<Option<Day>, BatchDay, QuickHash>,
    /// The last day looked up, its depth, and its partitions' places in `all` by bucket (up to
    /// [`RECENT_DEPTH`]; deeper days go through `index`).
    recent: Option<(Option<Day>, u8, Vec<u32>)>,
}

/// A day as a batch holds it.
#[derive(Debug)]
pub(super) struct BatchDay {
    pub(super) depth: u8,
    pub(super) partitions: Vec<usize>,
}

/// The deepest day whose buckets the batch keeps in a table (4,096 of them).
const RECENT_DEPTH: u8 = 12;

const NOT_LOADED: u32 = u32::MAX;

impl Partitions {
    pub(super) fn new(set: LineSet) -> Partitions {
        Partitions {
            set,
            all: Vec::new(),
            index: HashMap::default(),
            days: HashMap::default(),
            recent: None,
        }
    }

    pub(super) fn set(&self) -> LineSet {
        self.set
    }

    pub(super) fn get(&self, at: usize) -> &(PartitionKey, Partition) {
        &self.all[at]
    }

    /// The partition of `hash`, read once from `store` when it is not here yet (and its day's
    /// depth, once a day).
    fn of(&mut self, store: &Store, day: Option<Day>, hash: LineHash) -> Result<&mut Partition, StoreError> {
        let depth = match &self.recent {
            Some((recent_day, depth, _)) if *recent_day == day => *depth,
            _ => {
                let depth = match self.days.get(&day) {
                    Some(known) => known.depth,
                    None => {
                        let depth = store.depth_of(self.set, day)?;
                        self.days.insert(
                            day,
                            BatchDay {
                                depth,
                                partitions: Vec::new(),
                            },
                        );
                        depth
                    }
                };
                let mut slots = self.recent.take().map(|(_, _, slots)| slots).unwrap_or_default();
                slots.clear();
                if depth <= RECENT_DEPTH {
                    slots.resize(1 << depth, NOT_LOADED);
                }
                self.recent = Some((day, depth, slots));
                depth
            }
        };
        let key = PartitionKey::of(day, depth, hash);
        let bucket = key.bucket as usize;
        let cached = match &self.recent {
            Some((_, _, slots)) => slots.get(bucket).copied().filter(|&at| at != NOT_LOADED),
            None => None,
        };
        let at = match cached
            .map(|at| at as usize)
            .or_else(|| self.index.get(&key).copied())
        {
            Some(at) => at,
            None => {
                let partition = store.partition(self.set, &key)?;
                self.all.push((key, partition));
                let at = self.all.len() - 1;
                self.index.insert(key, at);
                if let Some(known) = self.days.get_mut(&day) {
                    known.partitions.push(at);
                }
                at
            }
        };
        if let Some((_, _, slots)) = &mut self.recent
            && let Some(slot) = slots.get_mut(bucket)
        {
            *slot = at as u32;
        }
        Ok(&mut self.all[at].1)
    }
}

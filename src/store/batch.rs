//! Work read from the ledger and not yet committed: new hashes, total deltas, checkpoints and
//! line counts, which [`Store::commit`](super::Store::commit) writes in one atomic batch.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

use super::StoreError;
use super::cost_pass::{PassFile, PassProgress};
use super::counts::IngestCounts;
use super::seen::{BUCKETS, LineHash, Partition, PartitionKey};
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
use crate::ledger::timestamp::Day;
use crate::series::{AttrSet, Part, QuickHash, SeriesDeltas, Totals};

#[derive(Debug, Default)]
pub struct Batch {
    pub(super) partitions: Partitions,
    pub(super) series: SeriesDeltas,
    pub(super) checkpoints: HashMap<OsString, Checkpoint>,
    pub counts: IngestCounts,
    /// The cost pass's set: lines whose quote it added (see `cost_pass`).
    pub(super) costed: Partitions,
    pub(super) pass: PassProgress,
}

impl Batch {
    /// Seen-set (and cost pass) partitions this batch holds (each one a sled value rewritten at commit).
    pub fn partitions(&self) -> usize {
        self.partitions.len() + self.costed.len()
    }

    /// Records `hash` as seen; `false` when it was seen before, in this batch or in the store.
    /// A partition not yet in the batch is read once through `load`.
    pub fn mark_seen(
        &mut self,
        day: Option<Day>,
        hash: LineHash,
        load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
    ) -> Result<bool, StoreError> {
        Ok(self.partitions.of(day, hash, load)?.insert(hash))
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
    pub fn was_seen(
        &mut self,
        day: Option<Day>,
        hash: LineHash,
        load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
    ) -> Result<bool, StoreError> {
        Ok(self.partitions.of(day, hash, load)?.contains(hash))
    }

    /// Records that the cost pass added the quote of `hash`; `false` when it already had.
    pub fn mark_costed(
        &mut self,
        day: Option<Day>,
        hash: LineHash,
        load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
    ) -> Result<bool, StoreError> {
        Ok(self.costed.of(day, hash, load)?.insert(hash))
    }

    /// The cost pass read `file` up to `region.done` (`None`: all of its region).
    pub fn set_pass_progress(&mut self, file: OsString, region: Option<PassFile>) {
        self.pass.files.insert(file, region);
    }

    /// The cost pass ends with this batch.
    pub fn finish_pass(&mut self) {
        self.pass.finished = true;
    }

    pub fn set_checkpoint(&mut self, file: OsString, checkpoint: Checkpoint) {
        self.checkpoints.insert(file, checkpoint);
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
            && self.checkpoints.is_empty()
            && self.counts == IngestCounts::default()
            && self.pass.files.is_empty()
            && !self.pass.finished
    }
}

/// The seen-set partitions a batch holds, with the indices of the last day's four at hand: a
/// day file's lines all land on its day, and hashing a key for every line showed in the
/// backfill profile.
#[derive(Debug, Default)]
pub(super) struct Partitions {
    all: Vec<(PartitionKey, Partition)>,
    index: HashMap<PartitionKey, usize, QuickHash>,
    /// The last day looked up, and its partitions' places in `all` by bucket.
    recent: Option<(Option<Day>, [Option<usize>; BUCKETS as usize])>,
}

impl Partitions {
    pub(super) fn len(&self) -> usize {
        self.all.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &(PartitionKey, Partition)> {
        self.all.iter()
    }

    /// The partition of `hash`, read once through `load` when it is not here yet.
    fn of(
        &mut self,
        day: Option<Day>,
        hash: LineHash,
        load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
    ) -> Result<&mut Partition, StoreError> {
        let key = PartitionKey::of(day, hash);
        let bucket = key.bucket as usize;
        let cached = match &self.recent {
            Some((recent_day, slots)) if *recent_day == day => slots[bucket],
            _ => {
                self.recent = Some((day, [None; BUCKETS as usize]));
                None
            }
        };
        let at = match cached.or_else(|| self.index.get(&key).copied()) {
            Some(at) => at,
            None => {
                let partition = load(&key)?;
                self.all.push((key, partition));
                self.index.insert(key, self.all.len() - 1);
                self.all.len() - 1
            }
        };
        if let Some((_, slots)) = &mut self.recent {
            slots[bucket] = Some(at);
        }
        Ok(&mut self.all[at].1)
    }
}

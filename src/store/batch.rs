//! Work read from the ledger and not yet committed: new hashes, total deltas, checkpoints and
//! line counts, which [`Store::commit`](super::Store::commit) writes in one atomic batch.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

use super::StoreError;
use super::cost_pass::{PassFile, PassProgress};
use super::counts::IngestCounts;
use super::seen::{LineHash, Partition, PartitionKey};
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
use crate::ledger::timestamp::Day;
use crate::series::{AttrSet, Part, QuickHash, SeriesDeltas, Totals};

#[derive(Debug, Default)]
pub struct Batch {
    pub(super) partitions: HashMap<PartitionKey, Partition, QuickHash>,
    pub(super) series: SeriesDeltas,
    pub(super) checkpoints: HashMap<OsString, Checkpoint>,
    pub counts: IngestCounts,
    /// The cost pass's set: lines whose quote it added (see `cost_pass`).
    pub(super) costed: HashMap<PartitionKey, Partition, QuickHash>,
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
        Ok(loaded(&mut self.partitions, day, hash, load)?.insert(hash))
    }

    /// Adds what `row` counts (its `part`) to its series; `known` holds the store's series (for
    /// the fold).
    pub fn add(&mut self, known: &BTreeMap<AttrSet, Totals>, row: &Row<'_>, part: Part) {
        if self.series.add(known, row, part) {
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
        Ok(loaded(&mut self.partitions, day, hash, load)?.contains(hash))
    }

    /// Records that the cost pass added the quote of `hash`; `false` when it already had.
    pub fn mark_costed(
        &mut self,
        day: Option<Day>,
        hash: LineHash,
        load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
    ) -> Result<bool, StoreError> {
        Ok(loaded(&mut self.costed, day, hash, load)?.insert(hash))
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

/// The partition of `hash` in `partitions`, read once through `load` when it is not there yet.
fn loaded(
    partitions: &mut HashMap<PartitionKey, Partition, QuickHash>,
    day: Option<Day>,
    hash: LineHash,
    load: impl FnOnce(&PartitionKey) -> Result<Partition, StoreError>,
) -> Result<&mut Partition, StoreError> {
    let key = PartitionKey::of(day, hash);
    Ok(match partitions.entry(key) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => e.insert(load(&key)?),
    })
}

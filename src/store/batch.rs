//! Work read from the ledger and not yet committed: new hashes, total deltas, checkpoints and
//! line counts, which [`Store::commit`](super::Store::commit) writes in one atomic batch.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

use super::counts::IngestCounts;
use super::partitions::Partitions;
use super::seen::{LineHash, LineSet};
use super::upgrade::cost_pass::{PassFile, PassProgress};
use super::{Store, StoreError};
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
use crate::ledger::timestamp::Day;
use crate::series::{AttrSet, Part, SeriesDeltas, Totals};

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
    /// A partition not yet in the batch is read once from `store`. While an upgrade's cost pass
    /// is under way, a line seen now for the first time is counted whole, its cost included: it
    /// goes into the pass's set too, so that the pass cannot add its cost again (from a copy in a
    /// file rewritten in place, see `upgrade/cost_pass.rs`).
    pub fn mark_seen(&mut self, store: &Store, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        let new = self.partitions.of(store, day, hash)?.insert(hash);
        if new && !store.cost_pass().is_empty() {
            self.mark_costed(store, day, hash)?;
        }
        Ok(new)
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

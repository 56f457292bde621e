//! Work read from the ledger and not yet committed: new hashes, total deltas, checkpoints and
//! line counts, which `Store::commit` writes in one atomic batch; its lines are marked seen by
//! the store (`marking.rs`), which reads what it has committed.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

use super::counts::IngestCounts;
use super::partitions::Partitions;
use super::pass_regions::{PassFile, PassProgress};
use super::seen::LineSet;
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::decode::Row;
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

/// A batch's part of the cost pass (see `upgrade/before_cost.rs`).
#[derive(Debug)]
pub(super) struct PassBatch {
    /// The pass's set: lines whose quote it added.
    pub costed: Partitions,
    pub progress: PassProgress,
}

/// A batch is committed once it holds this many ledger bytes: large enough that a backfill makes
/// few fsyncs, small enough that memory stays flat whatever the ledger's size.
const COMMIT_BYTES: u64 = 32 << 20;

/// ... or this many, once it holds lines dated on more than [`FEW_DAYS`] days. A commit rewrites every
/// seen-set partition of each day it touches: a batch of one busy day keeps to the larger size,
/// as each commit rewrites that whole day (8 MiB made a 2M-line day's backfill 2.1x slower), and
/// one of many ordinary days, whose partitions are small, commits sooner and holds less. Each
/// commit of new days also leaves in sled's log the leaf it shares with the commit before, split
/// and written again: 1M lines in 365 day files, peak and store, with 4 MiB 23.4 MiB and
/// 21.0 MB, with 8 MiB 23.4 MiB and 19.6 MB, with 16 MiB 25.1 MiB and 18.6 MB, with 32 MiB
/// 28.6 MiB and 18.1 MB (median of 3 backfills each, sled's index nodes at 64 children; at 128,
/// as built, 16 MiB gives 19.1 MB: BENCHMARKS.md, "A batch's values logged once").
const COMMIT_BYTES_MANY_DAYS: u64 = 16 << 20;
const FEW_DAYS: usize = 2;

/// ... or this many days of the seen set: years of small day files would otherwise make one
/// commit of tens of thousands of sled values (each day's partitions it touched).
const COMMIT_DAYS: usize = 256;

/// ... or this many files' checkpoints: a history of tens of thousands of small files (of the
/// same few days, so no other limit is reached) would otherwise hold a checkpoint a file until
/// the end (50,000 files of three lines: 40.1 MiB at the peak against 44.6, median of 3).
const COMMIT_FILES: usize = 4096;

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

    /// Whether the batch holds enough to be committed now ([`COMMIT_BYTES`],
    /// [`COMMIT_BYTES_MANY_DAYS`], [`COMMIT_DAYS`], [`COMMIT_FILES`]).
    pub fn is_full(&self) -> bool {
        // The days whose lines it holds: the seen set's partitions of lines without a day, and
        // the cost pass's copy of the same days, are not more days.
        let dated = self.partitions.days.keys().filter(|day| day.is_some()).count();
        let limit = if dated > FEW_DAYS {
            COMMIT_BYTES_MANY_DAYS
        } else {
            COMMIT_BYTES
        };
        self.counts.bytes >= limit || self.days() >= COMMIT_DAYS || self.checkpoints.len() >= COMMIT_FILES
    }

    /// Adds what `row` counts (its `part`) to its series; `known` holds the store's series (for
    /// the fold).
    pub fn add(&mut self, known: &BTreeMap<AttrSet, Totals>, row: &Row<'_>, part: Part) {
        // A line's fold is counted once, when the line is: not again for its quote alone.
        if self.series.add(known, row, part) && part == Part::Whole {
            self.counts.folded += 1;
        }
    }

    /// The cost pass read `file` up to `region.done` (`None`: all of its region).
    pub fn set_pass_progress(&mut self, file: OsString, region: Option<PassFile>) {
        self.pass().progress.files.insert(file, region);
    }

    /// The cost pass ends with this batch.
    pub fn finish_pass(&mut self) {
        self.pass().progress.finished = true;
    }

    pub(super) fn pass(&mut self) -> &mut PassBatch {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::timestamp::day_of_rfc3339;
    use crate::store::partitions::BatchDay;

    /// A batch of `bytes` ledger bytes whose lines fall on `days` (`None`: lines without a day).
    fn holding(bytes: u64, days: &[Option<&str>]) -> Batch {
        let mut batch = Batch::default();
        batch.counts.bytes = bytes;
        for day in days {
            let day = day.map(|d| day_of_rfc3339(&format!("{d}T00:00:00Z")).unwrap());
            let held = BatchDay {
                depth: 0,
                partitions: Vec::new(),
            };
            batch.partitions.days.insert(day, held);
        }
        batch
    }

    #[test]
    fn a_batch_of_many_days_closes_at_16_mib_and_one_of_a_busy_day_at_32() {
        let (many, few) = (COMMIT_BYTES_MANY_DAYS, COMMIT_BYTES);
        let two = [Some("2026-01-01"), Some("2026-01-02")];
        let three = [Some("2026-01-01"), Some("2026-01-02"), Some("2026-01-03")];
        assert!(!holding(few - 1, &two).is_full());
        assert!(holding(few, &two).is_full());
        assert!(!holding(many - 1, &three).is_full());
        assert!(holding(many, &three).is_full());
        // Lines without a day are no day more: a busy day's commit stays large.
        let busy = [Some("2026-01-01"), Some("2026-01-02"), None];
        assert!(!holding(many, &busy).is_full());
        let years: Vec<String> = (0..COMMIT_DAYS).map(|i| format!("{}-01-01", 2000 + i)).collect();
        let years: Vec<Option<&str>> = years.iter().map(|y| Some(y.as_str())).collect();
        assert!(holding(0, &years).is_full());
    }
}

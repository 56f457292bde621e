//! The cost pass: how a store made before cost (format 3) gains the cost of every line it had
//! already counted, exactly once, without counting any token twice.
//!
//! The upgrade itself is one atomic write: the new format version, the pending export in the new
//! layout, and for every file with a checkpoint the region the old store had read, `[0, offset)`
//! (`q/<file name>`). The pass then reads those regions again (the top-level `upgrade` module): a line the
//! seen set has, and the pass's own set (`p/<day>/…`) does not, adds its quote (cost, or
//! unpriced requests) and nothing else, and goes into the pass's set. Each batch commits the
//! quotes, the pass's set and each region's progress together, so a `kill -9` at any point
//! resumes where the last commit left it, and a line in two files (a copy) adds its cost once.
//! Lines after a region are new lines, counted whole by the usual reading; while the pass lasts,
//! the batch puts every line it sees for the first time in the pass's set too
//! (`Store::mark_seen`), so that a file rewritten in place under an interrupted pass cannot give
//! a new line's cost twice. When every region is read, the pass's keys are
//! deleted in the commit that ends it.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::ledger::checkpoint::Checkpoint;
use crate::store::count_store::Store;
use crate::store::engine::{Write, keys};
use crate::store::error::StoreError;
use crate::store::partitions::{self, Partitions};
use crate::store::pass_regions::{PassFile, PassProgress};
use crate::store::seen::LineSet;

/// The format of stores before cost, which this build upgrades.
pub const BEFORE_COST: u32 = 3;

impl Store {
    /// Adds to `write` what turns a store of format [`BEFORE_COST`] into one of the next: its
    /// pending export in today's layout, and a pass region per file it had read; how many files.
    pub(in crate::store) fn upgrade_before_cost(&self, write: &mut Write) -> Result<usize, StoreError> {
        if let Some(bytes) = self.get(keys::PENDING)? {
            let pending =
                super::layouts::pending_before_cost(&bytes).ok_or_else(|| self.corrupt("pending export"))?;
            write.insert(keys::PENDING, pending.encode());
        }
        let mut files = 0;
        for entry in self.db.scan(keys::CHECKPOINTS) {
            let (name, value) = entry?;
            let checkpoint = Checkpoint::decode(&value).ok_or_else(|| self.corrupt("checkpoint"))?;
            let region = PassFile {
                done: 0,
                end: checkpoint.offset,
                dev: checkpoint.stat.dev,
                ino: checkpoint.stat.ino,
            };
            write.insert(keys::pass_region(&name), region.encode());
            files += 1;
        }
        Ok(files)
    }

    /// The regions the pass has still to read, by file name; empty once it is over.
    pub fn cost_pass(&self) -> &BTreeMap<OsString, PassFile> {
        &self.cost_pass
    }

    pub(in crate::store) fn load_cost_pass(&mut self) -> Result<(), StoreError> {
        self.cost_pass = self.load_by_file(keys::PASS_REGIONS, PassFile::decode, "cost pass region")?;
        Ok(())
    }

    /// Adds the pass's part of a commit to `write`; returns the regions as they will be.
    pub(in crate::store) fn write_cost_pass(
        &self,
        write: &mut Write,
        partitions: &Partitions,
        progress: &PassProgress,
    ) -> Result<BTreeMap<OsString, PassFile>, StoreError> {
        let mut regions = self.cost_pass.clone();
        if progress.finished {
            let set = LineSet::Costed;
            for prefix in [keys::set_prefix(set), keys::depth_prefix(set), keys::PASS_REGIONS] {
                self.db.remove_all(write, prefix)?;
            }
            return Ok(BTreeMap::new());
        }
        partitions::write(&self.db, write, partitions)?;
        for (name, region) in &progress.files {
            let key = keys::pass_region(name.as_encoded_bytes());
            match region {
                Some(region) => {
                    write.insert(key, region.encode());
                    regions.insert(name.clone(), *region);
                }
                None => {
                    write.remove(key);
                    regions.remove(name);
                }
            }
        }
        Ok(regions)
    }
}

//! A poll's lines marked seen against the committed seen set: a partition not yet in the batch is
//! read once from the database, and the batch keeps it until its commit.

use super::batch::Batch;
use super::count_store::Store;
use super::error::StoreError;
use super::seen::LineHash;
use crate::ledger::timestamp::Day;

impl Store {
    /// Records `hash` as seen in `batch`; `false` when it was seen before, in the batch or in the
    /// store. While an upgrade's cost pass is under way, a line seen now for the first time is
    /// counted whole, its cost included: it goes into the pass's set too, so that the pass cannot
    /// add its cost again (from a copy in a file rewritten in place, see `upgrade/before_cost.rs`).
    pub fn mark_seen(&self, batch: &mut Batch, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        let new = batch.partitions.of(&self.db, day, hash)?.insert(hash);
        if new && !self.cost_pass.is_empty() {
            self.mark_costed(batch, day, hash)?;
        }
        Ok(new)
    }

    /// Whether the store (or `batch`) has seen `hash`.
    pub fn was_seen(&self, batch: &mut Batch, day: Option<Day>, hash: LineHash) -> Result<bool, StoreError> {
        Ok(batch.partitions.of(&self.db, day, hash)?.contains(hash))
    }

    /// Records in `batch` that the cost pass added the quote of `hash`; `false` when it already
    /// had.
    pub fn mark_costed(
        &self,
        batch: &mut Batch,
        day: Option<Day>,
        hash: LineHash,
    ) -> Result<bool, StoreError> {
        Ok(batch.pass().costed.of(&self.db, day, hash)?.insert(hash))
    }
}

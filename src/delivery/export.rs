//! A delta export begun, settled, or forgotten; a cumulative one confirmed.

use super::Delivery;
use crate::series::Sums;
use crate::store::export_record::{self, ExportRecord};
use crate::store::{PendingExport, StoreError};

impl Delivery {
    /// Durably records a delta export's `pending` before it is sent (replacing an older one).
    ///
    /// This write must survive a power cut as well as a `kill -9`: were it lost after the
    /// collector took the export, the next run would send the same increments again. Everything
    /// else is safe to lose to a power cut (a lost commit is read again, a lost `finish_export`
    /// leaves the record's export pending), so only the export record beside the store pays for
    /// an `fsync` (see `store::export_record`); sled's copy is for the run itself and for
    /// `kill -9`.
    pub fn begin_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        let exports = self.exports + 1;
        self.table.begin(&pending, exports)?;
        let record = ExportRecord {
            created_ns: self.store_created_ns,
            number: exports,
            pending,
        };
        export_record::write(&self.record, &record)?;
        self.table.start_writeback();
        self.exports = exports;
        self.pending = Some(record.pending);
        Ok(())
    }

    /// The collector confirmed a cumulative export of `lifetime`: that much is delivered, should
    /// the store ever export delta. Needs no flush of its own: lost, it is written again by the
    /// next export.
    pub fn confirm_delivered(&mut self, lifetime: &Sums) -> Result<(), StoreError> {
        let changed = lifetime.differing_from(&self.delivered);
        if changed.is_empty() {
            return Ok(());
        }
        self.table.confirm(&changed)?;
        self.delivered.overwrite_with(changed);
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
    pub fn finish_export_of(&mut self, taken: &Sums) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let delivered_after = pending.delivered_after.agreeing_with(taken);
        if delivered_after.is_empty() {
            return self.abandon_export();
        }
        self.settle_export(PendingExport { delivered_after })
    }

    fn settle_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        if let Err(e) = self.table.settle(&pending.delivered_after, self.exports) {
            self.pending = Some(pending);
            return Err(e);
        }
        self.delivered.overwrite_with(pending.delivered_after);
        Ok(())
    }

    /// The pending export certainly did not reach the collector: forget it.
    pub fn abandon_export(&mut self) -> Result<(), StoreError> {
        self.table.abandon()?;
        self.pending = None;
        Ok(())
    }
}

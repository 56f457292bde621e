//! The push leg's two steps: the next export begun (what it is built from, made durable before
//! it is sent) and its answer settled. Beneath them, a delta export begun, settled, or
//! forgotten, and a cumulative one confirmed.

use super::Delivery;
use crate::series::Sums;
use crate::store::export_record::{self, ExportRecord};
use crate::store::stream::StreamRecord;
use crate::store::{PendingExport, Store, StoreError};

/// What the next export is built from: what was counted, and what backends have of it.
pub struct Outlook<'a> {
    /// The store's totals, as counted.
    pub lifetime: &'a Sums,
    /// The cumulative stream as last exported.
    pub stream: &'a StreamRecord,
    /// What the collector has, per series (for delta exports).
    pub delivered: &'a Sums,
}

/// An export built and about to be sent.
pub struct Sending<T> {
    /// What is sent.
    pub request: T,
    /// The stream record once it is sent (its marks and last point's time).
    pub stream: StreamRecord,
    /// For a delta export, what the collector has once it takes it.
    pub delivers: Option<PendingExport>,
}

/// What the collector's answer settled.
pub enum Settled<'a> {
    /// A cumulative export: the collector has at least these values.
    Has(&'a Sums),
    /// The delta export in flight reached the collector, or may have: delivered (an unknown
    /// outcome errs toward under-counting).
    Delivered,
    /// Of the delta export in flight, the collector took these series only; the next export
    /// carries the rest again.
    DeliveredOnly(&'a Sums),
}

impl Delivery {
    /// Begins the next export: settles one a run did not see answered, dates the stream back to
    /// `now_ns` if it ran ahead of the clock, hands `build` what was counted and what backends
    /// have, and makes what it built durable before it is sent. `None` when `build` has nothing
    /// to send.
    pub fn next_export<T>(
        &mut self,
        store: &Store,
        now_ns: u64,
        build: impl FnOnce(Outlook<'_>) -> Option<Sending<T>>,
    ) -> Result<Option<T>, StoreError> {
        if self.pending.is_some() {
            // A delta export a run did not see answered: its outcome is unknown.
            self.finish_export()?;
        }
        self.bring_stream_back(now_ns)?;
        let outlook = Outlook {
            lifetime: store.lifetime(),
            stream: &self.stream,
            delivered: &self.delivered,
        };
        let Some(sending) = build(outlook) else {
            return Ok(None);
        };
        if let Some(pending) = sending.delivers {
            self.begin_export(pending)?;
        }
        self.record_stream(store, sending.stream)?;
        Ok(Some(sending.request))
    }

    /// Takes the collector's answer to the export in flight into account.
    pub fn settle(&mut self, settled: Settled<'_>) -> Result<(), StoreError> {
        match settled {
            Settled::Has(lifetime) => self.confirm_delivered(lifetime),
            Settled::Delivered => self.finish_export(),
            Settled::DeliveredOnly(taken) => self.finish_export_of(taken),
        }
    }

    /// Durably records a delta export's `pending` before it is sent (replacing an older one).
    ///
    /// This write must survive a power cut as well as a `kill -9`: were it lost after the
    /// collector took the export, the next run would send the same increments again. Everything
    /// else is safe to lose to a power cut (a lost commit is read again, a lost `finish_export`
    /// leaves the record's export pending), so only the export record beside the store pays for
    /// an `fsync` (see `store::export_record`); sled's copy is for the run itself and for
    /// `kill -9`.
    pub(super) fn begin_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
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
    pub(super) fn confirm_delivered(&mut self, lifetime: &Sums) -> Result<(), StoreError> {
        let changed = lifetime.differing_from(&self.delivered);
        if changed.is_empty() {
            return Ok(());
        }
        self.table.confirm(&changed)?;
        self.delivered.overwrite_with(changed);
        Ok(())
    }

    /// The collector has the pending export: its totals are delivered, in one atomic write.
    pub(super) fn finish_export(&mut self) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        self.settle_export(pending)
    }

    /// Settles the pending export of which only the series in `taken` (with their values) were
    /// delivered: the collector refused the rest, which the next export carries again.
    pub(super) fn finish_export_of(&mut self, taken: &Sums) -> Result<(), StoreError> {
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
        // The stream record's marks, raised to what the collector has: they outlive the store,
        // so that a store rebuilt from the ledger sends none of it again.
        let mut stream = self.stream.clone();
        stream.marks.raise_to(&pending.delivered_after);
        if stream.marks != self.stream.marks {
            self.write_stream(stream)?;
        }
        self.delivered.overwrite_with(pending.delivered_after);
        Ok(())
    }

    /// The pending export certainly did not reach the collector: forget it.
    pub(super) fn abandon_export(&mut self) -> Result<(), StoreError> {
        self.table.abandon()?;
        self.pending = None;
        Ok(())
    }
}

//! The three facts of delivery kept in the store's database: what each series has delivered,
//! the delta export in flight, and how many exports were ever begun. They are written here and
//! meant in `delivery/`, which owns them; the store keeps them in its one database so that a
//! delivered total and the export that settled it are written in one atomic write.

use super::engine::{self, Engine, Write, keys};
use super::error::StoreError;
use super::pending_export::PendingExport;
use crate::series::{Family, Sums};

/// Delivery's handle on the store's database: its own keys, nothing else.
pub struct DeliveredTable {
    db: Engine,
    /// Writes that need no flush of their own wait for the next (see
    /// `Store::defer_commit_flush`): what settles an export, which lost is the export record's
    /// pending export again (counted as delivered when delta, sent again when cumulative), so
    /// that a `once` waits for the disk once after its send, not twice.
    defer_flush: bool,
}

/// What the table held when it was opened.
#[derive(Default)]
pub struct Delivered {
    /// Per series, what the collector has.
    pub sums: Sums,
    pub pending: Option<PendingExport>,
    /// Exports ever begun.
    pub exports: u64,
}

impl DeliveredTable {
    pub(super) fn new(db: Engine, defer_flush: bool) -> DeliveredTable {
        DeliveredTable { db, defer_flush }
    }

    pub fn load(&self) -> Result<Delivered, StoreError> {
        let mut delivered = Delivered::default();
        for family in Family::ALL {
            for entry in self.db.scan(keys::family_prefix(family, true)) {
                let (key, value) = entry?;
                delivered
                    .sums
                    .insert_encoded(family, &key, &value)
                    .ok_or_else(|| self.corrupt("delivered sums"))?;
            }
        }
        if let Some(bytes) = self.db.get(keys::PENDING)? {
            let pending = PendingExport::decode(&bytes).ok_or_else(|| self.corrupt("pending export"))?;
            delivered.pending = Some(pending);
        }
        if let Some(bytes) = self.db.get(keys::EXPORTS)? {
            let bytes: [u8; 8] = (*bytes).try_into().map_err(|_| self.corrupt("export count"))?;
            delivered.exports = u64::from_le_bytes(bytes);
        }
        Ok(delivered)
    }

    /// A delta export begun, the `number`th: flushed at once, before it is sent.
    pub fn begin(&self, pending: &PendingExport, number: u64) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.insert(keys::PENDING, pending.encode());
        write.insert(keys::EXPORTS, number.to_le_bytes());
        self.db.apply(write)?;
        self.db.flush()
    }

    /// The export in flight settled with `delivered` (the series it changed): one atomic write.
    /// Needs no flush of its own (lost, the export record's export is pending again).
    pub fn settle(&self, delivered: &Sums, exports: u64) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.sums(delivered, true);
        write.remove(keys::PENDING);
        // A count taken from the export record moves into the database here.
        write.insert(keys::EXPORTS, exports.to_le_bytes());
        self.db.apply(write)?;
        if self.defer_flush { Ok(()) } else { self.db.flush() }
    }

    /// Series delivered by a cumulative export; lost, they are written again by the next one.
    pub fn confirm(&self, changed: &Sums) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.sums(changed, true);
        self.db.apply(write)
    }

    /// The export in flight forgotten. Flushed at once even in a `once`: lost, a delta export
    /// would count as delivered.
    pub fn abandon(&self) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.remove(keys::PENDING);
        self.db.apply(write)?;
        self.db.flush()
    }

    /// A record beside the store is on disk: what sled left dirty (its rewrite at open) can go
    /// now, during the send, instead of queueing in front of the next record's `fsync`. A `once`
    /// starts it at its close instead, so that its one flush after the send does not queue
    /// behind it.
    pub fn start_writeback(&self) {
        if !self.defer_flush {
            engine::start_writeback(&self.db.log());
        }
    }

    /// The store's folder, for what is said about it.
    pub fn path(&self) -> &std::path::Path {
        self.db.path()
    }

    fn corrupt(&self, what: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.db.path().to_path_buf(),
            detail: format!("unreadable {what}"),
        }
    }
}

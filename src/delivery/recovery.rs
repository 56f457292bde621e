//! An export record that knows of a delta export the store's database lost (a power cut; or an
//! older copy of the store put back): the export may have reached the collector, so it is
//! pending again, and the lines the database lost are read again from the ledger.

use super::Delivery;
use crate::inert_text::ShowPath;
use crate::store::StoreError;
use crate::store::export_record;

impl Delivery {
    /// Takes the export record's export as pending when it is newer than the database's count;
    /// refuses a record of another store.
    pub(super) fn catch_up_with_record(&mut self) -> Result<(), StoreError> {
        let Some(record) = export_record::read(&self.record, self.table.path())? else {
            return Ok(());
        };
        if record.created_ns != self.store_created_ns {
            return Err(StoreError::Corrupt {
                path: self.table.path().to_path_buf(),
                detail: format!("{} belongs to another store", self.record.shown()),
            });
        }
        if record.number > self.exports {
            crate::events::store::behind_record(self.table.path(), record.number, self.exports);
            self.exports = record.number;
            self.pending = Some(record.pending);
        }
        Ok(())
    }
}

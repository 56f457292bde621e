//! The store's side of upgrades, fenced off from the rest of it: a store of an older format is
//! converted where it is loaded, and old layouts' decoders are here (a record file defaults the fields its older versions lack where it reads them) (a record
//! beside the store names its old versions in `records/`, and reads them with what is here). The reading half of the cost pass is in the
//! top-level `upgrade` module.
//!
//! - format 6 (before checkpoints by blocks): the version alone, so that an older build refuses
//!   the store as newer rather than damaged; its checkpoints, hashed in one stream, are read as
//!   they are and verified in full when their files grow (`ledger/checkpoint.rs`);
//! - format 5 (before totals were stored with their width): every token sum, delivered or not,
//!   and the pending export rewritten with it;
//! - format 4 (before the seen set's days were split deeper): as format 5, the version aside;
//! - format 3 (before cost): `before_cost.rs`, a pass over what the store had read, for the quotes
//!   of the lines it counted; then as format 5.
//!
//! Every step goes in one atomic, flushed write with the new version.

pub mod before_cost;
mod layouts;

use super::count_store::Store;
use super::engine::Write;
use super::engine::keys::{self, FORMAT_VERSION};
use super::error::StoreError;
use crate::bytes::Reader;
use crate::series::Family;
use before_cost::BEFORE_COST;
use layouts::{WIDTH_BEFORE_WIDTH, totals_before_width};
pub use layouts::{pending_before_cost, pending_before_width, sums_before_cost, sums_before_width};

/// The format of stores before [`Totals`] were stored with their width; format 4, before the
/// seen set's days were split deeper than four partitions, is one of these whose days are all
/// four partitions deep.
const BEFORE_WIDTH: u32 = 5;

impl Store {
    /// Brings a store whose format is `value` to this one; refuses a newer one, and one older
    /// than this build reads.
    pub(super) fn upgrade_from(&mut self, value: &[u8]) -> Result<(), StoreError> {
        let found = self.check_version(value)?;
        if found == FORMAT_VERSION {
            return Ok(());
        }
        let mut write = Write::default();
        let mut regions = None;
        if found == BEFORE_COST {
            regions = Some(self.upgrade_before_cost(&mut write)?);
        }
        if found <= BEFORE_WIDTH {
            self.upgrade_before_width(&mut write, found)?;
        }
        // Every older format gains this one's version, which makes a build that cannot read what
        // changed since refuse the store as newer rather than count lines again (format 4's days
        // split deeper; format 6, before checkpoints by blocks, gains nothing else).
        write.insert(keys::VERSION, FORMAT_VERSION.to_le_bytes());
        self.apply(write)?;
        if let Some(files) = regions {
            crate::events::store::upgraded(self.path(), FORMAT_VERSION, files);
        }
        Ok(())
    }

    /// Rewrites every token sum of a store of format [`BEFORE_WIDTH`] or older with its width,
    /// and its pending export (which a store before cost had converted already).
    fn upgrade_before_width(&self, write: &mut Write, found: u32) -> Result<(), StoreError> {
        for delivered in [false, true] {
            let prefix = keys::family_prefix(Family::Tokens, delivered);
            for entry in self.db.scan(prefix) {
                let (key, value) = entry?;
                let totals = totals_before_width(&mut Reader::new(&value))
                    .filter(|_| value.len() == WIDTH_BEFORE_WIDTH * 8)
                    .ok_or_else(|| self.corrupt("series sums"))?;
                write.insert([prefix, &key].concat(), totals.encode());
            }
        }
        if found != BEFORE_COST
            && let Some(bytes) = self.get(keys::PENDING)?
        {
            let pending = pending_before_width(&bytes).ok_or_else(|| self.corrupt("pending export"))?;
            write.insert(keys::PENDING, pending.encode());
        }
        Ok(())
    }

    /// The store's format: this one, or an older one this build upgrades.
    fn check_version(&self, value: &[u8]) -> Result<u32, StoreError> {
        let found = u32::from_le_bytes(value.try_into().map_err(|_| self.corrupt("format version"))?);
        if found > FORMAT_VERSION {
            return Err(StoreError::NewerFormat {
                path: self.path().to_path_buf(),
                found,
            });
        }
        if found < BEFORE_COST {
            return Err(StoreError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!("format {found}, from a development build; this one reads {FORMAT_VERSION}"),
            });
        }
        Ok(found)
    }
}

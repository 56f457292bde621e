//! The store's side of upgrades, fenced off from the rest of it: a store of an older format is
//! converted where it is loaded, and old layouts' decoders are here (a record file defaults the fields its older versions lack where it reads them) (a record
//! beside the store names its old versions in `records/`, and reads them with what is here). The reading half of the cost pass is in the
//! top-level `upgrade` module.
//!
//! - format 4 (before the seen set's days were split deeper): only the version changes;
//! - format 3 (before cost): `cost_pass.rs`, a pass over what the store had read, for the quotes
//!   of the lines it counted.

pub mod cost_pass;

use std::collections::BTreeMap;

use super::engine::{Write, keys};
use super::{FORMAT_VERSION, PendingExport, Store, StoreError};
use crate::bytes::Reader;
use crate::series::{AttrSet, Family, Sums, Totals};
use cost_pass::BEFORE_COST;

/// The format of stores before the seen set's days were split deeper than four partitions.
const BEFORE_SPLIT: u32 = 4;

impl Store {
    /// Brings a store whose format is `value` to this one; refuses a newer one, and one older
    /// than this build reads.
    pub(super) fn upgrade_from(&mut self, value: &[u8]) -> Result<(), StoreError> {
        match self.check_version(value)? {
            BEFORE_COST => self.upgrade_before_cost(),
            BEFORE_SPLIT => self.upgrade_before_split(),
            _ => Ok(()),
        }
    }

    /// A store of format [`BEFORE_SPLIT`] is one of this format whose days are all four
    /// partitions deep: only its version changes, so that a build that cannot read a day split
    /// deeper refuses the store rather than count that day's lines again.
    fn upgrade_before_split(&mut self) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.insert(keys::VERSION, FORMAT_VERSION.to_le_bytes());
        self.apply(write)
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

/// Sums as layouts before cost wrote them (stream record 1): the token section alone.
pub(super) fn sums_before_cost(bytes: &mut Reader) -> Option<Sums> {
    Sums::read_families(bytes, &[Family::Tokens])
}

/// The pending export of stores before cost (format 3, export record 2): per token series, the
/// series key's length (u32), the key, the [`Totals`], up to the end.
pub(super) fn pending_before_cost(bytes: &[u8]) -> Option<PendingExport> {
    let mut r = Reader::new(bytes);
    let mut tokens = BTreeMap::new();
    while !r.is_empty() {
        let attrs = AttrSet::decode(r.sized()?)?;
        let totals = Totals::decode(r.take(Totals::ENCODED_LEN)?)?;
        tokens.insert(attrs, totals);
    }
    Some(PendingExport {
        delivered_after: Sums {
            tokens,
            ..Sums::default()
        },
    })
}

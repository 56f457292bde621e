//! The export record: the last delta export begun, in a small file of its own beside the store.
//!
//! It must survive a power cut: were a delta export the collector took lost, the next run would
//! send the same increments again. So it is written and `fsync`ed before a byte of the export
//! leaves, and the store (sled) is never `fsync`ed for an export: a `fsync` of sled's log pays
//! for every page sled dirtied since it opened, which for a short `once` is megabytes of free
//! segments sled rewrites at each open.
//!
//! A store that lost writes the record has (a power cut, or an older copy put back) takes the
//! record's export as still pending, which then counts as delivered, and the lines it lost are
//! read again from the ledger. (Cumulative exports need no such record: each carries the
//! lifetime totals, so a later one supersedes any earlier one; see `stream`.)

use std::path::{Path, PathBuf};

use super::frame::{self, Record};
use crate::inert_text::ShowPath;
use crate::store::error::StoreError;
use crate::store::pending_export::PendingExport;

/// The file's first bytes, before the format's version.
const MAGIC: &[u8; 8] = b"rxexport";
/// 4 stores totals with their width; 3 carries the cost families; 2 (before cost) is read as tokens only.
const VERSION: u8 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRecord {
    /// The creation time of the store it belongs to.
    pub created_ns: u64,
    /// The export's number: the store's count of exports begun, this one included.
    pub number: u64,
    pub pending: PendingExport,
}

impl Record for ExportRecord {
    fn encode(&self) -> Vec<u8> {
        let mut out = frame::header(MAGIC, VERSION);
        out.extend_from_slice(&self.created_ns.to_le_bytes());
        out.extend_from_slice(&self.number.to_le_bytes());
        out.extend_from_slice(&self.pending.encode());
        frame::seal(out)
    }

    fn decode(bytes: &[u8]) -> Option<ExportRecord> {
        let (version, mut fields) = frame::open(bytes, MAGIC)?;
        let created_ns = fields.u64()?;
        let number = fields.u64()?;
        let pending = match version {
            VERSION => PendingExport::decode(fields.rest())?,
            3 => crate::store::upgrade::pending_before_width(fields.rest())?,
            2 => crate::store::upgrade::pending_before_cost(fields.rest())?,
            _ => return None,
        };
        Some(ExportRecord {
            created_ns,
            number,
            pending,
        })
    }
}

/// Where the record of the store under `state_dir` lives.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join("store.export")
}

/// Reads the record at `path` beside the store at `store`: `None` when there is none.
pub fn read(path: &Path, store: &Path) -> Result<Option<ExportRecord>, StoreError> {
    frame::read(path, || StoreError::Corrupt {
        path: store.to_path_buf(),
        detail: format!("unreadable export record {}", path.shown()),
    })
}

/// Replaces the record at `path` so that it survives a power cut.
pub fn write(path: &Path, record: &ExportRecord) -> Result<(), StoreError> {
    frame::write(path, record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{AttrSet, Sums, Totals};

    fn record() -> ExportRecord {
        let mut delivered_after = Sums::default();
        delivered_after
            .tokens
            .insert(AttrSet::folded(), Totals::default());
        ExportRecord {
            created_ns: 1_764_500_000_123_456_789,
            number: 42,
            pending: PendingExport { delivered_after },
        }
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let store = dir.path().join("store");
        assert!(matches!(read(&path, &store), Ok(None)));
        frame::write(&path, &record()).unwrap();
        assert_eq!(read(&path, &store).ok().flatten(), Some(record()));
        let mut next = record();
        next.number = 43;
        frame::write(&path, &next).unwrap();
        assert_eq!(read(&path, &store).ok().flatten(), Some(next));
        assert!(!dir.path().join("store.export.tmp").exists());
    }

    #[test]
    fn any_damaged_byte_makes_the_record_unreadable() {
        frame::assert_every_damage_is_refused(&record().encode(), |bytes| {
            ExportRecord::decode(bytes).is_some()
        });
    }
}

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

use xxhash_rust::xxh3::xxh3_64;

use super::{PendingExport, StoreError};

/// The file's first bytes, with the format's version last.
const MAGIC: &[u8; 8] = b"rxexport";
/// 3 carries the cost families; 2 (before cost) is read as tokens only.
const VERSION: u8 = 3;
const HEADER_LEN: usize = MAGIC.len() + 1 + 8 + 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRecord {
    /// The creation time of the store it belongs to.
    pub created_ns: u64,
    /// The export's number: the store's count of exports begun, this one included.
    pub number: u64,
    pub pending: PendingExport,
}

impl ExportRecord {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 256);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.created_ns.to_le_bytes());
        out.extend_from_slice(&self.number.to_le_bytes());
        out.extend_from_slice(&self.pending.encode());
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<ExportRecord> {
        let (body, checksum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
        if xxh3_64(body).to_le_bytes() != checksum || body.len() < HEADER_LEN {
            return None;
        }
        let (header, pending) = body.split_at(HEADER_LEN);
        let (magic, rest) = header.split_at(MAGIC.len());
        if magic != MAGIC {
            return None;
        }
        let pending = match rest[0] {
            VERSION => PendingExport::decode(pending)?,
            2 => PendingExport::decode_before_cost(pending)?,
            _ => return None,
        };
        let number_at = |at: usize| u64::from_le_bytes(rest[at..at + 8].try_into().expect("8 bytes"));
        Some(ExportRecord {
            created_ns: number_at(1),
            number: number_at(9),
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
    match crate::files::read_own(path, crate::files::MAX_OWN_BYTES) {
        Ok(bytes) => ExportRecord::decode(&bytes)
            .map(Some)
            .ok_or_else(|| StoreError::Corrupt {
                path: store.to_path_buf(),
                detail: format!("unreadable export record {}", path.display()),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StoreError::Io {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Replaces the record at `path` so that it survives a power cut.
pub fn write(path: &Path, record: &ExportRecord) -> std::io::Result<()> {
    crate::files::replace(path, &record.encode(), crate::files::Durability::PowerCut)
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
        write(&path, &record()).unwrap();
        assert_eq!(read(&path, &store).ok().flatten(), Some(record()));
        let mut next = record();
        next.number = 43;
        write(&path, &next).unwrap();
        assert_eq!(read(&path, &store).ok().flatten(), Some(next));
        assert!(!dir.path().join("store.export.tmp").exists());
    }

    #[test]
    fn any_damaged_byte_makes_the_record_unreadable() {
        super::super::damage::assert_every_damage_is_refused(&record().encode(), |bytes| {
            ExportRecord::decode(bytes).is_some()
        });
    }
}

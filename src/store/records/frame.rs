//! The records' frame: magic, a version byte, the fields, an xxh3 checksum of all before it.

use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::bytes::Reader;
use crate::store::error::StoreError;

/// A record's first bytes: `magic`, then `version`; its fields follow.
pub(in crate::store) fn header(magic: &[u8; 8], version: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(magic);
    out.push(version);
    out
}

/// Ends a record begun with [`header`]: its checksum.
pub(in crate::store) fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let checksum = xxh3_64(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// A record's version and its fields, if its checksum holds and it begins with `magic`.
pub(in crate::store) fn open<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Option<(u8, Reader<'a>)> {
    let (body, checksum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if xxh3_64(body).to_le_bytes() != checksum {
        return None;
    }
    let mut fields = Reader::new(body);
    if fields.take(magic.len())? != magic {
        return None;
    }
    Some((fields.u8()?, fields))
}

/// What a record file holds.
pub(in crate::store) trait Record: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// Reads the record at `path`: `None` when there is none, `unreadable` when what is there is
/// not one (damaged, cut, or of a format this build does not read).
pub(in crate::store) fn read<R: Record>(
    path: &Path,
    unreadable: impl FnOnce() -> StoreError,
) -> Result<Option<R>, StoreError> {
    match crate::own_files::read_own(path, crate::own_files::MAX_OWN_BYTES) {
        Ok(bytes) => R::decode(&bytes).map(Some).ok_or_else(unreadable),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StoreError::Io {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Replaces the record at `path` so that it survives a power cut.
pub(in crate::store) fn write(path: &Path, record: &impl Record) -> Result<(), StoreError> {
    write_with(path, record, crate::own_files::Durability::PowerCut)
}

/// Replaces the record at `path`, surviving what `durability` names.
pub(in crate::store) fn write_with(
    path: &Path,
    record: &impl Record,
    durability: crate::own_files::Durability,
) -> Result<(), StoreError> {
    crate::own_files::replace(path, &record.encode(), durability).map_err(|error| StoreError::io(path, error))
}

/// Asserts that `reads` refuses every copy of `bytes` with one byte damaged, and every cut of it:
/// what the frame must catch.
#[cfg(test)]
pub(in crate::store) fn assert_every_damage_is_refused(bytes: &[u8], reads: impl Fn(&[u8]) -> bool) {
    for at in 0..bytes.len() {
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x10;
        assert!(!reads(&damaged), "byte {at} damaged, still read");
    }
    for len in 0..bytes.len() {
        assert!(!reads(&bytes[..len]), "cut at {len}, still read");
    }
}

//! The cost pass's regions (see `upgrade/before_cost.rs`): what it has still to read of each file,
//! and what a batch of it changes.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// One file's part of the pass: the bytes `[done, end)` are still to be read, of the file that
/// had the checkpoint (its device and inode find it again under another name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassFile {
    pub done: u64,
    pub end: u64,
    pub dev: u64,
    pub ino: u64,
}

impl PassFile {
    pub const ENCODED_LEN: usize = 32;

    /// `done`, `end`, `dev`, `ino`: little-endian u64s.
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0; Self::ENCODED_LEN];
        crate::bytes::put_u64s(&mut out, &[self.done, self.end, self.dev, self.ino]);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<PassFile> {
        let [done, end, dev, ino] = crate::bytes::u64s(bytes)?;
        let region = PassFile { done, end, dev, ino };
        (region.done <= region.end).then_some(region)
    }
}

/// What a batch of the pass changes: regions' progress (`None`: the file is done), and whether
/// the pass ends with it.
#[derive(Debug, Default)]
pub struct PassProgress {
    pub files: BTreeMap<OsString, Option<PassFile>>,
    pub finished: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_reads_back_and_never_ends_before_it_starts() {
        let region = PassFile {
            done: 7,
            end: 4096,
            dev: 1,
            ino: 2,
        };
        assert_eq!(PassFile::decode(&region.encode()), Some(region));
        let backwards = PassFile {
            done: 9,
            end: 8,
            ..region
        };
        assert_eq!(PassFile::decode(&backwards.encode()), None);
        assert_eq!(PassFile::decode(&[0; 31]), None);
    }
}

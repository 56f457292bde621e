//! Replacing a small file so that a power cut leaves the old version or the new one, whole.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Replaces the file at `path` with `bytes` for good: written to a temporary file and
/// `fsync`ed, renamed over the old one, and the folder `fsync`ed so that the rename survives a
/// power cut too.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(folder)?.sync_all()
}

/// Asserts that `reads` refuses every copy of `bytes` with one byte damaged, and every cut of it:
/// what a record file's checksum and framing must catch.
#[cfg(test)]
pub fn assert_every_damage_is_refused(bytes: &[u8], reads: impl Fn(&[u8]) -> bool) {
    for at in 0..bytes.len() {
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x10;
        assert!(!reads(&damaged), "byte {at} damaged, still read");
    }
    for len in 0..bytes.len() {
        assert!(!reads(&bytes[..len]), "cut at {len}, still read");
    }
}

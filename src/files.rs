//! Replacing a small file whole, so that a reader never sees half of it: written to `<path>.tmp`,
//! then renamed over `path`. Each caller chooses how much must survive, and says why.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What a replaced file survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A power cut: the data is `fsync`ed before the rename, and the folder after it. For the
    /// records that say what a collector may already have (the stream record, the export
    /// record) and which store lives here (the marker).
    PowerCut,
    /// A crash of the process: the kernel has the file, the disk may not yet. For views of the
    /// store that other commands read (`status.json`, `export-health.json`) and that the next
    /// change rewrites anyway.
    ProcessCrash,
}

/// Replaces the file at `path` with `bytes`, as `durability` says.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> std::io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    if durability == Durability::PowerCut {
        file.sync_data()?;
    }
    drop(file);
    std::fs::rename(&tmp, path)?;
    if durability == Durability::PowerCut {
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        File::open(folder)?.sync_all()?;
    }
    Ok(())
}

/// Replaces the file at `path` with `value` as pretty JSON.
pub fn replace_json(
    path: &Path,
    value: &impl serde::Serialize,
    durability: Durability,
) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    replace(path, &bytes, durability)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_holds_the_new_bytes_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record");
        for durability in [Durability::PowerCut, Durability::ProcessCrash] {
            replace(&path, b"old", durability).unwrap();
            replace(&path, b"new", durability).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"new");
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["record"]);
        }
    }
}

//! Which files: the top-level `*.jsonl` of the stats folder (where that folder is: `paths.rs`).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::checkpoint::FileStat;

/// One ledger file: a `*.jsonl` directly inside the stats folder, as `stat` saw it. Its path
/// is the folder's joined with its name when the file is opened, not kept: a listing holds one
/// of these a file, tens of thousands of them in the oldest histories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerFile {
    /// The file name, which keys its checkpoint.
    pub name: OsString,
    pub stat: FileStat,
}

impl LedgerFile {
    /// The file's path, in the stats folder `stats_dir`.
    pub fn path(&self, stats_dir: &Path) -> PathBuf {
        stats_dir.join(&self.name)
    }
}

/// Whether a file of the stats folder named `name` is a ledger file: `*.jsonl`, and no dot-file
/// (`._2026-11-30.jsonl` is macOS AppleDouble metadata, not Reasonix's).
pub fn is_ledger_name(name: &std::ffi::OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    bytes.ends_with(b".jsonl") && !bytes.starts_with(b".")
}

/// The `*.jsonl` files directly inside `stats_dir`, sorted by name, each with its `stat`.
/// Sub-folders, other files and anything below them are never opened.
///
/// This is most of an idle poll, so each file costs one `stat` relative to the open folder
/// (`fstatat`, no path walk); only a symlink is followed by path.
pub fn ledger_files(stats_dir: &Path) -> io::Result<Vec<LedgerFile>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(stats_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        // Dot-files are not Reasonix's: `._2026-11-30.jsonl` is macOS AppleDouble metadata.
        if !is_ledger_name(&name) {
            continue;
        }
        let meta = match entry.file_type() {
            Ok(kind) if kind.is_symlink() => std::fs::metadata(entry.path()),
            _ => entry.metadata(),
        };
        // A folder named `*.jsonl`, or a file gone since the listing, is not a ledger file.
        match meta {
            Ok(meta) if meta.is_file() => files.push(LedgerFile {
                name,
                stat: FileStat::of(&meta),
            }),
            _ => continue,
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files.shrink_to_fit();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_jsonl_files_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "2026-09-15.jsonl",
            "2026-09-15 (1).jsonl",
            "x.jsonl.bak",
            ".append.lock",
        ] {
            std::fs::write(dir.path().join(name), b"{}\n").unwrap();
        }
        std::fs::create_dir(dir.path().join("old")).unwrap();
        std::fs::write(dir.path().join("old/2026-01-01.jsonl"), b"{}\n").unwrap();
        std::fs::create_dir(dir.path().join("folder.jsonl")).unwrap();
        let names: Vec<_> = ledger_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|f| f.name.into_string().unwrap())
            .collect();
        assert_eq!(names, ["2026-09-15 (1).jsonl", "2026-09-15.jsonl"]);
    }
}

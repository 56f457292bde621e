//! The release archives (`.tar.gz`, and `.zip` for Windows), and the deterministic tar and zip
//! writers the packages use too: entries in order, owned by root, dated `SOURCE_DATE_EPOCH`.

use std::collections::BTreeMap;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::civil;
use crate::contents::{Docs, NAME, Release};
use crate::targets::{Os, Target};

/// One file of an archive or package.
pub struct Entry {
    pub path: String,
    pub mode: u32,
    pub data: Vec<u8>,
    /// A folder of its own (an image's `/state`), rather than one implied by a file's path.
    pub folder: bool,
    pub owner: u64,
}

impl Entry {
    pub fn new(path: impl Into<String>, mode: u32, data: impl Into<Vec<u8>>) -> Entry {
        Entry {
            path: path.into(),
            mode,
            data: data.into(),
            folder: false,
            owner: 0,
        }
    }

    /// An empty folder `path` (no trailing slash) with its own mode and owner.
    pub fn folder(path: impl Into<String>, mode: u32, owner: u64) -> Entry {
        Entry {
            folder: true,
            owner,
            ..Entry::new(path, mode, Vec::new())
        }
    }
}

/// `reasonix-exporter-VERSION-TRIPLE`, the archive's name and its one top folder.
pub fn stem(triple: &str, release: &Release) -> String {
    format!("{NAME}-{}-{triple}", release.version)
}

/// The archive of one target: the binary, README, licences, man page and completions.
pub fn release_archive(
    target: &Target,
    binary: &[u8],
    docs: &Docs,
    release: &Release,
    out: &Path,
) -> Result<PathBuf> {
    let stem = stem(target.triple, release);
    let mut entries = vec![
        Entry::new(format!("{stem}/{}", target.exe()), 0o755, binary),
        Entry::new(
            format!("{stem}/README.md"),
            0o644,
            release.source_file("README.md")?,
        ),
        Entry::new(
            format!("{stem}/LICENSE-MIT"),
            0o644,
            release.source_file("LICENSE-MIT")?,
        ),
        Entry::new(
            format!("{stem}/LICENSE-APACHE"),
            0o644,
            release.source_file("LICENSE-APACHE")?,
        ),
        Entry::new(format!("{stem}/man/{NAME}.1"), 0o644, docs.man.clone()),
    ];
    for (_, file, script) in &docs.completions {
        entries.push(Entry::new(
            format!("{stem}/completions/{file}"),
            0o644,
            script.clone(),
        ));
    }
    let (name, bytes) = match target.os {
        Os::Windows => (format!("{stem}.zip"), zip(&entries, release.epoch)?),
        Os::Linux | Os::Mac => (format!("{stem}.tar.gz"), tar_gz(&entries, release.epoch)?),
    };
    let path = out.join(name);
    crate::write(&path, bytes)?;
    Ok(path)
}

/// A tar (ustar) of `entries` with a directory entry for each folder above them, in path order.
pub fn tar(entries: &[Entry], epoch: u64) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    // Each path once: a folder given as an entry wins over the same folder implied by a file.
    let mut paths: BTreeMap<String, Option<usize>> = BTreeMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let mut folder = Path::new(&entry.path).parent();
        while let Some(dir) = folder.filter(|d| !d.as_os_str().is_empty()) {
            paths.entry(format!("{}/", dir.display())).or_insert(None);
            folder = dir.parent();
        }
        match entry.folder {
            true => paths.insert(format!("{}/", entry.path), Some(index)),
            false => paths.insert(entry.path.clone(), Some(index)),
        };
    }
    let implied = Entry::folder("", 0o755, 0);
    for (path, index) in paths {
        let entry = index.map_or(&implied, |i| &entries[i]);
        let mut header = tar::Header::new_ustar();
        header.set_mtime(epoch);
        header.set_uid(entry.owner);
        header.set_gid(entry.owner);
        if entry.owner == 0 {
            header.set_username("root")?;
            header.set_groupname("root")?;
        }
        header.set_mode(entry.mode);
        header.set_entry_type(match entry.folder {
            true => tar::EntryType::Directory,
            false => tar::EntryType::Regular,
        });
        let data: &[u8] = &entry.data;
        header.set_size(data.len() as u64);
        builder.append_data(&mut header, path, data)?;
    }
    Ok(builder.into_inner()?)
}

/// `tar` of `entries`, gzipped with no name or time in the gzip header.
pub fn tar_gz(entries: &[Entry], epoch: u64) -> Result<Vec<u8>> {
    gzip(&tar(entries, epoch)?)
}

pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    encoder.write_all(data)?;
    Ok(encoder.finish()?)
}

/// A zip of `entries`, in path order, each dated `epoch` (zip's dates have no zone: UTC here).
pub fn zip(entries: &[Entry], epoch: u64) -> Result<Vec<u8>> {
    let (y, mo, d, h, mi, s) = civil::utc(epoch.max(315_532_800)); // zip's dates start in 1980
    let when = zip::DateTime::from_date_and_time(y as u16, mo as u8, d as u8, h as u8, mi as u8, s as u8)?;
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let mut order: Vec<&Entry> = entries.iter().collect();
    order.sort_by(|a, b| a.path.cmp(&b.path));
    for entry in order {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(when)
            .unix_permissions(entry.mode);
        writer.start_file(entry.path.as_str(), options)?;
        writer.write_all(&entry.data)?;
    }
    Ok(writer.finish()?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(order: &[usize]) -> Vec<Entry> {
        let all = [
            Entry::new("a/b/file", 0o644, b"one".to_vec()),
            Entry::new("a/bin", 0o755, b"two".to_vec()),
            Entry::folder("state", 0o700, 65_532),
        ];
        order.iter().map(|&i| clone(&all[i])).collect()
    }

    fn clone(entry: &Entry) -> Entry {
        Entry {
            path: entry.path.clone(),
            data: entry.data.clone(),
            ..*entry
        }
    }

    #[test]
    fn the_same_files_give_the_same_bytes_in_any_order() {
        let one = tar_gz(&entries(&[0, 1, 2]), 1_796_400_000).unwrap();
        let other = tar_gz(&entries(&[2, 1, 0]), 1_796_400_000).unwrap();
        assert_eq!(one, other);
        assert_eq!(
            zip(&entries(&[0, 1]), 1_796_400_000).unwrap(),
            zip(&entries(&[1, 0]), 1_796_400_000).unwrap()
        );
        assert_ne!(
            one,
            tar_gz(&entries(&[0, 1, 2]), 1_796_400_001).unwrap(),
            "dated by the epoch"
        );
    }

    #[test]
    fn folders_are_listed_before_what_they_hold_with_their_owner() {
        let bytes = tar(&entries(&[0, 1, 2]), 0).unwrap();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let listed: Vec<(String, u32, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("a/".to_owned(), 0o755, 0),
                ("a/b/".to_owned(), 0o755, 0),
                ("a/b/file".to_owned(), 0o644, 0),
                ("a/bin".to_owned(), 0o755, 0),
                ("state/".to_owned(), 0o700, 65_532),
            ]
        );
    }
}

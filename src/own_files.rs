//! The exporter's own small files in the state dir: replaced whole, so that a reader never sees
//! half of one (written to `<path>.tmp`, then renamed over `path`; each caller chooses how much
//! must survive, and says why), and opened without following a symlink, so that nothing planted
//! in the state dir makes the exporter write, truncate or read anything else. A read is of a
//! regular file, bounded (a FIFO or `/dev/zero` in its place is an error, not a hang).

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use crate::inert_text::ShowPath;

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

/// Deletes the file or folder at `path`, if there is one (a symlink: the link alone).
pub fn remove_if_present(path: &Path) -> std::io::Result<()> {
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    let removed = if is_dir {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Replaces the file at `path` with `bytes`, as `durability` says.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> std::io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    // A leftover (or planted) temporary goes first: removing a symlink removes the link alone,
    // and an empty folder in its place goes too; anything else there is in the way, and said so.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_dir()) => {
            std::fs::remove_dir(&tmp).map_err(|_| in_the_way(&tmp))?;
        }
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let mut file = options_without_symlinks(File::options().write(true).create_new(true))
        .open(&tmp)
        .map_err(said_of_a_link)?;
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
        sync_folder(folder)?;
    }
    Ok(())
}

/// Makes what was written to the file at `path` durable. Windows flushes a file only through a
/// handle that may write to it (a read-only one is refused: "Access denied").
pub fn sync_file(path: &Path) -> std::io::Result<()> {
    #[cfg(windows)]
    let file = File::options().write(true).open(path)?;
    #[cfg(not(windows))]
    let file = File::open(path)?;
    file.sync_all()
}

/// Makes a folder's entries (a file created in it, or renamed into place) durable: an `fsync`
/// of the folder on Unix. Windows' file systems journal their entries, and a folder cannot be
/// flushed there.
pub fn sync_folder(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    File::open(path)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// A folder where the exporter writes a file of its own.
pub fn in_the_way(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::IsADirectory,
        format!(
            "{} is a folder, where the exporter keeps a file of its own: remove it",
            path.shown()
        ),
    )
}

/// The most the exporter reads of one of its own files: far more than it ever writes.
pub const MAX_OWN_BYTES: u64 = 256 << 20;

/// Opens a file of the state dir for reading and writing, created if missing, never through a
/// symlink (the state lock).
pub fn open_own(path: &Path) -> std::io::Result<File> {
    let file = options_without_symlinks(File::options().read(true).write(true).create(true))
        .open(path)
        .map_err(said_of_a_link)?;
    regular(file)
}

/// Reads a file of the state dir whole, if it is a regular file (not a symlink, FIFO or device)
/// of at most `max_bytes`.
pub fn read_own(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    let file = options_without_symlinks(File::options().read(true))
        .open(path)
        .map_err(said_of_a_link)?;
    let file = regular(file)?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {max_bytes} bytes, which the exporter never writes"),
        ));
    }
    Ok(bytes)
}

/// Reads a file the user named (a config file, a budgets file) whole: followed if it is a
/// symlink, as the user meant it, but only if it is a regular file of at most `max_bytes` (a FIFO
/// or a device named by mistake is an error, never a hang).
pub fn read_named(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO would block the open until a writer comes; `regular` then refuses it.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = regular(options.open(path)?)?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            match max_bytes >> 20 {
                0 => format!("larger than {} KiB", max_bytes >> 10),
                mib => format!("larger than {mib} MiB"),
            },
        ));
    }
    Ok(bytes)
}

fn options_without_symlinks(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK only keeps the open of a FIFO from waiting; `regular` then refuses it.
        options
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .mode(0o600);
    }
    options
}

/// The error of opening a symlink without following it, as one can act on it.
fn said_of_a_link(error: std::io::Error) -> std::io::Error {
    #[cfg(unix)]
    if error.raw_os_error() == Some(libc::ELOOP) {
        return std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a symbolic link, which the exporter never follows: remove it",
        );
    }
    error
}

fn regular(file: File) -> std::io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
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
    fn a_folder_left_where_a_temporary_goes_is_removed_when_empty_and_named_when_not() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("stream");
        std::fs::create_dir(dir.path().join("stream.tmp")).unwrap();
        replace(&record, b"one", Durability::PowerCut).unwrap();
        assert_eq!(std::fs::read(&record).unwrap(), b"one");
        std::fs::create_dir_all(dir.path().join("stream.tmp/kept")).unwrap();
        let e = replace(&record, b"two", Durability::PowerCut).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory);
        let said = crate::store::StoreError::io(&record, e).to_string();
        assert!(
            said.contains("stream.tmp is a folder") && said.contains("remove it"),
            "{said}"
        );
        assert!(!said.contains("disk"), "no disk-space advice: {said}");
    }

    #[cfg(unix)]
    #[test]
    fn nothing_is_written_or_read_through_a_symlink_a_fifo_or_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let record = dir.path().join("record");
        std::os::unix::fs::symlink(&victim, dir.path().join("record.tmp")).unwrap();
        replace(&record, b"new", Durability::PowerCut).unwrap();
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"precious",
            "the planted temporary is not followed"
        );
        assert_eq!(read_own(&record, 16).unwrap(), b"new");
        let lock = dir.path().join("lock");
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        assert!(open_own(&lock).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        assert!(read_own(&dir.path().join("zero"), 16).is_err());
        assert!(read_own(Path::new("/dev/zero"), 16).is_err());
        assert!(read_own(&record, 2).is_err(), "bounded");
    }

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

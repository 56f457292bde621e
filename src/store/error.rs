//! What can go wrong with the store, each said in one line with its fix.

use std::path::{Path, PathBuf};

use super::FORMAT_VERSION;
use crate::inert_text::ShowPath;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "state dir {} is in use by another reasonix-exporter{}; stop it, or give this one its own --state-dir",
        path.shown(),
        owner.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked { path: PathBuf, owner: Option<u32> },
    #[error(
        "no store in {}: nothing has been counted there; check --state-dir, or run `reasonix-exporter once` to count the ledger",
        path.shown()
    )]
    Missing { path: PathBuf },
    #[error(
        "store at {} is corrupted ({detail}); run once with --reset-state to rebuild it from the ledger",
        path.shown()
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "store at {} was written by a newer reasonix-exporter (format {found}, this one reads {FORMAT_VERSION}); upgrade, or run with --reset-state to rebuild it",
        path.shown()
    )]
    NewerFormat { path: PathBuf, found: u32 },
    #[error(
        "store at {}: {error}; check that the state dir is writable and its disk has room, or choose another with --state-dir",
        path.shown()
    )]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{0}")]
    InTheWay(String),
    #[error(
        "state dir {} can be written by other users and is not the exporter's to fix (another user's, or shared like /tmp); choose a folder of your own with --state-dir",
        path.shown()
    )]
    NotPrivate { path: PathBuf },
}

impl StoreError {
    /// The store at `path` holds a `what` this build cannot read.
    pub fn unreadable(path: &Path, what: &str) -> StoreError {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("unreadable {what}"),
        }
    }

    /// The disk said no at `path` (full, gone, out of descriptors, not allowed), or a folder is
    /// where the exporter keeps a file.
    pub fn io(path: &Path, error: std::io::Error) -> StoreError {
        // Only where the exporter said so (`own_files::in_the_way`): sled's own paths are the store's.
        if error.kind() == std::io::ErrorKind::IsADirectory && error.get_ref().is_some() {
            return StoreError::InTheWay(error.to_string());
        }
        StoreError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

//! One process per state dir: an exclusive lock on `<state dir>/lock`, holding the owner's pid.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::StoreError;

/// Held for as long as the store is open; the OS drops the lock when the process dies, so a
/// `kill -9` never leaves a stale lock behind.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    pub fn acquire(state_dir: &Path) -> Result<StateLock, StoreError> {
        let path = state_dir.join("lock");
        let io_error = |source| StoreError::Io {
            path: path.clone(),
            error: source,
        };
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut owner = String::new();
                let _ = file.read_to_string(&mut owner);
                return Err(StoreError::Locked {
                    path: state_dir.to_path_buf(),
                    owner: owner.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error(e)),
        }
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .map_err(io_error)?;
        Ok(StateLock { _file: file })
    }
}

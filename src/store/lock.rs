//! One process per state dir: an exclusive lock on `<state dir>/lock`, holding the owner's pid,
//! and ` brief` after it when the owner only reads for a moment (`status`, `doctor`): a process
//! that finds such an owner waits for it, up to [`BRIEF_WAIT`], instead of failing.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::StoreError;

/// How long an open waits for a brief owner (or one that has not written its pid yet).
pub const BRIEF_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Held for as long as the store is open; the OS drops the lock when the process dies, so a
/// `kill -9` never leaves a stale lock behind.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Takes the lock for a process that keeps the store (`brief` false) or reads it for a
    /// moment (`brief` true).
    pub fn acquire(state_dir: &Path, brief: bool) -> Result<StateLock, StoreError> {
        let path = state_dir.join("lock");
        let io_error = |source| StoreError::io(&path, source);
        let mut file = crate::own_files::open_own(&path).map_err(io_error)?;
        let deadline = std::time::Instant::now() + BRIEF_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut owner = String::new();
                    let _ = file.seek(SeekFrom::Start(0));
                    let _ = file.read_to_string(&mut owner);
                    // A line without its end is being written by an owner that has just
                    // taken the lock: not read yet, so waited for as a brief owner is.
                    let written = owner.ends_with('\n');
                    let mut fields = owner.split_whitespace();
                    let pid = fields.next().and_then(|p| p.parse().ok());
                    // A pid that is not running is what a dead owner left, about to be
                    // rewritten by the new one: wait for it as for a brief owner.
                    let passing =
                        !written || pid.is_none_or(|pid| !running(pid)) || fields.next() == Some("brief");
                    if !passing || std::time::Instant::now() >= deadline {
                        return Err(StoreError::Locked {
                            path: state_dir.to_path_buf(),
                            owner: pid,
                        });
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io_error(e)),
            }
        }
        let role = if brief { " brief" } else { "" };
        // In one write: `writeln!` writes the pid and the role apart, and a process that read
        // the pid alone took a brief owner for one that keeps the store, and gave up.
        let line = format!("{}{role}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(line.as_bytes()))
            .map_err(io_error)?;
        Ok(StateLock { _file: file })
    }
}

/// Whether process `pid` exists (signal 0 checks without sending anything).
fn running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill with signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        alive || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    // Unix: Windows lets no other handle read a locked file, so an owner there is always
    // waited for.
    #[cfg(unix)]
    use super::*;

    /// An owner caught between taking the lock and finishing its line (its pid written, not yet
    /// whether it is brief) is waited for, not taken for an owner that keeps the store.
    #[test]
    #[cfg(unix)]
    fn an_owner_line_still_being_written_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut holder = crate::own_files::open_own(&dir.path().join("lock")).unwrap();
        holder.try_lock().unwrap();
        write!(holder, "{}", std::process::id()).unwrap();

        let started = std::time::Instant::now();
        let taken = StateLock::acquire(dir.path(), false);
        assert!(matches!(taken, Err(StoreError::Locked { .. })));
        assert!(started.elapsed() >= BRIEF_WAIT, "gave up at once");

        // The line finished: an owner that keeps the store is refused at once.
        writeln!(holder).unwrap();
        let started = std::time::Instant::now();
        assert!(matches!(
            StateLock::acquire(dir.path(), false),
            Err(StoreError::Locked { .. })
        ));
        assert!(started.elapsed() < BRIEF_WAIT);
    }
}

//! Wake-ups when the stats folder changes: inotify, FSEvents or ReadDirectoryChangesW through the
//! `notify` crate. Events say "look now", and which day files they name, so that a quick poll
//! reads those too (a late line in an older day file); what changed is always found by a poll,
//! so a lost or coalesced event costs nothing but latency until the full listing.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::Notify;

/// Keeps the OS watch alive; dropping it stops the events.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

/// The day files events named since the last poll took them.
#[derive(Debug, Default)]
pub struct Named {
    pub files: BTreeSet<OsString>,
    /// More than [`Named::MOST`] were named, or the watch overflowed: look at every file.
    pub overflowed: bool,
}

impl Named {
    /// The most names kept between two polls.
    pub const MOST: usize = 1024;

    fn note(&mut self, event: &notify::Event) {
        // The watch lost events (a queue that overflowed): look at every file.
        if event.need_rescan() {
            self.overflowed = true;
            return;
        }
        for path in &event.paths {
            let Some(name) = path.file_name() else { continue };
            if !super::discover::is_ledger_name(name) {
                continue;
            }
            if self.files.len() >= Self::MOST {
                self.overflowed = true;
                return;
            }
            self.files.insert(name.to_owned());
        }
    }
}

/// Watches `stats_dir` (not its sub-folders), notes in `named` the day files a change names, and
/// calls `wake` on any change in it.
pub fn watch(stats_dir: &Path, wake: Arc<Notify>, named: Arc<Mutex<Named>>) -> notify::Result<Watcher> {
    let mut inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Only changes wake a poll. Access events must not: the poll itself opens the folder and
        // the files, and would wake itself forever.
        let change = match &event {
            Ok(event) => !matches!(event.kind, EventKind::Access(_)),
            // An overflowed or failed watch: look, to be safe.
            Err(_) => true,
        };
        if change && let Ok(mut named) = named.lock() {
            match &event {
                Ok(event) => named.note(event),
                Err(_) => named.overflowed = true,
            }
        }
        if change {
            // One stored permit at most: a burst of writes becomes one poll.
            wake.notify_one();
        }
    })?;
    inner.watch(stats_dir, RecursiveMode::NonRecursive)?;
    Ok(Watcher { _inner: inner })
}

/// `error` with what to raise when a limit is what failed: inotify reports a user's instances
/// used up as "Too many open files", the watches as "No space left on device".
pub fn explained(error: &notify::Error) -> String {
    let limit = match &error.kind {
        notify::ErrorKind::MaxFilesWatch => Some("sysctl fs.inotify.max_user_watches"),
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE) => {
            Some("sysctl fs.inotify.max_user_instances, or the process's descriptors: ulimit -n")
        }
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::ENOSPC) => {
            Some("sysctl fs.inotify.max_user_watches")
        }
        _ => None,
    };
    match limit {
        Some(limit) if cfg!(target_os = "linux") => format!("{error}: a limit; raise {limit}"),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_that_failed_is_named_with_its_sysctl() {
        let instances = notify::Error::io(std::io::Error::from_raw_os_error(libc::EMFILE));
        let said = explained(&instances);
        assert!(
            cfg!(not(target_os = "linux")) || said.contains("fs.inotify.max_user_instances"),
            "{said}"
        );
        let watches = notify::Error::new(notify::ErrorKind::MaxFilesWatch);
        assert!(cfg!(not(target_os = "linux")) || explained(&watches).contains("max_user_watches"));
        let other = notify::Error::path_not_found();
        assert_eq!(explained(&other), other.to_string());
    }
}

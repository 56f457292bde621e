//! Wake-ups when the stats folder changes: inotify, FSEvents or ReadDirectoryChangesW through the
//! `notify` crate. Events only say "look now"; what changed is always found by a poll, so a lost
//! or coalesced event costs nothing but latency until the fallback poll.

use std::path::Path;
use std::sync::Arc;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::Notify;

/// Keeps the OS watch alive; dropping it stops the events.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

/// Watches `stats_dir` (not its sub-folders) and calls `wake` on any change in it.
pub fn watch(stats_dir: &Path, wake: Arc<Notify>) -> notify::Result<Watcher> {
    let mut inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Only changes wake a poll. Access events must not: the poll itself opens the folder and
        // the files, and would wake itself forever.
        let change = match event {
            Ok(event) => !matches!(event.kind, EventKind::Access(_)),
            // An overflowed or failed watch: look, to be safe.
            Err(_) => true,
        };
        if change {
            // One stored permit at most: a burst of writes becomes one poll.
            wake.notify_one();
        }
    })?;
    inner.watch(stats_dir, RecursiveMode::NonRecursive)?;
    Ok(Watcher { _inner: inner })
}

//! Wake-ups when the stats folder changes: inotify, FSEvents or ReadDirectoryChangesW through the
//! `notify` crate. Events only say "look now"; what changed is always found by a poll, so a lost
//! or coalesced event costs nothing but latency until the fallback poll.

use std::path::Path;
use std::sync::Arc;

use notify::{RecursiveMode, Watcher as _};
use tokio::sync::Notify;

/// Keeps the OS watch alive; dropping it stops the events.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

/// Watches `stats_dir` (not its sub-folders) and calls `wake` on any change in it.
pub fn watch(stats_dir: &Path, wake: Arc<Notify>) -> notify::Result<Watcher> {
    let mut inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            // One stored permit at most: a burst of writes becomes one poll.
            wake.notify_one();
        }
    })?;
    inner.watch(stats_dir, RecursiveMode::NonRecursive)?;
    Ok(Watcher { _inner: inner })
}

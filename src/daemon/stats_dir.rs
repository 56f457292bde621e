//! The stats folder as `run` sees it: present, missing or unreadable (each change said once),
//! watched for file events when it can be, and its files read on every poll: the recent ones,
//! and all of them once a minute or when the folder's entries change.

use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::Daemon;
use crate::ingest::{self, FileFailure, IngestError};
use crate::ledger::discover::LedgerFile;
use crate::ledger::watch as ledger_watch;
use crate::sandbox;
use crate::store::StoreError;

/// How often `run` lists the whole stats folder when nothing says it changed. In between, a
/// poll reads again only the files written in the last two days (`ingest::poll_recent`), and a
/// folder whose entries changed (its mtime: a file added, removed or renamed) is listed at once.
/// A day file older than that rewritten in place is read within this time.
pub(super) const FULL_POLL_EVERY: Duration = Duration::from_secs(60);

/// The last full listing: the folder's mtime before it, and its recent files.
#[derive(Debug)]
pub(super) struct Listed {
    dir_mtime: Option<SystemTime>,
    recent: Vec<LedgerFile>,
    at: Instant,
    /// Some file could not be read: until every one can, every poll is a full one (a quick one
    /// would not try it, and say all is well).
    failed: bool,
}

impl Listed {
    fn now(dir_mtime: Option<SystemTime>, report: &ingest::PollReport) -> Listed {
        Listed {
            dir_mtime,
            recent: report.recent.clone(),
            at: Instant::now(),
            failed: report.files_failed > 0,
        }
    }

    /// The files a quick poll reads, if the listing still holds: less than a minute old, the
    /// folder's entries unchanged, every file readable, and no cost pass (which reads every file)
    /// under way.
    fn still(&self, dir_mtime: Option<SystemTime>, no_cost_pass: bool) -> Option<Vec<LedgerFile>> {
        let holds = self.at.elapsed() < FULL_POLL_EVERY && dir_mtime.is_some() && self.dir_mtime == dir_mtime;
        (holds && no_cost_pass && !self.failed).then(|| self.recent.clone())
    }
}

/// What we last said about the stats folder, so that each change is logged once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DirState {
    Unknown,
    Present,
    Missing,
    Unreadable,
}

impl Daemon {
    /// Reads what is new; a missing or unreadable folder is reported once and waited for.
    pub(super) fn ingest(&mut self) -> anyhow::Result<()> {
        if !self.resume()? {
            return Ok(());
        }
        let Some(store) = self.store.as_mut() else {
            return Ok(());
        };
        // sled writes on into the files of a state dir deleted under it: notice, and start over.
        if !store.path().is_dir() {
            let error = StoreError::io(store.path(), std::io::Error::from(ErrorKind::NotFound));
            return self.pause(error);
        }
        let stats_dir = self.settings.stats_dir.value.clone();
        // Before the listing: an entry added while it runs makes the next poll a full one.
        let dir_mtime = std::fs::metadata(&stats_dir).and_then(|m| m.modified()).ok();
        let quick = self
            .listed
            .as_ref()
            .and_then(|listed| listed.still(dir_mtime, store.cost_pass().is_empty()));
        let mut poll = || match &quick {
            Some(recent) => ingest::poll_recent(store, recent, &self.stopping),
            None => ingest::poll_until(store, &stats_dir, &self.stopping),
        };
        // `run`'s runtime has two workers, and a poll blocks one of them; a single-threaded runtime
        // (the paused-clock tests) has nothing else to run meanwhile.
        let result = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => poll(),
            _ => tokio::task::block_in_place(poll),
        };
        match result {
            Ok(mut report) => {
                match quick {
                    Some(_) => report.files = self.last_poll.files,
                    None => self.listed = Some(Listed::now(dir_mtime, &report)),
                }
                self.note_dir(DirState::Present, &stats_dir, None);
                if self.watcher.is_none() && self.settings.watch.value && !self.watch_broken {
                    self.start_watching(&stats_dir);
                }
                if report.counts.read() > 0 {
                    tracing::debug!(
                        "ingested {} new lines ({} duplicate, {} rejected) in {:?}",
                        report.counts.counted,
                        report.counts.duplicate,
                        report.counts.rejected_total(),
                        report.duration()
                    );
                }
                // Once per outage, not once per poll.
                match (self.last_poll.files_failed, report.files_failed) {
                    (0, failed) if failed > 0 => warn_unreadable(failed, report.first_failure.as_ref()),
                    (before, 0) if before > 0 => tracing::info!("every ledger file can be read again"),
                    _ => {}
                }
                self.last_poll = report;
                self.caught_up = true;
            }
            Err(IngestError::StatsDir { source, .. }) => {
                let state = if source.kind() == ErrorKind::NotFound {
                    DirState::Missing
                } else {
                    DirState::Unreadable
                };
                self.note_dir(state, &stats_dir, Some(&source));
                // A folder that went away takes its watch with it; a new one is set up on return.
                self.watcher = None;
            }
            Err(IngestError::Store(e)) => return self.pause(e),
        }
        self.publish();
        Ok(())
    }

    fn note_dir(&mut self, state: DirState, dir: &Path, error: Option<&std::io::Error>) {
        if state == self.dir_state {
            return;
        }
        let first = self.dir_state == DirState::Unknown;
        self.dir_state = state;
        self.watch_broken = false;
        let origin = &self.settings.stats_dir.origin;
        match (state, error) {
            (DirState::Present, _) if !first => {
                tracing::info!("stats dir {} is available again", dir.display())
            }
            (DirState::Present, _) => {
                tracing::info!("watching {} (from {origin})", dir.display())
            }
            (DirState::Missing, _) => tracing::warn!(
                "stats dir {} (from {origin}) does not exist yet; waiting for it. Is Reasonix installed? Set --stats-dir or REASONIX_HOME if it lives elsewhere",
                dir.display()
            ),
            (_, error) => tracing::warn!(
                "stats dir {} cannot be read ({}); retrying every {:?}. Check its permissions{}",
                dir.display(),
                error.map(|e| e.to_string()).unwrap_or_default(),
                self.settings.poll_interval.value,
                sandbox::permission_hint()
            ),
        }
    }

    fn start_watching(&mut self, dir: &Path) {
        match ledger_watch::watch(dir, self.wake.clone()) {
            Ok(watcher) => self.watcher = Some(watcher),
            Err(e) => {
                // Tried again only when the folder comes back; until then, polling alone.
                self.watch_broken = true;
                tracing::warn!(
                    "file events are not available for {} ({}); polling every {:?} instead",
                    dir.display(),
                    ledger_watch::explained(&e),
                    self.settings.poll_interval.value
                )
            }
        }
    }
}

/// One warning when ledger files start failing to read: the first one by name, and why.
fn warn_unreadable(failed: usize, first: Option<&FileFailure>) {
    let Some(first) = first else { return };
    let others = match failed {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    let hint = if first.kind == ErrorKind::PermissionDenied {
        format!("; check the permissions{}", sandbox::permission_hint())
    } else {
        String::new()
    };
    tracing::warn!(
        "ledger file {}{others} cannot be read ({}); retrying on every poll, the lines are counted once they can be{hint}",
        crate::shown::one_line(&first.name.to_string_lossy(), 255),
        first.cause
    );
}

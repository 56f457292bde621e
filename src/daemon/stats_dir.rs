//! The stats folder as `run` sees it: present, missing or unreadable (each change said once),
//! watched for file events when it can be, files in it that cannot be read (said once an
//! episode), and which of its files a poll reads (`ingest.rs` runs it): the recent ones, and
//! all of them once a minute or when the folder's entries change.

use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use std::sync::Arc;

use tokio::sync::Notify;

use crate::events::Episode;
use crate::events::ledger::{self as events, Reader};
use crate::ingest::{self, FileFailure};
use crate::ledger::checkpoint::FileStat;
use crate::ledger::discover::LedgerFile;
use crate::ledger::watch::{self as ledger_watch, Watcher};
use crate::sandbox;
use crate::settings::Settings;

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
    pub(super) fn now(dir_mtime: Option<SystemTime>, report: &ingest::PollReport) -> Listed {
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
    pub(super) fn still(&self, dir_mtime: Option<SystemTime>, no_cost_pass: bool) -> Option<Vec<LedgerFile>> {
        let holds = self.at.elapsed() < FULL_POLL_EVERY && dir_mtime.is_some() && self.dir_mtime == dir_mtime;
        (holds && no_cost_pass && !self.failed).then(|| self.recent.clone())
    }
}

/// What we last said about the stats folder, so that each change is logged once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirState {
    Unknown,
    Present,
    Missing,
    Unreadable,
}

/// The stats folder as `run` last saw it: its state, its watch, its last listing.
pub(super) struct StatsDir {
    pub wake: Arc<Notify>,
    /// The day files file events named since the last poll.
    pub named: Arc<std::sync::Mutex<ledger_watch::Named>>,
    watcher: Option<Watcher>,
    /// Setting up file events failed for the folder as it is now.
    watch_broken: bool,
    /// The last full listing (`None`: the next poll is a full one).
    pub listed: Option<Listed>,
    state: DirState,
    /// Ledger files in it cannot be read.
    pub unreadable: Episode,
}

impl StatsDir {
    pub fn new() -> StatsDir {
        StatsDir {
            wake: Arc::new(Notify::new()),
            named: Arc::default(),
            watcher: None,
            watch_broken: false,
            listed: None,
            state: DirState::Unknown,
            unreadable: Episode::default(),
        }
    }

    /// The folder is there: said if that is news, and watched if it can be and is wanted.
    pub fn present(&mut self, dir: &Path, settings: &Settings) {
        self.note(DirState::Present, dir, None, settings);
        if self.watcher.is_none() && settings.watch.value && !self.watch_broken {
            self.start_watching(dir, settings);
        }
    }

    /// The folder cannot be listed: said if that is news. A folder that went away takes its
    /// watch with it; a new one is set up on return.
    pub fn absent(&mut self, dir: &Path, error: &std::io::Error, settings: &Settings) {
        let state = if error.kind() == ErrorKind::NotFound {
            DirState::Missing
        } else {
            DirState::Unreadable
        };
        self.note(state, dir, Some(error), settings);
        self.watcher = None;
    }

    /// No more file events (the daemon stops).
    pub fn unwatch(&mut self) {
        self.watcher = None;
    }

    fn note(&mut self, state: DirState, dir: &Path, error: Option<&std::io::Error>, settings: &Settings) {
        if state == self.state {
            return;
        }
        let first = self.state == DirState::Unknown;
        self.state = state;
        self.watch_broken = false;
        let origin = &settings.stats_dir.origin;
        match (state, error) {
            (DirState::Present, _) if !first => events::stats_dir_present(dir),
            (DirState::Present, _) => events::stats_dir_watching(dir, origin),
            (DirState::Missing, _) => events::stats_dir_missing(dir, origin, Reader::Run),
            (_, error) => events::stats_dir_unreadable(
                dir,
                &error.map(|e| e.to_string()).unwrap_or_default(),
                settings.poll_interval.value,
                sandbox::permission_hint(),
            ),
        }
    }

    /// The files a quick poll reads, or `None` for a full one: the last listing's recent files
    /// (see [`Listed::still`]) and the day files file events named since the last poll (a late
    /// line in an older day file); a burst of events past what is kept makes a full poll.
    pub fn quick_poll(
        &mut self,
        dir_mtime: Option<SystemTime>,
        no_cost_pass: bool,
    ) -> Option<Vec<LedgerFile>> {
        let named = std::mem::take(&mut *self.named.lock().unwrap_or_else(|e| e.into_inner()));
        if named.overflowed {
            return None;
        }
        let mut files = self.listed.as_ref()?.still(dir_mtime, no_cost_pass)?;
        for name in named.files {
            if !files.iter().any(|f| f.name == name) {
                files.push(LedgerFile {
                    name,
                    stat: FileStat::default(),
                });
            }
        }
        Some(files)
    }

    fn start_watching(&mut self, dir: &Path, settings: &Settings) {
        match ledger_watch::watch(dir, self.wake.clone(), self.named.clone()) {
            Ok(watcher) => self.watcher = Some(watcher),
            Err(e) => {
                // Tried again only when the folder comes back; until then, polling alone.
                self.watch_broken = true;
                let error = ledger_watch::explained(&e).to_string();
                events::watch_unavailable(dir, &error, settings.poll_interval.value)
            }
        }
    }
}

/// One warning when ledger files start failing to read (`reader` says when they are tried
/// again): the first one by name, and why.
pub fn warn_unreadable(failed: usize, first: Option<&FileFailure>, reader: Reader) {
    let Some(first) = first else { return };
    let hint = if first.kind == ErrorKind::PermissionDenied {
        format!("; check the permissions{}", sandbox::permission_hint())
    } else {
        String::new()
    };
    events::unreadable(failed, &first.name, &first.cause, reader, &hint);
}

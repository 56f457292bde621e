//! One poll of the ledger, the heart of `run`: the store resumed if a fault paused it, the
//! stats folder read (its recent files, or all of them), and what changed said once; and
//! [`read_ledger`], a full reading, which `once` shares.

use std::io::ErrorKind;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::Daemon;
use super::stats_dir::{Listed, warn_unreadable};
use crate::events::ledger::{self as events, Lines, Reader};
use crate::ingest::{self, IngestError, Listing, PollReport};
use crate::ledger::tail::FullCheck;
use crate::store::{Store, StoreError};

/// One full reading of the ledger, `run`'s and `once`'s: while an upgraded store's cost pass is
/// under way, that pass first, as a phase of its own (`upgrade/cost_pass.rs`), then the usual
/// reading of what is new. Stops early, with what was read committed, once `stop` is set. The
/// report covers both: what the pass read is in its counts and its time.
pub fn read_ledger(
    store: &mut Store,
    listing: Listing,
    stop: &AtomicBool,
    full_check: FullCheck,
) -> Result<PollReport, IngestError> {
    let started = Instant::now();
    let before = *store.counts();
    if let Some(files) = listing.files()
        && !store.cost_pass().is_empty()
    {
        crate::upgrade::cost_pass(store, listing.dir(), files, stop)?;
    }
    let mut report = ingest::poll_listed(store, listing, stop, full_check)?;
    report.counts = store.counts().since(&before);
    report.elapsed = started.elapsed();
    Ok(report)
}

impl Daemon {
    /// Reads what is new; a missing or unreadable folder is reported once and waited for.
    pub(super) fn ingest(&mut self) -> anyhow::Result<()> {
        let stopping = self.stopping.clone();
        self.ingest_until(&stopping)
    }

    /// [`Daemon::ingest`], its poll cut short once `stop` is set (a stop signal, or the last
    /// poll's own budget).
    pub(super) fn ingest_until(&mut self, stop: &AtomicBool) -> anyhow::Result<()> {
        if !self.resume()? {
            return Ok(());
        }
        let Some(super::Opened { store, .. }) = self.opened.as_mut() else {
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
        let quick = self.stats_dir.quick_poll(dir_mtime, store.cost_pass().is_empty());
        let full_check = FullCheck::InBackground;
        let poll = || match &quick {
            Some(recent) => ingest::poll_recent(store, &stats_dir, recent, stop),
            None => read_ledger(store, ingest::list(&stats_dir), stop, full_check),
        };
        let result = blocking(poll);
        match result {
            Ok(mut report) => {
                match quick {
                    Some(_) => {
                        report.files = self.last_poll.files;
                        // A file a quick poll could not read (one file events named): the next
                        // poll is a full one, which tries every file before saying all is well.
                        if report.files_failed > 0 {
                            self.stats_dir.listed = None;
                        }
                    }
                    None => {
                        self.stats_dir.listed = Some(Listed::now(dir_mtime, &report));
                        release_freed_memory();
                    }
                }
                self.stats_dir.present(&stats_dir, &self.settings);
                if report.counts.read() > 0 {
                    let c = &report.counts;
                    let lines = Lines {
                        counted: c.counted,
                        duplicate: c.duplicate,
                        rejected: c.rejected_total(),
                    };
                    events::polled(lines, report.duration());
                }
                if report.files_failed > 0 {
                    if self.stats_dir.unreadable.begins() {
                        let first = report.first_failure.as_ref();
                        warn_unreadable(report.files_failed, first, Reader::Run);
                    }
                } else if self.stats_dir.unreadable.ends().is_some() {
                    events::readable();
                }
                self.last_poll = report;
                self.caught_up = true;
                self.ledger_read = true;
            }
            Err(IngestError::StatsDir { source, .. }) => {
                // Nothing to read yet: as read as it can be (`/-/ready`).
                self.ledger_read = true;
                self.stats_dir.absent(&stats_dir, &source, &self.settings)
            }
            Err(IngestError::Store(e)) => return self.pause(e),
        }
        self.verify_in_background(&stats_dir)?;
        self.reopen_grown_store()?;
        self.publish();
        Ok(())
    }

    /// Applies what the full verifications found, and hands over the next file due
    /// (`ingest/verify.rs`).
    fn verify_in_background(&mut self, stats_dir: &std::path::Path) -> anyhow::Result<()> {
        let (Some(verifier), Some(super::Opened { store, .. })) =
            (self.verifier.as_mut(), self.opened.as_mut())
        else {
            return Ok(());
        };
        match verifier.tend(store, stats_dir) {
            Ok(changed) => changed.iter().for_each(|name| events::rewritten(name)),
            Err(e) => return self.pause(e),
        }
        Ok(())
    }
}

/// Hands the memory a full poll freed back to the system. A full listing of tens of thousands of
/// day files allocates and frees megabytes once a minute; glibc's allocator keeps what was freed
/// in its arenas, so an idle daemon's resident size would stay at the listing's peak for good.
pub(super) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs `work`, which blocks: `run`'s runtime has two workers, and the other takes this one's
/// tasks meanwhile; a single-threaded runtime (the paused-clock tests) has nothing else to run.
pub(super) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => work(),
        _ => tokio::task::block_in_place(work),
    }
}

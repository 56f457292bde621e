//! `run`: the daemon. One loop owns the store. It ingests when the stats folder changes (file
//! events, with a polling fallback), exports on an interval from a separate task so that
//! ingestion never waits for the collector, publishes a snapshot for `/metrics` after every
//! commit, and on SIGINT/SIGTERM/SIGHUP commits, exports a last time and exits.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::settings::Settings;
use crate::export::health::ExportHealth;
use crate::export::otlp::{ExportError, OtlpExporter, Outgoing, Sent};
use crate::export::prometheus::{self, Snapshot};
use crate::export::self_metrics::SelfStats;
use crate::export::transport::SendError;
use crate::ingest::{self, IngestError, PollReport};
use crate::ledger::watch::{self as ledger_watch, Watcher};
use crate::sandbox;
use crate::series::{AttrSet, Totals};
use crate::snapshot::{self, StatusJson};
use crate::store::counts::IngestCounts;
use crate::store::stream::StreamRecord;
use crate::store::{Store, StoreError};

/// How long a graceful stop may spend on the last export, so that the process is gone within
/// 5 s of the signal even with the collector down.
const LAST_EXPORT_BUDGET: Duration = Duration::from_secs(3);
/// The first retry after a failed export; doubles up to the export interval.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// The top-level entry point for `reasonix-exporter run`.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    // First of all, so that a signal during a long backfill is a graceful stop, not a kill. The
    // signals are watched by a task of their own: a poll in progress sees `stopping` between
    // chunks, and the loop sees `stopped`.
    let mut signals = StopSignals::install()?;
    let stopping = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(Notify::new());
    tokio::spawn({
        let (stopping, stopped) = (stopping.clone(), stopped.clone());
        async move {
            signals.recv().await;
            stopping.store(true, Ordering::Relaxed);
            stopped.notify_one();
        }
    });
    let store = Store::open(&settings.state_dir.value, settings.reset_state)?;
    let (snapshots, snapshot_rx) = watch::channel(Arc::new(Snapshot::default()));
    if let Some(addr) = settings.prometheus.value {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
            format!("cannot listen on {addr} for Prometheus (from {}); choose another address with --prometheus, or --prometheus off", settings.prometheus.origin)
        })?;
        tracing::info!("serving Prometheus metrics on http://{addr}/metrics");
        tokio::spawn(prometheus::serve(listener, snapshot_rx));
    }
    let exporter = match &settings.otlp {
        Some(otlp) => Some(OtlpExporter::new(
            otlp.target.clone(),
            otlp.temporality,
            &settings.instance,
        )?),
        None => None,
    };
    let mut daemon = Daemon {
        store: Some(store),
        fault: None,
        settings: settings.clone(),
        snapshots,
        wake: Arc::new(Notify::new()),
        watcher: None,
        watch_broken: false,
        dir_state: DirState::Unknown,
        exporter,
        in_flight: None,
        retry_at: None,
        backoff: FIRST_RETRY,
        outage_since: None,
        export_failures: 0,
        export_health: ExportHealth::default(),
        held: 0,
        snapshot_counts: None,
        last_poll: PollReport::default(),
        stopping,
    };
    daemon.serve(&stopped).await
}

/// What we last said about the stats folder, so that each change is logged once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirState {
    Unknown,
    Present,
    Missing,
    Unreadable,
}

struct Daemon {
    /// `None` only while a store fault waits for its retry (see [`Daemon::resume`]).
    store: Option<Store>,
    /// Counting is paused because the store could not be written.
    fault: Option<StoreFault>,
    settings: Settings,
    snapshots: watch::Sender<Arc<Snapshot>>,
    wake: Arc<Notify>,
    watcher: Option<Watcher>,
    /// Setting up file events failed for the folder as it is now.
    watch_broken: bool,
    dir_state: DirState,
    exporter: Option<OtlpExporter>,
    in_flight: Option<JoinHandle<(Outgoing, Sent)>>,
    retry_at: Option<tokio::time::Instant>,
    backoff: Duration,
    outage_since: Option<Instant>,
    export_failures: u64,
    /// How exports have gone since they last worked, for the log and for `doctor`.
    export_health: ExportHealth,
    /// Points the last export held back (said once per change).
    held: usize,
    /// The counts as of the last `status.json` written.
    snapshot_counts: Option<IngestCounts>,
    last_poll: PollReport,
    /// Set by a stop signal: a poll in progress ends after its current chunk.
    stopping: Arc<AtomicBool>,
}

impl Daemon {
    async fn serve(&mut self, stopped: &Notify) -> anyhow::Result<()> {
        let mut poll_tick = tokio::time::interval(self.settings.poll_interval.value);
        poll_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut export_tick = tokio::time::interval(self.settings.export_interval.value);
        export_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        self.ingest()?;
        loop {
            tokio::select! {
                _ = stopped.notified() => break,
                _ = self.wake.notified() => self.ingest()?,
                _ = poll_tick.tick() => self.ingest()?,
                _ = export_tick.tick(), if self.in_flight.is_none() => self.start_export()?,
                _ = sleep_until(self.retry_at), if self.in_flight.is_none() && self.retry_at.is_some() => {
                    self.start_export()?
                }
                done = join(&mut self.in_flight), if self.in_flight.is_some() => {
                    self.in_flight = None;
                    self.finish_export(done)?;
                }
            }
        }
        self.shut_down().await
    }

    /// Reads what is new; a missing or unreadable folder is reported once and waited for.
    fn ingest(&mut self) -> anyhow::Result<()> {
        if !self.resume()? {
            return Ok(());
        }
        let Some(store) = self.store.as_mut() else {
            return Ok(());
        };
        // sled writes on into the files of a state dir deleted under it: notice, and start over.
        if !store.path().is_dir() {
            let path = store.path().to_path_buf();
            let error = std::io::Error::from(ErrorKind::NotFound);
            return self.pause(StoreError::Io { path, error });
        }
        let stats_dir = self.settings.stats_dir.value.clone();
        let result = tokio::task::block_in_place(|| ingest::poll_until(store, &stats_dir, &self.stopping));
        match result {
            Ok(report) => {
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
                    (0, failed) if failed > 0 => {
                        let (kind, cause) = report
                            .first_failure
                            .clone()
                            .unwrap_or((ErrorKind::Other, "unknown".into()));
                        let hint = if kind == ErrorKind::PermissionDenied {
                            format!("; check their permissions{}", sandbox::permission_hint())
                        } else {
                            String::new()
                        };
                        tracing::warn!(
                            "{failed} ledger files cannot be read ({cause}); retrying on every poll, their lines are counted once they can{hint}"
                        )
                    }
                    (before, 0) if before > 0 => tracing::info!("every ledger file can be read again"),
                    _ => {}
                }
                self.last_poll = report;
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

    /// A store that cannot be written (a full disk, no descriptors left, a state dir deleted or
    /// made read-only) pauses counting instead of ending the process: the store is let go, and
    /// reopened at the next retry. Nothing is lost: what was not committed is read again from
    /// the ledger. A damaged or foreign store still ends the process.
    fn pause(&mut self, error: StoreError) -> anyhow::Result<()> {
        let StoreError::Io { error: cause, .. } = &error else {
            return Err(error.into());
        };
        let Some(store) = self.store.take() else {
            return Ok(());
        };
        let retry = self.settings.poll_interval.value.max(FIRST_RETRY);
        tracing::warn!(
            "counting paused: {} (the store in {}: {cause}); nothing is lost, it resumes from the ledger on its own; retrying in {retry:?}, then less often up to every {MAX_STORE_RETRY:?}",
            StoreFault::what(cause),
            self.settings.state_dir.value.display(),
        );
        self.fault = Some(StoreFault {
            deleted: cause.kind() == ErrorKind::NotFound,
            since: Instant::now(),
            retry_at: Instant::now() + retry,
            wait: retry,
            stream: store.stream().clone(),
            delivered: store.delivered().clone(),
        });
        // sled's lock and ours let one store per folder be open: this one goes first.
        drop(store);
        Ok(())
    }

    /// Reopens the store after a fault, when its retry is due; whether there is a store to use.
    fn resume(&mut self) -> anyhow::Result<bool> {
        let Some(fault) = self.fault.as_mut() else {
            return Ok(true);
        };
        if Instant::now() < fault.retry_at {
            return Ok(false);
        }
        match fault.reopen(&self.settings.state_dir.value) {
            Ok(store) => {
                tracing::info!("counting resumed after {:.0?}", fault.since.elapsed());
                self.store = Some(store);
                self.fault = None;
                Ok(true)
            }
            // Landlock allows writes in the folder the process started with, not in one made anew.
            Err(StoreError::Io { error, .. })
                if fault.deleted && error.kind() == ErrorKind::PermissionDenied =>
            {
                anyhow::bail!(
                    "state dir {} was deleted under the running exporter, and its sandbox lets it write only in the folder it started with; start it again to recreate the folder (systemd's Restart= does), or run with --sandbox off to have it recreated in place",
                    self.settings.state_dir.value.display()
                )
            }
            Err(StoreError::Io { .. }) => {
                fault.wait = (fault.wait * 2).min(MAX_STORE_RETRY);
                fault.retry_at = Instant::now() + fault.wait;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
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
                    "file events are not available for {} ({e}); polling every {:?} instead",
                    dir.display(),
                    self.settings.poll_interval.value
                )
            }
        }
    }

    fn health(&self) -> SelfStats {
        let Some(store) = self.store.as_ref() else {
            return self.snapshots.borrow().health;
        };
        SelfStats {
            counts: *store.counts(),
            export_failures: self.export_failures,
            files_tracked: self.last_poll.files as u64,
            last_poll_seconds: self.last_poll.duration().as_secs_f64(),
            last_poll_end: SelfStats::unix_seconds(self.last_poll.finished),
            store_bytes: store.disk_size(),
        }
    }

    /// Hands `/metrics` and `status` the store's committed state.
    fn publish(&mut self) {
        let health = self.health();
        let Some(store) = self.store.as_ref() else {
            return;
        };
        let counts = *store.counts();
        if self.snapshot_counts != Some(counts) {
            let doc = StatusJson::of(store.lifetime(), &counts);
            match snapshot::write(&self.settings.state_dir.value, &doc) {
                Ok(()) => self.snapshot_counts = Some(counts),
                Err(e) => tracing::warn!("cannot write the status snapshot in the state dir: {e}"),
            }
        }
        self.snapshots.send_replace(Arc::new(Snapshot {
            lifetime: store.lifetime().clone(),
            created: Some(store.stream_start()),
            health,
        }));
    }

    /// Prepares the next request (its record made durable) and sends it from a task of its own.
    fn start_export(&mut self) -> anyhow::Result<()> {
        self.retry_at = None;
        let health = self.health();
        let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) else {
            return Ok(());
        };
        let outgoing = match exporter.prepare(store, &health) {
            Ok(Some(outgoing)) => outgoing,
            Ok(None) => return Ok(()),
            Err(ExportError::Store(e)) => return self.pause(e),
            Err(e) => return Err(e.into()),
        };
        let transport = exporter.transport();
        self.in_flight = Some(tokio::spawn(async move {
            let sent = outgoing.send(transport).await;
            (outgoing, sent)
        }));
        Ok(())
    }

    fn finish_export(&mut self, done: (Outgoing, Sent)) -> anyhow::Result<()> {
        // With the store let go, the answer is dropped: a cumulative export is sent again, and a
        // delta export's record settles it when the store reopens.
        let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) else {
            return Ok(());
        };
        let (outgoing, sent) = done;
        let held = outgoing.report().held;
        if held != self.held {
            self.held = held;
            super::warn_held(held);
            if held == 0 {
                tracing::info!("no data point is held back any more");
            }
        }
        match exporter.complete(store, outgoing, sent) {
            Ok(report) => {
                if let Some(since) = self.outage_since.take() {
                    tracing::info!(
                        "export to {} works again after {:.0?}; nothing was lost",
                        exporter.endpoint(),
                        since.elapsed()
                    );
                }
                self.export_health.accepted(report.accepted.warning());
                self.backoff = FIRST_RETRY;
            }
            Err(ExportError::Store(e)) => return self.pause(e),
            Err(e) => {
                self.export_failures += 1;
                if self.outage_since.is_none() {
                    self.outage_since = Some(Instant::now());
                    tracing::warn!(
                        "{e}; retrying with backoff while ingestion goes on (one warning per outage)"
                    );
                }
                let asked = match &e {
                    ExportError::Send { error, .. } => {
                        self.export_health.failed(error, &e.to_string());
                        match error {
                            SendError::Refused { retry_after, .. } => *retry_after,
                            _ => None,
                        }
                    }
                    _ => None,
                };
                // A collector that says when to come back is taken at its word (capped).
                let wait = asked.map_or(self.backoff, |asked| asked.max(self.backoff));
                self.retry_at = Some(tokio::time::Instant::now() + wait);
                self.backoff = (self.backoff * 2).min(self.settings.export_interval.value);
            }
        }
        if let Err(e) = self.export_health.save(&self.settings.state_dir.value) {
            tracing::debug!("cannot write the export health file in the state dir: {e}");
        }
        self.publish();
        Ok(())
    }

    /// Stop watching, commit what is there, export a last time within the budget, exit.
    async fn shut_down(&mut self) -> anyhow::Result<()> {
        self.watcher = None;
        self.ingest()?;
        let deadline = tokio::time::Instant::now() + LAST_EXPORT_BUDGET;
        if let Some(in_flight) = self.in_flight.take() {
            match tokio::time::timeout_at(deadline, in_flight).await {
                Ok(Ok(done)) => self.finish_export(done)?,
                _ => tracing::warn!("the export in flight did not finish; the next export supersedes it"),
            }
        }
        let health = self.health();
        if self.store.is_none() {
            tracing::warn!("stopped while counting was paused; the next start resumes it from the ledger");
        } else if let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) {
            let last = exporter.export(store, &health);
            match tokio::time::timeout_at(deadline, last).await {
                Ok(Ok(_)) => tracing::info!("stopped; everything committed was exported"),
                Ok(Err(ExportError::Store(e))) => {
                    tracing::warn!(
                        "stopped; the store could not be written ({e}); the next start resumes from the ledger"
                    )
                }
                Ok(Err(e)) => tracing::warn!("stopped; the last export failed ({e}); the next run sends it"),
                Err(_) => {
                    tracing::warn!("stopped; the last export did not finish in time; the next run sends it")
                }
            }
        } else {
            tracing::info!("stopped; everything is committed");
        }
        Ok(())
    }
}

async fn join(handle: &mut Option<JoinHandle<(Outgoing, Sent)>>) -> (Outgoing, Sent) {
    match handle.as_mut() {
        Some(h) => match h.await {
            Ok(done) => done,
            // The send task cannot panic short of a bug; treat it as never finishing.
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The longest wait between attempts to reopen a store that could not be written.
const MAX_STORE_RETRY: Duration = Duration::from_secs(30);

/// Counting paused on a store that could not be written, and what the next store continues.
struct StoreFault {
    /// The state dir is gone: the store is rebuilt from the ledger.
    deleted: bool,
    since: Instant,
    retry_at: Instant,
    wait: Duration,
    /// The cumulative stream as exported: a store rebuilt from the ledger (its folder was
    /// deleted) continues it rather than start a second one.
    stream: StreamRecord,
    /// What the collector has, for delta exports from a rebuilt store.
    delivered: BTreeMap<AttrSet, Totals>,
}

impl StoreFault {
    /// The condition behind `cause`, in the operator's words.
    fn what(cause: &std::io::Error) -> &'static str {
        match (cause.raw_os_error(), cause.kind()) {
            (Some(libc::EMFILE | libc::ENFILE), _) => "the process has no file descriptors left",
            (_, ErrorKind::StorageFull | ErrorKind::QuotaExceeded) => "the disk is full",
            (_, ErrorKind::NotFound) => "the state dir was deleted",
            (_, ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem) => {
                "the state dir is not writable"
            }
            _ => "the store cannot be written",
        }
    }

    /// The store again, continuing the stream and the deliveries it had.
    fn reopen(&self, state_dir: &Path) -> Result<Store, StoreError> {
        let mut store = Store::open(state_dir, false)?;
        if store.stream() != &self.stream {
            store.record_stream(self.stream.clone())?;
        }
        if store.delivered().is_empty() && !self.delivered.is_empty() {
            store.confirm_delivered(&self.delivered)?;
        }
        Ok(store)
    }
}

/// SIGINT, SIGTERM and SIGHUP, registered when installed (not when first awaited). SIGHUP is a
/// stop like the others: a daemon that lost its terminal, or a reload by habit, still exports
/// its last increments.
struct StopSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
                hangup: signal(SignalKind::hangup()).context("cannot handle SIGHUP")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
            _ = self.hangup.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("stopping");
    }
}

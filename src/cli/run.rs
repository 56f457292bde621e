//! `run`: the daemon. One loop owns the store. It ingests when the stats folder changes (file
//! events, with a polling fallback), exports on an interval from a separate task so that
//! ingestion never waits for the collector, publishes a snapshot for `/metrics` after every
//! commit, and on SIGINT/SIGTERM commits, exports a last time and exits.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::settings::Settings;
use super::status::{self, StatusJson};
use crate::export::otlp::{ExportError, OtlpExporter, Outgoing};
use crate::export::prometheus::{self, Snapshot};
use crate::export::self_metrics::SelfStats;
use crate::export::transport::SendError;
use crate::ingest::{self, IngestError, PollReport};
use crate::ledger::watch::{self as ledger_watch, Watcher};
use crate::sandbox;
use crate::store::Store;
use crate::store::counts::IngestCounts;

/// How long a graceful stop may spend on the last export, so that the process is gone within
/// 5 s of the signal even with the collector down.
const LAST_EXPORT_BUDGET: Duration = Duration::from_secs(3);
/// The first retry after a failed export; doubles up to the export interval.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// The top-level entry point for `reasonix-exporter run`.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    // First of all, so that a signal during a long backfill is a graceful stop, not a kill.
    let stop = StopSignals::install()?;
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
        store,
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
        held: 0,
        snapshot_counts: None,
        last_poll: PollReport::default(),
    };
    daemon.serve(stop).await
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
    store: Store,
    settings: Settings,
    snapshots: watch::Sender<Arc<Snapshot>>,
    wake: Arc<Notify>,
    watcher: Option<Watcher>,
    /// Setting up file events failed for the folder as it is now.
    watch_broken: bool,
    dir_state: DirState,
    exporter: Option<OtlpExporter>,
    in_flight: Option<JoinHandle<(Outgoing, Result<(), SendError>)>>,
    retry_at: Option<tokio::time::Instant>,
    backoff: Duration,
    outage_since: Option<Instant>,
    export_failures: u64,
    /// Points the last export held back (said once per change).
    held: usize,
    /// The counts as of the last `status.json` written.
    snapshot_counts: Option<IngestCounts>,
    last_poll: PollReport,
}

impl Daemon {
    async fn serve(&mut self, mut stop: StopSignals) -> anyhow::Result<()> {
        let mut poll_tick = tokio::time::interval(self.settings.poll_interval.value);
        poll_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut export_tick = tokio::time::interval(self.settings.export_interval.value);
        export_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        self.ingest()?;
        loop {
            tokio::select! {
                _ = stop.recv() => break,
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
        let stats_dir = self.settings.stats_dir.value.clone();
        let result = tokio::task::block_in_place(|| ingest::poll(&mut self.store, &stats_dir));
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
                    (0, failed) if failed > 0 => tracing::warn!(
                        "{failed} ledger files cannot be read (permissions?); retrying on every poll, their lines are counted once they can{}",
                        sandbox::permission_hint()
                    ),
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
            Err(IngestError::Store(e)) => return Err(e.into()),
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
                    "file events are not available for {} ({e}); polling every {:?} instead",
                    dir.display(),
                    self.settings.poll_interval.value
                )
            }
        }
    }

    fn health(&self) -> SelfStats {
        SelfStats {
            counts: *self.store.counts(),
            export_failures: self.export_failures,
            files_tracked: self.last_poll.files as u64,
            last_poll_seconds: self.last_poll.duration().as_secs_f64(),
            last_poll_end: SelfStats::unix_seconds(self.last_poll.finished),
            store_bytes: self.store.disk_size(),
        }
    }

    /// Hands `/metrics` and `status` the store's committed state.
    fn publish(&mut self) {
        let counts = *self.store.counts();
        if self.snapshot_counts != Some(counts) {
            let doc = StatusJson::of(self.store.lifetime(), &counts);
            match status::write_snapshot(&self.settings.state_dir.value, &doc) {
                Ok(()) => self.snapshot_counts = Some(counts),
                Err(e) => tracing::warn!("cannot write the status snapshot in the state dir: {e}"),
            }
        }
        self.snapshots.send_replace(Arc::new(Snapshot {
            lifetime: self.store.lifetime().clone(),
            created: Some(self.store.stream_start()),
            health: self.health(),
        }));
    }

    /// Prepares the next request (its record made durable) and sends it from a task of its own.
    fn start_export(&mut self) -> anyhow::Result<()> {
        self.retry_at = None;
        let health = self.health();
        let Some(exporter) = self.exporter.as_mut() else {
            return Ok(());
        };
        let Some(outgoing) = exporter.prepare(&mut self.store, &health)? else {
            return Ok(());
        };
        let transport = exporter.transport();
        self.in_flight = Some(tokio::spawn(async move {
            let result = transport.send(&outgoing.request).await;
            (outgoing, result)
        }));
        Ok(())
    }

    fn finish_export(&mut self, done: (Outgoing, Result<(), SendError>)) -> anyhow::Result<()> {
        let Some(exporter) = self.exporter.as_mut() else {
            return Ok(());
        };
        let (outgoing, result) = done;
        let held = outgoing.report().held;
        if held != self.held {
            self.held = held;
            super::warn_held(held);
            if held == 0 {
                tracing::info!("no data point is held back any more");
            }
        }
        match exporter.complete(&mut self.store, outgoing, result) {
            Ok(_) => {
                if let Some(since) = self.outage_since.take() {
                    tracing::info!(
                        "export to {} works again after {:.0?}; nothing was lost",
                        exporter.endpoint(),
                        since.elapsed()
                    );
                }
                self.backoff = FIRST_RETRY;
            }
            Err(ExportError::Store(e)) => return Err(e.into()),
            Err(e) => {
                self.export_failures += 1;
                if self.outage_since.is_none() {
                    self.outage_since = Some(Instant::now());
                    tracing::warn!(
                        "{e}; retrying with backoff while ingestion goes on (one warning per outage)"
                    );
                }
                self.retry_at = Some(tokio::time::Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(self.settings.export_interval.value);
            }
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
        if let Some(exporter) = self.exporter.as_mut() {
            let last = exporter.export(&mut self.store, &health);
            match tokio::time::timeout_at(deadline, last).await {
                Ok(Ok(_)) => tracing::info!("stopped; everything committed was exported"),
                Ok(Err(ExportError::Store(e))) => return Err(e.into()),
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

async fn join(
    handle: &mut Option<JoinHandle<(Outgoing, Result<(), SendError>)>>,
) -> (Outgoing, Result<(), SendError>) {
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

/// SIGINT and SIGTERM, registered when installed (not when first awaited).
struct StopSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
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
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("stopping");
    }
}

//! `run`, the daemon: watches the ledger, commits new lines as they land, exports on an
//! interval from a task of its own, serves `/metrics`, and stops gracefully on a signal.
//!
//! - `signals.rs`: the stop signals, handled from the first instant;
//! - `stats_dir.rs`: the stats folder coming and going, file events, unreadable files;
//! - `store_fault.rs`: counting paused on a store that cannot be written, and resumed;
//! - `exports.rs`: the export task, its retries and what the collector said;
//! - `backoff.rs`: the waits between retries;
//! - `tests.rs`: the schedule on tokio's paused clock.

mod backoff;
mod exports;
mod signals;
mod stats_dir;
mod store_fault;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::export::health::ExportHealth;
use crate::export::otlp::{ExportError, OtlpExporter, Outgoing, Sent};
use crate::export::prometheus::{self, ScrapeView};
use crate::export::self_metrics::SelfStats;
use crate::ingest::PollReport;
use crate::ledger::watch::Watcher;
use crate::settings::Settings;
use crate::snapshot::{self, StatusJson};
use crate::store::Store;
use crate::store::counts::IngestCounts;
use crate::store::stream::SeriesId;
use backoff::Backoff;
use exports::{join, sleep_until};
use signals::StopSignals;
use stats_dir::DirState;
use store_fault::StoreFault;

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
    let (scrape_views, scrape_view_rx) = watch::channel(Arc::new(ScrapeView::default()));
    let mut serving = None;
    let mut listening = None;
    if let Some(addr) = settings.prometheus.value {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
            format!("cannot listen on {addr} for Prometheus (from {}); choose another address with --prometheus, or --prometheus off", settings.prometheus.origin)
        })?;
        let bound = listener.local_addr().unwrap_or(addr);
        tracing::info!("serving Prometheus metrics on http://{bound}/metrics");
        serving = Some(bound.to_string());
        listening = Some(listener);
    }
    let exporter = match &settings.otlp {
        Some(otlp) => Some(OtlpExporter::new(
            otlp.target.clone(),
            otlp.temporality,
            &settings.instance,
        )?),
        None => None,
    };
    let mut daemon = Daemon::new(settings, store, exporter, scrape_views, serving, stopping);
    // The store's totals are what the first scrape sees: served before them, a scrape would show
    // the lifetime counters at zero, which Prometheus takes for a reset. (A client that connects
    // meanwhile waits in the listen queue.)
    daemon.publish();
    if let Some(listener) = listening {
        tokio::spawn(prometheus::serve(listener, scrape_view_rx));
    }
    daemon.serve(&stopped).await
}

struct Daemon {
    /// `None` only while a store fault waits for its retry (see [`Daemon::resume`]).
    store: Option<Store>,
    /// Counting is paused because the store could not be written.
    fault: Option<StoreFault>,
    settings: Settings,
    scrape_views: watch::Sender<Arc<ScrapeView>>,
    wake: Arc<Notify>,
    watcher: Option<Watcher>,
    /// Setting up file events failed for the folder as it is now.
    watch_broken: bool,
    /// The last full listing of the stats folder (see `stats_dir.rs`).
    listed: Option<stats_dir::Listed>,
    dir_state: DirState,
    exporter: Option<OtlpExporter>,
    in_flight: Option<JoinHandle<(Outgoing, Sent)>>,
    retry_at: Option<tokio::time::Instant>,
    backoff: Backoff,
    outage_since: Option<Instant>,
    export_failures: u64,
    /// How exports have gone since they last worked, for the log and for `doctor`.
    export_health: ExportHealth,
    /// Points the last export held back (said once per change).
    held: usize,
    /// The counts as of the last `status.json` written.
    snapshot_counts: Option<IngestCounts>,
    /// How many series the store had when their births were last noted, and the births then.
    births_noted: (usize, Arc<BTreeMap<SeriesId, u64>>),
    /// The time of the last publication since the run caught up with the ledger: a series
    /// published later was not in it. `None` until then, when a new series may be one that a
    /// run this store does not know of published (a store restored from a backup).
    published_ns: Option<u64>,
    /// The run's first poll of the ledger has ended.
    caught_up: bool,
    /// The address `/metrics` is served on, as bound.
    serving: Option<String>,
    last_poll: PollReport,
    /// Set by a stop signal: a poll in progress ends after its current chunk.
    stopping: Arc<AtomicBool>,
}

impl Daemon {
    fn new(
        settings: &Settings,
        store: Store,
        exporter: Option<OtlpExporter>,
        scrape_views: watch::Sender<Arc<ScrapeView>>,
        serving: Option<String>,
        stopping: Arc<AtomicBool>,
    ) -> Daemon {
        Daemon {
            store: Some(store),
            fault: None,
            settings: settings.clone(),
            scrape_views,
            wake: Arc::new(Notify::new()),
            watcher: None,
            watch_broken: false,
            listed: None,
            dir_state: DirState::Unknown,
            exporter,
            in_flight: None,
            retry_at: None,
            backoff: Backoff::new(FIRST_RETRY, settings.export_interval.value),
            outage_since: None,
            export_failures: 0,
            export_health: ExportHealth::default(),
            held: 0,
            snapshot_counts: None,
            births_noted: (0, Arc::default()),
            published_ns: None,
            caught_up: false,
            serving,
            last_poll: PollReport::default(),
            stopping,
        }
    }

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

    fn self_stats(&self) -> SelfStats {
        let Some(store) = self.store.as_ref() else {
            return self.scrape_views.borrow().self_stats;
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
        let self_stats = self.self_stats();
        let Some(store) = self.store.as_mut() else {
            return;
        };
        let now_ns = crate::export::otlp::now_ns();
        // Series never go away, so a count that changed is the one sign of new ones. A new one's
        // zero goes a millisecond after the last moment it is known to have been absent, before
        // any scrape could have seen it (docs/counting-rules.md, "Births").
        let series = store.lifetime().len();
        if series != self.births_noted.0 {
            if let Err(e) = store.bring_stream_back(now_ns) {
                tracing::warn!("cannot note the clock's time in the state dir: {e}");
            }
            let absent_ns = self
                .published_ns
                .unwrap_or_else(|| store.stream().newest_ns())
                .min(now_ns);
            match store.record_births(absent_ns.saturating_add(1_000_000)) {
                Ok(()) => {
                    let born = store.stream().births.iter().filter(|(_, ns)| **ns > 0);
                    self.births_noted = (series, Arc::new(born.map(|(k, v)| (k.clone(), *v)).collect()));
                }
                // Tried again at the next publication; until then a new series has no `_created`.
                Err(e) => tracing::warn!("cannot note new series in the state dir: {e}"),
            }
        }
        // A store rebuilt from the ledger (`--reset-state`, a deleted store) serves no less than
        // was served before, series by series, while it catches up: a scraper reads a lower value
        // as a reset, and counts the whole history again (docs/counting-rules.md, "Rebuilds").
        let mut lifetime = store.lifetime().clone();
        lifetime.raise_to(&store.stream().served);
        let mut self_stats = self_stats;
        self_stats.counts = self_stats.counts.raised_to(&store.stream().served_counts);
        // A moment the scrape view holds the series the stream record lists, and none other: what
        // a series found later is dated after (here, and by the next run).
        let noted = self.births_noted.0 == series;
        if self.caught_up && noted {
            self.published_ns = Some(now_ns);
            if let Err(e) = store.note_publication(now_ns, false, &lifetime, &self_stats.counts) {
                tracing::debug!("cannot note the publication in the state dir: {e}");
            }
        }
        let store = &*store;
        let counts = *store.counts();
        if self.snapshot_counts != Some(counts) {
            let doc = StatusJson {
                prometheus: self.serving.clone(),
                ..StatusJson::of(store.lifetime(), &counts)
            };
            match snapshot::write(&self.settings.state_dir.value, &doc) {
                Ok(()) => self.snapshot_counts = Some(counts),
                Err(e) => tracing::warn!("cannot write the status snapshot in the state dir: {e}"),
            }
        }
        self.scrape_views.send_replace(Arc::new(ScrapeView {
            lifetime,
            births: self.births_noted.1.clone(),
            self_stats,
        }));
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
        let self_stats = self.self_stats();
        if let (Some(store), Some(_)) = (self.store.as_mut(), self.published_ns) {
            let served = store.lifetime().len() == self.births_noted.0;
            let last = self.scrape_views.borrow().clone();
            let now_ns = crate::export::otlp::now_ns();
            if served
                && let Err(e) = store.note_publication(now_ns, true, &last.lifetime, &last.self_stats.counts)
            {
                tracing::debug!("cannot note the last publication in the state dir: {e}");
            }
        }
        if self.store.is_none() {
            tracing::warn!("stopped while counting was paused; the next start resumes it from the ledger");
        } else if let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) {
            let last = exporter.export(store, &self_stats);
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

//! `run`, the daemon: watches the ledger, commits new lines as they land, exports on an
//! interval from a task of its own, serves `/metrics`, and stops gracefully on a signal.
//!
//! - `allocator.rs`: `run` started again, once, with glibc's allocator tuned for staying resident;
//! - `signals.rs`: the stop signals, handled from the first instant;
//! - `ingest.rs`: one poll of the ledger, the heart of `run`;
//! - `publish.rs`: what `/metrics` and `status` are handed after every commit;
//! - `stats_dir.rs`: the stats folder coming and going, file events, unreadable files;
//! - `store_fault.rs`: counting paused on a store that cannot be written, and resumed;
//! - `store_reopen.rs`: the store opened again once it has grown (its memory, its compaction);
//! - `exports.rs`: the export task, its retries and what the collector said;
//! - `tests.rs`: the schedule on tokio's paused clock.

pub mod allocator;
mod exports;
mod ingest;
mod publish;
mod signals;
mod stats_dir;
mod store_fault;
mod store_reopen;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{Notify, watch};

use crate::delivery::Delivery;
use crate::events::{self, daemon::Stopped};
use crate::export::otlp::{ExportError, OtlpExporter};
use crate::export::prometheus::ScrapeView;
use crate::export::self_metrics::SelfStats;
use crate::export::server;
use crate::export::web::Web;
use crate::ingest::PollReport;
use crate::ingest::verify::Verifier;
use crate::settings::Settings;
use crate::store::Store;
use exports::{Exports, OtlpExports, join, sleep_until};
pub use ingest::read_ledger;
use publish::Published;
use signals::StopSignals;
use stats_dir::StatsDir;
pub use stats_dir::warn_unreadable;
use store_fault::StoreFault;

/// How long a graceful stop may spend on the last export, so that the process is gone within
/// 5 s of the signal even with the collector down.
const LAST_EXPORT_BUDGET: Duration = Duration::from_secs(3);

/// How long the last poll, after a stop signal, may read before it stops where it is: a tail of
/// new lines in a few files takes milliseconds; a backfill the signal cut short stays cut (the
/// process is gone within a second of the signal).
const LAST_POLL_BUDGET: Duration = Duration::from_millis(250);

/// The top-level entry point for `reasonix-exporter run`.
/// `web`: the web configuration of its HTTP server, read before the sandbox was entered.
pub async fn run(settings: &Settings, web: Option<Web>) -> anyhow::Result<()> {
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
    let Some(mut opened) = store_fault::open_at_start(settings, &stopped).await? else {
        events::daemon::stopped(Stopped::Paused);
        return Ok(());
    };
    // Opening a store of many files' checkpoints allocates and frees far more than it keeps.
    ingest::release_freed_memory();
    let naming = &settings.naming;
    let instance = opened.delivery.identity(|| naming.fresh(), &naming.legacy);
    let (scrape_views, scrape_view_rx) = watch::channel(Arc::new(ScrapeView::default()));
    let mut serving = None;
    let mut listening = None;
    if let Some(addr) = settings.prometheus.value {
        let origin = &settings.prometheus.origin;
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => listener,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
                "{addr} is held by another program, so /metrics cannot be served there (prometheus, from {origin}); choose another address with --prometheus ADDR, or --prometheus off"
            ),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot listen on {addr} for Prometheus (from {origin}); choose another address with --prometheus ADDR, or --prometheus off")
                });
            }
        };
        let bound = listener.local_addr().unwrap_or(addr);
        let tls = web.as_ref().is_some_and(Web::tls_at_start);
        events::export::serving(&bound, if tls { "https" } else { "http" });
        serving = Some(bound.to_string());
        listening = Some(listener);
    }
    let exporter = match &settings.otlp {
        Some(otlp) => Some(OtlpExporter::new(
            otlp.target.clone(),
            otlp.temporality,
            otlp.gen_ai,
            &instance,
            &otlp.resource,
        )?),
        None => None,
    };
    let mut daemon = Daemon::new(settings, opened, exporter, scrape_views, serving, stopping);
    // The store's totals are what the first scrape sees: served before them, a scrape would show
    // the lifetime counters at zero, which Prometheus takes for a reset. (A client that connects
    // meanwhile waits in the listen queue.)
    daemon.publish();
    if let Some(listener) = listening {
        tokio::spawn(server::serve(
            listener,
            scrape_view_rx,
            web.map(std::sync::Arc::new),
        ));
    }
    daemon.serve(&stopped).await
}

/// The store and what its backends have received: opened together, let go of together.
/// `delivery` holds a handle on the store's database, so it is dropped first (fields drop in
/// order): the store's lock goes only once sled is closed.
struct Opened {
    delivery: Delivery,
    store: Store,
    /// The store's size on disk when it was opened (see `store_reopen.rs`).
    opened_bytes: u64,
}

impl Opened {
    fn new(store: Store, delivery: Delivery) -> Opened {
        Opened {
            opened_bytes: store.disk_size(),
            delivery,
            store,
        }
    }

    fn open(state_dir: &std::path::Path, reset: bool) -> Result<Opened, crate::store::StoreError> {
        let mut store = Store::open(state_dir, reset)?;
        let delivery = Delivery::open(&mut store, reset)?;
        Ok(Opened::new(store, delivery))
    }
}

struct Daemon {
    /// `None` only while a store fault waits for its retry (see [`Daemon::resume`]).
    opened: Option<Opened>,
    /// Counting is paused because the store could not be written.
    fault: Option<StoreFault>,
    settings: Settings,
    /// What `/metrics` and `status` were last handed.
    published: Published,
    stats_dir: StatsDir,
    /// `None` with `--otlp off`.
    exports: Option<OtlpExports>,
    /// The run's first poll of the ledger has ended.
    caught_up: bool,
    /// The run's first poll has ended, or found no stats folder to read (`/-/ready`).
    ledger_read: bool,
    last_poll: PollReport,
    /// The full verifications of growing files' checkpoints (`None`: no thread could start).
    verifier: Option<Verifier>,
    /// Set by a stop signal: a poll in progress ends after its current chunk.
    stopping: Arc<AtomicBool>,
}

impl Daemon {
    fn new(
        settings: &Settings,
        opened: Opened,
        exporter: Option<OtlpExporter>,
        scrape_views: watch::Sender<Arc<ScrapeView>>,
        serving: Option<String>,
        stopping: Arc<AtomicBool>,
    ) -> Daemon {
        Daemon {
            opened: Some(opened),
            fault: None,
            settings: settings.clone(),
            published: Published::new(scrape_views, serving),
            stats_dir: StatsDir::new(),
            exports: exporter.map(|e| Exports::new(e, settings.export_interval.value)),
            caught_up: false,
            ledger_read: false,
            last_poll: PollReport::default(),
            verifier: Verifier::start()
                .inspect_err(|e| events::ledger::verification_stopped(&e.to_string()))
                .ok(),
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
            let (idle, retry_at) = (self.idle(), self.retry_at());
            tokio::select! {
                _ = stopped.notified() => break,
                _ = self.stats_dir.wake.notified() => self.ingest()?,
                _ = poll_tick.tick() => self.ingest()?,
                _ = export_tick.tick(), if idle => self.start_export()?,
                _ = sleep_until(retry_at), if idle && retry_at.is_some() => self.start_export()?,
                done = join(&mut self.exports), if !idle => {
                    if let Some(exports) = self.exports.as_mut() {
                        exports.in_flight = None;
                    }
                    self.finish_export(done)?;
                }
            }
        }
        self.shut_down().await
    }

    fn self_stats(&self) -> SelfStats {
        let Some(Opened { store, .. }) = self.opened.as_ref() else {
            return self.published.self_stats();
        };
        SelfStats {
            counts: *store.counts(),
            export_failures: self.exports.as_ref().map_or(0, |x| x.failures),
            files_tracked: self.last_poll.files as u64,
            last_poll_seconds: self.last_poll.duration().as_secs_f64(),
            last_poll_end: SelfStats::unix_seconds(self.last_poll.finished),
            store_bytes: store.disk_size(),
            sinks: [self.exports.as_ref().and_then(|x| x.last), self.published.last()],
        }
    }

    /// No export is in flight.
    fn idle(&self) -> bool {
        self.exports.as_ref().is_none_or(|x| x.in_flight.is_none())
    }

    fn retry_at(&self) -> Option<tokio::time::Instant> {
        self.exports.as_ref().and_then(|x| x.retry_at)
    }

    /// Hands `/metrics` and `status` the store's committed state.
    fn publish(&mut self) {
        let self_stats = self.self_stats();
        if let Some(Opened { store, delivery, .. }) = self.opened.as_mut() {
            self.published.publish(
                store,
                delivery,
                self_stats,
                (self.caught_up, self.ledger_read),
                &self.settings.state_dir.value,
            );
        }
    }

    /// Stop watching, commit what is there, export a last time within the budget, exit.
    async fn shut_down(&mut self) -> anyhow::Result<()> {
        self.stats_dir.unwatch();
        // The signal set `stopping`, which cuts a poll short after the chunk it is in: the last
        // poll reads every file that changed, within a budget of its own (a backfill of millions
        // of lines is left where it stands, for the next start). `stopping` stays set, so that
        // nothing else a poll may start (a verification, a reopen of the store) runs now.
        let budget_spent = Arc::new(AtomicBool::new(false));
        let timer = {
            let budget_spent = budget_spent.clone();
            std::thread::spawn(move || {
                std::thread::sleep(LAST_POLL_BUDGET);
                budget_spent.store(true, Ordering::Relaxed);
            })
        };
        let ingested = self.ingest_until(&budget_spent);
        drop(timer);
        ingested?;
        let deadline = tokio::time::Instant::now() + LAST_EXPORT_BUDGET;
        if let Some(in_flight) = self.exports.as_mut().and_then(|x| x.in_flight.take()) {
            match tokio::time::timeout_at(deadline, in_flight).await {
                Ok(Ok(done)) => self.finish_export(done)?,
                _ => events::export::abandoned(),
            }
        }
        let self_stats = self.self_stats();
        if let Some(Opened { store, delivery, .. }) = self.opened.as_mut() {
            self.published.note_the_last(store, delivery);
        }
        if self.opened.is_none() {
            events::daemon::stopped(Stopped::Paused);
        } else if let (Some(exports), Some(Opened { store, delivery, .. })) =
            (self.exports.as_mut(), self.opened.as_mut())
        {
            let last = exports.exporter.export(store, delivery, &self_stats);
            let outcome = tokio::time::timeout_at(deadline, last).await;
            events::daemon::stopped(match &outcome {
                Ok(Ok(_)) => Stopped::Exported,
                Ok(Err(ExportError::Store(e))) => Stopped::StoreFailed(e),
                Ok(Err(e)) => Stopped::ExportFailed(e),
                Err(_) => Stopped::ExportTimedOut,
            });
        } else {
            events::daemon::stopped(Stopped::Committed);
        }
        Ok(())
    }
}

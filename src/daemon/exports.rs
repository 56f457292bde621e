//! The export schedule and its outage, in one owner ([`Exports`]), for a sink the daemon pushes
//! to (`export::sink::PushSink`): a request prepared (its record made durable) and sent from a
//! task of its own, retried with backoff, the backend's answers taken into account.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Daemon, Opened};
use crate::delivery::Delivery;
use crate::events;
use crate::events::store::Tried;
use crate::export::backoff::Backoff;
use crate::export::health::ExportHealth;
use crate::export::otlp::{ExportError, OtlpExporter};
use crate::export::self_metrics::{SelfStats, SinkRun};
use crate::export::sink::PushSink;
use crate::export::transport::SendError;
use crate::store::Store;

/// The first retry after a failed export; doubles up to the export interval.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Everything about exports that outlives one: the exporter, the request in flight, when to try
/// again, and how exports have gone since they last worked.
pub(super) struct Exports<S: PushSink> {
    pub exporter: S,
    pub in_flight: Option<JoinHandle<(S::Outgoing, S::Answer)>>,
    pub retry_at: Option<Instant>,
    backoff: Backoff,
    /// Failed exports over the run (a self-metric).
    pub failures: u64,
    /// The outage, for the log and for `doctor`.
    health: ExportHealth,
    /// Points the last export held back (said once per change).
    held: usize,
    /// When the export in flight was begun.
    started: Option<Instant>,
    /// How the last export went (a self-metric).
    pub last: Option<SinkRun>,
}

impl<S: PushSink> Exports<S> {
    pub fn new(exporter: S, interval: Duration) -> Exports<S> {
        Exports {
            exporter,
            in_flight: None,
            retry_at: None,
            backoff: Backoff::new(FIRST_RETRY, interval),
            failures: 0,
            health: ExportHealth::default(),
            held: 0,
            started: None,
            last: None,
        }
    }

    /// Notes how the export begun at `started` went, now that it is over.
    fn ended(&mut self, success: bool) {
        if let Some(started) = self.started.take() {
            let seconds = started.elapsed().as_secs_f64();
            self.last = Some(SinkRun { seconds, success });
        }
    }

    /// Takes a failed export into account: when to try again.
    fn failed(&mut self, e: &ExportError) {
        self.failures += 1;
        self.ended(false);
        let (begins, asked) = match e {
            ExportError::Send { error, .. } => {
                let asked = match error {
                    SendError::Refused { retry_after, .. } => *retry_after,
                    _ => None,
                };
                (self.health.failed(error, &e.to_string()), asked)
            }
            _ => (self.health.not_sent(), None),
        };
        if begins {
            events::export::outage(e);
        }
        // A collector that says when to come back is taken at its word (capped).
        self.retry_at = Some(Instant::now() + self.backoff.next_wait(asked));
    }

    /// Says when the points held back change (docs/counting-rules.md, "Never down").
    fn note_held(&mut self, held: usize) {
        if held != self.held {
            self.held = held;
            match held {
                0 => events::export::held_over(),
                held => events::export::held(held),
            }
        }
    }

    /// Prepares the next request (its record made durable) and sends it from a task of its own.
    /// `Ok` also when there was nothing to send.
    fn start(
        &mut self,
        store: &Store,
        delivery: &mut Delivery,
        self_stats: &SelfStats,
    ) -> Result<(), ExportError> {
        self.started = Some(Instant::now());
        let Some(outgoing) = self.exporter.prepare(store, delivery, self_stats)? else {
            // Nothing to send: no delivery to speak of.
            self.started = None;
            return Ok(());
        };
        self.in_flight = Some(tokio::spawn(self.exporter.send(outgoing)));
        Ok(())
    }

    /// Takes the backend's answer into account: the outage, the backoff, the next try. Only a
    /// store that failed is `Err`.
    fn finish(
        &mut self,
        delivery: &mut Delivery,
        (outgoing, answer): (S::Outgoing, S::Answer),
    ) -> Result<(), ExportError> {
        self.note_held(S::held(&outgoing));
        match self.exporter.complete(delivery, outgoing, answer) {
            Ok(report) => {
                self.ended(true);
                if let Some(lasted) = self.health.outage_lasted() {
                    events::export::outage_over(&self.exporter.endpoint(), lasted);
                }
                self.health.accepted(report.accepted.warning());
                self.backoff.reset();
                if report.births > 0 {
                    // The new series' zeros are in: their values go at once, not an interval later.
                    self.retry_at = Some(Instant::now());
                }
            }
            Err(e @ ExportError::Store(_)) => return Err(e),
            Err(e) => self.failed(&e),
        }
        Ok(())
    }
}

impl Daemon {
    /// Prepares the next request (its record made durable) and sends it from a task of its own.
    pub(super) fn start_export(&mut self) -> anyhow::Result<()> {
        let self_stats = self.self_stats();
        // Due or not, a retry is taken now: left set without a store, it would fire at once on
        // every turn of the loop until the store is back.
        if let Some(exports) = self.exports.as_mut() {
            exports.retry_at = None;
        }
        let (Some(exports), Some(Opened { store, delivery, .. })) =
            (self.exports.as_mut(), self.opened.as_mut())
        else {
            return Ok(());
        };
        match exports.start(store, delivery, &self_stats) {
            Ok(()) => Ok(()),
            Err(ExportError::Store(e)) => self.pause(e),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn finish_export(&mut self, done: InFlight) -> anyhow::Result<()> {
        // With the store let go, the answer is dropped: a cumulative export is sent again, and a
        // delta export's record settles it when the store reopens.
        let (Some(exports), Some(Opened { delivery, .. })) = (self.exports.as_mut(), self.opened.as_mut())
        else {
            return Ok(());
        };
        if let Err(e) = exports.finish(delivery, done) {
            return match e {
                ExportError::Store(e) => self.pause(e),
                e => Err(e.into()),
            };
        }
        if let Err(e) = exports.health.save(&self.settings.state_dir.value) {
            events::store::state_write_failed(
                "export-health.json",
                "write the export health file",
                &e,
                Tried::Repeatedly,
            );
        }
        self.publish();
        Ok(())
    }
}

/// The OTLP export the daemon drives.
pub(super) type OtlpExports = Exports<OtlpExporter>;

/// A request in flight and its answer.
pub(super) type InFlight = (
    <OtlpExporter as PushSink>::Outgoing,
    <OtlpExporter as PushSink>::Answer,
);

/// The answer to the export in flight (never, when there is none).
pub(super) async fn join<S: PushSink>(exports: &mut Option<Exports<S>>) -> (S::Outgoing, S::Answer) {
    match exports.as_mut().and_then(|x| x.in_flight.as_mut()) {
        Some(h) => match h.await {
            Ok(done) => done,
            // The send task cannot panic short of a bug; treat it as never finishing.
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

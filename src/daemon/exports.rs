//! The export schedule and its outage, in one owner ([`Exports`]): a request prepared (its
//! record made durable) and sent from a task of its own, retried with backoff, the collector's
//! answers taken into account.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Daemon, Opened};
use crate::events;
use crate::events::store::Tried;
use crate::export::backoff::Backoff;
use crate::export::health::ExportHealth;
use crate::export::otlp::{ExportError, OtlpExporter, Outgoing, Sent};
use crate::export::self_metrics::SinkRun;
use crate::export::transport::SendError;

/// The first retry after a failed export; doubles up to the export interval.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Everything about exports that outlives one: the exporter, the request in flight, when to try
/// again, and how exports have gone since they last worked.
pub(super) struct Exports {
    pub exporter: OtlpExporter,
    pub in_flight: Option<JoinHandle<(Outgoing, Sent)>>,
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

impl Exports {
    pub fn new(exporter: OtlpExporter, interval: Duration) -> Exports {
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
        let (Some(exports), Some(Opened { store, delivery })) = (self.exports.as_mut(), self.opened.as_mut())
        else {
            return Ok(());
        };
        exports.started = Some(Instant::now());
        let outgoing = match exports.exporter.prepare(store, delivery, &self_stats) {
            Ok(Some(outgoing)) => outgoing,
            Ok(None) => {
                // Nothing to send: no delivery to speak of.
                exports.started = None;
                return Ok(());
            }
            Err(ExportError::Store(e)) => return self.pause(e),
            Err(e) => return Err(e.into()),
        };
        let transport = exports.exporter.transport();
        exports.in_flight = Some(tokio::spawn(async move {
            let sent = outgoing.send(transport).await;
            (outgoing, sent)
        }));
        Ok(())
    }

    pub(super) fn finish_export(&mut self, done: (Outgoing, Sent)) -> anyhow::Result<()> {
        // With the store let go, the answer is dropped: a cumulative export is sent again, and a
        // delta export's record settles it when the store reopens.
        let (Some(exports), Some(Opened { delivery, .. })) = (self.exports.as_mut(), self.opened.as_mut())
        else {
            return Ok(());
        };
        let (outgoing, sent) = done;
        exports.note_held(outgoing.report().held);
        match exports.exporter.complete(delivery, outgoing, sent) {
            Ok(report) => {
                exports.ended(true);
                if let Some(lasted) = exports.health.outage_lasted() {
                    events::export::outage_over(&exports.exporter.endpoint(), lasted);
                }
                exports.health.accepted(report.accepted.warning());
                exports.backoff.reset();
                if report.births > 0 {
                    // The new series' zeros are in: their values go at once, not an interval later.
                    exports.retry_at = Some(Instant::now());
                }
            }
            Err(ExportError::Store(e)) => return self.pause(e),
            Err(e) => exports.failed(&e),
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

/// The answer to the export in flight (never, when there is none).
pub(super) async fn join(exports: &mut Option<Exports>) -> (Outgoing, Sent) {
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

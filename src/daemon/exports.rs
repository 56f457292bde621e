//! The export task: a request prepared (its record made durable) and sent from a task of its
//! own, retried with backoff, the collector's answers taken into account.

use std::time::Instant;

use tokio::task::JoinHandle;

use super::Daemon;
use crate::export::otlp::{ExportError, Outgoing, Sent};
use crate::export::transport::SendError;

impl Daemon {
    /// Prepares the next request (its record made durable) and sends it from a task of its own.
    pub(super) fn start_export(&mut self) -> anyhow::Result<()> {
        self.retry_at = None;
        let self_stats = self.self_stats();
        let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) else {
            return Ok(());
        };
        let outgoing = match exporter.prepare(store, &self_stats) {
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

    pub(super) fn finish_export(&mut self, done: (Outgoing, Sent)) -> anyhow::Result<()> {
        // With the store let go, the answer is dropped: a cumulative export is sent again, and a
        // delta export's record settles it when the store reopens.
        let (Some(exporter), Some(store)) = (self.exporter.as_mut(), self.store.as_mut()) else {
            return Ok(());
        };
        let (outgoing, sent) = done;
        let held = outgoing.report().held;
        if held != self.held {
            self.held = held;
            crate::export::otlp::warn_held(held);
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
                self.backoff.reset();
                if report.births > 0 {
                    // The new series' zeros are in: their values go at once, not an interval later.
                    self.retry_at = Some(tokio::time::Instant::now());
                }
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
                let wait = self.backoff.next_wait(asked);
                self.retry_at = Some(tokio::time::Instant::now() + wait);
            }
        }
        if let Err(e) = self.export_health.save(&self.settings.state_dir.value) {
            tracing::debug!("cannot write the export health file in the state dir: {e}");
        }
        self.publish();
        Ok(())
    }
}

pub(super) async fn join(handle: &mut Option<JoinHandle<(Outgoing, Sent)>>) -> (Outgoing, Sent) {
    match handle.as_mut() {
        Some(h) => match h.await {
            Ok(done) => done,
            // The send task cannot panic short of a bug; treat it as never finishing.
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

pub(super) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

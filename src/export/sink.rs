//! A backend the daemon pushes to, as the daemon drives it (`daemon/exports.rs`): the next
//! request prepared from what was counted and what delivery says was delivered (its record made
//! durable before it leaves), sent on a task of its own, and its answer settled with delivery.
//! `daemon/exports.rs`'s `Exports` schedules it, retries with backoff, keeps the outage and
//! measures each delivery (`sink.duration`, `sink.success`) the same way for any of them. OTLP is
//! one (`otlp.rs`).

use super::otlp::{ExportError, ExportReport};
use super::self_metrics::SelfStats;
use crate::delivery::Delivery;
use crate::store::Store;

pub trait PushSink {
    /// A request on its way.
    type Outgoing: Send + 'static;
    /// What the backend answered to it.
    type Answer: Send + 'static;

    /// Where it sends, as a log line may show it (no credentials).
    fn endpoint(&self) -> String;

    /// The next request, its record made durable; `None` when there is nothing to send.
    fn prepare(
        &mut self,
        store: &Store,
        delivery: &mut Delivery,
        self_stats: &SelfStats,
    ) -> Result<Option<Self::Outgoing>, ExportError>;

    /// Sends `outgoing`: the future owns all it needs, to run on a task of its own.
    fn send(
        &self,
        outgoing: Self::Outgoing,
    ) -> impl Future<Output = (Self::Outgoing, Self::Answer)> + Send + 'static;

    /// Points `outgoing` holds back below what was once sent of them.
    fn held(outgoing: &Self::Outgoing) -> usize;

    /// The backend's answer to `outgoing`, settled with delivery.
    fn complete(
        &mut self,
        delivery: &mut Delivery,
        outgoing: Self::Outgoing,
        answer: Self::Answer,
    ) -> Result<ExportReport, ExportError>;
}

//! OTLP export: one durable cumulative stream per store (docs/counting-rules.md), or delta on request.
//!
//! Cumulative (the default): every export carries each series' lifetime total from the store,
//! under the one start time the stream record keeps for the store's whole life (see
//! `store::stream`). An export is idempotent: a later one supersedes any earlier one, so a
//! failed, timed-out or repeated export needs no bookkeeping, and a backend that keeps one series
//! per label set sees one counter that never goes down. Before each send the stream record is
//! made durable with the values about to go out; a point below what was once sent is held.
//!
//! A series new to the backend after the stream's first export (a new model, the first turn of a
//! source, a first quote in a currency) is born with a zero: an export of its own, a millisecond
//! or more before the values, carries 0 for each new point, and the values follow only once the
//! collector has taken it (docs/counting-rules.md, "Births"). The stream's first export has none:
//! what it carries is history, the counters' first values.
//!
//! Delta (opt-in): each export carries what was committed since the last export that was not
//! refused. Its outcome decides: confirmed, or unknown (a timeout, a connection closed after the
//! body left), it counts as delivered — delta may under-count, never over-count; refused, or
//! never sent, the same increments go out again next time. A run that dies mid-send leaves the
//! export pending, and the next run counts it as delivered.
//!
//! We build the request ourselves from the official `opentelemetry-proto` types because the OTel
//! SDK owns each process's start time and cannot carry the store's.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::resource::v1::Resource;

use super::payload::{self, Contents, Interval, Part, Temporality};
use super::self_metrics::SelfStats;
use super::sink::PushSink;
use super::transport::{Accepted, OtlpTarget, SendError, Transport};
use crate::delivery::{Delivery, Outlook, Sending, Settled};
use crate::series::{AttrSet, Sums};
use crate::store::{PendingExport, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP endpoint {endpoint}: {detail}")]
    Setup {
        endpoint: String,
        detail: crate::export::transport::TransportError,
    },
    #[error("export to {endpoint} failed: {error}")]
    Send { endpoint: String, error: SendError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one export sent.
#[derive(Debug, Default, Clone)]
pub struct ExportReport {
    /// Data points of the ledger metrics in the requests (0 when there was nothing to send).
    pub data_points: usize,
    /// Points held back because the store is behind what was exported before.
    pub held: usize,
    /// Requests the export was cut into.
    pub requests: usize,
    /// What the collector said of the points it took: some may have been rejected.
    pub accepted: Accepted,
    /// Zero points of a birth export: the values follow in an export right after it.
    pub births: usize,
}

/// The largest request sent, before a collector says it is too large: well under gRPC's
/// default 4 MiB message limit and the request limits of common collectors and gateways.
pub const MAX_REQUEST_BYTES: usize = 2 << 20;
/// The smallest it is cut to after refusals as too large.
const MIN_REQUEST_BYTES: usize = 32 << 10;

/// An export ready to go, as one or more requests (see [`payload::parts`]); its stream record
/// (cumulative) or pending export (delta) is durable.
#[derive(Debug, Clone)]
pub struct Outgoing {
    parts: Arc<Vec<Part>>,
    report: ExportReport,
    /// The lifetime sums the requests were built from.
    lifetime: Sums,
    /// A birth export's points (sent as zeros).
    births: Option<Sums>,
}

/// How the requests of an export fared: they are sent in order, and the first that fails ends
/// the export.
#[derive(Debug)]
pub struct Sent {
    /// Requests the collector took, from the first.
    pub accepted: usize,
    /// What it said about them, or why the next one failed.
    pub result: Result<Accepted, SendError>,
}

impl Outgoing {
    /// Sends every request in order, stopping at the first that fails.
    pub async fn send(&self, transport: Transport) -> Sent {
        let mut said = Accepted::default();
        for (i, part) in self.parts.iter().enumerate() {
            match transport.clone().send(&part.request).await {
                Ok(accepted) => {
                    said.rejected_points += accepted.rejected_points;
                    if said.message.is_empty() {
                        said.message = accepted.message;
                    }
                }
                Err(error) => {
                    return Sent {
                        accepted: i,
                        result: Err(error),
                    };
                }
            }
        }
        Sent {
            accepted: self.parts.len(),
            result: Ok(said),
        }
    }

    /// The series whose requests the collector took.
    fn accepted_series(&self, accepted: usize) -> impl Iterator<Item = &AttrSet> {
        self.parts[..accepted].iter().flat_map(|p| &p.series)
    }
}

/// The OTLP side of a process.
pub struct OtlpExporter {
    target: OtlpTarget,
    temporality: Temporality,
    /// The GenAI conventions' token counters go too (`gen_ai.rs`).
    gen_ai: bool,
    transport: Transport,
    resource: Resource,
    /// The size requests are cut to; halved when the collector refuses one as too large.
    max_request_bytes: usize,
    /// Points whose birth the collector took and whose values have not been prepared yet.
    born: Sums,
    /// The collector has answered this process. Until then births are dated a millisecond
    /// after the stream record's last export: a series the store has then may be one that
    /// exports the record does not know of (a store put back from a backup) already carried.
    /// After, a series is new in this run, and its birth is dated by the clock.
    answered: bool,
}

impl OtlpExporter {
    /// Sets the exporter up for the store known to backends as `instance`; nothing is sent yet.
    /// Must run inside a tokio runtime.
    pub fn new(
        target: OtlpTarget,
        temporality: Temporality,
        gen_ai: bool,
        instance: &str,
        user_resource: &super::resource::UserResource,
    ) -> Result<OtlpExporter, ExportError> {
        let transport = Transport::new(&target).map_err(|detail| ExportError::Setup {
            endpoint: target.shown_endpoint(),
            detail,
        })?;
        Ok(OtlpExporter {
            target,
            temporality,
            gen_ai,
            transport,
            resource: super::resource::resource(instance, user_resource),
            max_request_bytes: MAX_REQUEST_BYTES,
            born: Sums::default(),
            answered: false,
        })
    }

    /// A handle to send with, for a task of its own.
    fn transport(&self) -> Transport {
        self.transport.clone()
    }

    /// Exports once, in place; a request refused as too large is cut smaller and sent again at
    /// once. On failure nothing is lost: the next export carries it.
    pub async fn export(
        &mut self,
        store: &Store,
        delivery: &mut Delivery,
        self_stats: &SelfStats,
    ) -> Result<ExportReport, ExportError> {
        loop {
            let Some(outgoing) = self.prepare(store, delivery, self_stats)? else {
                return Ok(ExportReport::default());
            };
            let sent = outgoing.send(self.transport()).await;
            let limit = self.max_request_bytes;
            match self.complete(delivery, outgoing, sent) {
                Err(ExportError::Send {
                    error: SendError::Refused { too_large: true, .. },
                    ..
                }) if self.max_request_bytes < limit => continue,
                Ok(report) if report.births > 0 => continue,
                done => return done,
            }
        }
    }

    /// The request for what `outlook` shows, and what it marks and delivers once sent.
    fn build(
        &mut self,
        outlook: Outlook<'_>,
        self_stats: &SelfStats,
        now_ns: u64,
    ) -> Option<Sending<Outgoing>> {
        let Outlook {
            lifetime,
            stream,
            delivered,
        } = outlook;
        let has = match self.temporality {
            Temporality::Delta => collector_has(delivered, &stream.marks),
            Temporality::Cumulative => Sums::default(),
        };
        let (values, start_ns) = match self.temporality {
            Temporality::Cumulative => (lifetime.clone(), stream.start_ns),
            Temporality::Delta => (
                lifetime.minus(&has),
                // Right after the last export (or the stream's start): delta intervals follow
                // one another without overlap.
                stream.last_time_ns.max(stream.start_ns),
            ),
        };
        // Points new to the backend since the stream's first export, whose zero it lacks: never
        // sent cumulative (no mark) nor delta (nothing delivered).
        let births = match self.temporality {
            Temporality::Cumulative if stream.last_time_ns != 0 => {
                values.unsent(&stream.marks).unsent(delivered).unsent(&self.born)
            }
            _ => Sums::default(),
        };
        let born = !births.is_empty();
        if !born {
            self.born = Sums::default();
        }
        let end_ns = match (born, self.answered) {
            (true, false) => stream.birth_time_ns(),
            _ => stream.next_time_ns(now_ns),
        };
        let contents = Contents {
            values: if born { &births } else { &values },
            temporality: self.temporality,
            interval: Interval { start_ns, end_ns },
            self_stats,
            stream,
            births: born,
            gen_ai: self.gen_ai,
        };
        let (parts, built) = payload::parts(&self.resource, &contents, self.max_request_bytes)?;
        let marked = payload::marked(&contents);
        // A rebuilt store still catching up has less than the collector: what it has stays.
        let delivers = (self.temporality == Temporality::Delta && !born).then(|| {
            let mut delivered_after = lifetime.clone();
            delivered_after.raise_to(&has);
            PendingExport { delivered_after }
        });
        let requests = parts.len();
        Some(Sending {
            request: Outgoing {
                parts: Arc::new(parts),
                report: ExportReport {
                    data_points: built.points,
                    held: built.held,
                    requests,
                    accepted: Accepted::default(),
                    births: if born { built.points } else { 0 },
                },
                lifetime: lifetime.clone(),
                births: born.then_some(births),
            },
            stream: marked,
            delivers,
        })
    }

    fn send_error(&mut self, error: SendError) -> ExportError {
        if let SendError::Refused { too_large: true, .. } = error {
            let smaller = (self.max_request_bytes / 2).max(MIN_REQUEST_BYTES);
            if smaller < self.max_request_bytes {
                crate::events::export::request_shrunk(smaller >> 10);
                self.max_request_bytes = smaller;
            }
        }
        ExportError::Send {
            endpoint: self.target.shown_endpoint(),
            error,
        }
    }
}

impl PushSink for OtlpExporter {
    type Outgoing = Outgoing;
    type Answer = Sent;

    /// The endpoint as it may be shown (no credentials).
    fn endpoint(&self) -> String {
        self.target.shown_endpoint()
    }

    /// The next request to send, its record made durable; `None` when there is nothing to send.
    /// What was counted is read from `store`; everything else is `delivery`'s.
    fn prepare(
        &mut self,
        store: &Store,
        delivery: &mut Delivery,
        self_stats: &SelfStats,
    ) -> Result<Option<Outgoing>, ExportError> {
        let now_ns = now_ns();
        let outgoing =
            delivery.next_export(store, now_ns, |outlook| self.build(outlook, self_stats, now_ns))?;
        Ok(outgoing)
    }

    fn send(&self, outgoing: Outgoing) -> impl Future<Output = (Outgoing, Sent)> + Send + 'static {
        let transport = self.transport();
        async move {
            let sent = outgoing.send(transport).await;
            (outgoing, sent)
        }
    }

    fn held(outgoing: &Outgoing) -> usize {
        outgoing.report.held
    }

    /// Records the collector's answers to `outgoing`'s requests.
    fn complete(
        &mut self,
        delivery: &mut Delivery,
        outgoing: Outgoing,
        sent: Sent,
    ) -> Result<ExportReport, ExportError> {
        if let Some(births) = &outgoing.births {
            // Nothing delivered changes: only a birth the collector answered lets values
            // follow. A zero it refused as data (a backend that holds a later point of the
            // series, from exports a restored store does not know of, or finds the zero too
            // old) would be refused again: its series is counted from its first value.
            return match sent.result {
                Ok(accepted) => {
                    self.answered = true;
                    self.born.raise_to(births);
                    Ok(ExportReport {
                        accepted,
                        ..outgoing.report
                    })
                }
                Err(SendError::Refused { bad_data: true, .. }) => {
                    self.answered = true;
                    crate::events::export::births_refused(outgoing.report.births);
                    self.born.raise_to(births);
                    Ok(outgoing.report)
                }
                Err(error) => Err(self.send_error(error)),
            };
        }
        let taken = outgoing
            .lifetime
            .only(&outgoing.accepted_series(sent.accepted).collect());
        match (self.temporality, sent.result) {
            (Temporality::Cumulative, Ok(accepted)) => {
                self.answered = true;
                delivery.settle(Settled::Has(&outgoing.lifetime))?;
                Ok(ExportReport {
                    accepted,
                    ..outgoing.report
                })
            }
            // Nothing to undo: the next export carries the same totals, or higher.
            (Temporality::Cumulative, Err(error)) => {
                delivery.settle(Settled::Has(&taken))?;
                Err(self.send_error(error))
            }
            (Temporality::Delta, Ok(accepted)) => {
                delivery.settle(Settled::Delivered)?;
                Ok(ExportReport {
                    accepted,
                    ..outgoing.report
                })
            }
            (Temporality::Delta, Err(error)) => {
                if error.outcome_unknown() {
                    // The collector may have it: err toward under-counting.
                    delivery.settle(Settled::Delivered)?;
                } else {
                    // It certainly does not have the rest: the next export carries it again.
                    delivery.settle(Settled::DeliveredOnly(&taken))?;
                }
                Err(self.send_error(error))
            }
        }
    }
}

/// What the collector has, for delta: the store's record of it (`delivered`), and where the
/// record has nothing (a series' quantity), the stream record's mark, which outlives the store
/// (a store rebuilt by `--reset-state` or a deleted folder sends nothing twice). What the record
/// has stands: a cumulative export that failed before a switch to delta raised the mark, not
/// what the collector has.
fn collector_has(delivered: &Sums, marks: &Sums) -> Sums {
    let mut has = delivered.clone();
    has.raise_to(&marks.unsent(delivered));
    has
}

/// The wall clock in Unix nanoseconds (0 before 1970).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

//! OTLP export with exact delivery bookkeeping (contract §4).
//!
//! The store knows each series' lifetime totals and what the collector has confirmed
//! (`delivered`). Each run has its own start time and, with cumulative temporality (the default),
//! sends `lifetime - delivered at the run's start`, so a backend that adds up, per run, the last
//! value it received arrives at exactly the lifetime totals.
//!
//! A request is written to the store as *pending* before it is sent, and `delivered` moves only
//! once the collector confirms it. A run that dies in between leaves the pending request behind;
//! the next run sends those same bytes again before anything else. A cumulative point with the
//! same start time and value is the same point to the backend, so the replay is exact whether or
//! not the first send had landed. (Delta points cannot be replayed safely: a pending delta
//! request is counted as delivered, which can only under-count, and only in that instant.)
//!
//! We build the request ourselves from the official `opentelemetry-proto` types because the OTel
//! SDK owns a run's start time and cannot replay an earlier run's points; see the README.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::payload::{self, Interval, Temporality, ZeroPoints};
use super::self_metrics::SelfStats;
use super::transport::{OtlpTarget, SendError, Transport};
use crate::series::{AttrSet, Totals};
use crate::store::{PendingExport, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP endpoint {endpoint}: {detail}")]
    Setup { endpoint: String, detail: String },
    #[error("export to {endpoint} failed: {detail}")]
    Send { endpoint: String, detail: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one export sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExportReport {
    /// Data points in this run's request (0 when there was nothing to send).
    pub data_points: usize,
    /// Whether an earlier run's unconfirmed request was sent again first.
    pub replayed: bool,
}

/// A request ready to go, already recorded as pending in the store.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub request: std::sync::Arc<Vec<u8>>,
    kind: OutgoingKind,
}

#[derive(Debug, Clone)]
enum OutgoingKind {
    /// An earlier run's unconfirmed request, sent again byte for byte.
    Replay,
    /// This run's counters, up to `end_ns`; `started` are the (series, quantity) pairs it sends
    /// for the first time in this run, with a zero point before them.
    Fresh {
        end_ns: u64,
        points: usize,
        started: Vec<(AttrSet, usize)>,
    },
}

impl Outgoing {
    pub fn is_replay(&self) -> bool {
        matches!(self.kind, OutgoingKind::Replay)
    }
}

/// The OTLP side of one run.
pub struct OtlpExporter {
    target: OtlpTarget,
    temporality: Temporality,
    transport: Transport,
    resource: Resource,
    run_start_ns: u64,
    /// Cumulative: `delivered` per series when this run's counting began.
    base: Option<BTreeMap<AttrSet, Totals>>,
    /// The last confirmed export's end: where a delta interval starts, and (cumulative) when a
    /// series first sent later in the run was still zero.
    last_export_ns: u64,
    /// Cumulative: the (series, quantity) pairs this run has delivered, each once preceded by a
    /// zero point.
    sent: BTreeSet<(AttrSet, usize)>,
}

impl OtlpExporter {
    /// Sets the exporter up; nothing is sent yet. Must run inside a tokio runtime.
    pub fn new(target: OtlpTarget, temporality: Temporality) -> Result<OtlpExporter, ExportError> {
        let transport = Transport::new(&target).map_err(|detail| ExportError::Setup {
            endpoint: target.endpoint.clone(),
            detail,
        })?;
        let run_start_ns = now_ns();
        Ok(OtlpExporter {
            target,
            temporality,
            transport,
            resource: super::resource::resource(),
            run_start_ns,
            base: None,
            last_export_ns: run_start_ns,
            sent: BTreeSet::new(),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.target.endpoint
    }

    /// A handle to send with, for a task of its own.
    pub fn transport(&self) -> Transport {
        self.transport.clone()
    }

    /// Exports once, in place: an earlier run's unconfirmed request first, then everything
    /// committed and not yet delivered. On failure nothing is lost: the next export carries it.
    pub async fn export(
        &mut self,
        store: &mut Store,
        health: &SelfStats,
    ) -> Result<ExportReport, ExportError> {
        let mut report = ExportReport::default();
        while let Some(outgoing) = self.prepare(store, health)? {
            let result = self.transport().send(&outgoing.request).await;
            let replay = outgoing.is_replay();
            let points = self.complete(store, outgoing, result)?;
            if !replay {
                report.data_points = points;
                break;
            }
            report.replayed = true;
        }
        Ok(report)
    }

    /// The next request to send, recorded as pending; `None` when there is nothing to send.
    pub fn prepare(
        &mut self,
        store: &mut Store,
        health: &SelfStats,
    ) -> Result<Option<Outgoing>, ExportError> {
        if let Some(pending) = store.pending_export() {
            if !pending.cumulative {
                // Delta cannot be replayed safely: count it as delivered (only ever under-counts).
                store.finish_export()?;
            } else if pending.run_start_ns != self.run_start_ns {
                return Ok(Some(Outgoing {
                    request: std::sync::Arc::new(pending.request.clone()),
                    kind: OutgoingKind::Replay,
                }));
            }
            // Otherwise it is this run's own: the request built below supersedes it.
        }

        let lifetime = store.lifetime();
        let now = now_ns();
        let (values, interval) = match self.temporality {
            Temporality::Cumulative => {
                let base = self.base.get_or_insert_with(|| store.delivered().clone());
                (
                    subtract(lifetime, base),
                    Interval {
                        start_ns: self.run_start_ns,
                        end_ns: now,
                    },
                )
            }
            Temporality::Delta => (
                subtract(lifetime, store.delivered()),
                Interval {
                    start_ns: self.last_export_ns,
                    end_ns: now,
                },
            ),
        };
        let run = Interval {
            start_ns: self.run_start_ns,
            end_ns: now,
        };
        let zeros = (self.temporality == Temporality::Cumulative).then_some(ZeroPoints {
            sent: &self.sent,
            at_ns: self.last_export_ns,
        });
        let Some(built) = payload::request(
            &self.resource,
            &values,
            self.temporality,
            interval,
            Some((health, run)),
            zeros,
        ) else {
            return Ok(None);
        };
        let pending = PendingExport {
            run_start_ns: self.run_start_ns,
            cumulative: self.temporality == Temporality::Cumulative,
            request: built.request.encode_to_vec(),
            delivered_after: lifetime.clone(),
        };
        let request = std::sync::Arc::new(pending.request.clone());
        store.begin_export(pending)?;
        Ok(Some(Outgoing {
            request,
            kind: OutgoingKind::Fresh {
                end_ns: now,
                points: built.points,
                started: built.zeroed,
            },
        }))
    }

    /// Records the collector's answer to `outgoing`; returns the data points delivered.
    pub fn complete(
        &mut self,
        store: &mut Store,
        outgoing: Outgoing,
        result: Result<(), SendError>,
    ) -> Result<usize, ExportError> {
        let (end_ns, points) = match (outgoing.kind, result) {
            (OutgoingKind::Replay, Ok(())) => {
                store.finish_export()?;
                return Ok(0);
            }
            (
                OutgoingKind::Fresh {
                    end_ns,
                    points,
                    started,
                },
                Ok(()),
            ) => {
                self.sent.extend(started);
                (end_ns, points)
            }
            // Cumulative: left pending, to be replayed (or superseded) by the next export.
            (OutgoingKind::Replay, Err(e)) => return Err(self.send_error(e)),
            (OutgoingKind::Fresh { end_ns, .. }, Err(e)) => {
                match (self.temporality, &e) {
                    (Temporality::Cumulative, _) => {}
                    // Delta, no answer: the collector may have it; err toward under-counting.
                    (Temporality::Delta, SendError::Timeout(_)) => {
                        store.finish_export()?;
                        self.last_export_ns = end_ns;
                    }
                    // Delta, refused: the next export carries the amount again.
                    (Temporality::Delta, SendError::Failed(_)) => store.abandon_export()?,
                }
                return Err(self.send_error(e));
            }
        };
        store.finish_export()?;
        self.last_export_ns = end_ns;
        Ok(points)
    }

    fn send_error(&self, error: SendError) -> ExportError {
        ExportError::Send {
            endpoint: self.target.endpoint.clone(),
            detail: error.to_string(),
        }
    }
}

/// `a - b` per series, only where something remains.
fn subtract(a: &BTreeMap<AttrSet, Totals>, b: &BTreeMap<AttrSet, Totals>) -> BTreeMap<AttrSet, Totals> {
    a.iter()
        .map(|(attrs, totals)| (attrs, totals.minus(&b.get(attrs).copied().unwrap_or_default())))
        .filter(|(_, rest)| !rest.is_zero())
        .map(|(attrs, rest)| (attrs.clone(), rest))
        .collect()
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

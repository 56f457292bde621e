//! OTLP export: one durable cumulative stream per store (contract §4), or delta on request.
//!
//! Cumulative (the default): every export carries each series' lifetime total from the store,
//! under the one start time the stream record keeps for the store's whole life (see
//! `store::stream`). An export is idempotent: a later one supersedes any earlier one, so a
//! failed, timed-out or repeated export needs no bookkeeping, and a backend that keeps one series
//! per label set sees one counter that never goes down. Before each send the stream record is
//! made durable with the values about to go out; a point below what was once sent is held.
//!
//! Delta (opt-in): each export carries what was committed since the last export that was not
//! refused. Its outcome decides: confirmed, or unknown (a timeout, a connection closed after the
//! body left), it counts as delivered — delta may under-count, never over-count; refused, or
//! never sent, the same increments go out again next time. A run that dies mid-send leaves the
//! export pending, and the next run counts it as delivered.
//!
//! We build the request ourselves from the official `opentelemetry-proto` types because the OTel
//! SDK owns each process's start time and cannot carry the store's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::payload::{self, Contents, Interval, Temporality};
use super::self_metrics::SelfStats;
use super::transport::{OtlpTarget, SendError, Transport};
use crate::series::{AttrSet, Totals};
use crate::store::{PendingExport, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP endpoint {endpoint}: {detail}")]
    Setup { endpoint: String, detail: String },
    #[error("export to {endpoint} failed: {error}")]
    Send { endpoint: String, error: SendError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one export sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExportReport {
    /// Data points of the ledger metrics in the request (0 when there was nothing to send).
    pub data_points: usize,
    /// Points held back because the store is behind what was exported before.
    pub held: usize,
}

/// A request ready to go; its stream record (cumulative) or pending export (delta) is durable.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub request: Arc<Vec<u8>>,
    report: ExportReport,
    /// The lifetime totals the request was built from.
    lifetime: BTreeMap<AttrSet, Totals>,
}

impl Outgoing {
    pub fn report(&self) -> ExportReport {
        self.report
    }
}

/// The OTLP side of a process.
pub struct OtlpExporter {
    target: OtlpTarget,
    temporality: Temporality,
    transport: Transport,
    resource: Resource,
}

impl OtlpExporter {
    /// Sets the exporter up for the store known to backends as `instance`; nothing is sent yet.
    /// Must run inside a tokio runtime.
    pub fn new(
        target: OtlpTarget,
        temporality: Temporality,
        instance: &str,
    ) -> Result<OtlpExporter, ExportError> {
        let transport = Transport::new(&target).map_err(|detail| ExportError::Setup {
            endpoint: target.endpoint.clone(),
            detail,
        })?;
        Ok(OtlpExporter {
            target,
            temporality,
            transport,
            resource: super::resource::resource(instance),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.target.endpoint
    }

    /// A handle to send with, for a task of its own.
    pub fn transport(&self) -> Transport {
        self.transport.clone()
    }

    /// Exports once, in place. On failure nothing is lost: the next export carries it.
    pub async fn export(
        &mut self,
        store: &mut Store,
        health: &SelfStats,
    ) -> Result<ExportReport, ExportError> {
        let Some(outgoing) = self.prepare(store, health)? else {
            return Ok(ExportReport::default());
        };
        let result = self.transport().send(&outgoing.request).await;
        self.complete(store, outgoing, result)
    }

    /// The next request to send, its record made durable; `None` when there is nothing to send.
    pub fn prepare(
        &mut self,
        store: &mut Store,
        health: &SelfStats,
    ) -> Result<Option<Outgoing>, ExportError> {
        if store.pending_export().is_some() {
            // A delta export a run did not see answered: its outcome is unknown.
            store.finish_export()?;
        }
        let stream = store.stream();
        let end_ns = stream.next_time_ns(now_ns());
        let lifetime = store.lifetime().clone();
        let (values, start_ns) = match self.temporality {
            Temporality::Cumulative => (lifetime.clone(), stream.start_ns),
            Temporality::Delta => (
                subtract(&lifetime, store.delivered()),
                // Right after the last export (or the stream's start): delta intervals follow
                // one another without overlap.
                stream.last_time_ns.max(stream.start_ns),
            ),
        };
        let contents = Contents {
            values: &values,
            temporality: self.temporality,
            interval: Interval { start_ns, end_ns },
            health,
            stream,
        };
        let Some(built) = payload::request(&self.resource, &contents) else {
            return Ok(None);
        };
        let marked = payload::marked(&contents);
        if self.temporality == Temporality::Delta {
            store.begin_export(PendingExport {
                delivered_after: lifetime.clone(),
            })?;
        }
        store.record_stream(marked)?;
        Ok(Some(Outgoing {
            request: Arc::new(built.request.encode_to_vec()),
            report: ExportReport {
                data_points: built.points,
                held: built.held,
            },
            lifetime,
        }))
    }

    /// Records the collector's answer to `outgoing`.
    pub fn complete(
        &mut self,
        store: &mut Store,
        outgoing: Outgoing,
        result: Result<(), SendError>,
    ) -> Result<ExportReport, ExportError> {
        match (self.temporality, result) {
            (Temporality::Cumulative, Ok(())) => store.confirm_delivered(&outgoing.lifetime)?,
            // Nothing to undo: the next export carries the same totals, or higher.
            (Temporality::Cumulative, Err(error)) => return Err(self.send_error(error)),
            (Temporality::Delta, Ok(())) => store.finish_export()?,
            (Temporality::Delta, Err(error)) => {
                if error.outcome_unknown() {
                    // The collector may have it: err toward under-counting.
                    store.finish_export()?;
                } else {
                    // It certainly does not: the next export carries the amount again.
                    store.abandon_export()?;
                }
                return Err(self.send_error(error));
            }
        }
        Ok(outgoing.report)
    }

    fn send_error(&self, error: SendError) -> ExportError {
        ExportError::Send {
            endpoint: self.target.endpoint.clone(),
            error,
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

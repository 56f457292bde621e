//! The history over OTLP, for a backend that takes the past within an out-of-order window
//! (Prometheus 3's `out_of_order_time_window`, Mimir's): requests like the live stream's, to its
//! endpoint, under its resource and scope, so the series are the live series, labelled as the
//! path between makes them (`job`/`instance` from the resource, what a gateway promotes). Each
//! point is cumulative at its own time. Its start time is left unknown (0): the stream's is
//! later than the history, and a point's start may not be after its time.
//!
//! Requests go out a block at a time, in time order, cut at [`REQUEST_BYTES`]. A backend that
//! already has a point takes it again without change, so a history sent twice changes nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry_proto::tonic::metrics::v1::{Metric, NumberDataPoint, metric, number_data_point};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::HistoryError;
use super::write::{Number, Sink};
use crate::export::payload::{self, Temporality};
use crate::export::transport::{OtlpTarget, SendError, Transport};
use crate::series::MetricNames;

/// A request is sent once its points reach this size: half the live stream's largest.
pub const REQUEST_BYTES: usize = crate::export::otlp::MAX_REQUEST_BYTES / 2;
/// Tries of one request, when the endpoint cannot be reached or asks to wait.
const TRIES: u32 = 5;

/// The history sent to the live stream's OTLP endpoint.
pub struct OtlpSink {
    runtime: tokio::runtime::Runtime,
    transport: Transport,
    endpoint: String,
    resource: Resource,
    /// The request being built, by metric name.
    metrics: BTreeMap<&'static str, Metric>,
    bytes: usize,
    /// Requests the endpoint took.
    pub requests: u64,
    /// Points dated before 1970, which OTLP cannot carry: left out.
    pub before_1970: u64,
}

impl OtlpSink {
    /// A sink to `target`, under `resource`; nothing is sent yet.
    pub fn new(target: &OtlpTarget, resource: Resource) -> Result<OtlpSink, HistoryError> {
        let endpoint = target.shown_endpoint();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(HistoryError::Output)?;
        let transport =
            runtime
                .block_on(async { Transport::new(target) })
                .map_err(|e| HistoryError::Send {
                    endpoint: endpoint.clone(),
                    detail: e.to_string(),
                })?;
        Ok(OtlpSink {
            runtime,
            transport,
            endpoint,
            resource,
            metrics: BTreeMap::new(),
            bytes: 0,
            requests: 0,
            before_1970: 0,
        })
    }

    /// Sends the request built so far, trying again while the endpoint cannot be reached or
    /// asks to wait.
    fn send(&mut self) -> Result<(), HistoryError> {
        if self.metrics.is_empty() {
            return Ok(());
        }
        let metrics = std::mem::take(&mut self.metrics).into_values().collect();
        self.bytes = 0;
        let request = payload::enveloped(&self.resource, metrics).encode_to_vec();
        let mut wait = Duration::from_millis(500);
        for tried in 1..=TRIES {
            let sent = self.runtime.block_on(self.transport.clone().send(&request));
            let error = match sent {
                Ok(accepted) => match accepted.warning() {
                    None => {
                        self.requests += 1;
                        return Ok(());
                    }
                    Some(warning) => return Err(self.refused(&warning)),
                },
                Err(error) => error,
            };
            let again = match &error {
                SendError::NotSent(_) | SendError::Unknown(_) => Some(wait),
                SendError::Refused { retry_after, .. } => *retry_after,
            };
            match again {
                Some(after) if tried < TRIES => {
                    std::thread::sleep(after);
                    wait *= 2;
                }
                _ => return Err(self.refused(&error.to_string())),
            }
        }
        unreachable!("the last try returns")
    }

    fn refused(&self, detail: &str) -> HistoryError {
        HistoryError::Send {
            endpoint: self.endpoint.clone(),
            detail: detail.to_owned(),
        }
    }
}

impl Sink for OtlpSink {
    fn series(
        &mut self,
        names: MetricNames,
        pairs: &[(&str, &str)],
        points: &[(i64, Number)],
    ) -> Result<(), HistoryError> {
        let attributes = payload::attributes(pairs);
        let metric = self
            .metrics
            .entry(names.otlp_name)
            .or_insert_with(|| payload::sum_metric(names, Vec::new(), Temporality::Cumulative));
        let Some(metric::Data::Sum(sum)) = &mut metric.data else {
            unreachable!("a sum metric");
        };
        for (at, value) in points {
            let Ok(at_ns) = u64::try_from(*at).map(|ms| ms.saturating_mul(1_000_000)) else {
                self.before_1970 += 1;
                continue;
            };
            let point = NumberDataPoint {
                attributes: attributes.clone(),
                start_time_unix_nano: 0,
                time_unix_nano: at_ns,
                value: Some(match value {
                    Number::Int(n) => number_data_point::Value::AsInt(Number::pinned(*n)),
                    Number::Amount(a) => number_data_point::Value::AsDouble(a.to_f64()),
                }),
                ..NumberDataPoint::default()
            };
            self.bytes += point.encoded_len();
            sum.data_points.push(point);
        }
        if self.bytes >= REQUEST_BYTES {
            self.send()?;
        }
        Ok(())
    }

    fn block_done(&mut self) -> Result<(), HistoryError> {
        self.send()
    }

    fn finish(&mut self) -> Result<(), HistoryError> {
        self.send()
    }
}

//! The history over OTLP, for a backend that takes the past within an out-of-order window
//! (Prometheus 3's `out_of_order_time_window`, Mimir's): requests like the live stream's, to its
//! endpoint, under its resource and scope, so the series are the live series, labelled as the
//! path between makes them (`job`/`instance` from the resource, what a gateway promotes). Each
//! point is cumulative at its own time. Its start time is left unknown (0): the stream's is
//! later than the history, and a point's start may not be after its time.
//!
//! Requests go out a block at a time, in time order, cut at [`REQUEST_BYTES`] (and in halves
//! when the endpoint finds one too large); a throttle or a lost answer is tried again after a
//! growing wait. A backend that already has a point takes it again without change, so a history
//! sent twice, or again after a failure, changes nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry_proto::tonic::metrics::v1::{Metric, NumberDataPoint, metric, number_data_point};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::HistoryError;
use super::write::{Number, Sink};
use crate::export::backoff::Backoff;
use crate::export::payload::{self, Temporality};
use crate::export::transport::{OtlpTarget, SendError, Transport};
use crate::series::MetricNames;

/// A request is sent once its points reach this size: half the live stream's largest.
pub const REQUEST_BYTES: usize = crate::export::otlp::MAX_REQUEST_BYTES / 2;
/// Tries of one request, when the endpoint cannot be reached or asks to wait.
const TRIES: u32 = 6;
/// The wait before the second try; it doubles (about 0.5 s, 1 s, 2 s, 4 s, 8 s).
const FIRST_WAIT: Duration = Duration::from_millis(500);
/// The longest wait between tries, whatever the endpoint asks (`Retry-After`).
const MAX_WAIT: Duration = Duration::from_secs(30);
/// The hint for points refused as out of order or too old.
const OUT_OF_ORDER: &str = "a backend takes the past over OTLP only within its out-of-order window (Prometheus 3: storage.tsdb.out_of_order_time_window; Mimir: -ingester.out-of-order-time-window), as long as the history; else load it with --format openmetrics or victoriametrics";

/// The history sent to the live stream's OTLP endpoint.
pub struct OtlpSink {
    runtime: tokio::runtime::Runtime,
    transport: Transport,
    /// The endpoint as it may be shown (no credentials).
    pub endpoint: String,
    resource: Resource,
    /// The request being built, by metric name.
    metrics: BTreeMap<&'static str, Metric>,
    bytes: usize,
    /// Requests the endpoint took.
    pub requests: u64,
}

/// Why a request did not go through.
enum Failure {
    /// Refused as too large: cut smaller.
    TooLarge(String),
    Other(HistoryError),
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
                    hint: "check the OTLP settings the exporter runs with",
                })?;
        Ok(OtlpSink {
            runtime,
            transport,
            endpoint,
            resource,
            metrics: BTreeMap::new(),
            bytes: 0,
            requests: 0,
        })
    }

    /// Sends the request built so far.
    fn send(&mut self) -> Result<(), HistoryError> {
        if self.metrics.is_empty() {
            return Ok(());
        }
        let metrics = std::mem::take(&mut self.metrics).into_values().collect();
        self.bytes = 0;
        self.send_metrics(metrics)
    }

    /// Sends `metrics` as one request, or as two halves (each a series' points still in time
    /// order) when the endpoint refuses it as too large.
    fn send_metrics(&mut self, metrics: Vec<Metric>) -> Result<(), HistoryError> {
        let mut request = payload::enveloped(&self.resource, metrics);
        match self.send_request(&request.encode_to_vec()) {
            Ok(()) => Ok(()),
            Err(Failure::TooLarge(detail)) => {
                let metrics = std::mem::take(&mut request.resource_metrics[0].scope_metrics[0].metrics);
                if points_in(&metrics) <= 1 {
                    return Err(self.failed(&detail, "raise the size it takes a request up to"));
                }
                let (first, second) = halves(metrics);
                self.send_metrics(first)?;
                self.send_metrics(second)
            }
            Err(Failure::Other(error)) => Err(error),
        }
    }

    /// Sends one encoded request, trying again with a growing wait while the endpoint cannot
    /// be reached, does not answer, or refuses it for a reason that can pass (a throttle).
    fn send_request(&mut self, request: &[u8]) -> Result<(), Failure> {
        let mut backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
        for tried in 1..=TRIES {
            let error = match self.runtime.block_on(self.transport.clone().send(request)) {
                Ok(accepted) if accepted.rejected_points > 0 => {
                    let said = accepted.warning().unwrap_or_default();
                    return Err(Failure::Other(self.failed(&said, OUT_OF_ORDER)));
                }
                Ok(accepted) => {
                    if let Some(said) = accepted.warning() {
                        crate::events::history::endpoint_said(&self.endpoint, &said);
                    }
                    self.requests += 1;
                    return Ok(());
                }
                Err(error) => error,
            };
            let hint = match &error {
                SendError::Refused { too_large: true, .. } => {
                    return Err(Failure::TooLarge(error.to_string()));
                }
                SendError::Refused { bad_data: true, .. } => {
                    return Err(Failure::Other(self.failed(&error.to_string(), OUT_OF_ORDER)));
                }
                SendError::NotSent(_) => "check that it runs and that it is the live stream's endpoint",
                SendError::Refused { .. } => "check its headers (OTEL_EXPORTER_OTLP_HEADERS) and its limits",
                SendError::Unknown(_) => "it did not answer in time",
            };
            if tried == TRIES {
                return Err(Failure::Other(self.failed(&error.to_string(), hint)));
            }
            let asked = match &error {
                SendError::Refused { retry_after, .. } => *retry_after,
                _ => None,
            };
            std::thread::sleep(backoff.next_wait(asked).min(MAX_WAIT));
        }
        unreachable!("the last try returns")
    }

    fn failed(&self, detail: &str, hint: &'static str) -> HistoryError {
        HistoryError::Send {
            endpoint: self.endpoint.clone(),
            detail: detail.to_owned(),
            hint,
        }
    }

    /// The points of the metric `names` in the request being built.
    fn points_of(&mut self, names: MetricNames) -> &mut Vec<NumberDataPoint> {
        let metric = self
            .metrics
            .entry(names.otlp_name)
            .or_insert_with(|| payload::sum_metric(names, Vec::new(), Temporality::Cumulative));
        match &mut metric.data {
            Some(metric::Data::Sum(sum)) => &mut sum.data_points,
            _ => unreachable!("a sum metric"),
        }
    }
}

/// The points of `metrics`.
fn points_in(metrics: &[Metric]) -> usize {
    let sums = metrics.iter().filter_map(|m| match &m.data {
        Some(metric::Data::Sum(sum)) => Some(sum.data_points.len()),
        _ => None,
    });
    sums.sum()
}

/// `metrics` cut in two by points, in order: a metric whose points straddle the cut is in both.
fn halves(metrics: Vec<Metric>) -> (Vec<Metric>, Vec<Metric>) {
    let mut left = points_in(&metrics) / 2;
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for mut metric in metrics {
        let Some(metric::Data::Sum(mut sum)) = metric.data.take() else {
            continue;
        };
        let n = sum.data_points.len();
        if left >= n {
            left -= n;
            metric.data = Some(metric::Data::Sum(sum));
            first.push(metric);
        } else {
            let rest = sum.data_points.split_off(left);
            left = 0;
            let mut tail = metric.clone();
            tail.data = Some(metric::Data::Sum(opentelemetry_proto::tonic::metrics::v1::Sum {
                data_points: rest,
                ..sum.clone()
            }));
            if !sum.data_points.is_empty() {
                metric.data = Some(metric::Data::Sum(sum));
                first.push(metric);
            }
            second.push(tail);
        }
    }
    (first, second)
}

impl Sink for OtlpSink {
    fn series(
        &mut self,
        names: MetricNames,
        pairs: &[(&str, &str)],
        points: &[(i64, Number)],
    ) -> Result<(), HistoryError> {
        let attributes = payload::attributes(pairs);
        for (at, value) in points {
            let point = NumberDataPoint {
                attributes: attributes.clone(),
                start_time_unix_nano: 0,
                // Never before 2000 (`grid::EARLIEST_MS`), so never before OTLP's 1970.
                time_unix_nano: u64::try_from(*at).unwrap_or(0).saturating_mul(1_000_000),
                value: Some(match value {
                    Number::Int(n) => number_data_point::Value::AsInt(payload::pinned(*n)),
                    Number::Amount(a) => number_data_point::Value::AsDouble(a.to_f64()),
                }),
                ..NumberDataPoint::default()
            };
            self.bytes += point.encoded_len();
            self.points_of(names).push(point);
            // A series may go on in the next request: its points stay in time order.
            if self.bytes >= REQUEST_BYTES {
                self.send()?;
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Quantity;

    #[test]
    fn halves_keep_every_point_in_order() {
        let point = |t| NumberDataPoint {
            time_unix_nano: t,
            ..NumberDataPoint::default()
        };
        let metric = |names, times: &[u64]| {
            payload::sum_metric(
                names,
                times.iter().map(|t| point(*t)).collect(),
                Temporality::Cumulative,
            )
        };
        let metrics = vec![
            metric(Quantity::Prompt.names(), &[1, 2, 3]),
            metric(Quantity::Total.names(), &[4, 5]),
        ];
        let (first, second) = halves(metrics.clone());
        assert_eq!((points_in(&first), points_in(&second)), (2, 3));
        let times = |ms: &[Metric]| -> Vec<(String, u64)> {
            let each = ms.iter().flat_map(|m| match &m.data {
                Some(metric::Data::Sum(s)) => s
                    .data_points
                    .iter()
                    .map(|p| (m.name.clone(), p.time_unix_nano))
                    .collect(),
                _ => Vec::new(),
            });
            each.collect()
        };
        let mut both = times(&first);
        both.extend(times(&second));
        assert_eq!(both, times(&metrics));
    }
}

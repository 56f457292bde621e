//! The OTLP request for a set of counter values: the eight metrics of contract §3, one data point
//! per series and quantity with a value, all with the exporting run's start time.
//!
//! With cumulative temporality, a series' first point in a run is preceded by a zero point: the
//! backend then sees each run's stream start at zero (see [`ZeroPoints`]).

use std::collections::{BTreeMap, BTreeSet};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, metric,
    number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::self_metrics::{Kind, SelfStats};
use crate::series::{AttrSet, Quantity, Totals};

/// Whether points carry running sums or increments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporality {
    Cumulative,
    Delta,
}

/// Zero points for the series and quantities a run has not sent yet.
///
/// Each run is its own cumulative stream that starts at zero, but Prometheus-like backends keep one
/// series per label set and only see a new stream when a value goes down: a run whose first value
/// is above the previous run's last would look like a smaller increase, and history backfilled
/// before the first export would look like none. An explicit 0 before a (series, quantity)'s first
/// value in a run makes every start visible.
#[derive(Debug, Clone, Copy)]
pub struct ZeroPoints<'a> {
    /// `(series, quantity index)` pairs this run already sent (and the collector confirmed).
    pub sent: &'a BTreeSet<(AttrSet, usize)>,
    /// When the zero holds: the run's start, or its last confirmed export for series that appear
    /// later.
    pub at_ns: u64,
}

/// A built request.
#[derive(Debug)]
pub struct Built {
    pub request: ExportMetricsServiceRequest,
    /// Data points of the eight ledger metrics (zero points not counted).
    pub points: usize,
    /// The (series, quantity index) pairs that got a zero point.
    pub zeroed: Vec<(AttrSet, usize)>,
}

/// The interval the points cover, in Unix nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Builds the request; `None` when no series has a value to send. `points` counts the data
/// points of the eight ledger metrics; the exporter's own health (`health`) rides along.
pub fn request(
    resource: &Resource,
    values: &BTreeMap<AttrSet, Totals>,
    temporality: Temporality,
    interval: Interval,
    health: Option<(&SelfStats, Interval)>,
    zeros: Option<ZeroPoints<'_>>,
) -> Option<Built> {
    let mut points = 0;
    let mut zeroed = Vec::new();
    let mut metrics: Vec<Metric> = Quantity::ALL
        .iter()
        .enumerate()
        .filter_map(|(index, quantity)| {
            let point = |attrs: &AttrSet, time_ns: u64, value: u64| NumberDataPoint {
                attributes: attributes(attrs),
                start_time_unix_nano: interval.start_ns,
                time_unix_nano: time_ns,
                // OTLP integers are signed: a sum past 2^63 is pinned, never wrapped.
                value: Some(number_data_point::Value::AsInt(
                    i64::try_from(value).unwrap_or(i64::MAX),
                )),
                ..NumberDataPoint::default()
            };
            let mut data_points = Vec::new();
            for (attrs, totals) in values.iter().filter(|(_, t)| t.get(*quantity) > 0) {
                if let Some(zeros) = zeros
                    && !zeros.sent.contains(&(attrs.clone(), index))
                {
                    data_points.push(point(attrs, zeros.at_ns, 0));
                    zeroed.push((attrs.clone(), index));
                }
                data_points.push(point(attrs, interval.end_ns, totals.get(*quantity)));
                points += 1;
            }
            if data_points.is_empty() {
                return None;
            }
            Some(Metric {
                name: quantity.otlp_name().into(),
                description: quantity.description().into(),
                unit: quantity.unit().into(),
                data: Some(metric::Data::Sum(Sum {
                    data_points,
                    aggregation_temporality: match temporality {
                        Temporality::Cumulative => AggregationTemporality::Cumulative,
                        Temporality::Delta => AggregationTemporality::Delta,
                    } as i32,
                    is_monotonic: true,
                })),
                ..Metric::default()
            })
        })
        .collect();
    if metrics.is_empty() {
        return None;
    }
    if let Some((health, run)) = health {
        metrics.extend(self_metrics(health, run));
    }
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "reasonix-exporter".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                metrics,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    };
    Some(Built {
        request,
        points,
        zeroed,
    })
}

fn attributes(attrs: &AttrSet) -> Vec<KeyValue> {
    attrs
        .pairs()
        .iter()
        .map(|(key, value)| KeyValue {
            key: (*key).into(),
            key_strindex: 0,
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue((*value).into())),
            }),
        })
        .collect()
}

/// The exporter's health as OTLP metrics: cumulative counters over this run (`run`), gauges as
/// they are now.
fn self_metrics(health: &SelfStats, run: Interval) -> Vec<Metric> {
    health
        .metrics()
        .into_iter()
        .map(|m| {
            let points = m
                .values
                .iter()
                .map(|(reason, value)| NumberDataPoint {
                    attributes: reason
                        .map(|r| {
                            vec![KeyValue {
                                key: "reason".into(),
                                key_strindex: 0,
                                value: Some(AnyValue {
                                    value: Some(any_value::Value::StringValue(r.into())),
                                }),
                            }]
                        })
                        .unwrap_or_default(),
                    start_time_unix_nano: run.start_ns,
                    time_unix_nano: run.end_ns,
                    value: Some(match m.kind {
                        Kind::Counter => number_data_point::Value::AsInt(*value as i64),
                        Kind::Gauge => number_data_point::Value::AsDouble(*value),
                    }),
                    ..NumberDataPoint::default()
                })
                .collect();
            let data = match m.kind {
                Kind::Counter => metric::Data::Sum(Sum {
                    data_points: points,
                    // This run's counts, whatever the ledger metrics' temporality.
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
                Kind::Gauge => metric::Data::Gauge(opentelemetry_proto::tonic::metrics::v1::Gauge {
                    data_points: points,
                }),
            };
            Metric {
                name: m.otlp_name.into(),
                description: m.help.into(),
                unit: m.unit.into(),
                data: Some(data),
                ..Metric::default()
            }
        })
        .collect()
}

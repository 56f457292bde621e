//! The OTLP request for a set of counter values: the ten metrics of the README's "Metrics" (eight
//! token quantities, spend and unpriced requests), one data point per series and quantity with a
//! value, the GenAI conventions' view of the token counters when it is on (`gen_ai.rs`), and the
//! exporter's own metrics.
//!
//! With cumulative temporality every point is the store's lifetime total under the stream's one
//! start time, and a point below the highest value ever sent for it (its mark, see
//! `store::stream`) is held rather than sent: no exported value ever goes down.

use std::collections::BTreeMap;

use number_data_point::Value::{AsDouble, AsInt};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, metric,
    number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::self_metrics::{Kind, SelfStats};
use crate::series::{self, AttrSet, FamilyKey, MetricNames, MetricWalk, Number, Sums, SumsByKey};
use crate::store::stream::StreamRecord;

/// Whether points carry running sums or increments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporality {
    Cumulative,
    Delta,
}

/// A built request.
#[derive(Debug)]
pub struct Built {
    pub request: ExportMetricsServiceRequest,
    /// Data points of the ledger metrics.
    pub points: usize,
    /// Points held back because they were below their mark.
    pub held: usize,
}

/// The interval the points cover, in Unix nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What one request carries.
pub struct Contents<'a> {
    /// The ledger series' values: lifetime totals (cumulative) or increments (delta).
    pub values: &'a Sums,
    pub temporality: Temporality,
    /// The ledger points' interval.
    pub interval: Interval,
    /// The exporter's own metrics; its counters are lifetime counts from the stream's start.
    pub self_stats: &'a SelfStats,
    /// The stream: its start for its own counters and, with cumulative temporality, the marks
    /// below which a point is held.
    pub stream: &'a StreamRecord,
    /// A birth export: every point of `values` is sent as 0 (and nothing else), so that the
    /// backend holds a zero before a new series' first value (docs/counting-rules.md, "Births").
    pub births: bool,
    /// The GenAI conventions' view goes too: its points are ours under its names and attributes.
    pub gen_ai: bool,
}

/// One request of an export, and the series whose points it carries.
#[derive(Debug)]
pub struct Part {
    pub request: Vec<u8>,
    pub series: Vec<AttrSet>,
}

/// The export as encoded requests of at most `max_bytes` each (when a single series fits),
/// split by series so that each series' points travel together; the exporter's own metrics goes with
/// the first. `None` when no ledger series has a value to send.
pub fn parts(resource: &Resource, contents: &Contents<'_>, max_bytes: usize) -> Option<(Vec<Part>, Built)> {
    let whole = request(resource, contents)?;
    let size = whole.request.encoded_len();
    let series: Vec<&AttrSet> = contents.values.attr_sets().into_iter().collect();
    if size <= max_bytes || series.len() < 2 {
        let part = Part {
            request: whole.request.encode_to_vec(),
            series: series.into_iter().cloned().collect(),
        };
        return Some((vec![part], whole));
    }
    let mut count = size.div_ceil(max_bytes) + 1;
    loop {
        let count_now = count.min(series.len());
        let per_part = series.len().div_ceil(count_now);
        let parts: Vec<Part> = series
            .chunks(per_part)
            .enumerate()
            .filter_map(|(i, names)| {
                let values = contents.values.only(&names.iter().copied().collect());
                let built = build(resource, contents, &values, i == 0)?;
                if built.points == 0 && i > 0 {
                    return None;
                }
                Some(Part {
                    request: built.request.encode_to_vec(),
                    series: names.iter().map(|a| (*a).clone()).collect(),
                })
            })
            .collect();
        if count_now == series.len() || parts.iter().all(|p| p.request.len() <= max_bytes) {
            return Some((parts, whole));
        }
        count *= 2;
    }
}

/// Builds the request; `None` when no ledger series has a value to send.
pub fn request(resource: &Resource, contents: &Contents<'_>) -> Option<Built> {
    build(resource, contents, contents.values, true)
}

fn build(
    resource: &Resource,
    contents: &Contents<'_>,
    values: &Sums,
    with_self_stats: bool,
) -> Option<Built> {
    let mut walk = Points {
        contents,
        metrics: Vec::new(),
        points: 0,
        held: 0,
    };
    let Ok(()) = series::walk_sums(&mut walk, values);
    let Points {
        mut metrics,
        points,
        held,
        ..
    } = walk;
    if metrics.is_empty() && held == 0 {
        return None;
    }
    let own = Interval {
        start_ns: contents.stream.start_ns,
        end_ns: contents.interval.end_ns,
    };
    if with_self_stats && !contents.births {
        metrics.extend(self_metrics(contents.self_stats, own, &contents.stream.own));
    }
    Some(Built {
        request: enveloped(resource, metrics),
        points,
        held,
    })
}

/// A count as OTLP carries it: its integers are signed, so a sum past 2^63 is pinned, never
/// wrapped.
pub fn pinned(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The request carrying `metrics` under `resource` and the exporter's scope: every request of
/// the stream, and of its history, has this envelope.
pub fn enveloped(resource: &Resource, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
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
    }
}

/// Each metric of the values a request carries, as its points (a walk over the metrics).
struct Points<'c, 'a> {
    contents: &'c Contents<'a>,
    metrics: Vec<Metric>,
    points: usize,
    held: usize,
}

impl MetricWalk<SumsByKey> for Points<'_, '_> {
    type Error = std::convert::Infallible;

    fn metric<K: FamilyKey>(
        &mut self,
        metric: series::Metric,
        family: &BTreeMap<K, K::Sum>,
    ) -> Result<(), Self::Error> {
        let marks = K::of(&self.contents.stream.marks);
        let ours = |key: &K| attributes(&key.pairs());
        let (points, held) = data_points(self.contents, family, marks, metric, ours);
        self.held += held;
        self.points += points.len();
        let temporality = self.contents.temporality;
        if !points.is_empty() {
            self.metrics.push(sum_metric(metric.names(), points, temporality));
        }
        let gen_ai = match metric {
            series::Metric::Tokens(q) if self.contents.gen_ai => q.gen_ai(),
            _ => None,
        };
        if let Some(names) = gen_ai {
            let theirs = |key: &K| attributes(&super::gen_ai::attributes(key.attrs()));
            let (points, _) = data_points(self.contents, family, marks, metric, theirs);
            if !points.is_empty() {
                self.metrics.push(sum_metric(names, points, temporality));
            }
        }
        Ok(())
    }
}

/// A value to compare (exact) and the value to send: its integers are signed, and a sum is
/// pinned below 2^63; an amount goes as a double.
fn sent_value(number: Number) -> (u128, number_data_point::Value) {
    match number {
        Number::Int(n) => (n.into(), AsInt(pinned(n))),
        Number::Amount(a) => (a.units(), AsDouble(a.to_f64())),
    }
}

/// The points of `metric`, zeros left out, each with the attributes `attributes_of` gives its
/// series; and how many were held back (cumulative only: a value below what was sent before for
/// its series).
fn data_points<K: FamilyKey>(
    contents: &Contents<'_>,
    values: &BTreeMap<K, K::Sum>,
    marks: &BTreeMap<K, K::Sum>,
    metric: series::Metric,
    attributes_of: impl Fn(&K) -> Vec<KeyValue>,
) -> (Vec<NumberDataPoint>, usize) {
    let value = |sum: &K::Sum| sent_value(metric.number(sum));
    let cumulative = contents.temporality == Temporality::Cumulative;
    let mut held = 0;
    let mut points = Vec::new();
    for (key, sum) in values {
        let (exact, sent) = value(sum);
        if exact == 0 {
            continue;
        }
        let sent = match sent {
            _ if !contents.births => sent,
            AsInt(_) => AsInt(0),
            AsDouble(_) => AsDouble(0.0),
        };
        let mark = marks.get(key).map_or(0, |m| value(m).0);
        if cumulative && exact < mark && !contents.births {
            held += 1;
            continue;
        }
        points.push(NumberDataPoint {
            attributes: attributes_of(key),
            start_time_unix_nano: contents.interval.start_ns,
            time_unix_nano: contents.interval.end_ns,
            value: Some(sent),
            ..NumberDataPoint::default()
        });
    }
    (points, held)
}

/// A monotonic sum.
pub fn sum_metric(names: MetricNames, data_points: Vec<NumberDataPoint>, temporality: Temporality) -> Metric {
    Metric {
        name: names.otlp_name.into(),
        description: names.description.into(),
        unit: names.unit.into(),
        data: Some(metric::Data::Sum(Sum {
            data_points,
            aggregation_temporality: match temporality {
                Temporality::Cumulative => AggregationTemporality::Cumulative,
                Temporality::Delta => AggregationTemporality::Delta,
            } as i32,
            is_monotonic: true,
        })),
        ..Metric::default()
    }
}

/// The stream after `contents` went out: every mark raised to what was offered (a held point's
/// mark is already higher), the newest time moved to this export's. A birth export moves only
/// the time: its zeros raise no mark.
pub fn marked(contents: &Contents<'_>) -> StreamRecord {
    let mut stream = contents.stream.clone();
    stream.last_time_ns = contents.interval.end_ns;
    if contents.births {
        return stream;
    }
    if contents.temporality == Temporality::Cumulative {
        stream.marks.raise_to(contents.values);
    }
    for (name, value) in own_counters(contents.self_stats) {
        let mark = stream.own.entry(name).or_default();
        *mark = (*mark).max(value);
    }
    stream
}

/// The exporter's own counters that carry lifetime counts, by point name.
fn own_counters(self_stats: &SelfStats) -> impl Iterator<Item = (String, u64)> {
    self_stats
        .metrics()
        .into_iter()
        .filter(|m| m.kind == Kind::Counter)
        .flat_map(|m| {
            m.values
                .into_iter()
                .map(move |(reason, value)| (own_point(m.otlp_name, reason), value as u64))
        })
}

fn own_point(name: &str, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("{name}/{reason}"),
        None => name.to_string(),
    }
}

/// OTLP string attributes of `pairs`.
pub fn attributes(pairs: &[(&str, &str)]) -> Vec<KeyValue> {
    pairs
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

/// The exporter's own metrics as OTLP metrics: counters as lifetime counts from the stream's start
/// (`own`), a point below its mark held like a ledger point; gauges as they are now.
fn self_metrics(self_stats: &SelfStats, own: Interval, marks: &BTreeMap<String, u64>) -> Vec<Metric> {
    self_stats
        .metrics()
        .into_iter()
        .filter(|m| m.kind != Kind::ProcessCounter)
        .filter_map(|m| {
            let points: Vec<NumberDataPoint> = m
                .values
                .iter()
                .filter(|(reason, value)| {
                    m.kind == Kind::Gauge
                        || marks
                            .get(&own_point(m.otlp_name, *reason))
                            .is_none_or(|mark| *value as u64 >= *mark)
                })
                .map(|(reason, value)| NumberDataPoint {
                    attributes: {
                        let mut pairs = m.constant.to_vec();
                        pairs.extend(reason.map(|r| (m.label, r)));
                        attributes(&pairs)
                    },
                    start_time_unix_nano: own.start_ns,
                    time_unix_nano: own.end_ns,
                    value: Some(match m.kind {
                        Kind::Gauge => number_data_point::Value::AsDouble(*value),
                        _ => number_data_point::Value::AsInt(*value as i64),
                    }),
                    ..NumberDataPoint::default()
                })
                .collect();
            if points.is_empty() {
                return None;
            }
            let data = match m.kind {
                Kind::Counter | Kind::ProcessCounter => metric::Data::Sum(Sum {
                    data_points: points,
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
                Kind::Gauge => metric::Data::Gauge(opentelemetry_proto::tonic::metrics::v1::Gauge {
                    data_points: points,
                }),
            };
            Some(Metric {
                name: m.otlp_name.into(),
                description: m.help.into(),
                unit: m.unit.into(),
                data: Some(data),
                ..Metric::default()
            })
        })
        .collect()
}

//! OTLP export with exact delivery bookkeeping (contract §4).
//!
//! The store knows each series' lifetime totals and what the collector has been sent
//! (`delivered`). An export sends the difference:
//!
//! - cumulative (the default): this process's counters start at the undelivered remainder
//!   (`lifetime - delivered` at start) and grow with every commit, so a backend that adds up, per
//!   run, the last value it received gets exactly the lifetime totals;
//! - delta: each export carries `lifetime - delivered` for that moment.
//!
//! Either way `delivered := lifetime` is written durably *before* the request goes out and put
//! back if it fails. A crash in between errs toward under-counting, never over-counting.
//!
//! We drive collection ourselves (a `ManualReader`) instead of the SDK's periodic reader, so the
//! one place that knows what was sent is the place that records it.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, MeterProvider as _};
use opentelemetry_otlp::{MetricExporter, Protocol, WithExportConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality};

use crate::series::{AttrSet, Quantity, Totals};
use crate::store::{Store, StoreError};

/// The wire protocol to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    Grpc,
    HttpProtobuf,
}

impl OtlpProtocol {
    pub fn parse(value: &str) -> Option<OtlpProtocol> {
        match value.trim() {
            "grpc" => Some(OtlpProtocol::Grpc),
            "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// Everything needed to reach the collector. Headers, timeout and compression come from the
/// standard `OTEL_EXPORTER_OTLP_*` variables, read by the OTLP crate itself.
#[derive(Debug, Clone)]
pub struct OtlpTarget {
    pub protocol: OtlpProtocol,
    /// The full URL requests go to (for HTTP, including `/v1/metrics`).
    pub endpoint: String,
    pub temporality: Temporality,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot set up the OTLP exporter for {endpoint}: {detail}")]
    Setup { endpoint: String, detail: String },
    #[error("export to {endpoint} failed: {detail}")]
    Send { endpoint: String, detail: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one export sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExportReport {
    pub data_points: usize,
}

/// The OTLP side of one process: an SDK meter provider with the eight counters, read on demand.
pub struct OtlpExporter {
    target: OtlpTarget,
    provider: SdkMeterProvider,
    reader: Arc<ManualReader>,
    exporter: MetricExporter,
    counters: Vec<(Quantity, Counter<u64>)>,
    /// Cumulative only: how far this process's counters have been raised, per series. Starts at
    /// what was delivered before this process.
    raised_to: BTreeMap<AttrSet, Totals>,
}

impl OtlpExporter {
    /// Builds the exporter. With gRPC this must run inside a tokio runtime.
    pub fn new(target: OtlpTarget, store: &Store) -> Result<OtlpExporter, ExportError> {
        let setup_error = |detail: String| ExportError::Setup {
            endpoint: target.endpoint.clone(),
            detail,
        };
        let exporter = match target.protocol {
            OtlpProtocol::Grpc => MetricExporter::builder()
                .with_tonic()
                .with_endpoint(&target.endpoint)
                .with_temporality(target.temporality)
                .build(),
            OtlpProtocol::HttpProtobuf => MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(&target.endpoint)
                .with_temporality(target.temporality)
                .build(),
        }
        .map_err(|e| setup_error(e.to_string()))?;
        let reader = Arc::new(
            ManualReader::builder()
                .with_temporality(target.temporality)
                .build(),
        );
        let provider = SdkMeterProvider::builder()
            .with_resource(super::resource::resource())
            .with_reader(SharedReader(reader.clone()))
            .build();
        let meter = provider.meter("reasonix-exporter");
        let counters = Quantity::ALL
            .iter()
            .map(|q| {
                let counter = meter
                    .u64_counter(q.otlp_name())
                    .with_unit(q.unit())
                    .with_description(q.description())
                    .build();
                (*q, counter)
            })
            .collect();
        Ok(OtlpExporter {
            raised_to: store.delivered().clone(),
            target,
            provider,
            reader,
            exporter,
            counters,
        })
    }

    /// Sends everything committed but not yet delivered. On failure the store still says it was
    /// not delivered, and the next export carries it.
    pub async fn export(&mut self, store: &mut Store) -> Result<ExportReport, ExportError> {
        let snapshot = store.lifetime().clone();
        // Every series of the snapshot, with what was delivered before (zero if nothing), so
        // that a failed export can put each one back.
        let before: BTreeMap<AttrSet, Totals> = snapshot
            .keys()
            .map(|attrs| {
                (
                    attrs.clone(),
                    store.delivered().get(attrs).copied().unwrap_or_default(),
                )
            })
            .collect();
        self.raise_counters(&snapshot, &before);

        let mut metrics = ResourceMetrics::default();
        self.reader.collect(&mut metrics).map_err(|e| ExportError::Send {
            endpoint: self.target.endpoint.clone(),
            detail: format!("collecting metrics failed: {e}"),
        })?;
        let data_points = count_data_points(&metrics);
        if data_points == 0 {
            return Ok(ExportReport::default());
        }

        store.record_delivered(&snapshot)?;
        if let Err(e) = self.exporter.export(&metrics).await {
            store.record_delivered(&before)?;
            return Err(ExportError::Send {
                endpoint: self.target.endpoint.clone(),
                detail: e.to_string(),
            });
        }
        Ok(ExportReport { data_points })
    }

    /// Adds to the SDK counters what this export must carry.
    fn raise_counters(
        &mut self,
        snapshot: &BTreeMap<AttrSet, Totals>,
        delivered: &BTreeMap<AttrSet, Totals>,
    ) {
        for (attrs, lifetime) in snapshot {
            let base = match self.target.temporality {
                // The SDK holds the running sum: add only what is new since the last raise.
                Temporality::Cumulative => self.raised_to.get(attrs),
                // The SDK forgets after every collection: carry all that is not delivered.
                _ => delivered.get(attrs),
            };
            let increment = lifetime.minus(&base.copied().unwrap_or_default());
            if increment.is_zero() {
                continue;
            }
            let labels: Vec<KeyValue> = attrs
                .pairs()
                .iter()
                .map(|(k, v)| KeyValue::new(*k, v.to_string()))
                .collect();
            for (quantity, counter) in &self.counters {
                let value = increment.get(*quantity);
                if value > 0 {
                    counter.add(value, &labels);
                }
            }
            self.raised_to.insert(attrs.clone(), *lifetime);
        }
    }

    /// Releases the SDK. Runs the blocking shutdown off the async runtime's workers.
    pub async fn shutdown(self) {
        let OtlpExporter {
            provider, exporter, ..
        } = self;
        let _ = tokio::task::spawn_blocking(move || {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(1));
            let _ = exporter.shutdown_with_timeout(Duration::from_secs(1));
        })
        .await;
    }
}

fn count_data_points(metrics: &ResourceMetrics) -> usize {
    metrics
        .scope_metrics()
        .flat_map(|scope| scope.metrics())
        .map(|metric| match metric.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => sum.data_points().count(),
            _ => 0,
        })
        .sum()
}

/// Lets the meter provider own the reader while we keep a handle to collect from it.
#[derive(Debug)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

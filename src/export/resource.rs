//! The OTel resource of contract §3: `service.name=reasonix-exporter`, `service.version`,
//! `host.name`, then `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` on top.

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{EnvResourceDetector, ResourceDetector, TelemetryResourceDetector};

pub fn resource() -> Resource {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let detectors: [Box<dyn ResourceDetector>; 2] = [
        Box::new(TelemetryResourceDetector),
        Box::new(EnvResourceDetector::new()),
    ];
    let builder = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "reasonix-exporter"),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("host.name", host),
        ])
        .with_detectors(&detectors);
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.trim().is_empty() => builder.with_service_name(name).build(),
        _ => builder.build(),
    }
}

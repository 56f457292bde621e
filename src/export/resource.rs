//! The OTel resource (README, "Metrics"): `service.name=reasonix-exporter`, `service.version`,
//! `host.name`, the store's identity as `service.instance.id`, then `OTEL_RESOURCE_ATTRIBUTES`
//! (percent-decoded) and `OTEL_SERVICE_NAME` on top, as the OTLP message
//! carries it. Nothing in it changes from one run to the next: a backend that makes series of
//! resource attributes (Prometheus' `job` and `instance`) keeps one series per store.

use opentelemetry::KeyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue as ProtoKeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{ResourceDetector, TelemetryResourceDetector};

/// What the user adds to the resource, as settings read it (`settings/otlp.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserResource {
    /// `OTEL_RESOURCE_ATTRIBUTES`, percent-decoded as the specification says (the SDK's detector
    /// keeps `%20` as it is), in order.
    pub attributes: Vec<(String, String)>,
    /// `OTEL_SERVICE_NAME`, over any `service.name`.
    pub service_name: Option<String>,
}

pub fn resource(instance: &str, user: &UserResource) -> ProtoResource {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let detectors: [Box<dyn ResourceDetector>; 1] = [Box::new(TelemetryResourceDetector)];
    let from_user = user
        .attributes
        .iter()
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()));
    let builder = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "reasonix-exporter"),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("host.name", host),
            KeyValue::new("service.instance.id", instance.to_string()),
        ])
        .with_detectors(&detectors)
        .with_attributes(from_user);
    let resource = match &user.service_name {
        Some(name) => builder.with_service_name(name.clone()).build(),
        None => builder.build(),
    };
    let mut attributes: Vec<ProtoKeyValue> = resource
        .iter()
        .map(|(key, value)| ProtoKeyValue {
            key: key.to_string(),
            key_strindex: 0,
            value: Some(AnyValue::from(value.clone())),
        })
        .collect();
    attributes.sort_by(|a, b| a.key.cmp(&b.key));
    let resource = ProtoResource {
        attributes,
        ..ProtoResource::default()
    };
    if instance_of(&resource) != instance {
        crate::events::export::shared_instance();
    }
    resource
}

/// The `service.instance.id` a resource carries: ours, or the one `OTEL_RESOURCE_ATTRIBUTES` set.
pub fn instance_of(resource: &ProtoResource) -> String {
    resource
        .attributes
        .iter()
        .find(|kv| kv.key == "service.instance.id")
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(id) => Some(id.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

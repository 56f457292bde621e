//! A tiny OTLP/HTTP receiver that prints what it is sent: the quickest way to see the exporter's
//! numbers without a collector.
//!
//!   cargo run --release --example otlp_receiver            # listens on 127.0.0.1:4318
//!   cargo run --release -- once                             # in another terminal
//!
//! It prints every data point of every request as `metric{attributes} value`. It keeps
//! nothing and answers every request with OK; for real use run an OpenTelemetry Collector
//! (deploy/compose, deploy/collector).

use std::io::Read;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value::Value};
use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point};
use prost::Message;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:4318".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening for OTLP/HTTP metrics on http://{addr}/v1/metrics (Ctrl-C to stop)");
    let app = axum::Router::new().route("/v1/metrics", axum::routing::post(receive));
    axum::serve(listener, app).await
}

async fn receive(headers: HeaderMap, body: Bytes) -> (StatusCode, Vec<u8>) {
    let gzip = headers
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() == b"gzip");
    let mut raw = Vec::new();
    let body = if gzip {
        if flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut raw)
            .is_err()
        {
            return (StatusCode::BAD_REQUEST, Vec::new());
        }
        &raw[..]
    } else {
        &body[..]
    };
    let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    print_request(&request);
    (
        StatusCode::OK,
        ExportMetricsServiceResponse::default().encode_to_vec(),
    )
}

fn print_request(request: &ExportMetricsServiceRequest) {
    for resource_metrics in &request.resource_metrics {
        let resource = resource_metrics
            .resource
            .as_ref()
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        println!("--- request from {{{resource}}}");
        for metric in resource_metrics.scope_metrics.iter().flat_map(|s| &s.metrics) {
            let points = match &metric.data {
                Some(Data::Sum(sum)) => &sum.data_points,
                Some(Data::Gauge(gauge)) => &gauge.data_points,
                _ => continue,
            };
            for point in points {
                let value = match point.value {
                    Some(number_data_point::Value::AsInt(v)) => v.to_string(),
                    Some(number_data_point::Value::AsDouble(v)) => v.to_string(),
                    None => continue,
                };
                println!("{}{{{}}} {value}", metric.name, attributes(&point.attributes));
            }
        }
    }
}

fn attributes(attributes: &[KeyValue]) -> String {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::StringValue(s)) => s.clone(),
                Some(Value::IntValue(i)) => i.to_string(),
                Some(other) => format!("{other:?}"),
                None => String::new(),
            };
            format!("{}={value:?}", kv.key)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

//! The GenAI conventions' view through a real collector into Prometheus 3 and VictoriaMetrics:
//! every `gen_ai.*` counter equals the store's matching quantity, with the conventions'
//! attributes, and the `reasonix.*` stream beside it is what it is without the view.

use std::time::Duration;

use serde_json::Value;

use super::common::collector::{Collector, MACHINE_OVERRIDES};
use super::common::model::QUANTITIES;
use super::common::prom_server::Prometheus;
use super::common::victoria::VictoriaMetrics;
use super::common::{self, Fixture, PROM_NAMES, assert_success, free_port, wait_until};

/// Each counter of the view, as Prometheus 3 and VictoriaMetrics name it, and the `status`
/// quantity it carries.
const VIEW: [(&str, &str); 4] = [
    ("gen_ai_client_inference_usage_input_tokens_total", "prompt"),
    ("gen_ai_client_inference_usage_output_tokens_total", "completion"),
    (
        "gen_ai_client_inference_usage_cache_read_input_tokens_total",
        "cache_hit",
    ),
    (
        "gen_ai_client_inference_usage_reasoning_output_tokens_total",
        "reasoning",
    ),
];

/// The collector's overrides: OTLP over HTTP to Prometheus 3's and VictoriaMetrics' receivers.
fn overrides(prometheus3: u16, victoria: u16) -> String {
    format!(
        "{MACHINE_OVERRIDES}exporters:\n  otlphttp/prometheus3:\n    endpoint: http://127.0.0.1:{prometheus3}/api/v1/otlp\n  otlphttp/victoria:\n    endpoint: http://127.0.0.1:{victoria}/opentelemetry\npipelines:\n  metrics:\n    receivers: [otlp]\n    processors: [batch]\n    exporters: [otlphttp/prometheus3, otlphttp/victoria]\n"
    )
}

/// The one series of `name` with `model_ref` and `source`, once the backend has it.
fn series_of(backend: &Prometheus, name: &str, model_ref: &str, source: &str) -> Option<Value> {
    let expr = format!("{name}{{model_ref=\"{model_ref}\",source=\"{source}\"}}");
    let mut found = None;
    wait_until(Duration::from_secs(30), || {
        found = backend
            .query(&expr, None)
            .filter(|r| r.len() == 1)
            .map(|mut r| r.remove(0));
        found.is_some()
    });
    found
}

#[test]
#[ignore = "needs the collector, Prometheus 3 and VictoriaMetrics (.ci/run); run with --include-ignored"]
fn the_gen_ai_view_through_the_collector_equals_the_store() {
    let test = "the_gen_ai_view_through_the_collector_equals_the_store";
    let tools = (
        common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix"),
        common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3"),
        common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics"),
    );
    let (Some(otelcol), Some(prometheus3), Some(victoria)) = tools else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let prometheus3 = Prometheus::start_binary(
        &prometheus3,
        &root.path().join("prometheus3"),
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-otlp-receiver"],
        Some(free_port()),
    );
    let victoria = VictoriaMetrics::start_on(
        &victoria,
        &root.path().join("victoria"),
        free_port(),
        &["-search.latencyOffset=1s"],
    );
    let mut collector = Collector::start(
        &otelcol,
        &root.path().join("collector"),
        "single-machine.yaml",
        &overrides(prometheus3.port, victoria.port),
        &[],
    );
    let fx = Fixture::new();
    super::ledger(&fx);
    let (_, http) = collector.endpoints().remove(1);
    let out = fx
        .command(&["once"])
        .env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &http)
        .env("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental")
        .output()
        .unwrap();
    assert_success(&out);
    collector.stop();
    let status = fx.status();
    let victoria = victoria.into_api();
    for (backend, name) in [(&prometheus3, "Prometheus 3"), (&victoria, "VictoriaMetrics")] {
        for s in status["series"].as_array().unwrap() {
            let [model_ref, provider, source] =
                [&s["model_ref"], &s["provider"], &s["source"]].map(|v| v.as_str().unwrap());
            for (metric, key) in VIEW {
                let expected = s[key].as_u64().unwrap();
                if expected == 0 {
                    // A zero is not sent, as for reasonix.*.
                    continue;
                }
                let found = series_of(backend, metric, model_ref, source);
                let found = found.unwrap_or_else(|| panic!("{name}: no {metric} of {model_ref}"));
                let value: f64 = found["value"][1].as_str().unwrap().parse().unwrap();
                assert_eq!(value as u64, expected, "{name}: {metric} of {model_ref}");
                let labels = &found["metric"];
                assert_eq!(labels["gen_ai_operation_name"], "chat", "{name}: {labels}");
                assert_eq!(labels["gen_ai_provider_name"], provider, "{name}: {labels}");
                assert_eq!(labels["gen_ai_token_modality"], "unknown", "{name}: {labels}");
                let model = model_ref.split_once('/').map_or(model_ref, |(_, model)| model);
                assert_eq!(labels["gen_ai_request_model"], model, "{name}: {labels}");
            }
            // The stream of our own names is all there beside it, as it is without the view.
            for (metric, key) in PROM_NAMES.into_iter().zip(QUANTITIES) {
                let expected = s[key].as_u64().unwrap();
                if expected == 0 {
                    continue;
                }
                let ours = series_of(backend, metric, model_ref, source)
                    .unwrap_or_else(|| panic!("{name}: no {metric} of {model_ref}"));
                let value: f64 = ours["value"][1].as_str().unwrap().parse().unwrap();
                assert_eq!(value as u64, expected, "{name}: {metric} of {model_ref}");
                let labels = ours["metric"].as_object().unwrap();
                assert!(labels.keys().all(|l| !l.starts_with("gen_ai")), "{name}: {ours}");
            }
        }
        // No counter of the conventions that the ledger cannot give.
        let write = backend.query(
            "gen_ai_client_inference_usage_cache_write_input_tokens_total",
            None,
        );
        assert_eq!(write.map(|r| r.len()), Some(0), "{name}");
    }
}

//! Paths with nothing in between: Prometheus 3 and VictoriaMetrics taking OTLP, Prometheus scraping.

use super::*;

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn exporter_to_prometheus_3_otlp_endpoint_is_exact() {
    let test = "exporter_to_prometheus_3_otlp_endpoint_is_exact";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let restart = Restart {
        binary,
        dir: root.path().join("prometheus3"),
        config: "global:\n  scrape_interval: 15s\n".into(),
        flags: vec!["--web.enable-otlp-receiver".into()],
        port: free_port(),
        victoria: false,
    };
    let prometheus = restart.start();
    let endpoints = vec![(
        "http/protobuf",
        format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", restart.port),
    )];
    let mut path = Route {
        name: "exporter → Prometheus 3 OTLP",
        prometheus: Some(prometheus),
        restart,
        hop: Hop::Prometheus,
        endpoints,
        env: Vec::new(),
        handler: Some("/api/v1/otlp/v1/metrics"),
        scrape_port: None,
    };
    scenario(&mut path, &mut Machine::new(103));
}

/// VictoriaMetrics taking OTLP straight from the exporter (deploy/README.md's command), restarted
/// on its data as the first hop. Its instant queries look 1 s back instead of 30 s
/// (`-search.latencyOffset`), so that the scenario's waits see an export within seconds.
#[test]
#[ignore = "needs VictoriaMetrics (.ci/run); run with --include-ignored"]
fn exporter_to_victoria_metrics_otlp_is_exact() {
    let test = "exporter_to_victoria_metrics_otlp_is_exact";
    let Some(binary) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let restart = Restart {
        binary,
        dir: root.path().join("victoria-metrics"),
        config: String::new(),
        flags: vec!["-search.latencyOffset=1s".into()],
        port: free_port(),
        victoria: true,
    };
    let victoria = restart.start();
    let endpoints = vec![(
        "http/protobuf",
        format!("http://127.0.0.1:{}/opentelemetry/v1/metrics", restart.port),
    )];
    let mut path = Route {
        name: "exporter → VictoriaMetrics OTLP",
        prometheus: Some(victoria),
        restart,
        hop: Hop::Prometheus,
        endpoints,
        env: Vec::new(),
        handler: Some("/opentelemetry/v1/metrics"),
        scrape_port: None,
    };
    let window = scenario(&mut path, &mut Machine::new(107));
    dashboard_panels_are_exact(&path, &window);
}

#[test]
#[ignore = "needs Prometheus 2 (.ci/run); run with --include-ignored"]
fn prometheus_scraping_metrics_is_exact() {
    let test = "prometheus_scraping_metrics_is_exact";
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-exporter.yml"),
    )
    .unwrap();
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("127.0.0.1:10155", &format!("127.0.0.1:{port}"));
    let Some((prometheus, restart)) = prometheus2(test, &root.path().join("prometheus"), &config) else {
        return;
    };
    let mut path = Route {
        name: "Prometheus 2.42 ← /metrics",
        prometheus: Some(prometheus),
        restart,
        hop: Hop::None,
        endpoints: Vec::new(),
        env: Vec::new(),
        handler: None,
        scrape_port: Some(port),
    };
    scenario(&mut path, &mut Machine::new(104));
}

//! Paths through the OpenTelemetry Collector: remote write, its Prometheus exporter, the team gateway.

use super::*;

const REMOTE_WRITE_CONFIG: &str = "global:\n  scrape_interval: 1s\n";

/// A collector running `config`, remote-writing to a fresh Prometheus 2.42.
fn collector_to_prometheus(
    test: &str,
    root: &Path,
    config: &str,
) -> Option<(Collector, Prometheus, Restart)> {
    let otelcol = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix")?;
    let (prometheus, restart) = prometheus2(test, &root.join("prometheus"), REMOTE_WRITE_CONFIG)?;
    let url = format!("http://127.0.0.1:{}/api/v1/write", prometheus.port);
    let collector = Collector::start(
        &otelcol,
        &root.join("collector"),
        config,
        MACHINE_OVERRIDES,
        &[("PROMETHEUS_REMOTE_WRITE_URL", &url)],
    );
    Some((collector, prometheus, restart))
}

#[test]
#[ignore = "needs the collector, Prometheus 2 (.ci/run); run with --include-ignored"]
fn collector_remote_write_to_prometheus_is_exact() {
    let root = tempfile::tempdir().unwrap();
    let Some((mut collector, prometheus, restart)) = collector_to_prometheus(
        "collector_remote_write_to_prometheus_is_exact",
        root.path(),
        "single-machine.yaml",
    ) else {
        return;
    };
    let endpoints = collector.endpoints();
    let mut path = Route {
        name: "collector → remote write → Prometheus 2.42",
        prometheus: Some(prometheus),
        restart,
        hop: Hop::Collector(&mut collector),
        endpoints,
        env: Vec::new(),
        handler: Some("/api/v1/write"),
        scrape_port: None,
    };
    let window = scenario(&mut path, &mut Machine::new(101));
    dashboard_panels_are_exact(&path, &window);
}

#[test]
#[ignore = "needs the collector, Prometheus 2 (.ci/run); run with --include-ignored"]
fn collector_prometheus_exporter_scraped_by_prometheus_is_exact() {
    let test = "collector_prometheus_exporter_scraped_by_prometheus_is_exact";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let scrape = free_port();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-collector.yml"),
    )
    .unwrap();
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("127.0.0.1:8889", &format!("127.0.0.1:{scrape}"));
    let Some((prometheus, restart)) = prometheus2(test, &root.path().join("prometheus"), &config) else {
        return;
    };
    let mut collector = Collector::start(
        &otelcol,
        &root.path().join("collector"),
        "single-machine-scrape.yaml",
        MACHINE_OVERRIDES,
        &[("PROMETHEUS_SCRAPE_ENDPOINT", &format!("127.0.0.1:{scrape}"))],
    );
    let endpoints = collector.endpoints();
    let mut path = Route {
        name: "collector prometheus exporter ← Prometheus 2.42",
        prometheus: Some(prometheus),
        restart,
        hop: Hop::Collector(&mut collector),
        endpoints,
        env: Vec::new(),
        handler: None,
        scrape_port: None,
    };
    scenario(&mut path, &mut Machine::new(102));
}

/// Machines → team gateway (TLS, bearer token) → remote write → Prometheus: one machine sends
/// straight to the gateway, another through its own collector (machine-to-gateway.yaml). Each
/// is its own instance, exact.
#[test]
#[ignore = "needs the collector, Prometheus 2 (.ci/run); run with --include-ignored"]
fn team_gateway_with_tls_and_token_is_exact_for_each_machine() {
    let test = "team_gateway_with_tls_and_token_is_exact_for_each_machine";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let Some((prometheus, restart)) = prometheus2(test, &root.path().join("prometheus"), REMOTE_WRITE_CONFIG)
    else {
        return;
    };
    let pki_dir = root.path().join("pki");
    std::fs::create_dir_all(&pki_dir).unwrap();
    let pki = Pki::new(&pki_dir);
    let (cert, key) = pki.write_server(&pki_dir);
    let token = "team-token-4f1c";
    let url = format!("http://127.0.0.1:{}/api/v1/write", prometheus.port);
    // The gateway writes to Prometheus alone here (no OTLP backend to forward to).
    let gateway_overrides = MACHINE_OVERRIDES.to_string()
        + "pipelines:\n  metrics:\n    exporters: [prometheusremotewrite/mimir]\n";
    let mut gateway = Collector::start(
        &otelcol,
        &root.path().join("gateway"),
        "team-gateway.yaml",
        &gateway_overrides,
        &[
            ("REASONIX_GATEWAY_TOKEN", token),
            ("GATEWAY_TLS_CERT", cert.to_str().unwrap()),
            ("GATEWAY_TLS_KEY", key.to_str().unwrap()),
            ("PROMETHEUS_REMOTE_WRITE_URL", &url),
            ("OTLP_BACKEND_TOKEN", "unused"),
        ],
    );
    let gateway_grpc = format!("localhost:{}", gateway.grpc);
    let mut agent = Collector::start(
        &otelcol,
        &root.path().join("agent"),
        "machine-to-gateway.yaml",
        MACHINE_OVERRIDES,
        &[
            ("REASONIX_GATEWAY_TOKEN", token),
            ("REASONIX_GATEWAY_ENDPOINT", &gateway_grpc),
            ("REASONIX_GATEWAY_CA", pki.ca.to_str().unwrap()),
        ],
    );

    // Straight to the gateway: TLS with the team's CA, the token as a header.
    let direct_env = vec![
        (
            "OTEL_EXPORTER_OTLP_CERTIFICATE".to_string(),
            pki.ca.display().to_string(),
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS".to_string(),
            format!("authorization=Bearer%20{token}"),
        ),
    ];
    let direct_endpoints = vec![
        ("grpc", format!("https://localhost:{}", gateway.grpc)),
        (
            "http/protobuf",
            format!("https://localhost:{}/v1/metrics", gateway.http),
        ),
    ];
    let mut direct = Machine::new(105);
    {
        let mut path = Route {
            name: "exporter → gateway (TLS, token) → remote write",
            prometheus: Some(prometheus),
            restart,
            hop: Hop::Collector(&mut gateway),
            endpoints: direct_endpoints,
            env: direct_env,
            handler: Some("/api/v1/write"),
            scrape_port: None,
        };
        scenario(&mut path, &mut direct);
        // Through the machine's own collector, which holds the token and the CA.
        let endpoints = agent.endpoints();
        let mut path = Route {
            name: "exporter → machine collector → gateway → remote write",
            prometheus: path.prometheus.take(),
            restart: path.restart,
            hop: Hop::Collector(&mut agent),
            endpoints,
            env: Vec::new(),
            handler: Some("/api/v1/write"),
            scrape_port: None,
        };
        scenario(&mut path, &mut Machine::new(106));
        // The first machine's series are still exact beside the second's.
        let instances = path.instances();
        assert_eq!(instances.len(), 2, "two machines, two instances: {instances:?}");
        let first = instances
            .iter()
            .find(|i| path.values(i) == direct.truth(None))
            .cloned();
        assert!(first.is_some(), "the direct machine's series are exact");
    }
    assert_eq!(gateway.failed_points(), 0.0, "{}", gateway.log_text());
}

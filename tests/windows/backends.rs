//! Each backend path run through the scenario, and a store restored from a backup on two of them.

use super::scenario::scenario;
use super::*;
use common::collector::MACHINE_OVERRIDES;

/// Machines → collector (`single-machine.yaml`) → remote write, to Prometheus 3, Prometheus 2.42
/// and VictoriaMetrics at once.
#[test]
#[ignore = "needs the collector, Prometheus 3, VictoriaMetrics, Prometheus 2 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_through_the_collectors_remote_write() {
    let test = "every_window_is_exact_through_the_collectors_remote_write";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let Some(victoria) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let Some(prometheus2) = common::tools::installed(test, "prometheus", "prometheus") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let config = "global:\n  scrape_interval: 15s\n";
    let p3 = Prometheus::start_binary(
        &prometheus3,
        &root.path().join("p3"),
        config,
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let p2 = Prometheus::start_binary(
        &prometheus2,
        &root.path().join("p2"),
        config,
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    // One collector writing to all three: the shipped exporter and two more like it.
    let url = |port: u16| format!("http://127.0.0.1:{port}/api/v1/write");
    let overrides = format!(
        "{MACHINE_OVERRIDES}exporters:\n  prometheusremotewrite/p2:\n    endpoint: {}\n    resource_to_telemetry_conversion:\n      enabled: true\n  prometheusremotewrite/vm:\n    endpoint: {}\n    resource_to_telemetry_conversion:\n      enabled: true\npipelines:\n  metrics:\n    exporters: [prometheusremotewrite, prometheusremotewrite/p2, prometheusremotewrite/vm]\n",
        url(p2.port),
        vm.remote_write_url()
    );
    let mut collector = Collector::start(
        &otelcol,
        &root.path().join("collector"),
        "single-machine.yaml",
        &overrides,
        &[("PROMETHEUS_REMOTE_WRITE_URL", &url(p3.port))],
    );
    let endpoint = format!("http://127.0.0.1:{}/v1/metrics", collector.http);
    let backends = [
        Backend {
            name: "collector → remote write → Prometheus 3".into(),
            port: p3.port,
            victoria: false,
        },
        Backend {
            name: "collector → remote write → Prometheus 2.42".into(),
            port: p2.port,
            victoria: false,
        },
        Backend {
            name: "collector → remote write → VictoriaMetrics".into(),
            port: vm.port,
            victoria: true,
        },
    ];
    scenario(Sink::Otlp(endpoint), &backends, || collector.restart());
    assert_eq!(collector.failed_points(), 0.0, "{}", collector.log_text());
}

/// Prometheus 3 taking OTLP, its data under `dir`; and the endpoint to send to.
fn prometheus3_otlp(binary: &Path, dir: &Path) -> (Prometheus, String) {
    let p3 = Prometheus::start_binary(
        binary,
        dir,
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-otlp-receiver"],
        None,
    );
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", p3.port);
    (p3, endpoint)
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_prometheus_3s_otlp_endpoint() {
    let test = "every_window_is_exact_on_prometheus_3s_otlp_endpoint";
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (p3, endpoint) = prometheus3_otlp(&prometheus3, &root.path().join("p3"));
    let backends = [Backend {
        name: "exporter → Prometheus 3 OTLP".into(),
        port: p3.port,
        victoria: false,
    }];
    scenario(Sink::Otlp(endpoint), &backends, || {});
}

#[test]
#[ignore = "needs VictoriaMetrics (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_victoria_metrics_otlp() {
    let test = "every_window_is_exact_on_victoria_metrics_otlp";
    let Some(victoria) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    let backends = [Backend {
        name: "exporter → VictoriaMetrics OTLP".into(),
        port: vm.port,
        victoria: true,
    }];
    scenario(Sink::Otlp(vm.otlp_endpoint()), &backends, || {});
}

/// Prometheus 3 scraping each machine's `/metrics` (`deploy/prometheus/scrape-exporter.yml`)
/// with `created-timestamp-zero-ingestion`: a series born after a store's first publication
/// carries its birth as `_created`, which Prometheus makes a zero.
#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_prometheus_3_scraping_metrics() {
    let test = "every_window_is_exact_on_prometheus_3_scraping_metrics";
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    // Two exporters' ports, known before they start (the second joins half-way): as a user's
    // scrape configuration names them.
    let ports = [common::free_port(), common::free_port()];
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-exporter.yml"),
    )
    .unwrap();
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 2s")
        .replace(
            "['127.0.0.1:10155']",
            &format!("['127.0.0.1:{}', '127.0.0.1:{}']", ports[0], ports[1]),
        );
    let p3 = Prometheus::start_binary(
        &prometheus3,
        &root.path().join("p3"),
        &config,
        &["--enable-feature=created-timestamp-zero-ingestion"],
        None,
    );
    let backends = [Backend {
        name: "Prometheus 3 ← /metrics".into(),
        port: p3.port,
        victoria: false,
    }];
    scenario(Sink::Scraped(ports), &backends, || {});
}

/// Contract §4, "Never down", for a store put back from a backup: the backend holds values of a
/// series the restored stream record does not know of. Its zero goes a millisecond after the
/// last export the record knows, before all of them: Prometheus refuses it as out of order (and
/// the values follow, not held up by it), VictoriaMetrics files it before them.
#[test]
#[ignore = "needs Prometheus 3, VictoriaMetrics (.ci/run); run with --include-ignored"]
fn a_store_restored_from_a_backup_never_goes_down_on_prometheus_3_and_victoria_metrics() {
    let test = "a_store_restored_from_a_backup_never_goes_down_on_prometheus_3_and_victoria_metrics";
    let (Some(prometheus3), Some(victoria)) = (
        common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3"),
        common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics"),
    ) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (p3, p3_endpoint) = prometheus3_otlp(&prometheus3, &root.path().join("p3"));
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    let paths = [
        (
            Backend {
                name: "Prometheus 3 OTLP".into(),
                port: p3.port,
                victoria: false,
            },
            p3_endpoint,
        ),
        (
            Backend {
                name: "VictoriaMetrics OTLP".into(),
                port: vm.port,
                victoria: true,
            },
            vm.otlp_endpoint(),
        ),
    ];
    for (backend, endpoint) in &paths {
        let mut machine = Machine::new(41, &Sink::Otlp(endpoint.clone()), 0);
        let sink = machine.sink.clone();
        let once = |fx: &Fixture| {
            let mut args = vec!["once"];
            args.extend(sink.iter().map(String::as_str));
            let out = fx.run(&args);
            assert!(
                out.status.success(),
                "{}: {}",
                backend.name,
                String::from_utf8_lossy(&out.stderr)
            );
        };
        machine.lines_land("2026-10-05", 20);
        once(&machine.fx);
        let backup = root.path().join(format!("backup-{}", backend.port));
        common::files::copy_tree(&machine.fx.state, &backup);
        machine.new_series_land("2026-10-05", "zhipu/glm-5", "remote");
        once(&machine.fx);
        machine.lines_land("2026-10-05", 20);
        once(&machine.fx);
        std::fs::remove_dir_all(&machine.fx.state).unwrap();
        common::files::copy_tree(&backup, &machine.fx.state);
        machine.new_series_land("2026-10-05", "zhipu/glm-5", "remote");
        once(&machine.fx);
        let total: u64 = machine.model.expected.totals().values().map(|v| v[5]).sum();
        let arrived = wait_until(PATIENCE, || {
            backend.newest_sum("reasonix_tokens_total") == Some(total as f64)
        });
        assert!(
            arrived,
            "{}: {:?} for {total}",
            backend.name,
            backend.newest_sum("reasonix_tokens_total")
        );
        backend.assert_never_reset("1h");
    }
}

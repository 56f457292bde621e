//! Prometheus 3: history by promtool, over OTLP in an out-of-order window, through the gateway.

use super::*;

struct Prometheus3 {
    binary: std::path::PathBuf,
    promtool: std::path::PathBuf,
    dir: std::path::PathBuf,
    server: Option<Prometheus>,
    port: u16,
}

impl Prometheus3 {
    fn start(&mut self) {
        self.server = Some(Prometheus::start_binary(
            &self.binary,
            &self.dir,
            "global:\n  scrape_interval: 15s\n",
            // Its retention covers the history (15 days by default: older blocks are deleted).
            &["--web.enable-otlp-receiver", "--storage.tsdb.retention.time=1y"],
            Some(self.port),
        ));
    }
}

impl Backend for Prometheus3 {
    fn name(&self) -> &str {
        "Prometheus 3 (OTLP, history by promtool)"
    }

    fn api(&self) -> &Prometheus {
        self.server.as_ref().expect("running")
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(self.api());
        let file = fx.root.path().join("history.om");
        let check = format!("http://127.0.0.1:{}", self.port);
        std::fs::write(&file, history(fx, "openmetrics", &labels, &check)).unwrap();
        let out = Command::new(&self.promtool)
            .args([
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "--max-block-duration=486h",
            ])
            .arg(&file)
            .arg(self.dir.join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The recipe: blocks in the data dir, then a restart (or wait for the next compaction).
        self.server.take().unwrap().stop();
        self.start();
    }
}

/// A Prometheus 3 with a 30-day out-of-order window (the history's twenty days fit) and a year's
/// retention, taking what `receiver` (its flag) says.
fn prometheus3_with_window(binary: &std::path::Path, dir: &std::path::Path, receiver: &str) -> Prometheus {
    Prometheus::start_binary(
        binary,
        dir,
        "global:\n  scrape_interval: 15s\nstorage:\n  tsdb:\n    out_of_order_time_window: 30d\n",
        &[receiver, "--storage.tsdb.retention.time=1y"],
        None,
    )
}

/// Prometheus 3 taking the history over OTLP, within an out-of-order window longer than it.
struct Prometheus3Ooo {
    server: Prometheus,
    endpoint: String,
}

impl Backend for Prometheus3Ooo {
    fn name(&self) -> &str {
        "Prometheus 3 (OTLP, history by OTLP in its out-of-order window)"
    }

    fn api(&self) -> &Prometheus {
        &self.server
    }

    fn load(&mut self, fx: &Fixture) {
        // The recipe: the same endpoint and settings as the live stream, no labels to give.
        let args = [
            "--format",
            "otlp",
            "--otlp-protocol",
            "http/protobuf",
            "--otlp-endpoint",
            &self.endpoint,
        ];
        let out = history_in(fx, &args.map(String::from), &[]);
        assert!(out.is_empty(), "nothing on standard output");
    }
}

/// Prometheus 3 behind the shipped team gateway (TLS, a bearer token, `team` and `user`
/// promoted from the resource, remote write), with an out-of-order window: the history sent
/// over OTLP the way the live stream goes.
struct BehindGateway {
    server: Prometheus,
    endpoint: String,
    env: Vec<(String, String)>,
    gateway: common::collector::Collector,
}

impl Backend for BehindGateway {
    fn name(&self) -> &str {
        "Prometheus 3 behind the team gateway (remote write; history by OTLP through the gateway)"
    }

    fn api(&self) -> &Prometheus {
        &self.server
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(&self.server);
        assert!(
            labels.contains(&("team".into(), "platform".into()))
                && labels.contains(&("user".into(), "alice".into())),
            "the gateway promotes team and user: {labels:?}"
        );
        let args = [
            "--format",
            "otlp",
            "--otlp-protocol",
            "http/protobuf",
            "--otlp-endpoint",
            &self.endpoint,
        ];
        history_in(fx, &args.map(String::from), &self.env);
        assert_eq!(self.gateway.failed_points(), 0.0, "{}", self.gateway.log_text());
    }

    fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }
}

#[test]
#[ignore = "needs Prometheus 3 and promtool 3 (.ci/run); run with --include-ignored"]
fn the_history_is_every_day_exactly_on_prometheus_3_with_the_live_stream_on() {
    let test = "the_history_is_every_day_exactly_on_prometheus_3_with_the_live_stream_on";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let Some(promtool) = common::tools::built(test, "REASONIX_PROMTOOL3", "promtool3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut p3 = Prometheus3 {
        binary,
        promtool,
        dir: root.path().join("p3"),
        server: None,
        port: common::free_port(),
    };
    p3.start();
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", p3.port);
    scenario(&mut p3, &endpoint);
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn the_history_over_otlp_is_every_day_exactly_on_prometheus_3_with_an_out_of_order_window() {
    let test = "the_history_over_otlp_is_every_day_exactly_on_prometheus_3_with_an_out_of_order_window";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = prometheus3_with_window(&binary, &root.path().join("p3"), "--web.enable-otlp-receiver");
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", server.port);
    let mut p3 = Prometheus3Ooo {
        server,
        endpoint: endpoint.clone(),
    };
    scenario(&mut p3, &endpoint);
}

#[test]
#[ignore = "needs the collector and Prometheus 3 (.ci/run); run with --include-ignored"]
fn the_history_through_the_team_gateway_is_every_day_exactly_with_its_promoted_labels() {
    let test = "the_history_through_the_team_gateway_is_every_day_exactly_with_its_promoted_labels";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = prometheus3_with_window(
        &binary,
        &root.path().join("p3"),
        "--web.enable-remote-write-receiver",
    );
    let pki_dir = root.path().join("pki");
    std::fs::create_dir_all(&pki_dir).unwrap();
    let pki = common::pki::Pki::new(&pki_dir);
    let (cert, key) = pki.write_server(&pki_dir);
    let token = "team-token-9b2e";
    let url = format!("http://127.0.0.1:{}/api/v1/write", server.port);
    let overrides = common::collector::MACHINE_OVERRIDES.to_string()
        + "pipelines:\n  metrics:\n    exporters: [prometheusremotewrite/mimir]\n";
    let gateway = common::collector::Collector::start(
        &otelcol,
        &root.path().join("gateway"),
        "team-gateway.yaml",
        &overrides,
        &[
            ("REASONIX_GATEWAY_TOKEN", token),
            ("GATEWAY_TLS_CERT", cert.to_str().unwrap()),
            ("GATEWAY_TLS_KEY", key.to_str().unwrap()),
            ("PROMETHEUS_REMOTE_WRITE_URL", &url),
            ("OTLP_BACKEND_TOKEN", "unused"),
        ],
    );
    let endpoint = format!("https://localhost:{}/v1/metrics", gateway.http);
    let env = [
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", pki.ca.display().to_string()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{token}"),
        ),
        ("OTEL_RESOURCE_ATTRIBUTES", "team=platform,user=alice".to_string()),
    ];
    let mut behind = BehindGateway {
        server,
        endpoint: endpoint.clone(),
        env: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        gateway,
    };
    scenario(&mut behind, &endpoint);
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn history_over_otlp_to_a_prometheus_without_an_out_of_order_window_is_one_line_that_says_so() {
    let test = "history_over_otlp_to_a_prometheus_without_an_out_of_order_window_is_one_line_that_says_so";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let server = Prometheus::start_binary(
        &binary,
        &root.path().join("p3"),
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-otlp-receiver"],
        Some(port),
    );
    let fx = Fixture::new();
    let line = Lines(5).at(now_ms() - 3 * DAY_MS);
    fx.append(
        &format!("{}.jsonl", &line.text[7..17]),
        format!("{}\n", line.text).as_bytes(),
    );
    let endpoint = format!("http://user:secret@127.0.0.1:{port}/api/v1/otlp/v1/metrics");
    let otlp = [
        "--otlp-protocol",
        "http/protobuf",
        "--otlp-endpoint",
        endpoint.as_str(),
    ];
    let once = fx.run(&[&otlp[..], &["once"]].concat());
    assert!(once.status.success(), "{}", String::from_utf8_lossy(&once.stderr));
    let out = fx.run(&[&["history", "--format", "otlp"], &otlp[..]].concat());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{log}");
    let error = log.lines().last().unwrap_or_default();
    assert!(
        error.contains("HTTP 400") && error.contains("out_of_order_time_window"),
        "the backend's refusal, and the window to set: {log}"
    );
    assert!(error.contains("127.0.0.1"), "the endpoint is named: {log}");
    assert!(!log.contains("secret"), "no credentials: {log}");
    server.stop();
}

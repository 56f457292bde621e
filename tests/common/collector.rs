//! A real OpenTelemetry Collector (built by `.ci/tools` from deploy/collector/builder.yaml)
//! running a shipped configuration, with the test's ports and addresses merged over it from a
//! second configuration file, the way an operator overrides one.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, http_get, send_signal, wait_until};

/// The overrides of the shipped collector files: the test's ports, and a 1 s batch.
pub const MACHINE_OVERRIDES: &str = "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{grpc}\n      http:\n        endpoint: 127.0.0.1:{http}\nprocessors:\n  batch:\n    timeout: 1s\n";

pub struct Collector {
    binary: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: Option<Child>,
    /// The OTLP receiver's ports.
    pub grpc: u16,
    pub http: u16,
    /// Where its own metrics are served (`otelcol_*`).
    pub telemetry: u16,
    health: u16,
}

impl Collector {
    /// Starts `binary` with the shipped `config` (a path below deploy/collector), `overrides`
    /// (YAML merged over it; `{grpc}`, `{http}`, `{health}` and `{telemetry}` stand for this
    /// collector's ports) and `env`, and waits until its health check answers.
    pub fn start(
        binary: &Path,
        dir: &Path,
        config: &str,
        overrides: &str,
        env: &[(&str, &str)],
    ) -> Collector {
        std::fs::create_dir_all(dir).unwrap();
        let (grpc, http, telemetry, health) = (free_port(), free_port(), free_port(), free_port());
        let overrides = overrides
            .replace("{grpc}", &grpc.to_string())
            .replace("{http}", &http.to_string())
            .replace("{telemetry}", &telemetry.to_string())
            .replace("{health}", &health.to_string());
        // A top-level `pipelines:` in the overrides goes under `service:`, beside the telemetry.
        let (overrides, pipelines) = match overrides.split_once("pipelines:") {
            Some((rest, pipelines)) => (rest.to_string(), format!("  pipelines:{}", indent(pipelines))),
            None => (overrides, String::new()),
        };
        let overrides = format!(
            "{overrides}\nextensions:\n  health_check:\n    endpoint: 127.0.0.1:{health}\nservice:\n{pipelines}\n  telemetry:\n    metrics:\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: {telemetry}\n"
        );
        let override_path = dir.join("overrides.yaml");
        std::fs::write(&override_path, overrides).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/collector")
            .join(config);
        let mut collector = Collector {
            binary: binary.to_path_buf(),
            args: vec![
                format!("--config={}", shipped.display()),
                format!("--config={}", override_path.display()),
            ],
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            log: dir.join("collector.log"),
            child: None,
            grpc,
            http,
            telemetry,
            health,
        };
        collector.run();
        collector
    }

    fn run(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(&self.binary)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the collector");
        self.child = Some(child);
        let health = self.health;
        assert!(
            wait_until(Duration::from_secs(30), || http_get(health, "/", None).is_some()),
            "the collector never became healthy: {}",
            self.log_text()
        );
    }

    /// Stops it with SIGTERM (it sends what it holds first) and waits.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            send_signal(child.id(), "TERM");
            let _ = child.wait();
        }
    }

    /// Starts it again, on the same ports.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }

    /// `(protocol, endpoint)` of its OTLP receiver, for the exporter.
    pub fn endpoints(&self) -> Vec<(&'static str, String)> {
        vec![
            ("grpc", format!("http://127.0.0.1:{}", self.grpc)),
            (
                "http/protobuf",
                format!("http://127.0.0.1:{}/v1/metrics", self.http),
            ),
        ]
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Data points its exporters failed to send or to queue, since it started.
    pub fn failed_points(&self) -> f64 {
        let body = http_get(self.telemetry, "/metrics", None).expect("the collector's own metrics");
        body.lines()
            .filter(|l| {
                l.starts_with("otelcol_exporter_send_failed_metric_points")
                    || l.starts_with("otelcol_exporter_enqueue_failed_metric_points")
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }
}

/// `text`'s lines after the first, two spaces further in.
fn indent(text: &str) -> String {
    text.replace('\n', "\n  ")
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

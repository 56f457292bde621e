//! A real Prometheus server (Debian's `prometheus`, installed by .ci/run) on a free port, with
//! the PromQL HTTP API as the tests need it.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::{free_port, http_get};

pub struct Prometheus {
    child: Child,
    pub port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Whether the `prometheus` binary is installed.
    pub fn installed() -> bool {
        Command::new("prometheus").arg("--version").output().is_ok()
    }

    /// Starts Prometheus with `config` (YAML text), its data under `dir`.
    pub fn start(dir: &Path, config: &str) -> Option<Prometheus> {
        if !Self::installed() {
            return None;
        }
        Some(Self::start_binary(
            Path::new("prometheus"),
            dir,
            config,
            &[],
            None,
        ))
    }

    /// Starts the Prometheus at `binary` with `config` and `flags`, its data under `dir`, on
    /// `port` (a free one if `None`), and waits until it is ready.
    pub fn start_binary(
        binary: &Path,
        dir: &Path,
        config: &str,
        flags: &[&str],
        port: Option<u16>,
    ) -> Prometheus {
        std::fs::create_dir_all(dir).unwrap();
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = port.unwrap_or_else(free_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("log.txt"))
            .unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let prometheus = Prometheus { child, port };
        assert!(
            super::wait_until(std::time::Duration::from_secs(60), || http_get(
                port, "/-/ready", None
            )
            .is_some_and(|b| b.contains("Ready"))),
            "{} never became ready: {}",
            binary.display(),
            std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default()
        );
        prometheus
    }

    /// A server already started and ready that answers Prometheus' HTTP API on `port`
    /// (VictoriaMetrics); killed when dropped.
    pub fn adopt(child: Child, port: u16) -> Prometheus {
        Prometheus { child, port }
    }

    /// Stops it (SIGTERM, so that its data is kept for a restart) and waits.
    pub fn stop(mut self) {
        super::send_signal(self.child.id(), "TERM");
        let _ = self.child.wait();
    }

    /// Scrapes `127.0.0.1:{target_port}` every second as job `reasonix`.
    pub fn scraping(dir: &Path, target_port: u16) -> Option<Prometheus> {
        Self::start(
            dir,
            &format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: reasonix\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
            ),
        )
    }

    /// `GET /api/v1/{path}` parsed; `None` unless Prometheus answered with status success.
    pub fn api(&self, path_and_query: &str) -> Option<Value> {
        let body = http_get(self.port, &format!("/api/v1/{path_and_query}"), None)?;
        let json: Value = serde_json::from_str(&body).ok()?;
        (json["status"] == "success").then(|| json["data"].clone())
    }

    /// The result of an instant query, at `time` (Unix seconds) if given.
    pub fn query(&self, expr: &str, time: Option<f64>) -> Option<Vec<Value>> {
        let at = time.map(|t| format!("&time={t:.3}")).unwrap_or_default();
        let data = self.api(&format!("query?query={}{at}", encode(expr)))?;
        data["result"].as_array().cloned()
    }

    /// The value of an instant query that yields one number.
    pub fn scalar(&self, expr: &str) -> Option<f64> {
        let result = self.query(expr, None)?;
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

/// Percent-encodes a query parameter.
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

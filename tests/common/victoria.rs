//! A real VictoriaMetrics single node (built by `.ci/tools` from the Go module proxy) on a free
//! port, taking OTLP on `/opentelemetry/v1/metrics` and remote write on `/api/v1/write`, with
//! the shipped relabelling (`deploy/victoriametrics/relabel.yml`) and its own flags otherwise at
//! their defaults: what `deploy/README.md` tells a user to run.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, http_get, wait_until};

pub struct VictoriaMetrics {
    /// `None` once handed over as a [`Prometheus`] API.
    child: Option<Child>,
    pub port: u16,
    log: std::path::PathBuf,
}

impl Drop for VictoriaMetrics {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl VictoriaMetrics {
    /// Starts `binary` with its data under `dir` and waits until `/health` answers.
    pub fn start(binary: &Path, dir: &Path) -> VictoriaMetrics {
        Self::start_on(binary, dir, free_port(), &[])
    }

    /// [`VictoriaMetrics::start`] on `port`, with `flags` besides: the same data and port make a
    /// restart.
    pub fn start_on(binary: &Path, dir: &Path, port: u16, flags: &[&str]) -> VictoriaMetrics {
        std::fs::create_dir_all(dir).unwrap();
        let log = dir.join("log.txt");
        let relabel = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/victoriametrics/relabel.yml");
        let child = Command::new(binary)
            .arg(format!("-storageDataPath={}", dir.join("data").display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .arg("-opentelemetry.usePrometheusNaming")
            .arg(format!("-relabelConfig={}", relabel.display()))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .unwrap(),
            )
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let vm = VictoriaMetrics {
            child: Some(child),
            port,
            log,
        };
        assert!(
            wait_until(Duration::from_secs(60), || http_get(port, "/health", None)
                .is_some_and(|b| b.contains("OK"))),
            "VictoriaMetrics never became ready: {}",
            vm.log_text()
        );
        vm
    }

    /// Its Prometheus-compatible query API, which owns the process from now on.
    pub fn into_api(mut self) -> super::prom_server::Prometheus {
        let child = self.child.take().expect("running");
        super::prom_server::Prometheus::adopt(child, self.port)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn otlp_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/opentelemetry/v1/metrics", self.port)
    }

    pub fn remote_write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// Makes what it took searchable now (it flushes on its own every few seconds).
    pub fn flush(&self) {
        let _ = http_get(self.port, "/internal/force_flush", None);
    }
}

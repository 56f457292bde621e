//! VictoriaMetrics: the history imported by `/api/v1/import` beside the live stream.

use super::*;

struct Victoria {
    api: Prometheus,
}

impl Backend for Victoria {
    fn name(&self) -> &str {
        "VictoriaMetrics (OTLP, history by /api/v1/import)"
    }

    fn api(&self) -> &Prometheus {
        &self.api
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(&self.api);
        let check = format!("http://127.0.0.1:{}", self.api.port);
        // A label missed is said before anything is written, with the one to give.
        let missed = fx.run(&["history", "--format", "victoriametrics", "--check", &check]);
        let said = String::from_utf8_lossy(&missed.stderr);
        assert!(!missed.status.success() && missed.stdout.is_empty(), "{said}");
        let (name, value) = &labels[0];
        assert!(said.contains(&format!("--label {name}={value}")), "{said}");
        let body = history(fx, "victoriametrics", &labels, &check);
        post(self.api.port, "/api/v1/import", &body);
        post(self.api.port, "/internal/resetRollupResultCache", b"");
    }
}

/// `POST path` with `body` over HTTP/1.0; asserts a 2xx answer.
fn post(port: u16, path: &str, body: &[u8]) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(
        response.starts_with("HTTP/1.1 2") || response.starts_with("HTTP/1.0 2"),
        "{path}: {response}"
    );
}

#[test]
#[ignore = "needs VictoriaMetrics (.ci/run); run with --include-ignored"]
fn the_history_is_every_day_exactly_on_victoria_metrics_with_the_live_stream_on() {
    let test = "the_history_is_every_day_exactly_on_victoria_metrics_with_the_live_stream_on";
    let Some(binary) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let vm = VictoriaMetrics::start(&binary, &root.path().join("vm"));
    let endpoint = vm.otlp_endpoint();
    let mut victoria = Victoria { api: vm.into_api() };
    scenario(&mut victoria, &endpoint);
}

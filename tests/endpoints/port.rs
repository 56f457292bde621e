//! The default port is the exporter's own, and a port another program holds is one line.

use std::net::TcpListener;
use std::time::Duration;

use super::common::{Fixture, http_get, the_error_line, wait_until};

/// The default address, as `catalog.rs` and deploy/README.md give it.
const DEFAULT_PORT: u16 = 10155;

#[test]
#[ignore = "needs 127.0.0.1:10155, the default port, free (CI); run with --include-ignored"]
fn run_on_its_defaults_serves_beside_a_process_holding_9464() {
    // What Claude Code's `OTEL_METRICS_EXPORTER=prometheus` (any OTel SDK's) holds.
    let sdk = TcpListener::bind("127.0.0.1:9464");
    if sdk.is_err() {
        // Another program on this machine holds it already: the case itself.
        assert!(TcpListener::bind("127.0.0.1:9464").is_err());
    }
    if TcpListener::bind(("127.0.0.1", DEFAULT_PORT)).is_err() {
        super::common::tools::skip("127.0.0.1:10155 is held already (an exporter running here?)");
        return;
    }
    let fx = Fixture::new();
    super::ledger(&fx);
    let mut daemon = fx.spawn(&["--otlp", "off"]);
    let served = wait_until(Duration::from_secs(20), || {
        http_get(DEFAULT_PORT, "/metrics", None)
            .is_some_and(|body| body.contains("reasonix_prompt_tokens_total{"))
    });
    assert!(daemon.is_running(), "run stopped: {}", daemon.log_text());
    let (status, _, log) = daemon.terminate();
    assert!(served, "nothing served on 127.0.0.1:{DEFAULT_PORT}: {log}");
    assert!(status.success(), "{log}");
    assert!(!log.contains(":9464"), "run spoke of 9464: {log}");
    drop(sdk);
}

#[test]
fn a_port_another_program_holds_is_one_line_naming_it_and_the_setting() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap().to_string();
    let fx = Fixture::new();
    let out = fx
        .command(&["run", "--otlp", "off", "--prometheus", &addr])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let line = the_error_line(&out);
    for needed in [addr.as_str(), "another program", "--prometheus"] {
        assert!(line.contains(needed), "{needed:?} missing from: {line}");
    }
}

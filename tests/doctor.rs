//! `doctor`: says exactly what is missing and how to fix it; never prints a header value.

mod common;

use common::receiver::Receiver;
use common::{Fixture, assert_success, free_port};

#[test]
fn on_a_machine_without_reasonix_doctor_names_what_is_missing_and_the_fix() {
    let fx = Fixture::new();
    std::fs::remove_dir_all(fx.home.join(".reasonix")).unwrap();
    let out = fx.run(&["doctor", "--otlp", "off", "--prometheus", "off"]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stats = fx.stats.display().to_string();
    assert!(
        stdout.contains(&format!(
            "PROBLEM  stats dir    {stats} (from default) does not exist"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("fix: install Reasonix"), "{stdout}");
    assert!(
        stdout.contains("none yet under"),
        "no store yet is not a problem: {stdout}"
    );
    assert!(!fx.state.exists(), "doctor creates nothing");
}

#[test]
fn healthy_setup_passes_and_header_values_stay_secret() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[r#"{"ts":"2026-08-07T00:22:43.5+08:00","model":"m/x","source":"cli","total":3}"#],
    );
    fx.ingest();
    let receiver = Receiver::grpc();
    let port = free_port();
    let out = fx
        .command(&[
            "doctor",
            "--otlp-endpoint",
            &receiver.endpoint,
            "--otlp-protocol",
            "grpc",
            "--prometheus",
            &format!("127.0.0.1:{port}"),
        ])
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20top-s3cret-value",
        )
        .output()
        .unwrap();
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 ledger files") && stdout.contains("newest line at 2026-08-07T00:22:43.5+08:00"),
        "{stdout}"
    );
    assert!(stdout.contains("1 lines counted, 1 series"), "{stdout}");
    assert!(stdout.contains("reachable, accepts exports"), "{stdout}");
    assert!(stdout.contains("1 header(s) set (values hidden)"), "{stdout}");
    assert!(stdout.contains("is free for /metrics"), "{stdout}");
    assert!(
        stdout.contains("sandbox") && stdout.contains("on (from default)"),
        "{stdout}"
    );
    let everything = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        !everything.contains("s3cret"),
        "a header value leaked: {everything}"
    );
    assert!(
        receiver.data_requests().is_empty(),
        "the reachability check carries no data"
    );
}

#[test]
fn unreachable_collector_and_taken_port_are_problems_with_fixes() {
    let fx = Fixture::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let closed = free_port();
    let out = fx
        .command(&[
            "doctor",
            "--otlp-endpoint",
            &format!("http://127.0.0.1:{closed}/v1/metrics"),
            "--prometheus",
            &format!("127.0.0.1:{port}"),
        ])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret-key")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("PROBLEM  OTLP") && stdout.contains("fix: start an OpenTelemetry Collector"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PROBLEM  Prometheus") && stdout.contains("fix: stop what uses the port"),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret"));
    drop(taken);
}

/// `docs/ledger-format.md`, "Where the files are": a state root Reasonix Studio moved with
/// `[storage] state` in Reasonix's `config.toml` is where the ledger is counted from, and
/// `doctor` says which link of the chain decided. The config file is never written.
#[test]
fn a_state_root_moved_in_reasonix_studios_config_is_followed_and_named() {
    let fx = Fixture::new();
    let moved = fx.root.path().join("moved");
    std::fs::create_dir_all(moved.join("stats")).unwrap();
    let config = fx.home.join(".reasonix").join("config.toml");
    let text = format!("[storage]\nstate = \"{}\"\n", moved.display());
    std::fs::write(&config, &text).unwrap();
    std::fs::write(
        moved.join("stats").join("2026-10-01.jsonl"),
        "{\"ts\":\"2026-10-01T10:00:00Z\",\"source\":\"code\",\"turn\":true}\n",
    )
    .unwrap();
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    assert_eq!(fx.status()["lines"]["counted"], 1);
    let out = fx.run(&["doctor", "--otlp", "off", "--prometheus", "off"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = format!(
        "{} (from [storage] state in Reasonix's config.toml)",
        moved.join("stats").display()
    );
    assert!(stdout.contains(&line), "{stdout}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text, "never written");
}

/// Answers every connection on a free port with `answer`, read or not; returns the port.
fn answering(answer: &'static [u8]) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            use std::io::{Read, Write};
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(200)));
            let _ = stream.read(&mut [0; 4096]);
            let _ = stream.write_all(answer);
        }
    });
    port
}

#[test]
fn doctors_fix_says_what_failed_a_path_without_otlp_or_another_protocol() {
    let fx = Fixture::new();
    let doctor = |endpoint: &str, protocol: &str| {
        let out = fx
            .command(&[
                "doctor",
                "--otlp-endpoint",
                endpoint,
                "--otlp-protocol",
                protocol,
                "--prometheus",
                "off",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let not_found = answering(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
    let said = doctor(
        &format!("http://127.0.0.1:{not_found}/v1/metric"),
        "http/protobuf",
    );
    assert!(
        said.contains("PROBLEM  OTLP") && said.contains("ends in /v1/metrics"),
        "{said}"
    );
    assert!(!said.contains("start an OpenTelemetry Collector"), "{said}");
    // gRPC to an HTTP/1.1 server: an answer that is not gRPC's.
    let http = answering(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let said = doctor(&format!("http://127.0.0.1:{http}"), "grpc");
    assert!(
        said.contains("PROBLEM  OTLP") && said.contains("not interchangeable"),
        "{said}"
    );
    // HTTP to a gRPC port.
    let grpc = common::receiver::Receiver::grpc();
    let said = doctor(&format!("{}/v1/metrics", grpc.endpoint), "http/protobuf");
    assert!(
        said.contains("PROBLEM  OTLP") && said.contains("that is a gRPC port"),
        "{said}"
    );
}

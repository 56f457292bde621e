//! Exports refused, unreachable, answered too late or in the wrong protocol: none lost or twice.

use super::*;

#[test]
fn failed_export_exits_non_zero_and_is_delivered_next_time() {
    let receiver = Receiver::grpc();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 5);

    receiver.refuse(true);
    let out = fx.export_to(&receiver);
    assert!(!out.status.success(), "a refused export must fail the run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&receiver.endpoint) && last.contains("exported next time"),
        "{stderr}"
    );
    // What was ingested stays committed.
    assert_eq!(fx.status(), model.expected.status_json());

    receiver.refuse(false);
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn unreachable_collector_fails_with_one_line_and_nothing_lost() {
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 6);
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = fx.run(&["once", "--otlp-endpoint", &format!("http://{closed}/v1/metrics")]);
    assert!(!out.status.success());
    common::the_error_line(&out);

    let receiver = Receiver::http();
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

fn check_late_answer_is_superseded_exactly(receiver: Receiver) {
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 12);
    // The collector keeps the data but answers after the exporter gave up: did it land?
    receiver.stall(Duration::from_millis(1500));
    let out = fx
        .once_to(&receiver)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
        .output()
        .unwrap();
    assert!(!out.status.success(), "a timed-out export fails the run");
    assert_eq!(receiver.data_requests().len(), 1, "the collector did get it");

    receiver.stall(Duration::ZERO);
    let more = Generator::new(4).day_file("2026-08-03", 40);
    fx.append("2026-08-03.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    assert_success(&fx.export_to(&receiver));
    // The next export carries the lifetime totals: it supersedes the first, landed or not.
    assert_eq!(receiver.newest_values(), model.expected.totals(), "counted once");
    assert_eq!(receiver.check_one_stream(), Ok(()));
}

#[test]
fn export_answered_too_late_is_superseded_without_double_counting_grpc() {
    check_late_answer_is_superseded_exactly(Receiver::grpc());
}

#[test]
fn export_answered_too_late_is_superseded_without_double_counting_http() {
    check_late_answer_is_superseded_exactly(Receiver::http());
}

/// OTLP over HTTP/1.1 sent to a gRPC port (HTTP/2 only) cannot have been taken: a wrong
/// protocol, said so, and with delta nothing is counted delivered that the collector lacks.
#[test]
fn http_to_a_grpc_port_is_a_wrong_protocol_and_delta_loses_nothing() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let text = Generator::new(6).day_file(&days(1)[0], 30);
    fx.append("2026-08-01.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    let grpc = Receiver::grpc();
    let delta = |protocol: &str| {
        fx.command(&[
            "once",
            "--otlp-endpoint",
            &grpc.endpoint,
            "--otlp-protocol",
            protocol,
        ])
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .output()
        .unwrap()
    };
    let out = delta("http/protobuf");
    assert!(!out.status.success());
    let line = common::the_error_line(&out);
    assert!(
        line.contains("does not speak HTTP/1.1") && line.contains("--otlp-protocol grpc"),
        "{line}"
    );
    assert_success(&delta("grpc"));
    assert_eq!(
        grpc.backend_totals(),
        model.expected.totals(),
        "the first export was not lost"
    );
}

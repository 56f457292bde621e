//! TLS to the collector: a private CA (`OTEL_EXPORTER_OTLP_CERTIFICATE`, `--otlp-certificate`)
//! and a client certificate for mutual TLS, against real gRPC and HTTP receivers that require
//! one, with a CA made for the test. A certificate nobody vouches for is refused, and what was
//! not delivered is delivered, exactly once, when TLS is fixed.

mod common;

use common::generator::{Generator, days};
use common::model::Model;
use common::pki::Pki;
use common::receiver::Receiver;
use common::{Fixture, assert_success, the_error_line};

fn ledger(fx: &Fixture, model: &mut Model) {
    let mut generator = Generator::new(5);
    for day in days(3) {
        let text = generator.day_file(&day, 60);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
}

/// A fixture with a ledger, a fresh CA, and a receiver (gRPC or HTTP) that requires a client
/// certificate from it; the model holds the ledger's expected totals.
fn tls_case(grpc: bool) -> (Fixture, Pki, Receiver, Model) {
    let fx = Fixture::new();
    let pki = Pki::new(fx.root.path());
    let receiver = if grpc {
        Receiver::grpc_tls(&pki)
    } else {
        Receiver::http_tls(&pki)
    };
    let mut model = Model::default();
    ledger(&fx, &mut model);
    (fx, pki, receiver, model)
}

/// The run succeeded, the collector has exactly the ledger's totals, and no key material was
/// logged.
fn assert_delivered(out: &std::process::Output, receiver: &Receiver, model: &Model, pki: &Pki) {
    assert_success(out);
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "over {}",
        receiver.protocol
    );
    assert_no_key_material(out, pki);
}

fn once_to(
    fx: &Fixture,
    receiver: &Receiver,
    extra: &[&str],
    env: &[(&str, &std::path::Path)],
) -> std::process::Output {
    let mut cmd = fx.command(&[
        "--log-level",
        "trace",
        "once",
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
    ]);
    cmd.args(extra);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().expect("run the exporter")
}

/// Neither the key's bytes nor the certificates' reach a log line, even at trace level.
fn assert_no_key_material(out: &std::process::Output, pki: &Pki) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    for file in [&pki.client_key, &pki.client_cert, &pki.ca] {
        let pem = std::fs::read_to_string(file).unwrap();
        let body = pem.lines().nth(1).unwrap();
        assert!(!stderr.contains(body), "{} leaked into the log", file.display());
    }
}

#[test]
fn grpc_with_a_private_ca_and_a_client_certificate_from_the_otel_variables_delivers_exact_totals() {
    let (fx, pki, receiver, model) = tls_case(true);
    let out = once_to(
        &fx,
        &receiver,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &pki.ca),
            ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", &pki.client_cert),
            ("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", &pki.client_key),
        ],
    );
    assert_delivered(&out, &receiver, &model, &pki);
}

#[test]
fn http_with_a_private_ca_and_a_client_certificate_from_flags_delivers_exact_totals() {
    let (fx, pki, receiver, model) = tls_case(false);
    let (ca, cert, key) = (
        pki.ca.to_str().unwrap(),
        pki.client_cert.to_str().unwrap(),
        pki.client_key.to_str().unwrap(),
    );
    let out = once_to(
        &fx,
        &receiver,
        &[
            "--otlp-certificate",
            ca,
            "--otlp-client-certificate",
            cert,
            "--otlp-client-key",
            key,
        ],
        &[],
    );
    assert_delivered(&out, &receiver, &model, &pki);
}

/// Without the private CA the collector's certificate is not trusted; without the client
/// certificate the collector refuses the exporter. Either way nothing is delivered, the export
/// stays pending, and once TLS is right it arrives exactly once.
fn refused_until_tls_is_right(grpc: bool) {
    let (fx, pki, receiver, model) = tls_case(grpc);
    let ca = ("OTEL_EXPORTER_OTLP_CERTIFICATE", pki.ca.as_path());
    let cert = ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", pki.client_cert.as_path());
    let key = ("OTEL_EXPORTER_OTLP_CLIENT_KEY", pki.client_key.as_path());

    let unknown_ca = once_to(&fx, &receiver, &[], &[cert, key]);
    assert!(!unknown_ca.status.success(), "an unknown CA must fail the export");
    let line = the_error_line(&unknown_ca);
    assert!(
        line.contains("UnknownIssuer") && line.contains("OTEL_EXPORTER_OTLP_CERTIFICATE"),
        "{line}"
    );
    let no_client_cert = once_to(&fx, &receiver, &[], &[ca]);
    assert!(
        !no_client_cert.status.success(),
        "a missing client certificate must fail the export"
    );
    // Over HTTP the collector's alert reaches the exporter during the handshake, and names the
    // fix; over gRPC (TLS 1.3) it arrives after it, as a broken stream that says no more.
    if !grpc {
        let line = the_error_line(&no_client_cert);
        assert!(line.contains("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), "{line}");
    }
    assert!(
        receiver.data_requests().is_empty(),
        "nothing may arrive without mutual TLS"
    );
    assert_eq!(
        fx.status()["lines"]["counted"],
        model.expected.counted,
        "the lines are counted"
    );

    assert_success(&once_to(&fx, &receiver, &[], &[ca, cert, key]));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn grpc_refuses_an_unknown_collector_and_an_anonymous_exporter_then_delivers_exactly_once() {
    refused_until_tls_is_right(true);
}

#[test]
fn http_refuses_an_unknown_collector_and_an_anonymous_exporter_then_delivers_exactly_once() {
    refused_until_tls_is_right(false);
}

#[test]
fn tls_settings_that_cannot_work_are_one_line_errors_naming_the_setting() {
    let fx = Fixture::new();
    let pki = Pki::new(fx.root.path());
    let missing = fx.root.path().join("nowhere.pem");
    let https = "https://localhost:4318/v1/metrics";
    let cases: [(&str, &str, &std::path::Path, &[&str]); 4] = [
        // A CA for a plain-http endpoint: almost certainly a forgotten https.
        (
            "http://127.0.0.1:4318/v1/metrics",
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            &pki.ca,
            &["OTEL_EXPORTER_OTLP_CERTIFICATE", "https://"],
        ),
        // Half a client identity.
        (
            https,
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
            &pki.client_cert,
            &["OTEL_EXPORTER_OTLP_CLIENT_KEY"],
        ),
        // A key where the CA should be: named, and its bytes not shown.
        (
            https,
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            &pki.client_key,
            &["client.key", "OTEL_EXPORTER_OTLP_CERTIFICATE"],
        ),
        // A path that is not there.
        (
            https,
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            &missing,
            &["nowhere.pem"],
        ),
    ];
    for (endpoint, var, path, expected) in cases {
        let out = fx
            .command(&["once", "--otlp-endpoint", endpoint])
            .env(var, path)
            .output()
            .unwrap();
        let line = the_error_line(&out);
        assert!(expected.iter().all(|e| line.contains(e)), "{line}");
        assert_no_key_material(&out, &pki);
    }
}

/// Without a CA setting, the system's trust store decides, read inside the sandbox: here it is
/// pointed at the test CA with `SSL_CERT_FILE`, as an operator would add a CA system-wide.
#[test]
fn without_a_ca_setting_the_system_trust_store_is_used_inside_the_sandbox() {
    for grpc in [true, false] {
        let (fx, pki, receiver, model) = tls_case(grpc);
        let out = once_to(
            &fx,
            &receiver,
            &[],
            &[
                ("SSL_CERT_FILE", &pki.ca),
                ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", &pki.client_cert),
                ("OTEL_EXPORTER_OTLP_CLIENT_KEY", &pki.client_key),
            ],
        );
        assert_delivered(&out, &receiver, &model, &pki);
    }
}

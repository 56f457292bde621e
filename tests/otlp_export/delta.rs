//! Delta temporality: exact totals, never past the truth when answers are lost or unreadable.

use super::*;

#[test]
fn delta_temporality_delivers_exact_totals() {
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 8);
    let run = || {
        fx.command(&["once", "--otlp-endpoint", &receiver.endpoint])
            .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
            .output()
            .unwrap()
    };
    assert_success(&run());
    receiver.refuse(true);
    let more = Generator::new(3).day_file("2026-08-02", 50);
    fx.append("2026-08-02.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    assert!(!run().status.success());
    receiver.refuse(false);
    assert_success(&run());
    assert_success(&run());
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    let temporalities: Vec<i32> = receiver
        .requests()
        .iter()
        .flat_map(|r| r.resource_metrics.iter())
        .flat_map(|rm| rm.scope_metrics.iter())
        .flat_map(|sm| sm.metrics.iter())
        .filter(|m| m.name.starts_with("reasonix."))
        .filter_map(|m| match &m.data {
            Some(opentelemetry_proto::tonic::metrics::v1::metric::Data::Sum(s)) => {
                Some(s.aggregation_temporality)
            }
            _ => None,
        })
        .collect();
    assert!(
        !temporalities.is_empty() && temporalities.iter().all(|t| *t == 1),
        "all delta"
    );
}

/// Delta: an export whose answer never comes (the collector read the body and closed the
/// connection, or answered too late) counts as delivered, so the backend may fall short of the
/// truth but never goes past it; a refused one is sent again.
#[test]
fn delta_with_answers_dropped_never_exceeds_the_truth() {
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 21);
    let mut generator = Generator::new(22);
    for (receiver, flaky) in [(Receiver::http(), "closes"), (Receiver::grpc(), "stalls")] {
        let run = || {
            fx.once_to(&receiver)
                .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
                .env("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
                .output()
                .unwrap()
        };
        for round in 0..3 {
            let day = format!("2026-09-0{}", round + 1);
            let text = generator.day_file(&day, 30);
            fx.append(&format!("{day}.jsonl"), text.as_bytes());
            model.feed(text.as_bytes());
            match flaky {
                "closes" => receiver.drop_answers(true),
                _ => receiver.stall(Duration::from_millis(1000)),
            }
            assert!(!run().status.success(), "{flaky}: no answer fails the run");
            let landed = receiver.backend_totals();
            for (series, truth) in model.expected.totals() {
                let got = landed.get(&series).copied().unwrap_or_default();
                assert!(
                    got.iter().zip(truth).all(|(g, t)| *g <= t),
                    "{flaky}, round {round}: {series:?} has {got:?}, more than the truth {truth:?}"
                );
            }
        }
        receiver.drop_answers(false);
        receiver.stall(Duration::ZERO);
        assert_success(&run());
        if flaky == "closes" {
            // Every body did land: nothing was sent twice, so this collector has the truth.
            assert_eq!(receiver.backend_totals(), model.expected.totals());
        }
    }
}

/// Contract §4, "Delta": an answer that cannot be decoded (here past tonic's 4 MiB limit) is an
/// outcome unknown, counted as delivered, never a refusal sent again: delta never over-counts.
#[test]
fn delta_over_grpc_with_unreadable_answers_never_exceeds_the_truth() {
    let receiver = Receiver::grpc();
    receiver.endless_answers(true);
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 12);
    for run in 0..3 {
        let out = fx
            .command(&[
                "once",
                "--otlp-protocol",
                "grpc",
                "--otlp-endpoint",
                &receiver.endpoint,
            ])
            .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The first run sends everything; the later ones have nothing new to send.
        assert_eq!(stderr.contains("outcome unknown"), run == 0, "{stderr}");
        assert!(!stderr.contains("refused"), "{stderr}");
    }
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn delta_with_nothing_new_says_so_and_never_that_it_exported() {
    let fx = Fixture::new();
    fx.append(
        "2026-08-01.jsonl",
        Generator::new(5).day_file(&days(1)[0], 20).as_bytes(),
    );
    let receiver = Receiver::http();
    let delta = |endpoint: &str| {
        fx.command(&[
            "once",
            "--otlp-endpoint",
            endpoint,
            "--otlp-protocol",
            "http/protobuf",
        ])
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .output()
        .unwrap()
    };
    assert_success(&delta(&receiver.endpoint));
    let closed = format!("http://127.0.0.1:{}/v1/metrics", common::free_port());
    let out = delta(&closed);
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("nothing new to export") && said.contains("not contacted"),
        "{said}"
    );
    assert!(!said.contains("exported 0"), "{said}");
}

/// A listener whose accept queue is full (Linux): a connect to it never completes (Linux drops the SYN),
/// as with a collector host that is down or firewalled. The connections filling the queue are
/// kept with it.
#[cfg(target_os = "linux")]
fn never_connecting() -> (std::net::TcpListener, Vec<std::net::TcpStream>, String) {
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: a listening socket this function owns; listen(2) only changes its backlog.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    // A backlog of 0 holds one connection; a few more make sure the queue is full.
    for _ in 0..4 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(stream) => fillers.push(stream),
            Err(_) => break,
        }
    }
    (listener, fillers, format!("http://{addr}/v1/metrics"))
}

/// Delta: an export that never got past the connect sent nothing, so it is not counted as
/// delivered: the same increments go out once the collector is reachable (contract §4,
/// "collector down for hours: nothing lost").
#[cfg(target_os = "linux")]
#[test]
fn delta_whose_connect_never_completes_sends_the_same_lines_later() {
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 5);
    let (_listener, _fillers, unreachable) = never_connecting();
    let out = fx
        .command(&["once", "--otlp-endpoint", &unreachable])
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
        .output()
        .unwrap();
    assert!(!out.status.success(), "nothing was exported");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("outcome unknown"), "nothing was sent: {stderr}");
    let out = fx
        .command(&["once", "--otlp-endpoint", &receiver.endpoint])
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

/// Delta across a store rebuilt from the ledger (`--reset-state`, the store's folder deleted):
/// what the collector has is kept in the stream record, which outlives the store, so nothing it
/// has is sent again (contract §4: delta may under-count, never over-count).
#[test]
fn delta_after_a_rebuild_sends_nothing_twice() {
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 6);
    let run = |extra: &[&str]| {
        let mut args = vec!["once", "--otlp-endpoint", &receiver.endpoint];
        args.extend_from_slice(extra);
        fx.command(&args)
            .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
            .output()
            .unwrap()
    };
    assert_success(&run(&[]));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    assert_success(&run(&["--reset-state"]));
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "--reset-state sent again"
    );
    let more = Generator::new(8).day_file("2026-08-05", 40);
    fx.append("2026-08-05.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    assert_success(&run(&[]));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    std::fs::remove_dir_all(fx.state.join("store")).unwrap();
    assert_success(&run(&[]));
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "a deleted store sent again"
    );
}

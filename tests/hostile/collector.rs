//! The collector's end: credentials in the endpoint, redirects, refusals, sizes, what it says back.

use super::*;

const SECRET: &str = "pa55-s3cret";

#[test]
fn credentials_in_the_endpoint_url_never_reach_output() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 8, 20);
    // Nothing listens on port 9: every command reports a failure that names the endpoint.
    let endpoint = format!("http://exporter:{SECRET}@127.0.0.1:9/v1/metrics?api_key={SECRET}");
    let mut outputs = vec![
        fx.run(&["once", "--otlp-endpoint", &endpoint]),
        fx.run(&["doctor", "--otlp-endpoint", &endpoint]),
        fx.run(&[
            "once",
            "--otlp-endpoint",
            &format!("ftp://u:{SECRET}@h/?k={SECRET}"),
        ]),
    ];
    // Mistyped, and passwords holding what ends a URL's authority.
    for endpoint in [
        format!("http:/user:{SECRET}@127.0.0.1:9/v1/metrics"),
        format!("https//user:{SECRET}@127.0.0.1:9/v1/metrics"),
        format!("http://user:x/{SECRET}@127.0.0.1:9/v1/metrics"),
        format!("http://user:x?{SECRET}@127.0.0.1:9/v1/metrics"),
        format!("http://user:x#{SECRET}@127.0.0.1:9/v1/metrics"),
    ] {
        outputs.push(fx.run(&["once", "--otlp-endpoint", &endpoint]));
        outputs.push(fx.run(&["doctor", "--otlp-endpoint", &endpoint]));
    }
    let daemon = fx.spawn(&["--otlp-endpoint", &endpoint, "--prometheus", "off"]);
    assert!(wait_until(Duration::from_secs(20), || daemon
        .log_text()
        .contains("127.0.0.1:9")));
    let (_, _, log) = daemon.terminate();
    for out in &mut outputs {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("***@"), "the endpoint is shown, redacted: {text}");
        assert!(!text.contains(SECRET), "a credential leaked: {text}");
    }
    assert!(log.contains("***@127.0.0.1:9/v1/metrics?***"), "{log}");
    assert!(!log.contains(SECRET), "a credential leaked: {log}");
}

#[test]
fn a_redirect_is_not_followed_and_carries_no_header_away() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 9, 20);
    let elsewhere = Receiver::http();
    // A "collector" that sends everything to another origin.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = elsewhere.endpoint.clone();
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Read, Write};
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let reply =
                format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n");
            let _ = reader.get_mut().write_all(reply.as_bytes());
        }
    });
    let out = fx
        .command(&[
            "once",
            "--otlp-endpoint",
            &format!("http://127.0.0.1:{port}/v1/metrics"),
        ])
        .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-api-key={SECRET}"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "a redirect is a failed export");
    let error = the_error_line(&out);
    assert!(error.contains("307") && error.contains("redirect"), "{error}");
    assert!(
        elsewhere.requests().is_empty(),
        "the payload followed the redirect"
    );
}

#[test]
fn a_collector_that_drops_points_or_asks_to_wait_is_heard() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 12, 30);
    let receiver = Receiver::http();
    receiver.partial(5);
    let out = fx.export_to(&receiver);
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rejected 5 data points") && stderr.contains("datapoint too old"),
        "a partial success is a warning with the count and the collector's words: {stderr}"
    );
    assert!(!stderr.contains("nothing was lost"), "{stderr}");

    // Refusing with Retry-After: 3 s. The daemon's own backoff would retry after 1 s.
    receiver.partial(0);
    receiver.refuse(true);
    receiver.retry_after(3);
    let before = receiver.arrivals().len();
    let daemon = fx.spawn(&["--otlp-endpoint", &receiver.endpoint, "--prometheus", "off"]);
    assert!(wait_until(Duration::from_secs(30), || receiver.arrivals().len()
        >= before + 2));
    let arrivals = receiver.arrivals();
    let gap = arrivals[before + 1].0 - arrivals[before].0;
    assert!(
        gap >= Duration::from_millis(2900),
        "retried after {gap:?}, not after Retry-After's 3 s"
    );
    drop(daemon);
}

#[test]
fn an_oversized_export_is_split_and_a_refusal_as_too_large_shrinks_it() {
    let fx = Fixture::new();
    let mut model = Model::default();
    // 1,000 series (the most there are) with long model names: about 5 MB in one request.
    let lines: Vec<String> = (0..1000)
        .map(|i| {
            let model = format!("deepseek/{}-{i:04}", "m".repeat(230));
            format!(r#"{{"ts":"2026-08-01T10:00:00Z","model":"{model}","source":"cli","prompt":{},"completion":3,"reasoning":1,"cache_hit":2,"cache_miss":{},"total":{},"requests":1}}"#, 10 + i, 8 + i, 13 + i)
        })
        .collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fx.append("2026-08-01.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    let receiver = Receiver::http();
    // A collector that takes at most 256 KiB per request, as a gateway might: each refusal as too
    // large halves the requests until they fit.
    receiver.max_body(256 << 10);
    let out = fx.export_to(&receiver);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("too large"));
    let got = receiver.backend_totals();
    let want = model.expected.totals();
    let wrong = want.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
    assert!(
        got.len() == want.len() && wrong == 0,
        "{} series received of {}, {wrong} wrong",
        got.len(),
        want.len()
    );
    let sizes: Vec<usize> = receiver.arrivals().iter().map(|(_, size)| *size).collect();
    assert!(
        sizes.iter().all(|s| *s <= 4 << 20),
        "every request is at most 4 MiB: {sizes:?}"
    );
    let taken: Vec<usize> = receiver
        .requests()
        .iter()
        .map(prost::Message::encoded_len)
        .collect();
    assert!(
        taken.len() >= 8 && taken.iter().all(|s| *s <= 256 << 10),
        "the export was split to fit: {taken:?}"
    );

    // A collector that keeps refusing: the daemon says the refusal repeats, and `doctor` says so.
    let stubborn = Receiver::http();
    stubborn.refuse(true);
    let daemon = fx.spawn(&["--otlp-endpoint", &stubborn.endpoint, "--prometheus", "off"]);
    assert!(
        wait_until(Duration::from_secs(30), || daemon
            .log_text()
            .contains("refused 3 exports in a row")),
        "{}",
        daemon.log_text()
    );
    let doctor = fx.run(&["doctor", "--otlp-endpoint", &stubborn.endpoint]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(!doctor.status.success(), "doctor finds a problem: {text}");
    assert!(text.contains("were refused"), "{text}");
    drop(daemon);
    let _ = Instant::now();
}

/// Contract §7: what a collector says back never reaches a log line or a terminal raw: a
/// newline in its gRPC status cannot start a forged log line, an escape sequence is inert.
#[test]
fn a_collectors_words_cannot_forge_a_log_line_or_reach_the_terminal() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 8, 20);
    let receiver = Receiver::grpc();
    receiver.refuse_saying("busy\n2026-12-02T10:00:00.000000Z  INFO exported 46 data points\x1b[2J");
    let target = [
        "--otlp-protocol",
        receiver.protocol,
        "--otlp-endpoint",
        &receiver.endpoint,
    ];
    let outputs = [
        fx.run(&[&["once"][..], &target].concat()),
        fx.run(&[&["doctor"][..], &target].concat()),
    ];
    let daemon = fx.spawn(&[&target[..], &["--prometheus", "off"]].concat());
    assert!(wait_until(Duration::from_secs(20), || daemon
        .log_text()
        .contains("busy")));
    let (_, _, log) = daemon.terminate();
    let texts = outputs.iter().map(|out| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    for text in texts.chain([log]) {
        assert!(
            text.contains("busy\\u{a}2026-12-02"),
            "the answer is shown, escaped: {text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("2026-12-02T10:00:00.000000Z")),
            "a forged line: {text}"
        );
        assert!(
            !text.contains('\x1b'),
            "an escape sequence reached the output: {text}"
        );
    }
}

/// Contract §7: what a collector sends back is bounded in size: an answer that never ends (a
/// chunked 200 over HTTP) costs `once` and `doctor` no more memory than a short one.
#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
fn an_endless_answer_from_the_collector_is_read_in_bounded_memory() {
    if !std::path::Path::new("/usr/bin/time").exists() {
        common::tools::skip("GNU time is not installed (apt-get install time)");
        return;
    }
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 8, 20);
    let receiver = Receiver::http();
    receiver.endless_answers(true);
    let report = fx.root.path().join("time.txt");
    let report_arg = report.display().to_string();
    for (args, code) in [
        (&["once", "--otlp-endpoint", &receiver.endpoint][..], Some(0)),
        (&["doctor", "--otlp-endpoint", &receiver.endpoint], None),
    ] {
        let started = Instant::now();
        let out = fx
            .command_via("/usr/bin/time", &["-f", "%M", "-o", &report_arg], args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let measured = std::fs::read_to_string(&report).unwrap_or_default();
        let peak: u64 = measured
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("GNU time's report: {measured}"));
        assert!(peak < 150 * 1024, "{args:?}: {peak} KiB at its peak: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{args:?} took {:?}",
            started.elapsed()
        );
        if code.is_some() {
            assert_eq!(out.status.code(), code, "{args:?}: {stderr}");
        }
    }
}

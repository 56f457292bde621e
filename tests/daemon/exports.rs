//! What `run` delivers: bursts, SIGTERM's tail, `kill -9`, a collector down or hanging, one stream.

use super::*;

#[test]
fn run_delivers_bursts_exactly_and_sigterm_delivers_the_tail() {
    let fx = Fixture::new();
    let receiver = Receiver::grpc();
    let mut model = Model::default();
    let mut generator = Generator::new(31);
    let all_days = days(4);
    let first = generator.day_file(&all_days[0], 300);
    fx.append(&format!("{}.jsonl", all_days[0]), first.as_bytes());
    model.feed(first.as_bytes());

    let args = daemon_args(&receiver);
    let daemon = fx.spawn(&strs(&args));
    let port = daemon.metrics_port();
    assert!(
        wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()),
        "backfill not delivered: {}",
        daemon.log_text()
    );

    // Bursts of lines, split writes, and a new day file appearing while running.
    for (i, day) in all_days.iter().enumerate().skip(1) {
        for _ in 0..3 {
            let burst = generator.day_file(day, 40 + i * 7);
            let (a, b) = burst.split_at(burst.len() / 3);
            fx.append(&format!("{day}.jsonl"), a.as_bytes());
            fx.append(&format!("{day}.jsonl"), b.as_bytes());
            model.feed(burst.as_bytes());
        }
        assert!(
            wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()),
            "burst on {day} not delivered"
        );
    }
    assert_eq!(
        scrape_totals(port).unwrap(),
        model.expected.totals(),
        "/metrics shows the same totals"
    );

    // The tail: lines appended just before SIGTERM are committed and exported on the way out.
    let tail = generator.day_file(&all_days[3], 25);
    fx.append(&format!("{}.jsonl", all_days[3]), tail.as_bytes());
    model.feed(tail.as_bytes());
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "exit {status:?}: {log}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "the tail went out: {log}"
    );
    assert_eq!(fx.status()["series"], model.expected.status_json()["series"]);
}

/// SIGTERM's tail over several files: lines appended to two day files that no poll has read yet
/// (no file events, a long poll interval) are all committed and exported on the way out, not
/// only the first file's.
#[test]
fn sigterm_delivers_the_tail_of_every_changed_file() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(41);
    let all_days = days(3);
    for day in &all_days {
        let text = generator.day_file(day, 50);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let mut args = daemon_args(&receiver);
    let interval = args.iter().position(|a| a == "--poll-interval").unwrap() + 1;
    args[interval] = "1h".into();
    args.extend(["--watch", "off"].map(String::from));
    let daemon = fx.spawn(&strs(&args));
    assert!(
        wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()),
        "backfill not delivered: {}",
        daemon.log_text()
    );
    for day in &all_days[1..] {
        let tail = generator.day_file(day, 20);
        fx.append(&format!("{day}.jsonl"), tail.as_bytes());
        model.feed(tail.as_bytes());
    }
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "exit {status:?}: {log}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "every file's tail went out: {log}"
    );
}

#[test]
fn run_killed_with_9_then_restarted_delivers_exact_totals() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(32);
    let all_days = days(6);
    let args = daemon_args(&receiver);
    for (round, day) in all_days.iter().enumerate() {
        let daemon = fx.spawn(&strs(&args));
        let port = daemon.metrics_port();
        let text = generator.day_file(day, 400);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
        // Wait for the ledger to be committed (visible on /metrics), then kill at a moment that
        // varies with the round: right away, or after some exports went out.
        assert!(wait_until(PATIENCE, || scrape_totals(port) == Some(model.expected.totals())));
        std::thread::sleep(Duration::from_millis(60 * round as u64));
        daemon.kill9();
    }
    let daemon = fx.spawn(&strs(&args));
    let port = daemon.metrics_port();
    assert!(
        wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()),
        "after restarts, backend {:?}",
        receiver.backend_totals().len()
    );
    // Stop it only once it is serving, so that the stop is the graceful path under test.
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some()));
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn sigterm_with_a_hanging_collector_exits_within_five_seconds_and_loses_nothing() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let text = Generator::new(36).day_file("2026-08-01", 300);
    fx.append("2026-08-01.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    // The collector takes requests and never answers in time (the default timeout is 10 s).
    receiver.stall(Duration::from_secs(30));
    let args = daemon_args(&receiver);
    let daemon = fx.spawn_with(&strs(&args), &[("RUST_LOG", "info")]);
    assert!(
        wait_until(PATIENCE, || !receiver.requests().is_empty()),
        "an export is in flight"
    );
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert!(
        log.contains("the next run sends it") || log.contains("replayed by the next run"),
        "{log}"
    );

    // The collector recovers; the next run settles what was left.
    receiver.stall(Duration::ZERO);
    let daemon = fx.spawn(&strs(&args));
    assert!(wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()));
    drop(daemon);
}

#[test]
fn collector_down_then_up_loses_nothing_and_warns_once_per_outage() {
    let fx = Fixture::new();
    let receiver = Receiver::grpc();
    receiver.refuse(true);
    let mut model = Model::default();
    let mut generator = Generator::new(33);
    let day = &days(1)[0];
    let text = generator.day_file(day, 200);
    fx.append(&format!("{day}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());

    let args = daemon_args(&receiver);
    let daemon = fx.spawn(&strs(&args));
    let port = daemon.metrics_port();
    // Ingestion goes on while the collector refuses everything.
    let more = generator.day_file(day, 50);
    fx.append(&format!("{day}.jsonl"), more.as_bytes());
    model.feed(more.as_bytes());
    assert!(wait_until(PATIENCE, || scrape_totals(port) == Some(model.expected.totals())));
    assert!(wait_until(PATIENCE, || {
        let body = common::http_get(port, "/metrics", None).unwrap_or_default();
        body.lines().any(|l| {
            l.starts_with("reasonix_exporter_export_failures_total ")
                && !l.ends_with(" 0")
                && !l.ends_with(" 1")
        })
    }));
    assert!(receiver.backend_totals().is_empty());
    // Each sink's last delivery, as node_exporter says of each collector.
    let serves = |line: &str| {
        common::http_get(port, "/metrics", None)
            .unwrap_or_default()
            .lines()
            .any(|l| l == line)
    };
    assert!(wait_until(PATIENCE, || serves(
        r#"reasonix_exporter_sink_success{sink="otlp"} 0"#
    )));
    assert!(serves(r#"reasonix_exporter_sink_success{sink="prometheus"} 1"#));
    let body = common::http_get(port, "/metrics", None).unwrap_or_default();
    assert!(
        body.lines()
            .any(|l| l.starts_with(r#"reasonix_exporter_sink_duration_seconds{sink="otlp"} "#)),
        "{body}"
    );

    receiver.refuse(false);
    assert!(wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()));
    assert!(wait_until(PATIENCE, || serves(
        r#"reasonix_exporter_sink_success{sink="otlp"} 1"#
    )));
    let (status, _, log) = daemon.terminate();
    assert!(status.success());
    assert_eq!(
        log.matches("retrying with backoff").count(),
        1,
        "one warning when the outage starts: {log}"
    );
    assert_eq!(
        log.matches("works again").count(),
        1,
        "one note when it ends: {log}"
    );
}

#[test]
fn sigterm_during_a_backfill_stops_within_a_second_and_the_next_run_finishes_it() {
    let fx = Fixture::new();
    // A backfill large enough that the signal lands while it runs.
    let mut model = Model::default();
    let mut generator = Generator::new(34);
    for day in ["2026-08-01", "2026-08-02", "2026-08-03", "2026-08-04"] {
        let text = generator.day_file(day, 60_000);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", "off"]);
    // The store's lock holds the pid once the store is open: the backfill starts right after.
    let pid = daemon.child.id().to_string();
    let lock = fx.state.join("lock");
    assert!(wait_until(PATIENCE, || std::fs::read_to_string(&lock)
        .is_ok_and(|s| s.trim() == pid)));
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "exit {status:?}: {log}");
    assert!(
        took < Duration::from_secs(1),
        "stopped {took:?} after SIGTERM: {log}"
    );
    let partial = fx.status();
    assert!(
        partial["lines"]["read"].as_u64().unwrap() < model.expected.read,
        "the signal came before the backfill ended: {}",
        partial["lines"]
    );
    // What was committed stays; the next run reads the rest, exactly once.
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

/// Every export of a store belongs to one cumulative stream: across `run` with new series
/// mid-run, SIGTERM, `kill -9`, restarts, `once` over both protocols and `--reset-state`, every
/// point has the store's one start time and instance, no value goes down, and the newest values
/// are the truth.
#[test]
fn one_stream_for_the_stores_life_across_runs_kills_and_rebuilds() {
    let fx = Fixture::new();
    let receiver = Receiver::grpc();
    let http = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(34);
    let args = daemon_args(&receiver);
    let all_days = days(3);
    for (round, day) in all_days.iter().enumerate() {
        let daemon = fx.spawn(&strs(&args));
        let text = generator.day_file(day, 100 * (round + 1));
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
        assert!(wait_until(PATIENCE, || receiver.newest_values() == model.expected.totals()));
        // A model nobody used before, mid-run.
        let line = format!(
            r#"{{"ts":"{day}T12:00:00Z","model":"brand/new-{round}","source":"cli","prompt":7,"completion":3,"total":10}}"#
        );
        fx.append_lines(&format!("{day}.jsonl"), &[&line]);
        model.line(line.as_bytes());
        assert!(wait_until(PATIENCE, || receiver.newest_values() == model.expected.totals()));
        if round == 1 {
            daemon.kill9();
        } else {
            let (status, _, log) = daemon.terminate();
            assert!(status.success(), "{log}");
        }
        for once in [&receiver, &http] {
            assert_success(&fx.export_to(once));
        }
        assert_eq!(receiver.check_one_stream(), Ok(()), "after round {round}");
        assert_eq!(http.check_one_stream(), Ok(()), "after round {round}");
    }
    assert_success(&fx.once_to(&receiver).arg("--reset-state").output().unwrap());
    assert_eq!(receiver.check_one_stream(), Ok(()), "after --reset-state");
    assert_eq!(receiver.newest_values(), model.expected.totals());
    assert_eq!(
        receiver.start_times(),
        http.start_times(),
        "both protocols carry one stream"
    );
}

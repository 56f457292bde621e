//! `run`, the daemon, end to end: live ingestion of bursts and new day files, periodic export to
//! a real receiver, SIGTERM delivering the tail, `kill -9` and restart, a collector that is down
//! and comes back, and `/metrics`.
//!
//! These run the real process on the wall clock. Waits are polls until a condition holds, up to
//! `PATIENCE` (20 s, far beyond what any of them needs on a quiet machine); the few that assert a
//! time say their margin where they do. When something must happen at a given moment of the
//! schedule (the next poll, not one earlier), it is tested on tokio's paused clock instead, in
//! `src/daemon/tests.rs`, to the millisecond.

mod common;

use std::time::{Duration, Instant};

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, scrape_totals, wait_until};

const PATIENCE: Duration = Duration::from_secs(20);

fn daemon_args(receiver: &Receiver) -> Vec<String> {
    [
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
        "--export-interval",
        "300ms",
        "--poll-interval",
        "500ms",
        "--prometheus",
        "127.0.0.1:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

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
fn json_logs_are_one_object_per_line() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-01.jsonl", &[r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","source":"cli","total":9,"prompt_text":"SECRET-PROMPT"}"#]);
    let daemon = fx.spawn(&[
        "--otlp",
        "off",
        "--prometheus",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--log-level",
        "debug",
    ]);
    let port = daemon.metrics_port();
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some_and(|t| !t.is_empty())));
    let (status, _, log) = daemon.terminate();
    assert!(status.success());
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 3, "{log}");
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            event["level"].is_string() && event["fields"]["message"].is_string(),
            "{line}"
        );
        // Every event of ours is named, for a log shipper to filter on without parsing the
        // sentence; the poll's carries its counts as fields.
        let name = event["fields"]["event"]
            .as_str()
            .unwrap_or_else(|| panic!("no event name: {line}"));
        if name == "ingest.poll" {
            assert!(
                event["fields"]["counted"].is_u64() && event["fields"]["duration_ms"].is_u64(),
                "{line}"
            );
        }
    }
    assert!(log.contains(r#""event":"ingest.poll""#), "{log}");
    assert!(!log.contains("SECRET-PROMPT"));
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

    receiver.refuse(false);
    assert!(wait_until(PATIENCE, || receiver.backend_totals() == model.expected.totals()));
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
fn a_new_line_is_committed_within_a_second() {
    let fx = Fixture::new();
    let (daemon, port) = fx.spawn_serving(&[]);
    let mut worst = Duration::ZERO;
    for i in 0..20u64 {
        let line = format!(
            r#"{{"ts":"2026-08-01T10:00:{:02}Z","model":"m/x","source":"cli","total":{}}}"#,
            i,
            i + 1
        );
        let written = Instant::now();
        fx.append_lines("2026-08-01.jsonl", &[&line]);
        let want = (1..=i + 1).sum::<u64>();
        assert!(wait_until(Duration::from_secs(5), || {
            scrape_totals(port).and_then(|t| t.get(&("m/x".into(), "m".into(), "cli".into())).map(|v| v[5]))
                == Some(want)
        }));
        worst = worst.max(written.elapsed());
    }
    drop(daemon);
    assert!(
        worst < Duration::from_secs(1),
        "slowest newline → committed: {worst:?}"
    );
}

/// User plus system CPU time of a process, from /proc.
#[cfg(target_os = "linux")]
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ is 100 on Linux
}

#[test]
#[cfg(target_os = "linux")]
fn an_idle_daemon_does_not_spin() {
    let fx = Fixture::new();
    let text = Generator::new(35).day_file("2026-08-01", 2_000);
    fx.append("2026-08-01.jsonl", text.as_bytes());
    let (daemon, port) = fx.spawn_serving(&["--poll-interval", "200ms"]);
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some_and(|t| !t.is_empty())));
    let pid = daemon.child.id();
    let before = cpu_seconds(pid);
    // The measurement window: nothing happens in the ledger for three seconds.
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_seconds(pid) - before;
    drop(daemon);
    // Fifteen idle polls of one file; a busy loop would use the whole three seconds.
    assert!(used < 0.3, "idle daemon used {used:.2} s of CPU in 3 s");
}

#[test]
#[cfg(target_os = "linux")]
fn an_idle_daemon_over_years_of_day_files_does_not_list_them_all_every_poll() {
    let fx = Fixture::new();
    // Ten thousand day files written long ago, and today's.
    let long_ago = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for i in 0..10_000 {
        let name = format!("1990-{:05}.jsonl", i);
        let line =
            format!(r#"{{"ts":"1990-01-01T10:00:00.{i:06}Z","model":"m/old","source":"cli","total":1}}"#);
        fx.append_lines(&name, &[&line]);
        std::fs::File::options()
            .append(true)
            .open(fx.path(&name))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    fx.append_lines(
        "2026-08-01.jsonl",
        &[r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","source":"cli","total":9}"#],
    );
    let (daemon, port) = fx.spawn_serving(&["--poll-interval", "200ms"]);
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some_and(|t| t.len() == 2)));
    let pid = daemon.child.id();
    let before = cpu_seconds(pid);
    // The measurement window: fifteen polls with nothing new.
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_seconds(pid) - before;
    // Still reads what is new in today's file at once.
    fx.append_lines(
        "2026-08-01.jsonl",
        &[r#"{"ts":"2026-08-01T10:00:01Z","model":"m/x","source":"cli","total":1}"#],
    );
    assert!(wait_until(PATIENCE, || scrape_totals(port)
        .is_some_and(|t| t.values().any(|v| v[5] == 10))));
    drop(daemon);
    // Listing and checking ten thousand files on every poll took ~0.5 s of these 3 s (release).
    assert!(
        used < 0.15,
        "idle daemon used {used:.2} s of CPU in 3 s over 10,000 old day files"
    );
}

#[test]
fn status_works_while_the_daemon_runs() {
    let fx = Fixture::new();
    let (daemon, port) = fx.spawn_serving(&[]);
    fx.append_lines(
        "2026-08-01.jsonl",
        &[r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","source":"cli","total":9}"#],
    );
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some_and(|t| !t.is_empty())));
    assert!(wait_until(PATIENCE, || {
        let out = fx.run(&["status", "--json"]);
        out.status.success()
            && serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .is_ok_and(|v| v["series"][0]["total"] == 9 && v["lines"]["counted"] == 1)
    }));
    // The JSON has the documented shape and nothing else; the table says where /metrics is.
    let json: serde_json::Value = serde_json::from_slice(&fx.run(&["status", "--json"]).stdout).unwrap();
    let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["cost", "lines", "series", "unpriced"]);
    let table = fx.run(&["status"]);
    assert!(table.status.success());
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("m/x"), "{table}");
    assert!(
        table.contains(&format!("run serves /metrics on http://127.0.0.1:{port}/metrics")),
        "{table}"
    );
    drop(daemon);
}

#[test]
fn stats_dir_that_appears_after_start_is_picked_up() {
    let fx = Fixture::new();
    std::fs::remove_dir_all(&fx.stats).unwrap();
    let daemon = fx.spawn(&[
        "--otlp",
        "off",
        "--prometheus",
        "127.0.0.1:0",
        "--poll-interval",
        "200ms",
    ]);
    let port = daemon.metrics_port();
    // The daemon's own word (the sandbox says something like it at start, before the daemon).
    let waiting = "does not exist yet; waiting for it";
    assert!(wait_until(PATIENCE, || daemon.log_text().contains(waiting)));
    std::fs::create_dir_all(&fx.stats).unwrap();
    fx.append_lines(
        "2026-08-01.jsonl",
        &[r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","source":"cli","total":9}"#],
    );
    assert!(wait_until(PATIENCE, || scrape_totals(port).is_some_and(|t| !t.is_empty())));
    let (status, _, log) = daemon.terminate();
    assert!(status.success());
    assert_eq!(log.matches(waiting).count(), 1, "said once: {log}");
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

#[test]
fn second_instance_on_the_same_state_dir_exits_at_once() {
    let fx = Fixture::new();
    let (first, _) = fx.spawn_serving(&[]);
    let started = Instant::now();
    let out = fx.run(&["run", "--otlp", "off", "--prometheus", "off"]);
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("in use by another reasonix-exporter"), "{stderr}");
    drop(first);
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

//! The daemon as it runs: JSON logs, latency, idle CPU, `status` beside it, a late stats folder, one instance.

use super::*;

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

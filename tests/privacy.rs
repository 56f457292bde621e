//! Contract §1: strictly observational and private. A canary planted in unknown fields and in a
//! session transcript appears nowhere outside the ledger; nothing in the ledger changes.

#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use common::receiver::Receiver;
use common::{Fixture, assert_success, contains, files_below};

const CANARY: &str = "CANARY-7f3a9c-do-not-leak";

fn plant(fx: &Fixture) -> PathBuf {
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            &format!(
                r#"{{"ts":"2026-08-07T00:22:43.571662+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":10,"completion":5,"total":15,"requests":1,"prompt_text":"{CANARY}","cwd":"/home/{CANARY}/project","compaction_note":{{"summary":"{CANARY}"}}}}"#
            ),
            &format!(r#"{{"ts":"2026-08-07T00:23:00Z","source":"cli","turn":true,"future_field":["{CANARY}"]}}"#),
            &format!(r#"{{"ts":"2026-08-07T00:24:00Z","source":"desktop","compaction":{{"summary":"{CANARY}"}}}}"#),
            // Rejected lines carrying the canary: tallied, never echoed.
            &format!(r#"{{"ts":"2026-08-07T00:25:00Z","total":"{CANARY}"}}"#),
            &format!("{CANARY} not even json"),
        ],
    );
    // A session transcript where Reasonix keeps prompts: never to be opened.
    let sessions = fx.home.join(".reasonix/projects/demo/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let transcript = sessions.join("s1.jsonl");
    std::fs::write(
        &transcript,
        format!("{{\"role\":\"user\",\"content\":\"{CANARY}\"}}\n"),
    )
    .unwrap();
    // Sub-folders and backups of stats are not ledger files either.
    std::fs::create_dir_all(fx.stats.join("archive")).unwrap();
    std::fs::write(
        fx.stats.join("archive/2026-01-01.jsonl"),
        format!("{{\"total\":1,\"x\":\"{CANARY}\"}}\n"),
    )
    .unwrap();
    std::fs::write(
        fx.stats.join("2026-08-07.jsonl.bak"),
        format!("{{\"total\":1,\"x\":\"{CANARY}\"}}\n"),
    )
    .unwrap();
    transcript
}

#[test]
fn canary_in_unknown_fields_and_transcripts_appears_nowhere() {
    let fx = Fixture::new();
    plant(&fx);
    let receiver = Receiver::grpc();
    let mut outputs = Vec::new();
    let runs: [&[&str]; 4] = [
        &[
            "once",
            "--otlp-endpoint",
            &receiver.endpoint,
            "--otlp-protocol",
            "grpc",
        ],
        &["status"],
        &["status", "--json"],
        &["once", "--otlp-endpoint", "http://127.0.0.1:9/v1/metrics"],
    ];
    for args in runs {
        let out = fx.run(args);
        outputs.push(out.stdout);
        outputs.push(out.stderr);
    }
    for (i, output) in outputs.iter().enumerate() {
        assert!(
            !contains(output, CANARY.as_bytes()),
            "output {i} leaks the canary"
        );
    }
    for file in files_below(&fx.state) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !contains(&bytes, CANARY.as_bytes()),
            "{} leaks the canary",
            file.display()
        );
    }
    let payload = format!("{:?}", receiver.requests());
    assert!(!payload.contains(CANARY), "the OTLP payload leaks the canary");
    // And the lines were counted all the same.
    let status = fx.status();
    assert_eq!(status["lines"]["counted"], 3);
    assert_eq!(status["lines"]["rejected"], 2);
    assert_eq!(status["series"][0]["total"], 15);
}

/// Bytes, length, mtime and inode of every file below `dir`.
fn snapshot(dir: &std::path::Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt;
    files_below(dir)
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).unwrap();
            let bytes = std::fs::read(&p).unwrap();
            (p, (bytes, meta.modified().unwrap(), meta.ino()))
        })
        .collect()
}

#[test]
fn ledger_is_never_written_touched_or_added_to() {
    let fx = Fixture::new();
    plant(&fx);
    // Reasonix's append lock, as it leaves it.
    std::fs::write(fx.stats.join(".append.lock"), b"").unwrap();
    let dir_mtime = || std::fs::metadata(&fx.stats).unwrap().modified().unwrap();

    let (before, before_dir) = (snapshot(&fx.home), dir_mtime());
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    assert_success(&fx.run(&["status"]));
    assert_eq!(
        snapshot(&fx.home),
        before,
        "no byte, mtime or inode changed; no file appeared"
    );
    assert_eq!(
        dir_mtime(),
        before_dir,
        "nothing created, renamed or removed in the stats folder"
    );

    // Again after new lines, when the checkpoint is in use.
    fx.append_lines(
        "2026-08-08.jsonl",
        &[r#"{"ts":"2026-08-08T00:00:00Z","total":1}"#],
    );
    let (before, before_dir) = (snapshot(&fx.home), dir_mtime());
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    assert_eq!(snapshot(&fx.home), before);
    assert_eq!(dir_mtime(), before_dir);
}

/// Every path a traced run of the exporter opened, renamed, created or removed under the home.
#[cfg(target_os = "linux")]
fn traced_paths(fx: &Fixture, args: &[&str]) -> Vec<(String, String)> {
    let home = fx.home.to_string_lossy().to_string();
    traced_calls(fx, args)
        .into_iter()
        .filter(|(path, _)| path.starts_with(&home))
        .collect()
}

/// Every path a traced run of the exporter opened, renamed, created or removed, with its call.
#[cfg(target_os = "linux")]
fn traced_calls(fx: &Fixture, args: &[&str]) -> Vec<(String, String)> {
    let syscalls = "open,openat,openat2,creat,truncate,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,link,linkat,symlink,symlinkat,chmod,fchmodat,utimensat";
    fx.traced(syscalls, args)
        .lines()
        .filter_map(|line| {
            let path = line.split('"').nth(1)?;
            Some((path.to_string(), line.to_string()))
        })
        .collect()
}

/// Whole-process audit: besides the stats folder's day files and its own state dir, the
/// exporter opens only system files that hold no user data (libraries, name resolution, the
/// trust store, /proc and /sys) — while ingesting, exporting to a collector by host name, and
/// with the sandbox off, so that this holds by construction and not only by landlock.
#[test]
#[ignore = "needs strace (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn nothing_but_the_day_files_the_state_dir_and_system_files_is_opened() {
    if !common::strace_installed() {
        return;
    }
    let fx = Fixture::new();
    plant(&fx);
    let receiver = common::receiver::Receiver::http();
    let endpoint = receiver.endpoint.replace("127.0.0.1", "localhost");
    let calls = traced_calls(&fx, &["--sandbox", "off", "once", "--otlp-endpoint", &endpoint]);
    assert!(!receiver.data_requests().is_empty(), "the export happened");
    let stats = fx.stats.to_string_lossy().to_string();
    let state = fx.state.to_string_lossy().to_string();
    let system = ["/etc/", "/lib", "/usr/", "/proc/", "/sys/", "/dev/"];
    for (path, call) in &calls {
        let day_file = path
            .strip_prefix(&stats)
            .map(|rest| rest.trim_start_matches('/'))
            .is_some_and(|name| name.is_empty() || (name.ends_with(".jsonl") && !name.contains('/')));
        let reasonix_config = *path == reasonix_config_of(&stats) && call.contains("O_RDONLY");
        let allowed = day_file
            || reasonix_config
            || path.starts_with(&state)
            || system.iter().any(|prefix| path.starts_with(prefix));
        assert!(allowed, "the exporter touched {path}: {call}");
    }
}

#[test]
#[ignore = "needs strace (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn only_top_level_stats_jsonl_files_are_opened_and_only_read_only() {
    if !common::strace_installed() {
        return;
    }
    let fx = Fixture::new();
    plant(&fx);
    std::fs::write(fx.stats.join(".append.lock"), b"").unwrap();
    let stats = fx.stats.to_string_lossy().to_string();
    for args in [&["once", "--otlp", "off"], &["doctor", "--otlp", "off"]] {
        let calls = traced_paths(&fx, args);
        assert!(
            calls.iter().any(|(p, _)| p.ends_with("2026-08-07.jsonl")),
            "{args:?} read the ledger: {calls:?}"
        );
        check_ledger_opens(&stats, &calls);
    }
    // `history` reads the ledger again, the same way, once the stream went out.
    let receiver = common::receiver::Receiver::http();
    let otlp = [
        "--otlp-protocol",
        receiver.protocol,
        "--otlp-endpoint",
        receiver.endpoint.as_str(),
    ];
    assert_success(&fx.run(&[&otlp[..], &["once"]].concat()));
    let calls = traced_paths(&fx, &["history"]);
    assert!(
        calls.iter().any(|(p, _)| p.ends_with("2026-08-07.jsonl")),
        "history read the ledger: {calls:?}"
    );
    check_ledger_opens(&stats, &calls);
}

/// Every access under the Reasonix home is an open of the stats folder, a top-level day file
/// or Reasonix's `config.toml` (where Reasonix Studio may have moved the state root), read-only
/// and without touching the access time of a day file.
#[cfg(target_os = "linux")]
fn check_ledger_opens(stats: &str, calls: &[(String, String)]) {
    let config = reasonix_config_of(stats);
    for (path, call) in calls {
        let inside = path.strip_prefix(stats).map(|rest| rest.trim_start_matches('/'));
        let allowed = match inside {
            Some("") => true,
            Some(name) => name.ends_with(".jsonl") && !name.contains('/'),
            None => *path == config,
        };
        assert!(allowed, "unexpected access under the Reasonix home: {call}");
        assert!(
            call.starts_with("open") || call.contains("openat("),
            "not an open: {call}"
        );
        assert!(call.contains("O_RDONLY"), "not read-only: {call}");
        assert!(!call.contains("O_CREAT") && !call.contains("O_TRUNC"), "{call}");
        if path.ends_with(".jsonl") {
            assert!(call.contains("O_NOATIME"), "the access time is touched: {call}");
        }
    }
}

/// Header values (bearer tokens, API keys) never reach a log line, at any log level, whether
/// the collector takes the export, refuses it, or cannot be reached — over gRPC and HTTP.
#[test]
fn otlp_header_values_never_reach_a_log_line() {
    const SECRET: &str = "s3cr3t-t0ken-4f9a";
    let headers = format!("authorization=Bearer%20{SECRET},x-api-key={SECRET}");
    for receiver in [Receiver::grpc(), Receiver::http()] {
        let fx = Fixture::new();
        plant(&fx);
        let once = |endpoint: &str| {
            fx.command(&[
                "--log-level",
                "trace",
                "once",
                "--otlp-endpoint",
                endpoint,
                "--otlp-protocol",
                receiver.protocol,
            ])
            .env("OTEL_EXPORTER_OTLP_HEADERS", &headers)
            .output()
            .unwrap()
        };
        receiver.refuse(true);
        let refused = once(&receiver.endpoint);
        assert!(!refused.status.success());
        receiver.refuse(false);
        let delivered = once(&receiver.endpoint);
        assert_success(&delivered);
        // Something new to send, to a port nobody listens on.
        fx.append_lines(
            "2026-08-09.jsonl",
            &[r#"{"ts":"2026-08-09T10:00:00Z","model":"deepseek-chat","source":"cli","total":5}"#],
        );
        let unreachable = once("http://127.0.0.1:9/v1/metrics");
        assert!(!unreachable.status.success());
        for out in [&refused, &delivered, &unreachable] {
            for stream in [&out.stdout, &out.stderr] {
                assert!(
                    !contains(stream, SECRET.as_bytes()),
                    "a header value was logged: {}",
                    String::from_utf8_lossy(stream)
                );
            }
        }
        assert!(!delivered.stderr.is_empty(), "trace logging was on");
    }
}

/// Reasonix's own `config.toml`, beside the stats folder `stats` in the Reasonix home.
#[cfg(target_os = "linux")]
fn reasonix_config_of(stats: &str) -> String {
    let home = std::path::Path::new(stats).parent().expect("the Reasonix home");
    home.join("config.toml").to_string_lossy().into_owned()
}

//! Clumsy operation: bad settings, environment bytes that are not UTF-8, SIGHUP, a closed stdout.

use super::*;

#[test]
#[cfg(unix)]
fn bad_configuration_is_one_line_never_a_panic_or_a_hang() {
    let fx = Fixture::new();
    let fifo = fx.root.path().join("config.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.display().to_string();
    let toml = fx.root.path().join("bad.toml");
    std::fs::write(&toml, "poll_interval = \"2s\"\n\nexport_interval = 60\n").unwrap();
    let toml = toml.display().to_string();
    // A table header nested past the parser's depth: toml says why on a second line.
    let nested = fx.root.path().join("nested.toml");
    std::fs::write(&nested, format!("[{}]\n", vec!["a"; 5000].join("."))).unwrap();
    let nested = nested.display().to_string();
    let poll = fx.root.path().join("poll.toml");
    std::fs::write(&poll, "poll_interval = \"999us\"\n").unwrap();
    let poll = poll.display().to_string();
    // A key that quotes a new line and an escape sequence: shown escaped, on the one line.
    let quoted = fx.root.path().join("quoted.toml");
    std::fs::write(&quoted, "\"a\\nb\\u001b[2J\" = \"x\"\n").unwrap();
    let quoted = quoted.display().to_string();
    // (arguments, environment, the setting the error must name)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 13] = [
        (
            &["once"],
            &[("OTEL_METRIC_EXPORT_INTERVAL", "0")],
            "OTEL_METRIC_EXPORT_INTERVAL",
        ),
        (
            &["run"],
            &[("OTEL_METRIC_EXPORT_INTERVAL", "18446744073709551615")],
            "OTEL_METRIC_EXPORT_INTERVAL",
        ),
        (
            &["once", "--otlp-protocol", "grpc"],
            &[("OTEL_EXPORTER_OTLP_TIMEOUT", "18446744073709551615")],
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ),
        (&["run", "--poll-interval", "100000000h"], &[], "--poll-interval"),
        (&["--config", "/dev/zero", "once"], &[], "/dev/zero"),
        (&["--config", &fifo, "once"], &[], &fifo),
        (&["--config", &toml, "once"], &[], "line 3"),
        (&["--config", &nested, "once"], &[], "recursion limit"),
        // Below a millisecond a poll is a busy loop (the README's range is 1 ms to 24 h).
        (&["run", "--poll-interval", "1ns"], &[], "--poll-interval"),
        (
            &["run"],
            &[("REASONIX_EXPORTER_POLL_INTERVAL", "500us")],
            "REASONIX_EXPORTER_POLL_INTERVAL",
        ),
        (&["--config", &poll, "run"], &[], "poll_interval"),
        (&["--config", &quoted, "once"], &[], "unknown key"),
        (
            &["run"],
            &[("REASONIX_EXPORTER_POLL_INTERVAL", "1s\nforged line\u{1b}[2J")],
            "REASONIX_EXPORTER_POLL_INTERVAL",
        ),
    ];
    for (args, env, names) in cases {
        let out = run_within(&fx, args, env, Duration::from_secs(10));
        assert!(!out.status.success(), "{args:?} {env:?} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "{args:?} {env:?} panicked: {stderr}"
        );
        let error = the_error_line(&out);
        assert!(
            error.contains(names),
            "{args:?} {env:?}: the error names {names}: {error}"
        );
        assert_eq!(stderr.lines().count(), 1, "{args:?} {env:?}: one line: {stderr}");
        assert!(
            !stderr.contains('\u{1b}'),
            "{args:?} {env:?}: an escape reached the terminal"
        );
    }
}

#[test]
fn sighup_stops_like_sigterm_and_exports_the_last_lines() {
    let fx = Fixture::new();
    let mut model = Model::default();
    ledger(&fx, &mut model, 5, 100);
    let receiver = Receiver::http();
    let daemon = fx.spawn(&[
        "--otlp-endpoint",
        &receiver.endpoint,
        "--prometheus",
        "off",
        "--export-interval",
        "1h",
    ]);
    receiver.wait_for_requests(1, Duration::from_secs(20));
    let more = Generator::new(6).day_file("2026-08-02", 30);
    fx.append("2026-08-02.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    // Only once they are committed (the snapshot says so) does the stop have them to export.
    let expected = model.expected.status_json();
    assert!(
        wait_until(Duration::from_secs(20), || fx.status() == expected),
        "the daemon never ingested the new lines: {}",
        daemon.log_text()
    );
    let mut daemon = daemon;
    send_signal(daemon.child.id(), "HUP");
    let status = daemon.child.wait().unwrap();
    assert!(
        status.success(),
        "SIGHUP is a graceful stop: {status:?} {}",
        daemon.log_text()
    );
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

/// Contract §7: a closed standard output (`status | head`) ends a command quietly.
#[test]
fn a_closed_standard_output_ends_a_command_quietly() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 8, 20);
    fx.ingest();
    for (args, code) in [
        (&["status", "--json"][..], Some(0)),
        (&["status"], Some(0)),
        // The collector is not there: a problem, said on stderr.
        (
            &["doctor", "--otlp-endpoint", "http://127.0.0.1:9/v1/metrics"],
            Some(1),
        ),
        (&["completions", "bash"], Some(0)),
    ] {
        let mut child = fx
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the command writes a byte.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), code, "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn environment_values_that_are_not_utf8_are_paths_as_given_or_an_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let mut model = Model::default();
    // A Reasonix home and a state root named in Latin-1 bytes: Reasonix takes them as they are.
    let home = fx.root.path().join(OsStr::from_bytes(b"reasonix-\xe9"));
    let xdg = fx.root.path().join(OsStr::from_bytes(b"state-\xff"));
    std::fs::create_dir_all(home.join("stats")).unwrap();
    let day = days(1)[0].clone();
    let text = Generator::new(13).day_file(&day, 50);
    std::fs::write(home.join("stats").join(format!("{day}.jsonl")), &text).unwrap();
    model.feed(text.as_bytes());
    let exporter = |args: &[&str], extra: &[(&str, &OsStr)]| -> Output {
        let mut cmd = Command::new(common::BIN);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &fx.home)
            .env("REASONIX_HOME", &home)
            .env("XDG_STATE_HOME", &xdg);
        for (name, value) in extra {
            cmd.env(name, value);
        }
        cmd.args(args).output().expect("run the exporter")
    };
    assert_success(&exporter(&["once", "--otlp", "off"], &[]));
    assert!(
        xdg.join("reasonix-exporter").join("store").is_dir(),
        "the state dir is under $XDG_STATE_HOME's bytes"
    );
    let status = exporter(&["status", "--json"], &[]);
    assert_success(&status);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status,
        model.expected.status_json(),
        "the ledger under $REASONIX_HOME's bytes"
    );

    // A text setting is never silently unset: an export without its Authorization header is
    // worse than none.
    let receiver = Receiver::http();
    let headers = OsStr::from_bytes(b"authorization=Bearer s3cr\xe9t");
    let once = [
        "once",
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
    ];
    for var in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ] {
        let out = exporter(&once, &[(var, headers)]);
        assert!(!out.status.success(), "{var} not UTF-8, and `once` succeeded");
        let line = the_error_line(&out);
        assert!(line.contains(var) && line.contains("UTF-8"), "{line}");
        assert!(!contains(&out.stderr, b"s3cr"), "the value is never shown");
    }
    assert!(receiver.requests().is_empty(), "nothing sent");
}

/// A path given as a flag is used as given, UTF-8 or not (contract §7); a text flag that is not
/// UTF-8 is an error naming the flag.
#[test]
fn flag_values_that_are_not_utf8_are_paths_as_given_or_an_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let mut model = Model::default();
    let stats = fx.root.path().join(OsStr::from_bytes(b"st\xffats"));
    let state = fx.root.path().join(OsStr::from_bytes(b"state-\xe9"));
    let config = fx.root.path().join(OsStr::from_bytes(b"config-\xe9.toml"));
    std::fs::create_dir_all(&stats).unwrap();
    std::fs::write(&config, "otlp = \"off\"\n").unwrap();
    let day = days(1)[0].clone();
    let text = Generator::new(17).day_file(&day, 40);
    std::fs::write(stats.join(format!("{day}.jsonl")), &text).unwrap();
    model.feed(text.as_bytes());
    let exporter = |args: &[&OsStr]| -> Output {
        Command::new(common::BIN)
            .env_clear()
            .env("HOME", &fx.home)
            .arg("--stats-dir")
            .arg(&stats)
            .arg("--state-dir")
            .arg(&state)
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .expect("run the exporter")
    };
    assert_success(&exporter(&[OsStr::new("once")]));
    assert!(state.join("store").is_dir(), "the state dir is the flag's bytes");
    let status = exporter(&[OsStr::new("status"), OsStr::new("--json")]);
    assert_success(&status);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status,
        model.expected.status_json(),
        "the ledger under the flag's bytes"
    );

    let endpoint = OsStr::from_bytes(b"http://127.0.0.1:9/\xe9");
    let out = exporter(&[
        OsStr::new("once"),
        OsStr::new("--otlp"),
        OsStr::new("on"),
        OsStr::new("--otlp-endpoint"),
        endpoint,
    ]);
    assert!(
        !out.status.success(),
        "a text flag not UTF-8, and `once` succeeded"
    );
    let line = the_error_line(&out);
    assert!(
        line.contains("--otlp-endpoint") && line.contains("UTF-8"),
        "{line}"
    );
}

/// A stats or state folder whose name holds a line break and an escape sequence: every log line,
/// error and `doctor` line that names it shows them escaped, so no forged line or terminal
/// control reaches the output (contract §7).
#[test]
fn a_folder_name_with_control_characters_never_reaches_the_output_raw() {
    let fx = Fixture::new();
    let stats = fx.root.path().join("ev\nFORGED \x1b[31mline");
    let state = fx.root.path().join("st\rate\u{202e}");
    std::fs::create_dir_all(&stats).unwrap();
    let day = days(1)[0].clone();
    std::fs::write(
        stats.join(format!("{day}.jsonl")),
        Generator::new(5).day_file(&day, 10),
    )
    .unwrap();
    let run = |args: &[&str]| -> Output {
        Command::new(common::BIN)
            .env_clear()
            .env("HOME", &fx.home)
            .arg("--stats-dir")
            .arg(&stats)
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .expect("run the exporter")
    };
    for args in [
        &["once", "--otlp", "off", "--log-level", "debug"][..],
        &["doctor", "--otlp", "off"],
        &["status"],
    ] {
        let out = run(args);
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !bytes.contains(&0x1b) && !bytes.contains(&b'\r'),
                "{args:?} {name}: {text}"
            );
            assert!(!text.contains('\u{202e}'), "{args:?} {name}: {text}");
            assert!(
                !text.lines().any(|l| l.starts_with("FORGED")),
                "{args:?} {name}: a forged line: {text}"
            );
        }
    }
}

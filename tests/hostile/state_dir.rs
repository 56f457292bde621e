//! The state dir: private files, nothing planted followed, `status` beside `run`, damage, its size.

use super::*;

/// The exporter started by `sh` with `umask` set first.
fn with_umask(fx: &Fixture, umask: &str, args: &[&str]) -> Output {
    let script = format!("umask {umask}; exec \"$0\" \"$@\"");
    fx.command_via("sh", &["-c", &script], args).output().unwrap()
}

#[test]
#[cfg(unix)]
fn files_the_exporter_creates_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    for umask in ["000", "022"] {
        let fx = Fixture::new();
        ledger(&fx, &mut Model::default(), 4, 50);
        let receiver = Receiver::http();
        let endpoint = receiver.endpoint.clone();
        assert_success(&with_umask(&fx, umask, &["once", "--otlp-endpoint", &endpoint]));
        let (daemon, _) = fx.spawn_serving(&[]);
        let (status, _, log) = daemon.terminate();
        assert!(status.success(), "{log}");
        let mut checked = 0;
        let mut stack = vec![fx.state.clone()];
        while let Some(dir) = stack.pop() {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "umask {umask}: folder {} is {mode:o}", dir.display());
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let meta = entry.metadata().unwrap();
                if meta.is_dir() {
                    stack.push(entry.path());
                } else {
                    let mode = meta.permissions().mode() & 0o777;
                    assert_eq!(
                        mode & 0o077,
                        0,
                        "umask {umask}: {} is {mode:o}",
                        entry.path().display()
                    );
                    checked += 1;
                }
            }
        }
        assert!(
            checked >= 4,
            "the store, its records and the snapshot were checked"
        );
        assert!(files_below(&fx.state).iter().any(|p| p.ends_with("status.json")));
    }
}

#[test]
fn status_never_blocks_run_and_a_missing_state_dir_is_an_error() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 10, 50);
    let typo = fx.root.path().join("no-such-state");
    let out = fx.run(&["status", "--state-dir", typo.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "a state dir that does not exist is an error"
    );
    assert!(
        the_error_line(&out).contains("no store in"),
        "{}",
        the_error_line(&out)
    );
    assert!(!typo.exists(), "status created {}", typo.display());
    fx.ingest();

    // `status --json` polled as fast as it goes while `run` starts and stops ten times.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        let mut cmd = fx.command(&["status", "--json"]);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        std::thread::spawn(move || {
            let mut polls = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                cmd.status().unwrap();
                polls += 1;
            }
            polls
        })
    };
    for _ in 0..10 {
        let (daemon, _) = fx.spawn_serving(&[]);
        let (status, _, log) = daemon.terminate();
        assert!(status.success(), "run failed to start beside status: {log}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(poller.join().unwrap() > 10, "status was polled throughout");
}

#[test]
fn a_damaged_store_marker_names_reset_state() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 11, 20);
    fx.ingest();
    std::fs::write(fx.state.join("store.created"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let out = fx.run(&["once", "--otlp", "off"]);
    assert!(!out.status.success());
    let error = the_error_line(&out);
    assert!(
        error.contains("--reset-state") && error.contains("store.created"),
        "{error}"
    );
}

/// Contract §7: the state dir is trusted only as far as it is the user's own. A symlink planted
/// as its lock or as a record's temporary is never followed (the victim is untouched), a state
/// dir others can write is made private, a FIFO or `/dev/zero` in place of the snapshot never
/// hangs `status`, and a state dir inside the stats folder is refused.
#[test]
#[cfg(unix)]
fn nothing_planted_in_the_state_dir_is_followed_and_it_stays_private() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 8, 20);
    fx.ingest();
    let victim = fx.root.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let lock = fx.state.join("lock");
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    for args in [
        &["status"][..],
        &["doctor", "--otlp", "off"],
        &["once", "--otlp", "off", "--sandbox", "off"],
    ] {
        let out = fx.run(args);
        assert!(!out.status.success(), "{args:?} used the planted lock");
        assert_eq!(out.status.code(), Some(1), "{args:?}: no panic");
    }
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious",
        "the lock's target is untouched"
    );
    std::fs::remove_file(&lock).unwrap();

    let receiver = Receiver::http();
    let outside = fx.root.path().join("outside");
    std::os::unix::fs::symlink(&outside, fx.state.join("stream.tmp")).unwrap();
    std::fs::set_permissions(&fx.state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = fx.export_to(&receiver);
    assert_success(&out);
    assert!(
        !outside.exists(),
        "the stream record was written through the planted link"
    );
    let mode = std::fs::metadata(&fx.state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "made private");
    assert!(String::from_utf8_lossy(&out.stderr).contains("made private"));

    // `status` reads the snapshot only while `run` holds the store.
    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", "off"]);
    let snapshot = fx.state.join("status.json");
    assert!(wait_until(Duration::from_secs(20), || snapshot.exists()));
    for planted in ["fifo", "/dev/zero"] {
        std::fs::remove_file(&snapshot).unwrap();
        if planted == "fifo" {
            let c_path = std::ffi::CString::new(snapshot.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        } else {
            std::os::unix::fs::symlink(planted, &snapshot).unwrap();
        }
        let started = Instant::now();
        let out = run_within(&fx, &["status"], &[], Duration::from_secs(10));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{planted}: status hung"
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{planted}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    daemon.terminate();

    // Inside, as written, through `..`, or through a link to the stats folder.
    let link = fx.root.path().join("link");
    std::os::unix::fs::symlink(&fx.stats, &link).unwrap();
    // A link into a folder of the stats folder, then `..`: the kernel takes `..` from where the
    // link led, inside the stats folder.
    std::fs::create_dir_all(fx.stats.join("sub")).unwrap();
    std::fs::create_dir_all(fx.root.path().join("deep")).unwrap();
    let deep = fx.root.path().join("deep").join("link");
    std::os::unix::fs::symlink(fx.stats.join("sub"), &deep).unwrap();
    for inside in [
        fx.stats.join("state"),
        fx.stats.join("x/../state"),
        link.join("state"),
        deep.join("../state"),
    ] {
        let out = Command::new(common::BIN)
            .env_clear()
            .env("HOME", &fx.home)
            .arg("--state-dir")
            .arg(&inside)
            .args(["once", "--otlp", "off"])
            .output()
            .unwrap();
        let line = the_error_line(&out);
        assert!(line.contains("inside the stats folder"), "{line}");
        assert!(
            !fx.stats.join("state").exists(),
            "nothing was written into Reasonix's folder"
        );
    }
    // The store's own folder a link: never opened through it.
    std::fs::rename(fx.state.join("store"), fx.root.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(fx.root.path().join("elsewhere"), fx.state.join("store")).unwrap();
    let line = the_error_line(&fx.run(&["status"]));
    assert!(line.contains("symbolic link"), "{line}");
}

/// A link planted among the store's own files (sled's log, its configuration, a snapshot) is
/// refused before the engine opens anything by name: nothing outside is read or rewritten.
#[test]
fn a_link_among_the_stores_files_is_refused_not_followed() {
    let fx = Fixture::new();
    ledger(&fx, &mut Model::default(), 4, 20);
    fx.ingest();
    // The next open writes the snapshot of what the ingest committed.
    assert_success(&fx.run(&["status"]));
    let store = fx.state.join("store");
    let victim = fx.root.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let snapshot = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("snap."))
        .expect("a snapshot");
    for (name, target) in [
        ("conf", std::path::Path::new("/dev/zero")),
        ("db", victim.as_path()),
        (snapshot.file_name().unwrap().to_str().unwrap(), victim.as_path()),
    ] {
        let planted = store.join(name);
        let kept = fx.root.path().join("kept");
        std::fs::rename(&planted, &kept).unwrap();
        std::os::unix::fs::symlink(target, &planted).unwrap();
        for args in [&["status"][..], &["once", "--otlp", "off", "--sandbox", "off"]] {
            let started = Instant::now();
            let out = run_within(&fx, args, &[], Duration::from_secs(20));
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{name}: {args:?} hung"
            );
            let line = the_error_line(&out);
            assert!(line.contains("symbolic link"), "{name}: {line}");
        }
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"precious",
            "{name}: the target is untouched"
        );
        std::fs::remove_file(&planted).unwrap();
        std::fs::rename(&kept, &planted).unwrap();
    }
    assert_success(&fx.run(&["status"]));
}

/// Bytes the files below `dir` take on disk.
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    files_below(dir)
        .iter()
        .map(|f| {
            std::fs::symlink_metadata(f)
                .map(|m| m.blocks() * 512)
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn a_busy_day_appended_one_line_at_a_time_keeps_the_store_proportional() {
    // A team bot's day: tens of thousands of lines, then one line at a time, each counted by a
    // timer's `once`. sled rewrites a value whole on each change, and one of over 128 KiB as a
    // blob file it never reclaims: a day's partition must never get there.
    let fx = Fixture::new();
    let mut model = Model::default();
    let day = days(1)[0].clone();
    let name = format!("{day}.jsonl");
    let text = Generator::new(24).day_file(&day, 40_000);
    fx.append(&name, text.as_bytes());
    model.feed(text.as_bytes());
    fx.ingest();
    let after_backfill = disk_bytes(&fx.state);
    const APPENDS: u64 = 150;
    for i in 0..APPENDS {
        let line = format!(
            r#"{{"ts":"{day}T23:{:02}:{:02}.{i:06}Z","model":"bot/append","source":"bot","total":{}}}"#,
            i / 60,
            i % 60,
            i + 1
        );
        fx.append_lines(&name, &[&line]);
        model.feed(format!("{line}\n").as_bytes());
        fx.ingest();
    }
    assert_eq!(
        fx.status(),
        model.expected.status_json(),
        "every line counted once"
    );
    let after = disk_bytes(&fx.state);
    eprintln!("state dir: {after_backfill} bytes after the backfill, {after} after the appends");
    let lines = 40_000 + APPENDS;
    // The hashes alone are 16 bytes a line; sled's log and its preallocated segments add a few
    // MiB whatever the size.
    assert!(
        after <= after_backfill + (4 << 20) && after <= (4 << 20) + lines * 100,
        "{APPENDS} appends took the state dir from {after_backfill} to {after} bytes ({} a line)",
        after / lines
    );
}

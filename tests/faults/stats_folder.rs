//! The stats folder and its files: re-pointed behind a symlink, unreadable, deleted while read.

use super::*;

/// `ln -sfn`: the link replaced in one rename, as a user or a sync tool would do it.
fn point(link: &Path, target: &Path) {
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
}

/// With `--sandbox off` the daemon follows the link at once. With the sandbox (the default) it
/// may read only the folder the link resolved to at start: it says so, names the fix, and after
/// a restart counts the new folder; either way each line exactly once.
fn symlinked_stats_folder_repointed(sandbox: &str) {
    let fx = Fixture::new();
    let (a, b) = (fx.root.path().join("a"), fx.root.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let link = fx.root.path().join("stats-link");
    point(&link, &a);
    let mut model = Model::default();
    let mut generator = Generator::new(5);
    let day = &days(1)[0];
    let first = generator.day_file(day, 200);
    std::fs::write(a.join(format!("{day}.jsonl")), &first).unwrap();
    model.feed(first.as_bytes());

    let link_arg = link.display().to_string();
    let args = [
        "--stats-dir",
        &link_arg,
        "--otlp",
        "off",
        "--poll-interval",
        "200ms",
        "--prometheus",
        "127.0.0.1:0",
        "--sandbox",
        sandbox,
    ];
    let daemon = fx.spawn(&args);
    let port = daemon.metrics_port();
    assert!(wait_until(Duration::from_secs(20), || scrape_totals(port)
        == Some(model.expected.totals())));

    // The other folder holds the same day (a synced copy) and more.
    let more = generator.day_file(day, 100);
    std::fs::write(b.join(format!("{day}.jsonl")), format!("{first}{more}")).unwrap();
    model.feed(more.as_bytes());
    point(&link, &b);
    let daemon = if sandbox == "on" {
        assert!(
            wait_until(Duration::from_secs(20), || daemon
                .log_text()
                .contains("restart the exporter")),
            "no word about the sandbox: {}",
            daemon.log_text()
        );
        let (status, _, _) = daemon.terminate();
        assert!(status.success());
        fx.spawn(&args)
    } else {
        daemon
    };
    let port = daemon.metrics_port();
    assert!(
        wait_until(Duration::from_secs(20), || scrape_totals(port)
            == Some(model.expected.totals())),
        "after re-pointing: {:?}",
        scrape_totals(port)
    );
    let (status, _, _) = daemon.terminate();
    assert!(status.success());
}

#[test]
fn symlinked_stats_folder_repointed_is_followed_at_once_without_the_sandbox() {
    symlinked_stats_folder_repointed("off");
}

#[test]
fn symlinked_stats_folder_repointed_is_followed_after_a_restart_in_the_sandbox() {
    symlinked_stats_folder_repointed("on");
}

/// Runs the daemon as `nobody` (root reads everything, whatever the permissions say).
fn as_nobody() -> Option<[&'static str; 4]> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(root && setpriv) {
        common::tools::skip("needs root and setpriv (util-linux) to run the daemon as another user");
        return None;
    }
    Some(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
#[ignore = "needs root and setpriv (.ci/run); run with --include-ignored"]
fn unreadable_stats_folder_and_file_then_readable_lose_nothing() {
    let Some(setpriv) = as_nobody() else {
        return;
    };
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(8);
    ledger(&fx, &mut model, &mut generator, 100);
    // The way down to the ledger open to `nobody`; the state dir its own.
    for dir in [fx.root.path(), &fx.home, fx.stats.parent().unwrap()] {
        chmod(dir, 0o755);
    }
    std::fs::create_dir_all(&fx.state).unwrap();
    std::os::unix::fs::chown(&fx.state, Some(65534), Some(65534)).unwrap();
    chmod(&fx.stats, 0o000);

    let daemon = fx.spawn_via(
        "setpriv",
        &setpriv,
        &[
            "--otlp",
            "off",
            "--poll-interval",
            "100ms",
            "--prometheus",
            "127.0.0.1:0",
        ],
    );
    let port = daemon.metrics_port();
    assert!(wait_until(Duration::from_secs(10), || daemon
        .log_text()
        .contains("cannot be read")));
    assert_eq!(scrape_totals(port), Some(Default::default()), "nothing read yet");

    chmod(&fx.stats, 0o755);
    assert!(wait_until(Duration::from_secs(10), || scrape_totals(port)
        == Some(model.expected.totals())));

    // One file unreadable for a while: the others go on; its lines come when it opens again.
    let (first, locked_day, last) = (&days(3)[0], &days(3)[1], &days(3)[2]);
    let locked = fx.path(&format!("{locked_day}.jsonl"));
    let locked_before = std::fs::read(&locked).unwrap();
    chmod(&locked, 0o000);
    let more = generator.day_file(locked_day, 50);
    fx.append(&format!("{locked_day}.jsonl"), more.as_bytes());
    let other = generator.day_file(last, 50);
    fx.append(&format!("{last}.jsonl"), other.as_bytes());
    model.feed(more.as_bytes());
    model.feed(other.as_bytes());
    let mut without_locked = Model::default();
    without_locked.feed(&std::fs::read(fx.path(&format!("{first}.jsonl"))).unwrap());
    without_locked.feed(&locked_before);
    without_locked.feed(&std::fs::read(fx.path(&format!("{last}.jsonl"))).unwrap());
    assert!(
        wait_until(Duration::from_secs(10), || scrape_totals(port)
            == Some(without_locked.expected.totals())),
        "the other files went on: {:?}",
        scrape_totals(port)
    );
    // Let the outage last a few polls: it must still be one warning.
    let polls_ended = |n: usize| {
        let mut seen = std::collections::BTreeSet::new();
        move || {
            let body = common::http_get(port, "/metrics", None).unwrap_or_default();
            let end = body
                .lines()
                .find(|l| l.starts_with("reasonix_exporter_last_poll_end_timestamp_seconds "))
                .map(str::to_string);
            seen.extend(end);
            seen.len() >= n
        }
    };
    assert!(wait_until(Duration::from_secs(10), polls_ended(4)));
    chmod(&locked, 0o644);
    assert!(wait_until(Duration::from_secs(10), || scrape_totals(port)
        == Some(model.expected.totals())));

    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    // One warning and one note per outage, not one per poll.
    assert_eq!(log.matches("stats dir").count(), 2, "{log}");
    let warning = format!("ledger file {locked_day}.jsonl cannot be read (");
    assert_eq!(log.matches(&warning).count(), 1, "{log}");
    assert_eq!(
        log.matches("every ledger file can be read again").count(),
        1,
        "{log}"
    );
}

/// A day file deleted while `once` reads it: the open file is read to its end (Linux keeps a
/// deleted file's bytes for whoever has it open) or, if the deletion came first, not at all —
/// never half, never twice, and the run succeeds.
#[test]
#[cfg(target_os = "linux")]
fn a_file_deleted_while_being_read_counts_all_or_nothing() {
    let fx = Fixture::new();
    let mut others = Model::default();
    let mut generator = Generator::new(10);
    let all_days = days(4);
    for day in &all_days[..3] {
        let text = generator.day_file(day, 200);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        others.feed(text.as_bytes());
    }
    let big_name = format!("{}.jsonl", all_days[3]);
    let big = generator.day_file(&all_days[3], 60_000);
    fx.append(&big_name, big.as_bytes());
    let big_path = fx.path(&big_name);

    let mut child = fx
        .command(&["once", "--otlp", "off"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Delete it the moment the exporter has it open (or once it is done, if it is faster).
    let fd_dir = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let opened = wait_until(Duration::from_secs(20), || {
        std::fs::read_dir(&fd_dir).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == big_path))
        }) || child.try_wait().unwrap().is_some()
    });
    assert!(opened);
    std::fs::remove_file(&big_path).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_success(&out);

    let mut with_big = Model::default();
    for day in &all_days[..3] {
        with_big.feed(&std::fs::read(fx.path(&format!("{day}.jsonl"))).unwrap());
    }
    with_big.feed(big.as_bytes());
    let status = fx.status();
    assert!(
        status == others.expected.status_json() || status == with_big.expected.status_json(),
        "neither nothing nor all of the deleted file: {}",
        status["lines"]
    );
    // Nothing more later: the file is gone.
    fx.ingest();
    assert_eq!(fx.status(), status);
}

/// Contract §7: a ledger file's name never reaches a log line raw: a newline in it cannot start
/// a forged line, an escape sequence is inert.
#[test]
#[ignore = "needs root and setpriv (.ci/run); run with --include-ignored"]
fn an_unreadable_files_name_cannot_forge_a_log_line() {
    let Some(setpriv) = as_nobody() else {
        return;
    };
    let fx = Fixture::new();
    let mut model = Model::default();
    ledger(&fx, &mut model, &mut Generator::new(8), 10);
    for dir in [fx.root.path(), &fx.home, fx.stats.parent().unwrap(), &fx.stats] {
        chmod(dir, 0o755);
    }
    std::fs::create_dir_all(&fx.state).unwrap();
    std::os::unix::fs::chown(&fx.state, Some(65534), Some(65534)).unwrap();
    let name = "x\n2026-12-02T10:00:00.000000Z  INFO forged\x1b[2J.jsonl";
    fx.append(name, b"{}\n");
    chmod(&fx.path(name), 0o000);
    let daemon = fx.spawn_via("setpriv", &setpriv, &["--otlp", "off", "--prometheus", "off"]);
    assert!(wait_until(Duration::from_secs(10), || daemon
        .log_text()
        .contains("cannot be read")));
    let (_, _, log) = daemon.terminate();
    assert!(
        log.contains("x\\u{a}2026-12-02"),
        "the name is shown, escaped: {log}"
    );
    assert!(
        !log.lines().any(|l| l.starts_with("2026-12-02T10:00:00.000000Z")),
        "{log}"
    );
    assert!(!log.contains('\x1b'), "{log}");
}

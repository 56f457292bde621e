//! Fault injection: what a machine does to a daemon — a full disk and a read-only file
//! system under the state dir, a stats folder or file it may not read, a stats folder behind a
//! symlink that is re-pointed, a file deleted while it is read, a 10 MB line, five thousand day
//! files, bytes that are not UTF-8, the clock set back. Each ends with a clear message (or none
//! needed), nothing lost, nothing counted twice, and memory bounded.
//!
//! Some need root (a tmpfs mount, running the daemon as `nobody`) or libfaketime; CI has both
//! (`.ci/run`), elsewhere those tests say what is missing and skip.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, scrape_totals, the_error_line, wait_until};
#[cfg(target_os = "linux")]
use common::{assert_peak_below, run_measured};

/// A size-limited tmpfs mounted at a path for the life of the guard, private to its user as a
/// state dir is (a tmpfs root is 1777 otherwise, which the exporter refuses: contract §7).
struct Mount {
    at: PathBuf,
}

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            common::tools::skip(&format!("cannot mount a tmpfs here ({why}); CI runs as root"));
            return None;
        }
        Some(Mount { at: at.to_path_buf() })
    }

    fn remount(&self, option: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{option}")])
            .arg(&self.at)
            .output()
            .unwrap();
        assert!(out.status.success(), "remount {option}");
    }

    /// Bytes still free.
    fn available(&self) -> u64 {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.at)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Three day files of realistic lines, fed to the model too.
fn ledger(fx: &Fixture, model: &mut Model, generator: &mut Generator, lines: usize) {
    for day in days(3) {
        let text = generator.day_file(&day, lines);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
}

#[test]
#[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
fn full_disk_under_the_state_dir_is_a_clear_error_and_nothing_is_lost_or_doubled() {
    // sled once hung on a full disk, all its threads parked (with 64 KiB segments; BENCHMARKS.md, "Tried and not kept").
    const LIMIT: Duration = Duration::from_secs(60);
    let fx = Fixture::new();
    let Some(disk) = Mount::tmpfs(&fx.state, "6m") else {
        return;
    };
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(3);
    ledger(&fx, &mut model, &mut generator, 1000);
    assert_success(&fx.export_to_within(&receiver, LIMIT));
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // Fill the disk but for a few kilobytes, then give the exporter more to store.
    let ballast = fx.state.join("ballast");
    let room = disk.available().saturating_sub(16 << 10);
    std::fs::write(&ballast, vec![0u8; room as usize]).unwrap();
    ledger(&fx, &mut model, &mut generator, 3000);
    let out = fx.export_to_within(&receiver, LIMIT);
    assert!(!out.status.success(), "a full disk must fail the run");
    let error = the_error_line(&out);
    assert!(
        error.contains(&fx.state.display().to_string()) && error.contains("room"),
        "names the state dir and the fix: {error}"
    );
    assert_eq!(error.matches("os error 28").count(), 1, "says it once: {error}");

    // Room again: the next run delivers exactly what is missing.
    std::fs::remove_file(&ballast).unwrap();
    assert_success(&fx.export_to_within(&receiver, LIMIT));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    assert_success(&fx.export_to_within(&receiver, LIMIT));
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "and nothing twice"
    );
}

/// `run` exporting to `receiver` every second, once it has delivered what `model` holds.
fn exporting_every_second(
    fx: &Fixture,
    receiver: &Receiver,
    model: &Model,
    extra: &[&str],
) -> common::Daemon {
    let mut args = vec![
        "--otlp-endpoint",
        &receiver.endpoint,
        "--prometheus",
        "off",
        "--export-interval",
        "1s",
    ];
    args.extend_from_slice(extra);
    let daemon = fx.spawn(&args);
    assert!(
        wait_until(Duration::from_secs(30), || receiver.backend_totals()
            == model.expected.totals()),
        "{}",
        daemon.log_text()
    );
    daemon
}

#[test]
#[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
fn run_pauses_on_a_full_disk_and_resumes_exactly_when_there_is_room() {
    let fx = Fixture::new();
    let Some(disk) = Mount::tmpfs(&fx.state, "6m") else {
        return;
    };
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(31);
    ledger(&fx, &mut model, &mut generator, 500);
    let mut daemon = exporting_every_second(&fx, &receiver, &model, &[]);
    let exact = |model: &Model| receiver.backend_totals() == model.expected.totals();

    let ballast = fx.state.join("ballast");
    let room = disk.available().saturating_sub(16 << 10);
    std::fs::write(&ballast, vec![0u8; room as usize]).unwrap();
    ledger(&fx, &mut model, &mut generator, 3000);
    assert!(
        wait_until(Duration::from_secs(30), || daemon
            .log_text()
            .contains("counting paused")),
        "a full disk is reported: {}",
        daemon.log_text()
    );
    assert!(daemon.is_running(), "{}", daemon.log_text());

    std::fs::remove_file(&ballast).unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || exact(&model)),
        "counting resumes once there is room: {}",
        daemon.log_text()
    );
    let log = daemon.log_text();
    assert!(
        log.contains("the disk is full") && log.contains("counting resumed"),
        "{log}"
    );
    assert_eq!(log.matches("counting paused").count(), 1, "reported once: {log}");
    receiver.check_never_down().unwrap();
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "nothing twice"
    );
}

/// Without the sandbox the daemon recreates a deleted state dir and rebuilds the store from the
/// ledger; with it (the default), it may write only in the folder it started with, so it says
/// to start it again and exits for systemd to do so.
/// Deletes `dir` while a running daemon may be writing in it, as `rm -rf` by hand would have
/// to: a file created between the listing and the folder's removal makes it "not empty", and the
/// removal is tried again until it goes.
fn remove_under_a_writer(dir: &Path) {
    let removed = wait_until(Duration::from_secs(10), || match std::fs::remove_dir_all(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => false,
        Err(e) => panic!("cannot delete {}: {e}", dir.display()),
    });
    assert!(removed, "{} could not be deleted", dir.display());
}

#[test]
fn a_state_dir_deleted_under_run_is_rebuilt_and_its_stream_goes_on() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(32);
    ledger(&fx, &mut model, &mut generator, 300);
    // Written long ago: a poll between full listings would not read them, a rebuild must.
    let long_ago = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for file in common::files_below(&fx.stats) {
        std::fs::File::options()
            .append(true)
            .open(&file)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let mut daemon = exporting_every_second(&fx, &receiver, &model, &["--sandbox", "off"]);
    let exact = |model: &Model| receiver.backend_totals() == model.expected.totals();

    remove_under_a_writer(&fx.state);
    ledger(&fx, &mut model, &mut generator, 200);
    assert!(
        wait_until(Duration::from_secs(60), || exact(&model)
            && daemon.log_text().contains("counting resumed")),
        "{}",
        daemon.log_text()
    );
    assert!(daemon.is_running(), "{}", daemon.log_text());
    assert!(
        daemon.log_text().contains("the state dir was deleted"),
        "{}",
        daemon.log_text()
    );
    // Rebuilt from the ledger, the store continues the one stream: no reset, nothing twice.
    receiver.check_one_stream().unwrap();
    receiver.check_never_down().unwrap();
    assert!(fx.state.join("store").is_dir());
    assert_eq!(fx.status(), model.expected.status_json());
    drop(daemon);

    let mut sandboxed = fx.spawn(&["--otlp", "off", "--prometheus", "off"]);
    assert!(wait_until(Duration::from_secs(30), || sandboxed
        .log_text()
        .contains("watching")));
    remove_under_a_writer(&fx.state);
    assert!(
        wait_until(Duration::from_secs(30), || sandboxed
            .child
            .try_wait()
            .unwrap()
            .is_some()),
        "a sandboxed daemon whose state dir is gone must say so and exit: {}",
        sandboxed.log_text()
    );
    let status = sandboxed.child.wait().unwrap();
    let error = sandboxed.log_text();
    assert!(
        !status.success()
            && error.contains("was deleted under the running exporter")
            && error.contains("start it again"),
        "{status:?} {error}"
    );
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
#[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
fn read_only_state_dir_is_a_clear_error_and_nothing_is_lost_or_doubled() {
    let fx = Fixture::new();
    let Some(disk) = Mount::tmpfs(&fx.state, "16m") else {
        return;
    };
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(4);
    ledger(&fx, &mut model, &mut generator, 300);
    assert_success(&fx.export_to(&receiver));

    disk.remount("ro");
    ledger(&fx, &mut model, &mut generator, 300);
    let out = fx.export_to(&receiver);
    assert!(!out.status.success(), "a read-only state dir must fail the run");
    let error = the_error_line(&out);
    assert!(
        error.contains(&fx.state.display().to_string()) && error.contains("writable"),
        "names the state dir and the fix: {error}"
    );

    disk.remount("rw");
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

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

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_ten_megabyte_line_is_counted_once_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(6);
    let day = &days(1)[0];
    let before = generator.day_file(day, 50);
    // A usage row carrying 10 MB of text in a field the exporter does not read.
    let huge = format!(
        r#"{{"ts":"{day}T10:00:00Z","model":"deepseek-chat","source":"cli","total":77,"transcript":"{}"}}"#,
        "x".repeat(10 << 20)
    );
    let after = generator.day_file(day, 50);
    let text = format!("{before}{huge}\n{after}");
    fx.append(&format!("{day}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());

    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "for a 10 MB line");
    // Again: nothing new, nothing added.
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_huge_sparse_tail_left_by_a_power_cut_is_rejected_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(61);
    let day = &days(1)[0];
    let name = format!("{day}.jsonl");
    let before = generator.day_file(day, 100);
    fx.append(&name, before.as_bytes());
    model.feed(before.as_bytes());
    // A power cut leaves the file's length ahead of its data: 300 MB of NUL bytes, no newline.
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(fx.path(&name))
        .unwrap();
    file.set_len(before.len() as u64 + (300 << 20)).unwrap();
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(
        fx.status(),
        model.expected.status_json(),
        "the NUL bytes are not a line yet"
    );
    assert_peak_below(peak_mib, 64.0, "for 300 MB without a newline");

    // Reasonix goes on appending: the NUL run becomes one rejected line, the rest counts.
    let after = generator.day_file(day, 100);
    fx.append(&name, format!("\n{after}").as_bytes());
    model.expected.read += 1;
    model.expected.rejected += 1;
    model.feed(after.as_bytes());
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "after the NUL run");
    // Read again from the start (a lost checkpoint): nothing twice.
    std::fs::remove_file(fx.state.join("status.json")).ok();
    fx.run(&["once", "--otlp", "off", "--reset-state"]);
    assert_eq!(fx.status()["lines"]["rejected"], model.expected.rejected);
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_line_over_64_mib_is_rejected_as_too_long() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(62);
    let day = &days(1)[0];
    let before = generator.day_file(day, 10);
    let after = generator.day_file(day, 10);
    let huge = format!(
        r#"{{"ts":"{day}T10:00:00Z","model":"deepseek-chat","total":77,"transcript":"{}"}}"#,
        "x".repeat(65 << 20)
    );
    fx.append(
        &format!("{day}.jsonl"),
        format!("{before}{huge}\n{after}").as_bytes(),
    );
    model.feed(before.as_bytes());
    model.feed(after.as_bytes());
    model.expected.read += 1;
    model.expected.rejected += 1;
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    // The line is held up to the limit, then let go.
    assert_peak_below(peak_mib, 160.0, "for a line over 64 MiB");
    let (daemon, port) = fx.spawn_serving(&[]);
    let text = common::http_get(port, "/metrics", None).unwrap();
    assert!(
        text.contains("reasonix_exporter_lines_rejected_total{reason=\"too_long\"} 1"),
        "{text}"
    );
    drop(daemon);
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn five_thousand_day_files_are_read_exactly_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(7);
    for day in days(5000) {
        let text = generator.day_file(&day, 2);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "for 5,000 files");

    // An idle pass over 5,000 unchanged files opens none of them.
    let out = fx.ingest();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("ingested 0 new lines") && log.contains("from 0 of 5000 files"),
        "{log}"
    );
}

#[test]
fn bytes_that_are_not_utf8_and_nul_bytes_are_counted_or_rejected_once() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let day = &days(1)[0];
    let mut text: Vec<u8> = Vec::new();
    // Invalid UTF-8 inside a label value: kept, one U+FFFD per bad byte (as Go's decoder does).
    text.extend_from_slice(format!(r#"{{"ts":"{day}T01:00:00Z","model":"deep"#).as_bytes());
    text.extend_from_slice(b"\xff\xfe");
    text.extend_from_slice(br#"seek","source":"cli","total":10}"#);
    text.push(b'\n');
    // A raw NUL inside a string is not JSON: rejected.
    text.extend_from_slice(format!(r#"{{"ts":"{day}T02:00:00Z","model":"a"#).as_bytes());
    text.push(0);
    text.extend_from_slice(br#"b","total":20}"#);
    text.push(b'\n');
    // A line of NULs (what a crash can leave in a preallocated block): rejected, not blank.
    text.extend_from_slice(&[0u8; 64]);
    text.push(b'\n');
    // And a normal line after all that.
    text.extend_from_slice(
        format!(r#"{{"ts":"{day}T03:00:00Z","model":"ok","source":"cli","total":30}}"#).as_bytes(),
    );
    text.push(b'\n');
    fx.append(&format!("{day}.jsonl"), &text);
    model.feed(&text);

    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
    assert_eq!(model.expected.rejected, 2);
    // A second pass, and a copy of the file: nothing more.
    std::fs::copy(fx.path(&format!("{day}.jsonl")), fx.path("copy.jsonl")).unwrap();
    model.feed(&text);
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
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

/// libfaketime's preload library for threaded programs, when installed (Debian: `faketime`).
fn libfaketime() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib").ok()?.flatten().map(|e| e.path());
    dirs.chain([PathBuf::from("/usr/lib")])
        .map(|dir| dir.join("faketime/libfaketimeMT.so.1"))
        .find(|lib| lib.exists())
}

/// `command` under libfaketime's `lib` with `FAKETIME=faked` (the monotonic clock left real).
fn with_faked_clock<'a>(command: &'a mut Command, lib: &Path, faked: &str) -> &'a mut Command {
    command
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", faked)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
}

/// The wall clock set back by minutes (libfaketime, preloaded), as an NTP step does: runs that
/// start "earlier" than the ones before them still deliver exactly, `once` and `run` alike, each
/// export a millisecond after the one before, and nothing panics. (Set back by more than 10
/// minutes, the stream follows the clock: `a_clock_that_ran_fast_does_not_leave_the_stream_in_the_future`.)
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn clock_moved_backwards_still_delivers_exact_totals() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let lib = lib.display().to_string();
    let clock = |offset: &'static str| {
        [
            ("LD_PRELOAD", lib.clone()),
            ("FAKETIME", offset.to_string()),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
        ]
    };
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(9);
    let all_days = days(3);
    let mut add = |fx: &Fixture, model: &mut Model, day: &str| {
        let text = generator.day_file(day, 100);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    };
    add(&fx, &mut model, &all_days[0]);
    assert_success(&fx.export_to(&receiver));

    // Five minutes back.
    add(&fx, &mut model, &all_days[1]);
    let mut once = fx.command(&["once", "--otlp-endpoint", &receiver.endpoint]);
    once.envs(clock("-5m"));
    let out = once.output().unwrap();
    assert_success(&out);
    let minute = Command::new("date")
        .args(["-u", "+%FT%H:%M"])
        .output()
        .unwrap()
        .stdout;
    let minute = String::from_utf8_lossy(&minute).trim().to_string();
    let logged = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !logged.is_empty() && !logged.starts_with(&minute),
        "the clock was moved: {logged}"
    );
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // The daemon eight minutes back, with lines arriving while it runs.
    let env = clock("-8m");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let daemon = fx.spawn_with(
        &[
            "--otlp-endpoint",
            &receiver.endpoint,
            "--export-interval",
            "100ms",
            "--prometheus",
            "off",
        ],
        &env,
    );
    add(&fx, &mut model, &all_days[2]);
    assert!(wait_until(Duration::from_secs(20), || receiver.backend_totals()
        == model.expected.totals()));
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    // And back to the real time: nothing more, nothing less.
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
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

/// Contract §4, "Time": a clock before 1970 is a one-line error naming the clock, for every
/// command that opens the store, never a panic.
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn a_clock_before_1970_is_one_line_never_a_panic() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let fx = Fixture::new();
    fx.append_lines(
        "2026-10-01.jsonl",
        &[r#"{"ts":"2026-10-01T10:00:00Z","source":"code","turn":true}"#],
    );
    for args in [
        &["once", "--otlp-endpoint", "http://127.0.0.1:9/v1/metrics"][..],
        &["run", "--prometheus", "off"],
        &["status"],
        &["doctor"],
    ] {
        let out = with_faked_clock(&mut fx.command(args), &lib, "@1969-12-31 23:59:00")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = the_error_line(&out);
        assert!(
            line.contains("the system clock is before 1970"),
            "{args:?}: {line}"
        );
    }
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

/// The time of the ledger points in the last request `receiver` took (Unix ns).
fn last_point_ns(receiver: &Receiver) -> u64 {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    receiver
        .data_requests()
        .last()
        .into_iter()
        .flat_map(|r| &r.resource_metrics)
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter_map(|m| match &m.data {
            Some(Data::Sum(sum)) => sum.data_points.iter().map(|p| p.time_unix_nano).max(),
            _ => None,
        })
        .max()
        .expect("a point")
}

/// Contract §4, "Time": a clock that ran fast and came back leaves the stream dated by the
/// clock, not in the future; `doctor` says what happened meanwhile.
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn a_clock_that_ran_fast_does_not_leave_the_stream_in_the_future() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(14);
    ledger(&fx, &mut model, &mut generator, 20);
    let fast = with_faked_clock(
        &mut fx.command(&["once", "--otlp-endpoint", &receiver.endpoint]),
        &lib,
        "+3650d",
    )
    .output()
    .unwrap();
    assert_success(&fast);
    let now_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    assert!(last_point_ns(&receiver) > now_ns() + 3000 * 86_400 * 1_000_000_000);
    let doctor = fx.run(&["doctor", "--otlp-endpoint", &receiver.endpoint]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains("PROBLEM  clock") && said.contains("ahead of the clock"),
        "{said}"
    );

    let text = generator.day_file("2026-10-09", 20);
    fx.append("2026-10-09.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    let right = fx.export_to(&receiver);
    assert_success(&right);
    assert!(
        String::from_utf8_lossy(&right.stderr).contains("ahead of the clock"),
        "said once"
    );
    let newest = last_point_ns(&receiver);
    let now = now_ns();
    assert!(
        newest <= now && newest + 60_000_000_000 > now,
        "dated by the clock: {newest} at {now}"
    );
    let doctor = fx.run(&["doctor", "--otlp-endpoint", &receiver.endpoint]);
    assert!(!String::from_utf8_lossy(&doctor.stdout).contains("PROBLEM  clock"));
}

//! The state dir on a full disk, read-only, or deleted under `run`.

use super::*;

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

/// `run` started on a full disk under its store says so once and waits for room instead of
/// exiting (contract §7: a temporary condition, never an exit); with room again, it opens the
/// store and counts exactly what the ledger holds, the lines that landed meanwhile too.
#[test]
#[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
fn run_started_on_a_full_disk_waits_for_room_then_counts_exactly() {
    let fx = Fixture::new();
    let Some(disk) = Mount::tmpfs(&fx.state, "6m") else {
        return;
    };
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(37);
    ledger(&fx, &mut model, &mut generator, 300);
    fx.ingest();
    ledger(&fx, &mut model, &mut generator, 200);

    let args = [
        "--otlp-endpoint",
        &receiver.endpoint,
        "--prometheus",
        "off",
        "--export-interval",
        "1s",
    ];
    let (ballast, mut daemon) = started_on_a_full_disk(&fx, &disk, &args);
    assert!(daemon.is_running(), "{}", daemon.log_text());
    ledger(&fx, &mut model, &mut generator, 100);

    std::fs::remove_file(&ballast).unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || receiver.backend_totals()
            == model.expected.totals()),
        "counting starts once there is room: {}",
        daemon.log_text()
    );
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert_eq!(log.matches("counting paused").count(), 1, "reported once: {log}");
    assert!(log.contains("counting resumed"), "{log}");
    assert_eq!(
        receiver.backend_totals(),
        model.expected.totals(),
        "nothing twice"
    );
}

/// A stop asked for while `run` waits for room at start ends it at once, and cleanly: it had
/// counted nothing, and the next start reads the ledger.
#[test]
#[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
fn run_waiting_for_room_at_start_stops_at_once_when_asked() {
    let fx = Fixture::new();
    let Some(disk) = Mount::tmpfs(&fx.state, "6m") else {
        return;
    };
    let mut model = Model::default();
    ledger(&fx, &mut model, &mut Generator::new(41), 100);
    fx.ingest();
    let (_, daemon) = started_on_a_full_disk(&fx, &disk, &["--otlp", "off", "--prometheus", "off"]);
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(5), "stopped in {took:?}: {log}");
    assert!(log.contains("stopped while counting was paused"), "{log}");
}

/// `run` with `args`, started once every byte left on `disk` is taken (down to the last page,
/// by a file returned to be removed), and past reporting the full disk.
fn started_on_a_full_disk(fx: &Fixture, disk: &Mount, args: &[&str]) -> (PathBuf, common::Daemon) {
    let ballast = fx.state.join("ballast");
    let mut file = std::fs::File::create(&ballast).unwrap();
    for block in [64 << 10, 4 << 10, 1] {
        while std::io::Write::write_all(&mut file, &vec![0u8; block]).is_ok() {}
    }
    drop(file);
    assert_eq!(disk.available(), 0);
    let daemon = fx.spawn(args);
    assert!(
        wait_until(Duration::from_secs(30), || daemon
            .log_text()
            .contains("the disk is full")),
        "a full disk at start is reported: {}",
        daemon.log_text()
    );
    (ballast, daemon)
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

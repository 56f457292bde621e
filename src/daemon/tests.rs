//! The daemon's timing on tokio's paused clock: what it does at which moment, exactly and in
//! milliseconds of test time, without waiting for the wall clock. (The end-to-end tests in
//! `tests/daemon.rs` run the real process on the wall clock, with their margins stated.)

use std::time::Duration;

use std::path::Path;

use super::*;
use crate::paths::env_of;
use crate::settings::Flags;

/// A daemon on `stats` and `state`: no OTLP, no `/metrics`, no file events (polling alone, every
/// `poll`), and what it publishes.
fn polling_daemon(
    stats: &Path,
    state: &Path,
    poll: &str,
) -> (Daemon, watch::Receiver<Arc<Snapshot>>, Arc<Notify>) {
    let flags: Flags = [
        ("stats_dir", stats.to_str().unwrap()),
        ("state_dir", state.to_str().unwrap()),
        ("otlp", "off"),
        ("prometheus", "off"),
        ("watch", "off"),
        ("poll_interval", poll),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect();
    let settings = Settings::resolve(&flags, false, &env_of(&[("HOME", "/nowhere")])).unwrap();
    let store = Store::open(state, false).unwrap();
    let (snapshots, published) = watch::channel(Arc::new(Snapshot::default()));
    let daemon = Daemon::new(
        &settings,
        store,
        None,
        snapshots,
        None,
        Arc::new(AtomicBool::new(false)),
    );
    (daemon, published, Arc::new(Notify::new()))
}

fn append(file: &Path, line: &str) {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

#[tokio::test(start_paused = true)]
async fn polling_alone_a_new_line_is_committed_at_the_next_poll_and_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    std::fs::create_dir_all(&stats).unwrap();
    let (mut daemon, mut published, stopped) = polling_daemon(&stats, &state, "2s");
    let stop = stopped.clone();
    let running = tokio::spawn(async move { daemon.serve(&stop).await });
    // The first poll, at start.
    published.changed().await.unwrap();
    let started = tokio::time::Instant::now();

    tokio::time::sleep(Duration::from_millis(500)).await;
    append(
        &stats.join("2026-08-01.jsonl"),
        r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","total":9}"#,
    );
    published.changed().await.unwrap();
    // Published by the poll 2 s after the first, and not one moment earlier or later.
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let snapshot = published.borrow_and_update().clone();
    let total: u64 = snapshot
        .lifetime
        .values()
        .map(|t| t.get(crate::series::Quantity::Total))
        .sum();
    assert_eq!(total, 9);

    // A poll with nothing new publishes the same totals, 2 s later again.
    published.changed().await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(4));
    assert_eq!(published.borrow().lifetime, snapshot.lifetime);

    stopped.notify_one();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_missing_stats_folder_is_waited_for_and_read_at_the_first_poll_after_it_appears() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    let (mut daemon, mut published, stopped) = polling_daemon(&stats, &state, "500ms");
    let stop = stopped.clone();
    let running = tokio::spawn(async move { daemon.serve(&stop).await });
    published.changed().await.unwrap();
    let started = tokio::time::Instant::now();
    // Ten polls find nothing.
    for _ in 0..10 {
        published.changed().await.unwrap();
        assert!(published.borrow().lifetime.is_empty());
    }
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    std::fs::create_dir_all(&stats).unwrap();
    append(
        &stats.join("2026-08-01.jsonl"),
        r#"{"ts":"2026-08-01T10:00:00Z","source":"cli","turn":true}"#,
    );
    published.changed().await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(5500));
    assert_eq!(published.borrow().lifetime.len(), 1);
    stopped.notify_one();
    running.await.unwrap().unwrap();
}

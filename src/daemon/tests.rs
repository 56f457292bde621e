//! The daemon's timing on tokio's paused clock: what it does at which moment, exactly and in
//! milliseconds of test time, without waiting for the wall clock. (The end-to-end tests in
//! `tests/daemon/` run the real process on the wall clock, with their margins stated.)

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::paths::env_of;
use crate::settings::Flags;

/// Settings of these flags alone: no config file, and a home that holds none.
fn settings_of(flags: &[(&'static str, &str)]) -> Settings {
    let flags: Flags = flags
        .iter()
        .map(|&(k, v)| (k, std::ffi::OsString::from(v)))
        .collect();
    Settings::resolve(&flags, false, &env_of(&[("HOME", "/nowhere")])).unwrap()
}

/// A daemon serving on its own task, stopped by [`Running::stop`].
struct Running {
    stopped: Arc<Notify>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    async fn stop(self) {
        self.stopped.notify_one();
        self.task.await.unwrap().unwrap();
    }
}

/// A daemon running on `stats` and `state`: no `/metrics`, no file events (polling alone,
/// every `poll`), exporting every 60 s to `endpoint` (or not at all); and what it publishes.
fn run_daemon(
    stats: &Path,
    state: &Path,
    poll: &str,
    endpoint: Option<&str>,
) -> (Running, watch::Receiver<Arc<ScrapeView>>) {
    let export = match endpoint {
        Some(url) => ("otlp_endpoint", url),
        None => ("otlp", "off"),
    };
    let settings = settings_of(&[
        ("stats_dir", stats.to_str().unwrap()),
        ("state_dir", state.to_str().unwrap()),
        ("prometheus", "off"),
        ("watch", "off"),
        ("poll_interval", poll),
        ("export_interval", "60s"),
        export,
    ]);
    let exporter = settings.otlp.as_ref().map(|otlp| {
        OtlpExporter::new(
            otlp.target.clone(),
            otlp.temporality,
            otlp.gen_ai,
            "test@host",
            &otlp.resource,
        )
        .unwrap()
    });
    let opened = Opened::open(state, false).unwrap();
    let (scrape_views, published) = watch::channel(Arc::new(ScrapeView::default()));
    let stopping = Arc::new(AtomicBool::new(false));
    let mut daemon = Daemon::new(&settings, opened, exporter, scrape_views, None, stopping);
    let stopped = Arc::new(Notify::new());
    let stop = stopped.clone();
    let task = tokio::spawn(async move { daemon.serve(&stop).await });
    (Running { stopped, task }, published)
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
    let (running, mut published) = run_daemon(&stats, &state, "2s", None);
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
        .tokens
        .values()
        .map(|t| t.get(crate::series::Quantity::Total))
        .sum();
    assert_eq!(total, 9);

    // A poll with nothing new publishes the same totals, 2 s later again.
    published.changed().await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(4));
    assert_eq!(published.borrow().lifetime, snapshot.lifetime);

    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_stats_folder_is_waited_for_and_read_at_the_first_poll_after_it_appears() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    let (running, mut published) = run_daemon(&stats, &state, "500ms", None);
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
    assert_eq!(published.borrow().lifetime.tokens.len(), 1);
    running.stop().await;
}

/// A collector on the paused clock: it answers each request with the next of `answers` (an HTTP
/// status and a `Retry-After`, or 200 once they run out) and notes when each arrived.
async fn scripted_collector(
    answers: Vec<(u16, Option<&'static str>)>,
) -> (String, Arc<std::sync::Mutex<Vec<tokio::time::Instant>>>) {
    use axum::http::{HeaderMap, HeaderValue, StatusCode};
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let script = Arc::new(std::sync::Mutex::new(answers.into_iter()));
    let app = axum::Router::new().route(
        "/v1/metrics",
        axum::routing::post({
            let arrivals = arrivals.clone();
            move || async move {
                arrivals.lock().unwrap().push(tokio::time::Instant::now());
                let (status, retry_after) = script.lock().unwrap().next().unwrap_or((200, None));
                let mut headers = HeaderMap::new();
                if let Some(after) = retry_after {
                    headers.insert("retry-after", HeaderValue::from_static(after));
                }
                (StatusCode::from_u16(status).unwrap(), headers, Vec::<u8>::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/v1/metrics", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (endpoint, arrivals)
}

#[tokio::test(start_paused = true)]
async fn a_refusing_collector_is_retried_with_backoff_and_its_retry_after_is_waited_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    std::fs::create_dir_all(&stats).unwrap();
    append(
        &stats.join("2026-08-01.jsonl"),
        r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","total":9}"#,
    );
    // Refused, refused, refused asking for 30 s, then accepted.
    let (endpoint, arrivals) =
        scripted_collector(vec![(503, None), (503, None), (429, Some("30")), (200, None)]).await;
    let (running, _published) = run_daemon(&stats, &state, "2s", Some(&endpoint));
    while arrivals.lock().unwrap().len() < 4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let times = arrivals.lock().unwrap().clone();
    let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
    // Backoff from 1 s, doubling, each wait spread by up to a fifth (plus the 100 ms this loop
    // and the polls may add); then the collector's 30 s, whole.
    assert!((0.8..=1.3).contains(&gaps[0]), "{gaps:?}");
    assert!((1.6..=2.5).contains(&gaps[1]), "{gaps:?}");
    assert!((30.0..=30.2).contains(&gaps[2]), "{gaps:?}");
    // Accepted: the next export waits for the interval (60 s after the first, at start).
    while arrivals.lock().unwrap().len() < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fifth = arrivals.lock().unwrap()[4];
    assert_eq!(
        (fifth - times[0]).as_secs(),
        60,
        "the next export is the interval's"
    );
    running.stop().await;
}

// Unix: the state dir is removed while the store holds its files open, which Windows refuses.
#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_deleted_state_dir_pauses_counting_until_the_retry_then_the_ledger_is_counted_again() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    std::fs::create_dir_all(&stats).unwrap();
    append(
        &stats.join("2026-08-01.jsonl"),
        r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","total":9}"#,
    );
    let (running, mut published) = run_daemon(&stats, &state, "1s", None);
    published.changed().await.unwrap();
    let counted = published.borrow_and_update().lifetime.clone();
    assert_eq!(counted.tokens.len(), 1);

    std::fs::remove_dir_all(&state).unwrap();
    let deleted = tokio::time::Instant::now();
    // The next poll finds the store gone and pauses; nothing is published while paused. The
    // first retry is due after 1 s spread by a fifth, so the poll after it (at 2 s, or at 3 s
    // when the spread is above 1 s) reopens a new store and reads the ledger again.
    published.changed().await.unwrap();
    let resumed = deleted.elapsed();
    assert!(
        resumed == Duration::from_secs(2) || resumed == Duration::from_secs(3),
        "{resumed:?}"
    );
    assert_eq!(
        published.borrow().lifetime,
        counted,
        "the same totals, from the ledger"
    );
    assert!(state.join("store").is_dir());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_retry_that_comes_due_while_counting_is_paused_is_taken_not_spun_on() {
    // An export failed (a retry is set), then the store could not be written and was let go.
    // The retry's branch of the loop fires when it is due; were the retry left set, it would fire
    // again at once, every turn, until the store came back.
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    std::fs::create_dir_all(&stats).unwrap();
    let settings = settings_of(&[
        ("stats_dir", stats.to_str().unwrap()),
        ("state_dir", state.to_str().unwrap()),
        ("prometheus", "off"),
        ("otlp_endpoint", "http://127.0.0.1:9/v1/metrics"),
    ]);
    let otlp = settings.otlp.as_ref().unwrap();
    let exporter = OtlpExporter::new(
        otlp.target.clone(),
        otlp.temporality,
        otlp.gen_ai,
        "test@host",
        &otlp.resource,
    )
    .unwrap();
    let opened = Opened::open(&state, false).unwrap();
    let (scrape_views, _published) = watch::channel(Arc::new(ScrapeView::default()));
    let stopping = Arc::new(AtomicBool::new(false));
    let mut daemon = Daemon::new(&settings, opened, Some(exporter), scrape_views, None, stopping);
    daemon.exports.as_mut().unwrap().retry_at = Some(tokio::time::Instant::now());
    drop(daemon.opened.take());
    daemon.start_export().unwrap();
    assert_eq!(daemon.retry_at(), None, "the retry is taken");
    assert!(daemon.idle(), "nothing was sent without a store");
}

/// A store that has grown by [`store_reopen::REOPEN_GROWTH`] since it was opened (a backfill)
/// is opened again at the end of the poll that grew it, under the same delivery: the same
/// counts and stream instance after it, and a line read after it counted once.
#[tokio::test]
async fn a_store_grown_by_a_backfill_is_opened_again_and_counts_on_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, state) = (dir.path().join("stats"), dir.path().join("state"));
    std::fs::create_dir_all(&stats).unwrap();
    // 160,000 lines over 10 days: some 3 MB of store, the usual shape's 19 bytes a line.
    const DAYS: usize = 10;
    const LINES_A_DAY: usize = 16_000;
    for day in 0..DAYS {
        let date = format!("2026-07-{:02}", day + 1);
        let text: String = (0..LINES_A_DAY)
            .map(|i| {
                format!(
                    "{{\"ts\":\"{date}T10:00:00Z\",\"model\":\"m/x\",\"total\":{}}}\n",
                    i + 1
                )
            })
            .collect();
        std::fs::write(stats.join(format!("{date}.jsonl")), text).unwrap();
    }
    let settings = settings_of(&[
        ("stats_dir", stats.to_str().unwrap()),
        ("state_dir", state.to_str().unwrap()),
        ("prometheus", "off"),
        ("watch", "off"),
        ("otlp", "off"),
    ]);
    let opened = Opened::open(&state, false).unwrap();
    let first_size = opened.opened_bytes;
    let (scrape_views, _published) = watch::channel(Arc::new(ScrapeView::default()));
    let stopping = Arc::new(AtomicBool::new(false));
    let mut daemon = Daemon::new(&settings, opened, None, scrape_views, None, stopping);
    // The stream's instance, or `fresh` if it has none yet.
    let instance = |daemon: &mut Daemon, fresh: &str| {
        let opened = daemon.opened.as_mut().expect("the store is open");
        opened.delivery.identity(|| fresh.into(), "legacy")
    };
    assert_eq!(instance(&mut daemon, "named at start"), "named at start");

    daemon.ingest().unwrap();
    let opened = daemon.opened.as_ref().expect("opened again, not paused");
    let lines = (DAYS * LINES_A_DAY) as u64;
    assert_eq!(opened.store.counts().counted, lines);
    assert!(
        opened.opened_bytes >= first_size + store_reopen::REOPEN_GROWTH,
        "the store, {} bytes, was opened again after the backfill (it was {first_size} at start)",
        opened.opened_bytes
    );
    assert_eq!(instance(&mut daemon, "named again"), "named at start");

    append(
        &stats.join("2026-07-09.jsonl"),
        r#"{"ts":"2026-07-09T11:00:00Z","model":"m/x","total":7}"#,
    );
    daemon.ingest().unwrap();
    let store = &daemon.opened.as_ref().unwrap().store;
    assert_eq!(store.counts().counted, lines + 1);
    let total: u64 = store
        .lifetime()
        .tokens
        .values()
        .map(|t| t.get(crate::series::Quantity::Total))
        .sum();
    let per_day = (LINES_A_DAY * (LINES_A_DAY + 1) / 2) as u64;
    assert_eq!(total, per_day * DAYS as u64 + 7);
}

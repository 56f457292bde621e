//! The store's database starts its I/O threads without burning a core (third_party/sled/PATCHES.md).
//!
//! crates.io's sled 0.34 starts its pool's seven threads inside a spin-locked lazy value, and
//! each spins on that lock until the last has started: on two busy cores, 4–5 ms of CPU in a
//! `once`. The pool starts once in a process, so the test runs its measurement in fresh copies
//! of this binary, and judges their median (how long the spinning lasts depends on when the
//! scheduler lets the new threads run).

#![cfg(target_os = "linux")]

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reasonix_exporter::ingest::poll;
use reasonix_exporter::store::Store;

/// What sled's threads may spend on a core while a store is opened, fed and flushed: they start,
/// read a segment header and write a few KiB, 0.8–1.4 ms in all in a debug build (the median of
/// seven processes); with the pool spinning, the median was 3.4–10 ms in nine runs of eleven, under
/// this bound in two.
const ON_CPU_BOUND: Duration = Duration::from_micros(2_500);

/// Fresh processes measured.
const PROCESSES: usize = 7;

/// Set in a copy of this binary that measures one process and prints the nanoseconds.
const CHILD: &str = "STORE_THREADS_MEASURE_IN";

#[test]
fn the_stores_threads_wait_for_work_without_spinning() {
    if let Some(dir) = std::env::var_os(CHILD) {
        println!("on-cpu-ns {}", measure_in(dir.as_ref()).as_nanos());
        return;
    }
    let mut on_cpu: Vec<Duration> = (0..PROCESSES).map(|_| in_a_fresh_process()).collect();
    on_cpu.sort();
    let median = on_cpu[PROCESSES / 2];
    assert!(
        median < ON_CPU_BOUND,
        "sled's threads were on a core for {median:?} (median of {on_cpu:?}): its pool spins"
    );
}

/// One measurement, in a copy of this binary that runs this test alone.
fn in_a_fresh_process() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "the_stores_threads_wait_for_work_without_spinning",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the measuring process failed: {stdout}{stderr}"
    );
    let ns = stdout
        .lines()
        .find_map(|line| line.strip_prefix("on-cpu-ns "))
        .unwrap_or_else(|| panic!("no measurement: {stdout}{stderr}"));
    Duration::from_nanos(ns.trim().parse().unwrap())
}

/// A store opened (the first in this process: sled's pool starts), one line read into it and
/// flushed, with every core busy, as in a backfill; then how long sled's threads have been on a
/// core.
fn measure_in(dir: &std::path::Path) -> Duration {
    let stats = dir.join("stats");
    std::fs::create_dir(&stats).unwrap();
    let line = r#"{"ts":"2026-08-01T10:00:00Z","model":"m/x","source":"cli","total":3}"#;
    std::fs::write(stats.join("2026-08-01.jsonl"), format!("{line}\n")).unwrap();
    let busy = AtomicBool::new(true);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        // The busy threads end also when a spawn or the store fails (a panic here), or the scope
        // would wait for them for ever.
        let _done = Done(&busy);
        for _ in 0..cores {
            scope.spawn(|| {
                while busy.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let mut store = Store::open(&dir.join("state"), false).unwrap();
        assert_eq!(poll(&mut store, &stats).unwrap().counts.counted, 1);
        store.close_without_fsync().unwrap();
    });
    let threads = sled_threads();
    // A thread that has not yet run is not named yet, and has spent nothing.
    assert!(
        !threads.is_empty(),
        "no thread of sled's pool ran: the store did no I/O on it"
    );
    threads.iter().sum()
}

/// Lets the busy threads go when dropped.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// How long each of sled's I/O threads in this process has run on a core (the scheduler's own
/// account, in nanoseconds).
fn sled_threads() -> Vec<Duration> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if !name.starts_with("sled-io") {
            continue;
        }
        let schedstat = std::fs::read_to_string(task.join("schedstat")).expect(
            "/proc/self/task/*/schedstat: a kernel with CONFIG_SCHED_INFO (Debian's has it) runs this test",
        );
        let ns: u64 = schedstat.split_whitespace().next().unwrap().parse().unwrap();
        threads.push(Duration::from_nanos(ns));
    }
    threads
}

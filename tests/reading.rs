//! Reading positions (contract §5) against what people and tools do to day files: a rewrite
//! that puts the modification time back, a file gone between the listing and the open.

#![cfg(unix)]

mod common;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use common::{Fixture, assert_success};
use reasonix_exporter::ingest;
use reasonix_exporter::ledger::tail::FullCheck;
use reasonix_exporter::store::Store;

/// `n` lines of one length, told apart by `first_digit` and their number.
fn lines_of_one_length(first_digit: u8, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"ts\":\"2026-08-01T10:00:00Z\",\"model\":\"m/x\",\"source\":\"cli\",\"total\":{}{i:03}}}\n",
                first_digit
            )
        })
        .collect()
}

fn counted(fx: &Fixture) -> u64 {
    fx.status()["lines"]["counted"].as_u64().unwrap()
}

#[test]
fn a_same_size_rewrite_with_its_modification_time_put_back_is_read_again() {
    let fx = Fixture::new();
    let path = fx.path("2026-08-01.jsonl");
    std::fs::write(&path, lines_of_one_length(1, 100)).unwrap();
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    assert_eq!(counted(&fx), 100);
    let modified: SystemTime = std::fs::metadata(&path).unwrap().modified().unwrap();
    // Rewritten in place, the same size, then `touch -d` to the time it had: only the change
    // time, which no user can set, still says the file was written.
    for first_digit in [2, 3] {
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, lines_of_one_length(first_digit, 100).as_bytes(), 0)
            .unwrap();
        file.set_modified(modified).unwrap();
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified);
        assert_success(&fx.run(&["once", "--otlp", "off"]));
    }
    assert_eq!(counted(&fx), 300, "every line the file ever held, once");
    // Untouched since: not read again, nothing counted twice.
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    assert_eq!(fx.status()["lines"]["read"].as_u64().unwrap(), 300);
}

#[test]
fn a_file_gone_between_the_listing_and_the_open_is_not_unreadable() {
    let fx = Fixture::new();
    std::fs::write(fx.path("2026-08-01.jsonl"), lines_of_one_length(1, 10)).unwrap();
    std::fs::write(fx.path("2026-08-02.jsonl"), lines_of_one_length(2, 10)).unwrap();
    let mut store = Store::open(&fx.state, false).unwrap();
    let listing = ingest::list(&fx.stats);
    // A sync tool's temporary file, or a file renamed away, after it was listed.
    std::fs::remove_file(fx.path("2026-08-02.jsonl")).unwrap();
    let report =
        ingest::poll_listed(&mut store, listing, &AtomicBool::new(false), FullCheck::WhenDue).unwrap();
    assert_eq!(
        report.files_failed, 0,
        "gone is not unreadable: {:?}",
        report.first_failure
    );
    assert_eq!(report.counts.counted, 10);
}

#[test]
fn a_late_line_in_an_older_day_file_is_read_at_once_not_at_the_next_full_listing() {
    let fx = Fixture::new();
    // Many day files, none of them today's: a quick poll reads only the few written last.
    for day in 1..=28 {
        std::fs::write(
            fx.path(&format!("2026-08-{day:02}.jsonl")),
            lines_of_one_length(1, 2),
        )
        .unwrap();
    }
    let (daemon, _) = fx.spawn_serving(&[]);
    assert!(
        common::wait_until(Duration::from_secs(20), || counted(&fx) == 2),
        "{}",
        daemon.log_text()
    );
    // A record queued long ago lands in its own day's file, the oldest one.
    fx.append_lines(
        "2026-08-01.jsonl",
        &[r#"{"ts":"2026-08-01T23:59:59Z","model":"m/x","source":"cli","total":7}"#],
    );
    // Well before the next full listing (a minute after the last).
    assert!(
        common::wait_until(Duration::from_secs(15), || counted(&fx) == 3),
        "the late line was not read: {}",
        daemon.log_text()
    );
}

//! Contract §5, the checkpoint: files rewritten, shrunk, replaced or moved, a lost store.

use super::*;

#[test]
fn moved_home_does_not_double_count() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B]);
    let run = |home: &std::path::Path| {
        let out = fx
            .command(&["once", "--otlp", "off"])
            .env("REASONIX_HOME", home)
            .output()
            .unwrap();
        assert_success(&out);
    };
    run(&fx.home.join(".reasonix"));
    // The user moves Reasonix's home (a new disk, a new machine's sync) and adds a day.
    let moved = fx.root.path().join("elsewhere");
    std::fs::create_dir_all(moved.join("stats")).unwrap();
    for entry in std::fs::read_dir(&fx.stats).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), moved.join("stats").join(entry.file_name())).unwrap();
    }
    std::fs::write(moved.join("stats/2026-08-08.jsonl"), format!("{USAGE_C}\n")).unwrap();
    run(&moved);
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050 + 15);
    assert_eq!(status["lines"]["counted"], 3);
}

#[test]
fn deleted_store_folder_rereads_everything_exactly_once() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B, TURN]);
    fx.ingest();
    let before = fx.status();
    // Only the store itself, not the rest of the state dir.
    std::fs::remove_dir_all(fx.state.join("store")).unwrap();
    fx.ingest();
    assert_eq!(fx.status(), before);
}

#[test]
fn lost_store_rereads_everything_exactly_once() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B, TURN]);
    fx.ingest();
    let before = fx.status();
    std::fs::remove_dir_all(&fx.state).unwrap();
    fx.ingest();
    assert_eq!(fx.status(), before);
}

#[test]
fn run_again_with_no_change_adds_nothing() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, TURN]);
    fx.ingest();
    let before = fx.status();
    let out = fx.ingest();
    assert!(String::from_utf8_lossy(&out.stderr).contains("ingested 0 new lines"));
    assert_eq!(fx.status(), before);
}

#[test]
fn shrunk_file_is_reread_without_double_counting() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B]);
    fx.ingest();
    // Truncated in place (same inode) to its first line, then a new line appended.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(fx.path("2026-08-07.jsonl"))
        .unwrap();
    f.set_len(USAGE_A.len() as u64 + 1).unwrap();
    drop(f);
    fx.append_lines("2026-08-07.jsonl", &[USAGE_C]);
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050 + 15);
    assert_eq!(
        lines(&status),
        json!({"read": 4, "counted": 3, "duplicate": 1, "rejected": 0})
    );
}

#[test]
fn same_size_rewrite_is_reread_without_double_counting() {
    let fx = Fixture::new();
    let path = fx.path("2026-08-07.jsonl");
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B]);
    fx.ingest();
    // The same number of bytes, one digit changed, written in place.
    let changed = USAGE_B.replace("\"total\":1050", "\"total\":1051");
    assert_eq!(changed.len(), USAGE_B.len());
    let mtime_before = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, format!("{USAGE_A}\n{changed}\n")).unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    // Make sure the rewrite is visible as a new mtime even on coarse-timestamp filesystems.
    f.set_modified(mtime_before + std::time::Duration::from_secs(1))
        .unwrap();
    drop(f);
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050 + 1051);
    assert_eq!(
        lines(&status),
        json!({"read": 4, "counted": 3, "duplicate": 1, "rejected": 0})
    );
}

#[test]
fn same_prefix_rewrite_is_reread_without_double_counting() {
    let fx = Fixture::new();
    let path = fx.path("2026-08-07.jsonl");
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B]);
    fx.ingest();
    // Same inode, same first line, longer: the second line differs before the old offset.
    std::fs::write(&path, format!("{USAGE_A}\n{USAGE_C}\n{USAGE_B}\n")).unwrap();
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050 + 15);
    assert_eq!(
        lines(&status),
        json!({"read": 5, "counted": 3, "duplicate": 2, "rejected": 0})
    );
}

#[test]
fn replaced_file_is_reread_without_double_counting() {
    let fx = Fixture::new();
    let path = fx.path("2026-08-07.jsonl");
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A]);
    fx.ingest();
    // A new inode under the same name (an editor's save, a restore from backup).
    let tmp = fx.stats.join("tmp.swap");
    std::fs::write(&tmp, format!("{USAGE_A}\n{USAGE_B}\n")).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050);
    assert_eq!(
        lines(&status),
        json!({"read": 3, "counted": 2, "duplicate": 1, "rejected": 0})
    );
}

#[test]
fn appended_lines_add_exactly_the_new_lines() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = common::generator::Generator::new(7);
    let days = common::generator::days(3);
    for round in 0..4 {
        for day in &days {
            let chunk = generator.day_file(day, 25 + round * 10);
            fx.append(&format!("{day}.jsonl"), chunk.as_bytes());
            model.feed(chunk.as_bytes());
        }
        fx.ingest();
        expect_model(&fx, &model);
    }
}

//! Golden tests: every `testdata/<case>/stats` ledger, ingested, gives exactly
//! `testdata/<case>/expected-status.json`. See testdata/README.md for how each was made.

mod common;

use std::path::{Path, PathBuf};

use common::{BIN, assert_success};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn run(stats: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(BIN)
        .env_clear()
        .arg("--stats-dir")
        .arg(stats)
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .output()
        .unwrap();
    assert_success(&out);
    out
}

#[test]
fn every_golden_ledger_gives_its_expected_status() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("stats").is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 3, "golden cases are missing");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let work = tempfile::tempdir().unwrap();
        // A copy: the exporter must not need to (and does not) write in the ledger anyway.
        let stats = work.path().join("stats");
        copy_tree(&case.join("stats"), &stats);
        let state = work.path().join("state");
        run(&stats, &state, &["once", "--otlp", "off"]);
        let got: serde_json::Value =
            serde_json::from_slice(&run(&stats, &state, &["status", "--json"]).stdout).unwrap();
        let want: serde_json::Value =
            serde_json::from_slice(&std::fs::read(case.join("expected-status.json")).unwrap()).unwrap();
        assert_eq!(got, want, "golden case {name}");
    }
}

/// `testdata/store-format-3`: the state dir `once` left after counting `row-kinds` and exporting
/// it (store format 3, stream record 1), committed. This build opens a copy of it, reads the
/// same totals, and counts nothing twice when it reads the same ledger again. A change to any
/// stored layout fails here unless it keeps reading what was written before.
#[test]
fn a_committed_store_of_the_current_format_opens_and_knows_its_lines() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let work = tempfile::tempdir().unwrap();
    let stats = work.path().join("stats");
    copy_tree(&root.join("row-kinds/stats"), &stats);
    let state = work.path().join("state");
    copy_tree(&root.join("store-format-3/state"), &state);
    let want: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("row-kinds/expected-status.json")).unwrap()).unwrap();
    let status = |state: &Path| -> serde_json::Value {
        serde_json::from_slice(&run(&stats, state, &["status", "--json"]).stdout).unwrap()
    };
    assert_eq!(status(&state), want, "the committed store's totals");

    run(&stats, &state, &["once", "--otlp", "off"]);
    let again = status(&state);
    assert_eq!(
        again["series"], want["series"],
        "the same lines read again count nothing"
    );
    assert_eq!(again["lines"]["counted"], want["lines"]["counted"]);
    assert_eq!(again["lines"]["duplicate"], want["lines"]["read"]);
}

//! Golden tests: every `testdata/<case>/stats` ledger, ingested, gives exactly
//! `testdata/<case>/expected-status.json`. See testdata/README.md for how each was made.

mod common;

use std::path::{Path, PathBuf};

use common::files::copy_tree;
use common::{BIN, assert_success};
use reasonix_exporter::daemon::read_ledger;
use reasonix_exporter::ingest::list;
use reasonix_exporter::ledger::tail::FullCheck;

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

/// A copy of `testdata/store-format-3/state` beside a copy of the ledger it counted, and the
/// status that ledger must give (`row-kinds/expected-status.json`).
struct Upgrade {
    work: tempfile::TempDir,
    stats: PathBuf,
    state: PathBuf,
    want: serde_json::Value,
}

impl Upgrade {
    fn new() -> Upgrade {
        Upgrade::of("store-format-3")
    }

    fn of(store: &str) -> Upgrade {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let work = tempfile::tempdir().unwrap();
        let stats = work.path().join("stats");
        copy_tree(&root.join("row-kinds/stats"), &stats);
        let state = work.path().join("state");
        copy_tree(&root.join(store).join("state"), &state);
        let want = std::fs::read(root.join("row-kinds/expected-status.json")).unwrap();
        Upgrade {
            work,
            stats,
            state,
            want: serde_json::from_slice(&want).unwrap(),
        }
    }
}

/// `testdata/store-format-3`: the state dir `once` left after counting `row-kinds` and exporting
/// it (store format 3, before cost; stream record 1), committed. This build upgrades a copy of
/// it: the same token totals, the cost of every line it had counted added exactly once by the
/// cost pass (the expected file is computed by testdata/expected_status.py), the same stream
/// start, and nothing counted twice when the same ledger is read again and again.
#[test]
fn a_store_from_before_cost_is_upgraded_and_gains_the_cost_of_its_lines_once() {
    let Upgrade {
        work: _work,
        stats,
        state,
        want,
    } = Upgrade::new();
    let status = |state: &Path| -> serde_json::Value {
        serde_json::from_slice(&run(&stats, state, &["status", "--json"]).stdout).unwrap()
    };
    let stream_start = |state: &Path| std::fs::read(state.join("stream")).unwrap()[9..17].to_vec();
    let start = stream_start(&state);
    let before = status(&state);
    assert_eq!(before["series"], want["series"], "the committed store's totals");
    assert_eq!(before["lines"], want["lines"]);
    let table = |state: &Path| String::from_utf8(run(&stats, state, &["status"]).stdout).unwrap();
    let pending = "the cost of the lines counted before the upgrade is still to be read from 2 ledger files";
    assert!(table(&state).contains(pending), "{}", table(&state));
    let doctor = std::process::Command::new(BIN)
        .env_clear()
        .args([
            "--stats-dir".as_ref(),
            stats.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
        ])
        .args(["doctor", "--otlp", "off", "--prometheus", "off"])
        .output()
        .unwrap();
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.contains(pending), "doctor says so too: {doctor}");

    for pass in 1..=2 {
        run(&stats, &state, &["once", "--otlp", "off"]);
        let after = status(&state);
        assert_eq!(
            after["series"], want["series"],
            "pass {pass}: no token counted twice"
        );
        assert_eq!(
            after["cost"], want["cost"],
            "pass {pass}: the cost of the counted lines"
        );
        assert_eq!(after["unpriced"], want["unpriced"], "pass {pass}");
        assert_eq!(after["lines"]["counted"], want["lines"]["counted"]);
    }
    assert_eq!(stream_start(&state), start, "the stream goes on");
    assert!(!table(&state).contains("still to be read"), "the pass is over");
}

/// `testdata/store-format-5`: the state dir `once` left after counting `row-kinds` and exporting
/// it with delta temporality (format 5: token totals eight wide, in the store, the stream record,
/// the export record and the history frontier). This build upgrades a copy: the same totals,
/// cost and counts; what was delivered still delivered, so a delta export has nothing to send
/// (to an endpoint where nothing listens, which it never asks); the stream's start kept.
#[test]
fn a_store_from_before_widths_is_upgraded_with_its_totals_and_deliveries() {
    let Upgrade {
        work: _work,
        stats,
        state,
        want,
    } = Upgrade::of("store-format-5");
    let status = |state: &Path| -> serde_json::Value {
        serde_json::from_slice(&run(&stats, state, &["status", "--json"]).stdout).unwrap()
    };
    let stream_start = |state: &Path| std::fs::read(state.join("stream")).unwrap()[9..17].to_vec();
    let start = stream_start(&state);
    for key in ["series", "cost", "unpriced", "lines"] {
        assert_eq!(
            status(&state)[key],
            want[key],
            "{key}, as the old store counted it"
        );
    }
    let nowhere = "http://127.0.0.1:9/v1/metrics";
    for pass in 1..=2 {
        let out = std::process::Command::new(BIN)
            .env_clear()
            .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
            .args(["--stats-dir".as_ref(), stats.as_os_str()])
            .args(["--state-dir".as_ref(), state.as_os_str()])
            .args(["--otlp-endpoint", nowhere, "once"])
            .output()
            .unwrap();
        assert_success(&out);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("nothing new"),
            "pass {pass}: delivered stays delivered: {said}"
        );
        // The ledger is a copy (its files new to the store): read again, every line a duplicate.
        let after = status(&state);
        for key in ["series", "cost", "unpriced"] {
            assert_eq!(after[key], want[key], "pass {pass}: {key}, nothing counted twice");
        }
        assert_eq!(after["lines"]["counted"], want["lines"]["counted"], "pass {pass}");
    }
    assert_eq!(stream_start(&state), start, "the stream goes on");
    let doctor = std::process::Command::new(BIN)
        .env_clear()
        .args(["--stats-dir".as_ref(), stats.as_os_str()])
        .args(["--state-dir".as_ref(), state.as_os_str()])
        .args(["doctor", "--otlp", "off", "--prometheus", "off"])
        .output()
        .unwrap();
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    let format = format!("format {}", reasonix_exporter::store::FORMAT_VERSION);
    assert!(doctor.contains(&format), "{doctor}");
}

/// The cost pass stopped after its first file (as by a signal) and then killed: the copy of the
/// state dir a `kill -9` leaves resumes the pass, and each line's cost is added once.
#[test]
fn the_cost_pass_resumes_after_a_kill_and_adds_each_cost_once() {
    use reasonix_exporter::status_file::StatusJson;
    use reasonix_exporter::store::Store;

    let Upgrade {
        work,
        stats,
        state,
        want,
    } = Upgrade::new();
    let killed = work.path().join("killed");

    let mut store = Store::open(&state, false).unwrap();
    let regions = store.cost_pass().len();
    assert!(regions > 1, "the committed store has several files to pass over");
    read(&mut store, &stats, Stop::AfterOneFile);
    assert_eq!(store.cost_pass().len(), regions - 1, "stopped after one file");
    copy_tree(&state, &killed);
    drop(store);

    let mut store = Store::open(&killed, false).unwrap();
    read(&mut store, &stats, Stop::Never);
    assert!(store.cost_pass().is_empty(), "the pass is over");
    let got = serde_json::to_value(StatusJson::of(store.lifetime(), store.counts())).unwrap();
    assert_eq!(got["cost"], want["cost"]);
    assert_eq!(got["unpriced"], want["unpriced"]);
    assert_eq!(got["series"], want["series"]);
}

/// Whether a reading stops after its first file (as a signal stops it) or goes to the end.
enum Stop {
    AfterOneFile,
    Never,
}

/// `once`'s reading of the ledger under `stats` into `store`.
fn read(store: &mut reasonix_exporter::store::Store, stats: &Path, stop: Stop) {
    let stop = std::sync::atomic::AtomicBool::new(matches!(stop, Stop::AfterOneFile));
    read_ledger(store, list(stats), &stop, FullCheck::WhenDue).unwrap();
}

/// A ledger file rewritten in place (same inode) before the cost pass reads it: the pass skips the
/// line the store never counted, the usual reading counts it whole, and its cost is there once.
#[test]
fn a_new_line_in_a_file_the_cost_pass_has_still_to_read_is_priced_once() {
    use reasonix_exporter::status_file::StatusJson;
    use reasonix_exporter::store::Store;

    let Upgrade {
        work: _work,
        stats,
        state,
        want,
    } = Upgrade::new();

    let last = stats.join("2026-08-08.jsonl");
    let new_line = r#"{"ts":"2026-08-08T09:00:00+08:00","model":"x/y","source":"cli","total":1,"requests":1,"cost_amount":"1","cost_currency":"USD","cost_complete":true,"billing_mode":"payg"}"#;
    let rewritten = [new_line.as_bytes(), b"\n", &std::fs::read(&last).unwrap()].concat();
    std::fs::write(&last, rewritten).unwrap();

    let mut store = Store::open(&state, false).unwrap();
    // Stopped after the pass's first file.
    read(&mut store, &stats, Stop::AfterOneFile);
    assert_eq!(
        store.cost_pass().len(),
        1,
        "the rewritten file is still to be passed over"
    );
    read(&mut store, &stats, Stop::Never);
    assert!(store.cost_pass().is_empty());
    let got = serde_json::to_value(StatusJson::of(store.lifetime(), store.counts())).unwrap();
    let mut cost = got["cost"].as_array().unwrap().clone();
    let new = cost
        .iter()
        .position(|c| c["model_ref"] == "x/y")
        .expect("the new line's cost");
    assert_eq!(cost.remove(new)["amount"], "1", "priced once");
    assert_eq!(serde_json::Value::from(cost), want["cost"]);
}

/// The README's worked example shows `status` over `testdata/row-kinds`, as it is.
#[test]
fn the_readme_shows_the_status_of_row_kinds_as_it_is() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let shown = readme
        .split_once("```\nmodel_ref")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(table, _)| format!("model_ref{table}"))
        .expect("the README's worked example has a status table");
    let work = tempfile::tempdir().unwrap();
    let stats = root.join("testdata/row-kinds/stats");
    let state = work.path().join("state");
    run(&stats, &state, &["once", "--otlp", "off"]);
    let status = run(&stats, &state, &["status"]);
    assert_eq!(String::from_utf8_lossy(&status.stdout).trim_end(), shown);
}

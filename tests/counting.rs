//! Contract §2 (what counts) and §5 (the checkpoint): one test per promise, each against the
//! real binary on real files, checked with `status --json` against an independent model.

mod common;

use common::model::Model;
use common::{Fixture, assert_success};
use serde_json::{Value, json};

const USAGE_A: &str = r#"{"ts":"2026-08-07T00:22:43.571662+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":7517,"completion":260,"reasoning":120,"cache_hit":7424,"cache_miss":93,"total":7777,"requests":1}"#;
const USAGE_B: &str = r#"{"ts":"2026-08-07T09:01:02.1234567+08:00","model":"deepseek/deepseek-v4-pro","source":"cli","prompt":1000,"completion":50,"reasoning":10,"cache_hit":900,"cache_miss":100,"total":1050,"requests":2}"#;
const USAGE_C: &str = r#"{"ts":"2026-08-08T10:00:00.123456789Z","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":10,"completion":5,"total":15,"requests":1}"#;
const TURN: &str = r#"{"ts":"2026-08-15T12:25:02.104937261+01:00","source":"cli","turn":true}"#;

/// Sums one quantity over all series of a `status --json` document.
fn sum(status: &Value, key: &str) -> u64 {
    status["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[key].as_u64().unwrap())
        .sum()
}

fn lines(status: &Value) -> Value {
    status["lines"].clone()
}

fn expect_model(fx: &Fixture, model: &Model) {
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
fn same_line_twice_counts_once() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_A]);
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777);
    assert_eq!(
        lines(&status),
        json!({"read": 2, "counted": 1, "duplicate": 1, "rejected": 0})
    );
}

#[test]
fn copied_day_file_counts_once() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A, USAGE_B]);
    fx.ingest();
    std::fs::copy(fx.path("2026-08-07.jsonl"), fx.path("2026-08-07 (1).jsonl")).unwrap();
    std::fs::copy(fx.path("2026-08-07.jsonl"), fx.path("backup-2026-08-07.jsonl")).unwrap();
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050);
    assert_eq!(sum(&status, "requests"), 3);
    assert_eq!(status["lines"]["duplicate"], 4);
}

#[test]
fn conflict_copy_holding_new_rows_counts_only_the_new_rows() {
    let fx = Fixture::new();
    fx.append_lines("2026-08-07.jsonl", &[USAGE_A]);
    fx.ingest();
    // A sync client's conflict copy: the old row plus one the original never got.
    fx.append_lines("2026-08-07 (1).jsonl", &[USAGE_A, USAGE_B]);
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050);
    assert_eq!(
        lines(&status),
        json!({"read": 3, "counted": 2, "duplicate": 1, "rejected": 0})
    );
}

#[test]
fn torn_last_line_counts_once_its_newline_lands() {
    let fx = Fixture::new();
    let (head, tail) = USAGE_B.split_at(40);
    fx.append("2026-08-07.jsonl", format!("{USAGE_A}\n{head}").as_bytes());
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777, "the torn line is not a line yet");
    assert_eq!(status["lines"]["rejected"], 0);
    fx.append("2026-08-07.jsonl", format!("{tail}\n").as_bytes());
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050);
    assert_eq!(
        lines(&status),
        json!({"read": 2, "counted": 2, "duplicate": 0, "rejected": 0})
    );
}

#[test]
fn repaired_torn_fragment_is_rejected_and_ingestion_goes_on() {
    let fx = Fixture::new();
    let fragment = &USAGE_B[..55];
    fx.append("2026-08-07.jsonl", format!("{USAGE_A}\n{fragment}").as_bytes());
    fx.ingest();
    // Reasonix's repair: a lone "\n" after the fragment, then the next record.
    fx.append("2026-08-07.jsonl", format!("\n{USAGE_C}\n").as_bytes());
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 15);
    assert_eq!(
        lines(&status),
        json!({"read": 3, "counted": 2, "duplicate": 0, "rejected": 1})
    );
}

#[test]
fn legacy_row_counts_one_request() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-02.jsonl",
        &[r#"{"ts":"2026-08-02T10:00:00+08:00","total":100}"#],
    );
    fx.ingest();
    let status = fx.status();
    assert_eq!(
        status["series"],
        json!([{"model_ref": "unknown", "provider": "unknown", "source": "unknown",
                "prompt": 0, "completion": 0, "reasoning": 0, "cache_hit": 0, "cache_miss": 0,
                "total": 100, "requests": 1, "turns": 0}])
    );
}

#[test]
fn request_only_row_counts_its_requests() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[r#"{"ts":"2026-08-07T01:00:00+08:00","model":"deepseek/deepseek-v4-pro","source":"desktop","requests":3}"#],
    );
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "requests"), 3);
    assert_eq!(sum(&status, "total"), 0);
    assert_eq!(status["series"][0]["model_ref"], "deepseek/deepseek-v4-pro");
}

#[test]
fn turn_row_counts_one_turn_and_nothing_else() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-15.jsonl",
        &[
            TURN,
            r#"{"ts":"2026-08-15T12:26:00Z","source":"cli","turn":true,"total":99}"#,
        ],
    );
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "turns"), 2);
    assert_eq!(sum(&status, "total"), 0);
    assert_eq!(sum(&status, "requests"), 0);
    assert_eq!(status["series"][0]["source"], "cli");
    assert_eq!(status["series"][0]["model_ref"], "unknown");
}

#[test]
fn compaction_row_counts_nothing() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[r#"{"ts":"2026-08-07T01:00:00Z","source":"desktop","compaction":{"trigger":"auto","mode":"summarized"},"total":500}"#],
    );
    fx.ingest();
    let status = fx.status();
    assert_eq!(status["series"], json!([]));
    assert_eq!(
        lines(&status),
        json!({"read": 1, "counted": 1, "duplicate": 0, "rejected": 0})
    );
}

#[test]
fn blank_lines_are_ignored() {
    let fx = Fixture::new();
    fx.append("2026-08-07.jsonl", format!("\n\n{USAGE_A}\n  \n").as_bytes());
    fx.ingest();
    assert_eq!(
        lines(&fx.status()),
        json!({"read": 1, "counted": 1, "duplicate": 0, "rejected": 0})
    );
}

#[test]
fn rejected_lines_count_nothing_and_never_stop_ingestion() {
    let fx = Fixture::new();
    let bad = [
        "not json at all",
        "[1,2,3]",
        r#"{"ts":"2026-08-07T01:00:00Z","total":"100"}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","total":1.5}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","total":-3}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","total":true}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","total":9223372036854775808}"#,
        r#"{"ts":"yesterday","total":5}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","model":7,"total":5}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","source":false,"total":5}"#,
        r#"{"ts":"2026-08-07T01:00:00Z","turn":"yes"}"#,
    ];
    let mut all: Vec<&str> = bad.to_vec();
    all.insert(5, USAGE_A);
    all.push(USAGE_B);
    fx.append_lines("2026-08-07.jsonl", &all);
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 7777 + 1050);
    assert_eq!(
        lines(&status),
        json!({"read": 13, "counted": 2, "duplicate": 0, "rejected": 11})
    );
}

#[test]
fn null_counts_as_absent() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[r#"{"ts":"2026-08-07T01:00:00Z","model":"m","total":10,"requests":null,"prompt":null}"#],
    );
    fx.ingest();
    let status = fx.status();
    assert_eq!(sum(&status, "total"), 10);
    assert_eq!(sum(&status, "requests"), 1);
}

#[test]
fn attributes_follow_the_documented_table() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            r#"{"ts":"2026-08-07T01:00:00Z","model":"openrouter/google/gemini-2.5-pro","source":"serve","total":1}"#,
            r#"{"ts":"2026-08-07T01:00:01Z","model":"deepseek-chat","source":"bot","total":2}"#,
            r#"{"ts":"2026-08-07T01:00:02Z","model":"/odd","source":"remote","total":4}"#,
            r#"{"ts":"2026-08-07T01:00:03Z","model":"","source":"","total":8}"#,
        ],
    );
    fx.ingest();
    let got: Vec<(String, String, String, u64)> = fx.status()["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let t = |k: &str| s[k].as_str().unwrap().to_string();
            (
                t("model_ref"),
                t("provider"),
                t("source"),
                s["total"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("/odd", "default", "remote", 4),
        ("deepseek-chat", "default", "bot", 2),
        ("openrouter/google/gemini-2.5-pro", "openrouter", "serve", 1),
        ("unknown", "unknown", "unknown", 8),
    ];
    let want: Vec<(String, String, String, u64)> = want
        .iter()
        .map(|(m, p, s, t)| (m.to_string(), p.to_string(), s.to_string(), *t))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn long_or_control_label_values_become_invalid() {
    let fx = Fixture::new();
    let long = format!("deepseek/{}", "x".repeat(300));
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            &format!(r#"{{"ts":"2026-08-07T01:00:00Z","model":"{long}","source":"cli","total":1}}"#),
            r#"{"ts":"2026-08-07T01:00:01Z","model":"a\u0007b","source":"cli\n","total":2}"#,
        ],
    );
    fx.ingest();
    let series = fx.status()["series"].clone();
    // Sorted by (model_ref, provider, source): "deepseek" < "default".
    assert_eq!(series[0]["model_ref"], "invalid", "model longer than 256 bytes");
    assert_eq!(series[0]["provider"], "deepseek");
    assert_eq!(series[0]["source"], "cli");
    assert_eq!(series[0]["total"], 1);
    assert_eq!(series[1]["model_ref"], "invalid", "control character in model");
    assert_eq!(series[1]["provider"], "default");
    assert_eq!(series[1]["source"], "invalid", "control character in source");
    assert_eq!(series[1]["total"], 2);
}

#[test]
fn label_text_cannot_pass_for_another_rows_labels() {
    let fx = Fixture::new();
    // Crafted so that naive joining of model and source would give both rows the same key.
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            r#"{"ts":"2026-08-07T01:00:00Z","model":"a\u0000\u0002b","total":1}"#,
            r#"{"ts":"2026-08-07T01:00:01Z","model":"a","source":"b\u0000\u0001","total":2}"#,
        ],
    );
    fx.ingest();
    let series = fx.status()["series"].clone();
    assert_eq!(series.as_array().unwrap().len(), 2, "{series}");
    assert_eq!(
        (
            series[0]["model_ref"].clone(),
            series[0]["source"].clone(),
            series[0]["total"].clone()
        ),
        (json!("a"), json!("invalid"), json!(2))
    );
    assert_eq!(
        (
            series[1]["model_ref"].clone(),
            series[1]["source"].clone(),
            series[1]["total"].clone()
        ),
        (json!("invalid"), json!("unknown"), json!(1))
    );
}

#[test]
fn attribute_sets_past_one_thousand_fold_into_other() {
    let fx = Fixture::new();
    let rows: Vec<String> = (0..1005)
        .map(|i| format!(r#"{{"ts":"2026-08-07T01:00:00Z","model":"p/m{i}","source":"cli","total":1}}"#))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    fx.append_lines("2026-08-07.jsonl", &rows);
    fx.ingest();
    let status = fx.status();
    let series = status["series"].as_array().unwrap();
    assert_eq!(series.len(), 1001);
    let other: Vec<&Value> = series.iter().filter(|s| s["model_ref"] == "other").collect();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["total"], 5);
    assert_eq!(sum(&status, "total"), 1005, "folding never loses an increment");
}

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

#[test]
fn duplicates_across_both_halves_of_a_large_chunk_count_once() {
    // Large enough to be decoded on two cores; every line of the first half appears again in
    // the second, and the file is copied too.
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = common::generator::Generator::new(17);
    let half: Vec<String> = (0..1500).map(|_| generator.line("2026-08-07")).collect();
    let mut text = String::new();
    for line in half.iter().chain(half.iter()) {
        text.push_str(line);
        text.push('\n');
    }
    fx.append("2026-08-07.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    fx.ingest();
    expect_model(&fx, &model);
    std::fs::copy(fx.path("2026-08-07.jsonl"), fx.path("2026-08-07 (1).jsonl")).unwrap();
    model.feed(text.as_bytes());
    fx.ingest();
    expect_model(&fx, &model);
}

/// Contract §8: `currency`, `billing_mode` and `reason` follow the label rules; a currency is an
/// ISO 4217 code (a well-formed other code makes the row `unknown_currency`) and is never folded;
/// past 32 distinct values of `billing_mode` or `reason` further values are `other`, also across
/// a restart (the cap starts from the values the store has), but `payg`,
/// `subscription_equivalent` and our own reasons never are.
#[test]
fn currencies_are_never_folded_and_other_values_past_thirty_two_become_other() {
    const CURRENCIES: [&str; 40] = [
        "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BHD",
        "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CLP",
        "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN",
    ];
    let fx = Fixture::new();
    // Well-formed, and no currency: the junk of the issue that once filled the 32.
    let junk = |i: u8| format!("Z{}{}", if i < 26 { 'Z' } else { 'Y' }, (b'A' + i % 26) as char);
    // Row 0's billing mode and reason hold a control character: `invalid`, one of the 32.
    let odd = |i: u8, prefix: &str| {
        if i == 0 {
            r"\u0007".to_string()
        } else {
            format!("{prefix}{i}")
        }
    };
    let priced = |ts: &str, amount: &str, currency: &str, mode: &str| {
        format!(
            r#"{{"ts":"2026-08-07T00:{ts}Z","model":"x/y","source":"cli","total":1,"requests":1,"cost_amount":"{amount}","cost_currency":"{currency}","cost_complete":true,"billing_mode":"{mode}"}}"#
        )
    };
    let rows = |from: u8, to: u8| -> Vec<String> {
        (from..to)
            .flat_map(|i| {
                let unpriced = format!(
                    r#"{{"ts":"2026-08-07T00:01:{:02}Z","model":"x/y","source":"cli","total":1,"requests":1,"cost_complete":false,"incomplete_reason":"{}"}}"#,
                    i % 60,
                    odd(i, "r")
                );
                [
                    priced(&format!("00:{:02}", i % 60), "1", &junk(i), "payg"),
                    priced(&format!("02:{:02}", i % 60), "1", CURRENCIES[i as usize], &odd(i, "m")),
                    unpriced,
                ]
            })
            .collect()
    };
    let append = |lines: Vec<String>| {
        fx.append_lines(
            "2026-08-07.jsonl",
            &lines.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        fx.ingest();
    };
    append(rows(0, 20));
    append(rows(20, 40));
    append(vec![
        priced("03:00", "100", "EUR", "payg"),
        priced("03:01", "2000", "JPY", "subscription_equivalent"),
        priced("03:02", "3", "USD", "payg"),
    ]);

    let status = fx.status();
    let got_cost: std::collections::BTreeMap<(String, String), String> = status["cost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap().to_string();
            ((text("currency"), text("billing_mode")), text("amount"))
        })
        .collect();
    let mut want_cost = std::collections::BTreeMap::new();
    for (i, currency) in CURRENCIES.iter().enumerate() {
        let mode = match i {
            0 => "invalid".to_string(),
            1..32 => format!("m{i}"),
            _ => "other".to_string(),
        };
        want_cost.insert((currency.to_string(), mode), "1".to_string());
    }
    want_cost.insert(("EUR".into(), "payg".into()), "100".into());
    want_cost.insert(("JPY".into(), "subscription_equivalent".into()), "2000".into());
    want_cost.insert(("USD".into(), "payg".into()), "3".into());
    assert_eq!(got_cost, want_cost);

    let got_unpriced: std::collections::BTreeMap<String, u64> = status["unpriced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["reason"].as_str().unwrap().to_string(),
                u["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want_unpriced: std::collections::BTreeMap<String, u64> =
        (1..32u8).map(|i| (format!("r{i}"), 1)).collect();
    want_unpriced.insert("invalid".into(), 1);
    want_unpriced.insert("other".into(), 8);
    want_unpriced.insert("unknown_currency".into(), 40);
    assert_eq!(got_unpriced, want_unpriced);
    assert_eq!(sum(&status, "requests"), 123, "no token or request hidden");
}

/// A usage row of the attribute set `m/<n>`.
fn row_of_set(day: &str, n: usize) -> String {
    format!(r#"{{"ts":"{day}T10:00:00.{n:06}Z","model":"m/{n}","source":"cli","total":1,"requests":1}}"#)
}

/// Which 1,000 attribute sets escape the fold depends on the order lines were first seen, and a
/// rebuild reads the files in name order: it keeps the sets the stream already sent, not others.
#[test]
fn a_rebuild_keeps_the_attribute_sets_the_backend_has() {
    let fx = Fixture::new();
    let receiver = common::receiver::Receiver::http();
    let late: Vec<String> = (0..1000).map(|n| row_of_set("2026-11-30", n)).collect();
    fx.append_lines(
        "2026-11-30.jsonl",
        &late.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_success(&fx.export_to(&receiver));
    // Written later into a file whose name comes first: folded when first seen.
    let early: Vec<String> = (1000..1100).map(|n| row_of_set("2026-11-01", n)).collect();
    fx.append_lines(
        "2026-11-01.jsonl",
        &early.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_success(&fx.export_to(&receiver));
    let sets = |status: &Value| -> Vec<String> {
        let series = status["series"].as_array().unwrap().iter();
        series
            .map(|s| format!("{}={}", s["model_ref"], s["total"]))
            .collect()
    };
    let before = sets(&fx.status());
    assert_eq!(before.len(), 1001, "1,000 sets and other");

    assert_success(&fx.run(&["once", "--otlp", "off", "--reset-state"]));
    let after = sets(&fx.status());
    let gone: Vec<&String> = before.iter().filter(|s| !after.contains(s)).collect();
    assert!(
        gone.is_empty(),
        "after the rebuild, {} sets differ: {:?}…",
        gone.len(),
        &gone[..gone.len().min(5)]
    );
    assert_success(&fx.export_to(&receiver));
    let newest: u64 = receiver.newest_values().values().map(|v| v[5]).sum();
    assert_eq!(newest, 1100, "the backend's newest values add up to the ledger");
}

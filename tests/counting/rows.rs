//! Contract §2, line by line: duplicates and copies, torn lines, each row kind, blank and rejected lines.

use super::*;

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

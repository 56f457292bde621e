//! Ledger files and lines meant to mislead: dot files, CRLF copies, in-place rewrites, hidden characters.

use super::*;

#[test]
fn dot_files_in_the_stats_folder_are_not_ledger_files() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let text = ledger(&fx, &mut model, 1, 40);
    // What macOS leaves beside a copied file, and any hidden file: not Reasonix's.
    let other = Generator::new(2).day_file("2026-11-30", 40);
    fx.append("._2026-11-30.jsonl", other.as_bytes());
    fx.append(".2026-11-29.jsonl", text.as_bytes());
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
fn a_copy_converted_to_crlf_line_ends_counts_nothing_again() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let text = ledger(&fx, &mut model, 3, 200);
    fx.ingest();
    let crlf = text.replace('\n', "\r\n");
    fx.append("2026-08-01 (copy).jsonl", crlf.as_bytes());
    model.feed(crlf.as_bytes());
    fx.ingest();
    let status = fx.status();
    assert_eq!(status, model.expected.status_json());
    assert_eq!(
        status["lines"]["duplicate"], 200,
        "every CRLF line is a duplicate"
    );
}

#[test]
fn lines_rewritten_in_place_then_appended_are_read_again() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let day = days(1)[0].clone();
    let name = format!("{day}.jsonl");
    let text = Generator::new(13).day_file(&day, 3000);
    fx.append(&name, text.as_bytes());
    fx.ingest();
    // What `rsync --inplace` does with a changed copy: a usage line in the middle rewritten at
    // the same length, then the new lines appended, in the same file.
    let middle = text
        .lines()
        .skip(1500)
        .find(|l| l.contains("\"source\":\"cli\"") && l.contains("\"total\""))
        .unwrap();
    let rewritten = text.replacen(
        middle,
        &middle.replace("\"source\":\"cli\"", "\"source\":\"CLI\""),
        1,
    );
    assert_eq!(rewritten.len(), text.len());
    let more = Generator::new(14).day_file(&day, 5);
    let path = fx.path(&name);
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, rewritten.as_bytes()).unwrap();
    std::io::Write::write_all(&mut file, more.as_bytes()).unwrap();
    drop(file);
    model.feed(text.as_bytes());
    model.feed(rewritten.as_bytes());
    model.feed(more.as_bytes());
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
fn bidirectional_controls_and_invisible_characters_in_a_label_make_it_invalid() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-01.jsonl",
        &[
            "{\"ts\":\"2026-08-01T10:00:00Z\",\"model\":\"deepseek/\u{202E}tahc-keesped\",\"source\":\"cli\",\"total\":5}",
            "{\"ts\":\"2026-08-01T10:00:01Z\",\"model\":\"deepseek-chat\",\"source\":\"c\u{2066}li\u{2069}\",\"total\":7}",
            // Zero-width: a series that would look like `cli`.
            "{\"ts\":\"2026-08-01T10:00:02Z\",\"model\":\"kimi-k2\",\"source\":\"c\u{200B}li\",\"total\":9}",
        ],
    );
    fx.ingest();
    let status = fx.status();
    let labels: Vec<(String, String)> = status["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["model_ref"].as_str().unwrap().into(),
                s["source"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("deepseek-chat".into(), "invalid".into()),
            ("invalid".into(), "cli".into()),
            ("kimi-k2".into(), "invalid".into())
        ]
    );
    let table = fx.run(&["status"]);
    assert_success(&table);
    for control in ["\u{202E}", "\u{2066}", "\u{2069}"] {
        assert!(
            !contains(&table.stdout, control.as_bytes()),
            "the table shows {control:?}"
        );
    }
}

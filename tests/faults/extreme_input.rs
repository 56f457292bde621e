//! Input at its extremes: huge lines and sparse tails, 5,000 files, bytes not UTF-8 and NULs.

use super::*;

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_ten_megabyte_line_is_counted_once_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(6);
    let day = &days(1)[0];
    let before = generator.day_file(day, 50);
    // A usage row carrying 10 MB of text in a field the exporter does not read.
    let huge = format!(
        r#"{{"ts":"{day}T10:00:00Z","model":"deepseek-chat","source":"cli","total":77,"transcript":"{}"}}"#,
        "x".repeat(10 << 20)
    );
    let after = generator.day_file(day, 50);
    let text = format!("{before}{huge}\n{after}");
    fx.append(&format!("{day}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());

    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "for a 10 MB line");
    // Again: nothing new, nothing added.
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_huge_sparse_tail_left_by_a_power_cut_is_rejected_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(61);
    let day = &days(1)[0];
    let name = format!("{day}.jsonl");
    let before = generator.day_file(day, 100);
    fx.append(&name, before.as_bytes());
    model.feed(before.as_bytes());
    // A power cut leaves the file's length ahead of its data: 300 MB of NUL bytes, no newline.
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(fx.path(&name))
        .unwrap();
    file.set_len(before.len() as u64 + (300 << 20)).unwrap();
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(
        fx.status(),
        model.expected.status_json(),
        "the NUL bytes are not a line yet"
    );
    assert_peak_below(peak_mib, 64.0, "for 300 MB without a newline");

    // Reasonix goes on appending: the NUL run becomes one rejected line, the rest counts.
    let after = generator.day_file(day, 100);
    fx.append(&name, format!("\n{after}").as_bytes());
    model.expected.read += 1;
    model.expected.rejected += 1;
    model.feed(after.as_bytes());
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "after the NUL run");
    // Read again from the start (a lost checkpoint): nothing twice.
    std::fs::remove_file(fx.state.join("status.json")).ok();
    fx.run(&["once", "--otlp", "off", "--reset-state"]);
    assert_eq!(fx.status()["lines"]["rejected"], model.expected.rejected);
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn a_line_over_64_mib_is_rejected_as_too_long() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(62);
    let day = &days(1)[0];
    let before = generator.day_file(day, 10);
    let after = generator.day_file(day, 10);
    let huge = format!(
        r#"{{"ts":"{day}T10:00:00Z","model":"deepseek-chat","total":77,"transcript":"{}"}}"#,
        "x".repeat(65 << 20)
    );
    fx.append(
        &format!("{day}.jsonl"),
        format!("{before}{huge}\n{after}").as_bytes(),
    );
    model.feed(before.as_bytes());
    model.feed(after.as_bytes());
    model.expected.read += 1;
    model.expected.rejected += 1;
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    // The line is held up to the limit, then let go.
    assert_peak_below(peak_mib, 160.0, "for a line over 64 MiB");
    let (daemon, port) = fx.spawn_serving(&[]);
    let text = common::http_get(port, "/metrics", None).unwrap();
    assert!(
        text.contains("reasonix_exporter_lines_rejected_total{reason=\"too_long\"} 1"),
        "{text}"
    );
    drop(daemon);
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn five_thousand_day_files_are_read_exactly_in_bounded_memory() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(7);
    for day in days(5000) {
        let text = generator.day_file(&day, 2);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status(), model.expected.status_json());
    assert_peak_below(peak_mib, 64.0, "for 5,000 files");

    // An idle pass over 5,000 unchanged files opens none of them.
    let out = fx.ingest();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("ingested 0 new lines") && log.contains("from 0 of 5000 files"),
        "{log}"
    );
}

#[test]
fn bytes_that_are_not_utf8_and_nul_bytes_are_counted_or_rejected_once() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let day = &days(1)[0];
    let mut text: Vec<u8> = Vec::new();
    // Invalid UTF-8 inside a label value: kept, one U+FFFD per bad byte (as Go's decoder does).
    text.extend_from_slice(format!(r#"{{"ts":"{day}T01:00:00Z","model":"deep"#).as_bytes());
    text.extend_from_slice(b"\xff\xfe");
    text.extend_from_slice(br#"seek","source":"cli","total":10}"#);
    text.push(b'\n');
    // A raw NUL inside a string is not JSON: rejected.
    text.extend_from_slice(format!(r#"{{"ts":"{day}T02:00:00Z","model":"a"#).as_bytes());
    text.push(0);
    text.extend_from_slice(br#"b","total":20}"#);
    text.push(b'\n');
    // A line of NULs (what a crash can leave in a preallocated block): rejected, not blank.
    text.extend_from_slice(&[0u8; 64]);
    text.push(b'\n');
    // And a normal line after all that.
    text.extend_from_slice(
        format!(r#"{{"ts":"{day}T03:00:00Z","model":"ok","source":"cli","total":30}}"#).as_bytes(),
    );
    text.push(b'\n');
    fx.append(&format!("{day}.jsonl"), &text);
    model.feed(&text);

    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
    assert_eq!(model.expected.rejected, 2);
    // A second pass, and a copy of the file: nothing more.
    std::fs::copy(fx.path(&format!("{day}.jsonl")), fx.path("copy.jsonl")).unwrap();
    model.feed(&text);
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
}

//! A line is read as Reasonix reads it (contract §2): Go's own `encoding/json`, the decoder
//! Reasonix reads its ledger with, decodes the same lines into a record typed as Reasonix's
//! (`tests/go/reads.go`), and the exporter's verdict must agree with it on every line: the fuzz
//! corpus, the hostile cases, and thousands of generated rows with keys in odd letter cases,
//! repeated keys and odd spellings of numbers.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::model::QUANTITIES;
use common::tools;
use reasonix_exporter::catalog::Quantity;
use reasonix_exporter::ledger::decode::{Counts, Decoded, Rejection, RowKind, decode};

#[derive(serde::Deserialize, Debug)]
struct GoVerdict {
    error: bool,
    counts: Option<[i64; 7]>,
    turn: bool,
    compaction: bool,
    model: String,
    source: String,
}

/// Builds `tests/go/reads.go` (standard library only) into the target dir.
fn go_reader(test: &str) -> Option<PathBuf> {
    let go = tools::installed(test, "go", "golang")?;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/go-reads");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/reads.go");
    let status = Command::new(go)
        .args(["build", "-o"])
        .arg(&out)
        .arg(&source)
        .env("GOFLAGS", "-buildvcs=false")
        .env("GO111MODULE", "off")
        .status()
        .expect("go build");
    assert!(status.success(), "go build tests/go/reads.go failed");
    Some(out)
}

/// Go's verdict on each line.
fn go_verdicts(reader: &Path, lines: &[Vec<u8>]) -> Vec<GoVerdict> {
    let mut child = Command::new(reader)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the Go reader");
    let mut input = String::new();
    for line in lines {
        for b in line {
            input.push_str(&format!("{b:02x}"));
        }
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success());
    let verdicts: Vec<GoVerdict> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), lines.len());
    verdicts
}

/// Whether the exporter's verdict on `line` is Go's (`None`), or how they differ.
fn disagreement(line: &[u8], go: &GoVerdict) -> Option<String> {
    let ours = decode(line);
    // A bare `null` is no record for the contract and an empty one for Go: neither counts anything.
    if line == b"null" {
        return None;
    }
    let differ = |what: &str| Some(format!("{what}: ours {ours:?}, Go {go:?}"));
    if go.error {
        return match ours {
            // Too long for Go's scanner is not a question of types.
            Decoded::Rejected(_) => None,
            _ => differ("Go refuses the line"),
        };
    }
    let counts = go.counts.expect("counts");
    // The contract refuses a negative count, where Go would take it (§2).
    if counts.iter().any(|c| *c < 0) {
        return match ours {
            Decoded::Rejected(Rejection::BadCount) => None,
            _ => differ("a negative count"),
        };
    }
    let Decoded::Row(row) = &ours else {
        return differ("Go takes the line");
    };
    let label = |l: &Option<std::borrow::Cow<'_, str>>| l.as_deref().unwrap_or("").to_string();
    if label(&row.model) != go.model || label(&row.source) != go.source {
        return differ("labels");
    }
    let [
        prompt,
        completion,
        reasoning,
        cache_hit,
        cache_miss,
        total,
        requests,
    ] = counts.map(|c| c as u64);
    let requests = if requests == 0 && total > 0 { 1 } else { requests };
    let want = if go.turn {
        RowKind::Turn
    } else if go.compaction {
        RowKind::Compaction
    } else {
        RowKind::Usage(Counts::of(&[
            (Quantity::Prompt, prompt),
            (Quantity::Completion, completion),
            (Quantity::Reasoning, reasoning),
            (Quantity::CacheHit, cache_hit),
            (Quantity::CacheMiss, cache_miss),
            (Quantity::Total, total),
            (Quantity::Requests, requests),
        ]))
    };
    (row.kind != want).then(|| format!("kind: ours {:?}, Go {want:?} ({go:?})", row.kind))
}

/// Keys in the spellings Go matches (and some it does not), values of every JSON type.
fn generated_lines(n: usize) -> Vec<Vec<u8>> {
    // Every allow-listed key but the quote's: the labels, the seven counts, the row kinds.
    let keys: Vec<&str> = ["ts", "model", "source"]
        .into_iter()
        .chain(QUANTITIES[..7].iter().copied())
        .chain(["turn", "compaction"])
        // Fields of Reasonix's record the exporter does not keep, checked by their Go types.
        .chain([
            "prefix_changed",
            "prefix_reasons",
            "selected_cost",
            "display_complete",
            "rate_date",
        ])
        .collect();
    const VALUES: [&str; 32] = [
        "5",
        "0",
        "-0",
        "-0.0",
        "-0e0",
        "1e2",
        "5.0",
        "-3",
        "9223372036854775807",
        "9223372036854775808",
        "null",
        "true",
        "false",
        "\"x\"",
        "\"2026-08-07T00:22:43.5+08:00\"",
        "\"2026-08-07\"",
        "{}",
        "[1]",
        "\"2026-08-07T1:02:03Z\"",
        "\"2026-08-07T00:22:43\\u005a\"",
        "{\"mode\":[1]}",
        "[\"a\",null]",
        "[[\"a\"]]",
        "1e400",
        "-1e400",
        "1e-400",
        "{\"src\":-5,\"tpc\":0.5}",
        "{\"tpc\":1e400}",
        "{\"SRC\":\"x\"}",
        "{\"x\":1e400,\"src\":1.0}",
        "{\"in\":9223372036854775808}",
        "{\"wire_diff\":1,\"view_fp\":\"x\"}",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    (0..n)
        .map(|_| {
            let pairs: Vec<String> = (0..1 + next(5))
                .map(|_| {
                    let key: String = keys[next(keys.len())]
                        .chars()
                        .map(|c| match next(8) {
                            0 => c.to_ascii_uppercase(),
                            1 if c == 's' => '\u{17F}',
                            2 if c == 'i' => '\u{131}',
                            3 if c == 'k' => '\u{212A}',
                            _ => c,
                        })
                        .collect();
                    format!(
                        "{}:{}",
                        serde_json::to_string(&key).unwrap(),
                        VALUES[next(VALUES.len())]
                    )
                })
                .collect();
            format!("{{{}}}", pairs.join(",")).into_bytes()
        })
        .collect()
}

#[test]
#[ignore = "needs go (Go's encoding/json, the decoder Reasonix reads its ledger with)"]
fn every_line_is_read_as_gos_encoding_json_reads_it() {
    let Some(reader) = go_reader(&tools::test_name()) else {
        return;
    };
    let mut lines: Vec<Vec<u8>> = [
        r#"{"total":"x","total":5}"#,
        r#"{"total":5,"total":"x"}"#,
        r#"{"total":-0,"requests":1}"#,
        r#"{"Total":5}"#,
        r#"{"TOTAL":5,"total":3}"#,
        r#"{"total":5,"total":null}"#,
        "{\"reque\u{17F}ts\":2,\"total\":1}",
        r#"{"ts":"2026-08-07T00:22:43Z","Ts":"bad","total":1}"#,
        r#"{"compaction":{},"compaction":null,"total":2}"#,
        r#"{"compaction":5,"turn":true}"#,
        r#"{"compaction":"x","total":1}"#,
        r#"{"ts":"2026-08-07T00:22:43\u005a","total":1}"#,
        r#"{"ts":"2026-08-07T1:02:03+08:00","total":1}"#,
        r#"{"ts":"2026-08-07T00:22:43.571662+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":7517,"completion":260,"reasoning":120,"cache_hit":7424,"cache_miss":93,"total":7777,"requests":1}"#,
        // White space Reasonix cuts (Go's strings.TrimSpace), and characters it does not.
        "\u{a0}{\"total\":5}\u{3000}",
        "\x0b{\"total\":5}\x0c\u{85}",
        "\u{200b}{\"total\":5}",
        "{\"total\":5}\u{feff}",
    ]
    .iter()
    .map(|l| l.as_bytes().to_vec())
    .collect();
    lines.extend(generated_lines(20_000));
    // Nesting in a field nobody reads: Go takes up to 10,000 levels.
    for depth in [100, 127, 128, 129, 500, 9_999, 10_000, 10_001, 20_000] {
        lines.push(format!(r#"{{"total":5,"x":{}{}}}"#, "[".repeat(depth), "]".repeat(depth)).into_bytes());
    }
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode_line");
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        // Lines only; a blank one is neither counted nor refused here, and Go has no view of it.
        if !bytes.contains(&b'\n') && !matches!(decode(&bytes), Decoded::Blank) {
            lines.push(bytes);
        }
    }
    let verdicts = go_verdicts(&reader, &lines);
    let differences: Vec<String> = lines
        .iter()
        .zip(&verdicts)
        .filter_map(|(line, go)| {
            disagreement(line, go).map(|d| format!("{}: {d}", String::from_utf8_lossy(line)))
        })
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} lines read otherwise than Go reads them; the first:\n{}",
        differences.len(),
        lines.len(),
        differences[..differences.len().min(10)].join("\n")
    );
}

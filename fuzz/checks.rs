//! What the fuzz targets check, shared with `tests/fuzz_corpus.rs`, which replays the committed
//! corpus on stable Rust in every CI run.

// Each fuzz target uses one of these.
#![allow(dead_code)]

use std::collections::BTreeMap;

use reasonix_exporter::catalog::Quantity;
use reasonix_exporter::ledger::decode::{Decoded, RowKind, decode};
use reasonix_exporter::ledger::tail::split_lines;
use serde::de::IgnoredAny;

/// The line decoder on any bytes: no panic, the same answer twice, and nothing accepted that
/// is not a JSON object (checked against serde_json's own parser, invalid UTF-8 replaced and
/// every surrogate escape made `\ufffd`, as Go reads a lone one; values only skipped: like Go's
/// decoder, a field nobody reads may hold `1e999999`).
pub fn decode_line(data: &[u8]) {
    let decoded = decode(data);
    assert_eq!(
        format!("{decoded:?}"),
        format!("{:?}", decode(data)),
        "decode is deterministic"
    );
    let Decoded::Row(row) = decoded else {
        return;
    };
    // Reasonix cuts the white space around a line (Go's `strings.TrimSpace`: Unicode's
    // White_Space, which is Rust's `char::is_whitespace` too) before it decodes it.
    let text = without_surrogates(&String::from_utf8_lossy(data));
    let text = text.trim_matches(char::is_whitespace);
    let parsed = serde_json::from_str::<BTreeMap<String, IgnoredAny>>(text);
    assert!(
        parsed.is_ok(),
        "accepted a line that is not a JSON object: {text:?}"
    );
    if let (RowKind::Usage(counts), Some(go)) = (row.kind, go_counts(text)) {
        let ours = [
            Quantity::Prompt,
            Quantity::Completion,
            Quantity::Reasoning,
            Quantity::CacheHit,
            Quantity::CacheMiss,
            Quantity::Total,
        ]
        .map(|q| counts.get(q));
        assert_eq!(ours, go, "counts otherwise than Go reads them: {text:?}");
    }
}

/// The six token counts of a line as Go's `encoding/json` reads them into Reasonix's `int`
/// fields, an independent reading of contract §2: every key matched to its field case-insensitively
/// (`ſ` is an `s`, the Kelvin sign a `k`, as Go folds them), the last value standing, `null`
/// leaving the one before, `-0` being 0. `None` when the text is not an object of that shape.
fn go_counts(text: &str) -> Option<[u64; 6]> {
    const NAMES: [&str; 6] = [
        "prompt",
        "completion",
        "reasoning",
        "cache_hit",
        "cache_miss",
        "total",
    ];
    let pairs = ordered_pairs(text)?;
    let mut counts = [0u64; 6];
    for (key, value) in pairs {
        let folded: String = key
            .chars()
            .map(|c| match c {
                '\u{17F}' => 's',
                '\u{212A}' => 'k',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        let Some(at) = NAMES.iter().position(|n| *n == folded) else {
            continue;
        };
        match value.get() {
            "null" => {}
            "-0" => counts[at] = 0,
            digits => counts[at] = digits.parse().ok()?,
        }
    }
    Some(counts)
}

/// An object's keys and values in the order written, repeats kept.
fn ordered_pairs(text: &str) -> Option<Vec<(String, Box<serde_json::value::RawValue>)>> {
    struct Pairs;
    impl<'de> serde::de::Visitor<'de> for Pairs {
        type Value = Vec<(String, Box<serde_json::value::RawValue>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_map(&mut de, Pairs).ok()
}

/// `text` with every `\uD800`–`\uDFFF` escape made `\ufffd`, paired or not: whether the text is
/// a JSON object does not depend on them.
fn without_surrogates(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '\\' {
            continue;
        }
        let Some(next) = chars.next() else { break };
        if next != 'u' {
            out.push(next);
            continue;
        }
        let hex: String = chars.clone().take(4).collect();
        let surrogate = hex.len() == 4
            && hex.chars().all(|h| h.is_ascii_hexdigit())
            && (0xD800..0xE000).contains(&u32::from_str_radix(&hex, 16).unwrap_or(0));
        if surrogate {
            out.push_str("ufffd");
            for _ in 0..4 {
                chars.next();
            }
        } else {
            out.push('u');
        }
    }
    out
}

/// The tailer's line splitting: however the bytes are cut into chunks (the first input byte
/// chooses the cuts), the lines handed out are exactly the input's lines, in order, and what
/// follows the last `\n` is held back.
pub fn tail_chunks(data: &[u8]) {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let mut pending = Vec::new();
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut at = 0;
    let mut step = 0usize;
    while at < input.len() {
        // Chunk sizes from 1 byte to 64, varied by the seed.
        let size = 1 + (usize::from(seed).wrapping_mul(31).wrapping_add(step * 7) % 64);
        let end = (at + size).min(input.len());
        split_lines(&mut pending, &input[at..end], |complete, _| {
            lines.extend(complete.iter().map(|l| l.to_vec()));
        });
        at = end;
        step += 1;
    }
    let (complete, rest) = match memchr_last(input) {
        Some(last) => (&input[..last], &input[last + 1..]),
        None => (&input[..0], input),
    };
    let want: Vec<&[u8]> = if memchr_last(input).is_some() {
        complete.split(|b| *b == b'\n').collect()
    } else {
        Vec::new()
    };
    assert_eq!(lines.iter().map(Vec::as_slice).collect::<Vec<_>>(), want);
    assert_eq!(pending, rest);
    for line in &lines {
        decode_line(line);
    }
}

fn memchr_last(bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|b| *b == b'\n')
}

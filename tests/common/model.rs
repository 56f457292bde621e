//! A tiny, obviously-correct model of docs/counting-rules.md, written independently of the exporter (it
//! parses with `serde_json::Value`), to compute the totals the exporter must arrive at.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

pub const QUANTITIES: [&str; 8] = [
    "prompt",
    "completion",
    "reasoning",
    "cache_hit",
    "cache_miss",
    "total",
    "requests",
    "turns",
];

/// `(model_ref, provider, source)`.
pub type Series = (String, String, String);

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expected {
    pub series: BTreeMap<Series, [u64; 8]>,
    pub read: u64,
    pub counted: u64,
    pub duplicate: u64,
    pub rejected: u64,
}

#[derive(Debug, Default)]
pub struct Model {
    seen: HashSet<Vec<u8>>,
    pub expected: Expected,
}

impl Model {
    /// Feeds every complete line of `bytes` (what lies after the last `\n` is not a line yet).
    pub fn feed(&mut self, bytes: &[u8]) {
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(last) => &bytes[..last],
            None => return,
        };
        for line in complete.split(|b| *b == b'\n') {
            self.line(line);
        }
    }

    pub fn line(&mut self, line: &[u8]) {
        if line.iter().all(|b| b" \t\r".contains(b)) {
            return;
        }
        let e = &mut self.expected;
        e.read += 1;
        // One `\r` before the `\n` is not part of a line's identity (CRLF copies).
        let identity = line.strip_suffix(b"\r").unwrap_or(line);
        if !self.seen.insert(identity.to_vec()) {
            e.duplicate += 1;
            return;
        }
        let Some((series, add)) = counts_of(line) else {
            e.rejected += 1;
            return;
        };
        e.counted += 1;
        if add.iter().any(|v| *v > 0) {
            let slot = e.series.entry(series).or_insert([0; 8]);
            for (a, b) in slot.iter_mut().zip(add) {
                *a += b;
            }
        }
    }
}

/// What a line adds, or `None` if it is rejected.
fn counts_of(line: &[u8]) -> Option<(Series, [u64; 8])> {
    let text = String::from_utf8_lossy(line);
    let Value::Object(map) = serde_json::from_str::<Value>(&text).ok()? else {
        return None;
    };
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    if let Some(ts) = get("ts") {
        let ts = ts.as_str()?;
        // Good enough for generated ledgers: 'YYYY-MM-DDTHH:MM:SS' and a zone.
        if ts.len() < 20
            || ts.as_bytes()[10] != b'T'
            || !(ts.ends_with('Z') || ts.get(19..).is_some_and(|z| z.contains(['+', '-'])))
        {
            return None;
        }
    }
    let text_of = |k: &str| -> Option<Option<String>> {
        match get(k) {
            None => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(_) => None,
        }
    };
    let model = text_of("model")?;
    let source = text_of("source")?;
    let turn = match get("turn") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return None,
    };
    let mut counts = [0u64; 8];
    for (i, key) in QUANTITIES[..7].iter().enumerate() {
        if let Some(v) = get(key) {
            counts[i] = v.as_u64().filter(|n| *n < 1 << 63)?;
        }
    }
    let model = model.filter(|m| !m.is_empty());
    let provider = match &model {
        None => "unknown".to_string(),
        Some(m) => match m.find('/') {
            Some(i) if i > 0 => m[..i].to_string(),
            _ => "default".to_string(),
        },
    };
    let series = (
        model.unwrap_or_else(|| "unknown".into()),
        provider,
        source
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into()),
    );
    if turn {
        let mut add = [0; 8];
        add[7] = 1;
        return Some((series, add));
    }
    if get("compaction").is_some() {
        return Some((series, [0; 8]));
    }
    if counts[6] == 0 && counts[5] > 0 {
        counts[6] = 1;
    }
    Some((series, counts))
}

impl Expected {
    /// The `status --json` document the exporter must print.
    pub fn status_json(&self) -> Value {
        let series: Vec<Value> = self
            .series
            .iter()
            .map(|((m, p, s), t)| {
                let mut obj = serde_json::Map::new();
                obj.insert("model_ref".into(), m.clone().into());
                obj.insert("provider".into(), p.clone().into());
                obj.insert("source".into(), s.clone().into());
                for (k, v) in QUANTITIES.iter().zip(t) {
                    obj.insert((*k).into(), (*v).into());
                }
                Value::Object(obj)
            })
            .collect();
        serde_json::json!({
            "series": series,
            "lines": {"read": self.read, "counted": self.counted, "duplicate": self.duplicate, "rejected": self.rejected},
        })
    }

    /// Totals per series only, as an OTLP receiver can see them.
    pub fn totals(&self) -> BTreeMap<Series, [u64; 8]> {
        self.series.clone()
    }
}

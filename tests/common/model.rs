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

/// The token totals of `status --json` (`status` a parsed document), per series, leaving out the
/// series whose every quantity is 0 (as a backend that never saw them).
pub fn token_totals_of_status(status: &Value) -> BTreeMap<Series, [u64; 8]> {
    let mut totals = BTreeMap::new();
    for row in status["series"].as_array().expect("status --json has its series") {
        let key = |k: &str| {
            row[k]
                .as_str()
                .unwrap_or_else(|| panic!("no {k} in {row}"))
                .to_owned()
        };
        let quantities = QUANTITIES.map(|k| row[k].as_u64().unwrap_or_else(|| panic!("no {k} in {row}")));
        if quantities.iter().any(|&q| q > 0) {
            totals.insert((key("model_ref"), key("provider"), key("source")), quantities);
        }
    }
    totals
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expected {
    pub series: BTreeMap<Series, [u64; 8]>,
    /// Spend in 10^-9 units by `(series, currency, billing_mode)`.
    pub cost: BTreeMap<(Series, String, String), u128>,
    /// Unpriced requests by `(series, reason)`.
    pub unpriced: BTreeMap<(Series, String), u64>,
    pub read: u64,
    pub counted: u64,
    pub duplicate: u64,
    pub rejected: u64,
}

#[derive(Debug, Default, Clone)]
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
        let Some((series, add, quote)) = counts_of(line) else {
            e.rejected += 1;
            return;
        };
        e.counted += 1;
        match quote {
            Quote::None => {}
            Quote::Priced(units, currency, mode) => {
                if units > 0 {
                    *e.cost.entry((series.clone(), currency, mode)).or_default() += units;
                }
            }
            Quote::Unpriced(reason) => {
                if add[6] > 0 {
                    *e.unpriced.entry((series.clone(), reason)).or_default() += add[6];
                }
            }
        }
        if add.iter().any(|v| *v > 0) {
            let slot = e.series.entry(series).or_insert([0; 8]);
            for (a, b) in slot.iter_mut().zip(add) {
                *a += b;
            }
        }
    }
}

/// What a usage row's price quote adds.
enum Quote {
    /// Not a usage row.
    None,
    Priced(u128, String, String),
    Unpriced(String),
}

/// `^(0|[1-9][0-9]{0,17})(\.[0-9]{1,9})?$` in 10^-9 units.
fn amount(text: &str) -> Option<u128> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let whole_ok =
        !whole.is_empty() && whole.len() <= 18 && digits(whole) && (whole == "0" || !whole.starts_with('0'));
    let fraction_ok =
        digits(fraction) && fraction.len() <= 9 && (!fraction.is_empty() || !text.contains('.'));
    if !whole_ok || !fraction_ok {
        return None;
    }
    let padded = format!("{fraction:0<9}");
    Some(whole.parse::<u128>().ok()? * 1_000_000_000 + padded.parse::<u128>().ok()?)
}

fn quote_of(map: &serde_json::Map<String, Value>) -> Quote {
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let strings = [
        "cost_amount",
        "cost_currency",
        "billing_mode",
        "incomplete_reason",
    ];
    if strings.iter().any(|k| get(k).is_some_and(|v| !v.is_string()))
        || get("cost_complete").is_some_and(|v| !v.is_boolean())
    {
        return Quote::Unpriced("bad_cost".into());
    }
    let text = |k: &str| {
        get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    match get("cost_complete").and_then(Value::as_bool) {
        None => Quote::Unpriced("no_quote".into()),
        Some(false) => Quote::Unpriced(text("incomplete_reason").unwrap_or_else(|| "unknown".into())),
        Some(true) => {
            let units = get("cost_amount").and_then(Value::as_str).and_then(amount);
            let currency = get("cost_currency")
                .and_then(Value::as_str)
                .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()));
            match (units, currency) {
                // The generator's ledgers quote in these; an oracle of its own, not our list.
                (Some(_), Some(currency)) if !["CNY", "USD", "EUR", "JPY"].contains(&currency) => {
                    Quote::Unpriced("unknown_currency".into())
                }
                (Some(units), Some(currency)) => Quote::Priced(
                    units,
                    currency.into(),
                    text("billing_mode").unwrap_or_else(|| "unknown".into()),
                ),
                _ => Quote::Unpriced("bad_cost".into()),
            }
        }
    }
}

/// What a line adds, or `None` if it is rejected.
fn counts_of(line: &[u8]) -> Option<(Series, [u64; 8], Quote)> {
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
        return Some((series, add, Quote::None));
    }
    if get("compaction").is_some() {
        return Some((series, [0; 8], Quote::None));
    }
    if counts[6] == 0 && counts[5] > 0 {
        counts[6] = 1;
    }
    Some((series, counts, quote_of(&map)))
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
        let cost: Vec<Value> = self
            .cost
            .iter()
            .map(|(((m, p, s), currency, mode), units)| {
                serde_json::json!({"model_ref": m, "provider": p, "source": s, "currency": currency,
                    "billing_mode": mode, "amount": decimal(*units)})
            })
            .collect();
        let unpriced: Vec<Value> = self
            .unpriced
            .iter()
            .map(|(((m, p, s), reason), requests)| {
                serde_json::json!({"model_ref": m, "provider": p, "source": s, "reason": reason, "requests": requests})
            })
            .collect();
        serde_json::json!({
            "series": series,
            "lines": {"read": self.read, "counted": self.counted, "duplicate": self.duplicate, "rejected": self.rejected},
            "cost": cost,
            "unpriced": unpriced,
        })
    }

    /// Spend as exact decimals by `(series, currency, billing_mode)`.
    pub fn cost_decimals(&self) -> BTreeMap<(Series, String, String), String> {
        self.cost.iter().map(|(k, v)| (k.clone(), decimal(*v))).collect()
    }

    /// Totals per series only, as an OTLP receiver can see them.
    pub fn totals(&self) -> BTreeMap<Series, [u64; 8]> {
        self.series.clone()
    }
}

/// 10^-9 units as the exact decimal, without trailing zeros.
pub fn decimal(units: u128) -> String {
    let (whole, fraction) = (units / 1_000_000_000, units % 1_000_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    format!("{whole}.{}", format!("{fraction:09}").trim_end_matches('0'))
}

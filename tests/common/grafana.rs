//! A dashboard panel's query as the request Grafana's Prometheus data source sends for a
//! dashboard time range, so that every dashboard check asks what a user's Grafana asks:
//!
//! - an instant query is sent at the range's `to`, unaligned, with `$__range` the range in whole
//!   seconds (rounded half away from zero), `$__range_s` and `$__range_ms` beside it;
//! - a range query's step is the panel's min interval (its `interval`, else the data source's
//!   scrape interval, 15 s by default) or the range over `maxDataPoints` rounded to Grafana's
//!   table of nice intervals, whichever is larger, and at least the range over 11,000 rounded;
//!   `start` and `end` are floored to a multiple of the step in the dashboard's time zone
//!   (`floor((t + offset) / step) * step - offset`), so a 1 d step gives local midnights;
//! - `$__interval` is that step written in its largest whole unit, and `$__rate_interval` is
//!   `max($__interval + scrape interval, 4 * scrape interval)`.
//!
//! These are the rules of Grafana's Prometheus data source (its backend in `pkg/promlib`), read
//! from its source; Grafana itself is not run here (AGPL), its requests are.

#![allow(dead_code)]

use serde_json::Value;

/// A dashboard time range, in Unix milliseconds, and the dashboard time zone's offset from UTC
/// (Grafana's `utcOffsetSec`: the zone's offset for a named zone, 0 for UTC).
#[derive(Debug, Clone, Copy)]
pub struct TimeRange {
    pub from_ms: i64,
    pub to_ms: i64,
    pub utc_offset_s: i64,
}

/// The data source's settings that shape requests.
#[derive(Debug, Clone, Copy)]
pub struct Datasource {
    /// `timeInterval`, the scrape interval Grafana assumes.
    pub scrape_interval_ms: i64,
}

impl Default for Datasource {
    fn default() -> Datasource {
        Datasource {
            scrape_interval_ms: 15_000,
        }
    }
}

/// The `maxDataPoints` of a panel that sets none: Grafana uses the panel's width in pixels.
pub const DEFAULT_MAX_DATA_POINTS: i64 = 1000;

/// One request to `/api/v1/query` or `/api/v1/query_range`.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Instant {
        query: String,
        time: f64,
    },
    Range {
        query: String,
        start: f64,
        end: f64,
        step_s: f64,
    },
}

impl Request {
    /// The path and query string of the request.
    pub fn path(&self) -> String {
        use super::prom_server::encode;
        match self {
            Request::Instant { query, time } => {
                format!("query?query={}&time={}", encode(query), seconds(*time))
            }
            Request::Range {
                query,
                start,
                end,
                step_s,
            } => format!(
                "query_range?query={}&start={}&end={}&step={}",
                encode(query),
                seconds(*start),
                seconds(*end),
                seconds(*step_s)
            ),
        }
    }
}

/// Seconds as Grafana writes them: the shortest decimal that reads back the same.
fn seconds(s: f64) -> String {
    format!("{s}")
}

/// The request Grafana sends for `target` of `panel` over `range`, the dashboard's variables
/// given as `(name, value)` (a multi-value "All" is `.*`).
pub fn request(
    panel: &Value,
    target: &Value,
    range: &TimeRange,
    ds: &Datasource,
    vars: &[(&str, &str)],
) -> Request {
    let range_ms = range.to_ms - range.from_ms;
    let range_s = (range_ms as f64 / 1000.0).round() as i64;
    let mut expr = target["expr"].as_str().expect("a target's expr").to_string();
    // Longest names first: `$__range_s` before `$__range`.
    for (name, value) in [
        ("$__range_ms", range_ms.to_string()),
        ("$__range_s", range_s.to_string()),
        ("$__range", format!("{range_s}s")),
    ] {
        expr = expr.replace(name, &value);
    }
    for (name, value) in vars {
        expr = expr.replace(&format!("${name}"), value);
    }
    if target["instant"].as_bool().unwrap_or(false) {
        return Request::Instant {
            query: expr,
            time: range.to_ms as f64 / 1000.0,
        };
    }
    let max_points = panel["maxDataPoints"]
        .as_i64()
        .unwrap_or(DEFAULT_MAX_DATA_POINTS)
        .max(1);
    let panel_interval = panel["interval"].as_str().and_then(parse_duration_ms);
    // The front end's interval: the range over the points, never below the min interval.
    let lower = panel_interval.unwrap_or(ds.scrape_interval_ms);
    let interval_ms = round_interval(range_ms / max_points, true).max(lower);
    // The back end's step.
    let min = target["interval"]
        .as_str()
        .filter(|i| !i.starts_with('$'))
        .and_then(parse_duration_ms)
        .unwrap_or(interval_ms);
    let calculated = range_ms / max_points;
    let step = if calculated < min {
        min
    } else {
        round_interval(calculated, false)
    };
    let step_ms = step.max(round_interval(range_ms / 11_000, false));
    let scrape = target["interval"]
        .as_str()
        .filter(|i| !i.starts_with('$'))
        .and_then(parse_duration_ms)
        .unwrap_or(ds.scrape_interval_ms);
    let rate_interval = (interval_ms + scrape).max(4 * scrape);
    expr = expr
        .replace("$__interval_ms", &step_ms.to_string())
        .replace("$__interval", &format_interval(step_ms))
        .replace("$__rate_interval", &go_duration(rate_interval));
    let align = |t_ms: i64| {
        let offset_ms = range.utc_offset_s * 1000;
        ((t_ms + offset_ms) as f64 / step_ms as f64).floor() as i64 * step_ms - offset_ms
    };
    Request::Range {
        query: expr,
        start: align(range.from_ms) as f64 / 1000.0,
        end: align(range.to_ms) as f64 / 1000.0,
        step_s: step_ms as f64 / 1000.0,
    }
}

/// Grafana's table of nice intervals; `strict` is the front end's (`<`, with its own top rows),
/// otherwise the back end's (`<=`).
pub fn round_interval(ms: i64, strict: bool) -> i64 {
    const S: i64 = 1000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    const TABLE: [(i64, i64); 25] = [
        (10, 1),
        (15, 10),
        (35, 20),
        (75, 50),
        (150, 100),
        (350, 200),
        (750, 500),
        (1500, S),
        (3500, 2 * S),
        (7500, 5 * S),
        (12500, 10 * S),
        (17500, 15 * S),
        (25000, 20 * S),
        (45000, 30 * S),
        (90000, M),
        (210000, 2 * M),
        (450000, 5 * M),
        (780000, 10 * M),
        (1200000, 15 * M),
        (2400000, 30 * M),
        (5400000, H),
        (9000000, 2 * H),
        (16200000, 3 * H),
        (24300000, 6 * H),
        (64800000, 12 * H),
    ];
    for (limit, nice) in TABLE {
        if if strict { ms < limit } else { ms <= limit } {
            return nice;
        }
    }
    let week = 7 * D;
    if strict {
        match ms {
            _ if ms < week => D,
            _ if ms < 3 * week => week,
            _ if ms < 6 * week => 30 * D,
            _ => 365 * D,
        }
    } else {
        match ms {
            _ if ms <= week => D,
            _ if ms <= 3 * week => week,
            _ if ms < 2 * 365 * D => 30 * D,
            _ => 365 * D,
        }
    }
}

/// `$__interval`: the largest whole unit (`90s` is `1m`).
pub fn format_interval(ms: i64) -> String {
    const UNITS: [(i64, &str); 5] = [
        (365 * 86_400_000, "y"),
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
    ];
    for (size, unit) in UNITS {
        if ms >= size {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// A duration as Go's `Duration.String()` writes it (`1m0s`, `96h0m0s`), whole seconds.
pub fn go_duration(ms: i64) -> String {
    let (h, m, s) = (ms / 3_600_000, ms / 60_000 % 60, ms % 60_000);
    let s = if s % 1000 == 0 {
        format!("{}s", s / 1000)
    } else {
        format!("{}s", s as f64 / 1000.0)
    };
    match (h, m) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

/// `15s`, `1d`, `500ms` in milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.trim().trim_start_matches('>');
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().ok()?;
    let size = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        "y" => 365 * 86_400_000,
        _ => return None,
    };
    Some(n * size)
}

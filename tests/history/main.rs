//! Issue "The past at its own time", end to end: a ledger of many days, written in two time
//! zones, counted by an exporter whose live stream goes to a real backend; its history written
//! by `history` and loaded the way deploy/README.md says ("Bring your history"), twice; the
//! live stream running on. Every row of the shipped dashboard's daily table, asked as Grafana
//! asks it in two dashboard zones, equals an oracle of the ledger's lines at their own times
//! (and of the live lines at the time they were counted); no series resets over the whole span;
//! the lifetime is the store's.

#[path = "../common/mod.rs"]
mod common;

mod frontier;
mod prometheus;
mod victoria;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::dashboard::{ALL_VALUES, dashboard};
use common::grafana::{self, Datasource, Request, TimeRange};
use common::prom_server::Prometheus;
use common::victoria::VictoriaMetrics;
use common::{Fixture, PROM_NAMES, wait_until};

const DAY_MS: i64 = 86_400_000;

/// How long the backends may take to show what was sent or loaded.
const PATIENCE: Duration = Duration::from_secs(60);

/// The daily table's columns, in the order of `PROM_NAMES`.
const COLUMNS: [&str; 8] = [
    "Prompt",
    "Completion",
    "Reasoning",
    "Cache hit",
    "Cache miss",
    "Tokens",
    "Requests",
    "Turns",
];

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// One ledger line and what it counts, at the moment it counts.
struct Line {
    text: String,
    at_ms: i64,
    counts: [u64; 8],
}

/// RFC 3339 of `at_ms` in the zone `offset_min` east of UTC, with a nanosecond fraction.
fn rfc3339(at_ms: i64, offset_min: i64, nanos: u32) -> String {
    let local = at_ms.div_euclid(1000) + offset_min * 60;
    let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let frac = at_ms.rem_euclid(1000) as u32 * 1_000_000 + nanos % 1_000_000;
    let sign = if offset_min < 0 { '-' } else { '+' };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}{sign}{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        offset_min.abs() / 60,
        offset_min.abs() % 60
    )
}

/// A small deterministic generator of lines: usage of two models from two sources, and turns.
struct Lines(u64);

impl Lines {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A line written at `at_ms`, its `ts` in one of two zones (UTC+08:00, UTC-05:00).
    fn at(&mut self, at_ms: i64) -> Line {
        let offset_min = if self.next().is_multiple_of(2) { 480 } else { -300 };
        let ts = rfc3339(at_ms, offset_min, self.next() as u32);
        if self.next().is_multiple_of(5) {
            return Line {
                text: format!(r#"{{"ts":"{ts}","source":"cli","turn":true}}"#),
                at_ms,
                counts: [0, 0, 0, 0, 0, 0, 0, 1],
            };
        }
        let (p, c, r) = (
            1000 + self.next() % 5000,
            100 + self.next() % 900,
            self.next() % 300,
        );
        let h = self.next() % p;
        let (model, source) = match self.next() % 3 {
            0 => ("deepseek-chat", "cli"),
            1 => ("deepseek-reasoner", "cli"),
            _ => ("deepseek-chat", "desktop"),
        };
        Line {
            text: format!(
                r#"{{"ts":"{ts}","model":"{model}","source":"{source}","prompt":{p},"completion":{c},"reasoning":{r},"cache_hit":{h},"cache_miss":{m},"total":{t},"requests":1}}"#,
                m = p - h,
                t = p + c
            ),
            at_ms,
            counts: [p, c, r, h, p - h, p + c, 1, 0],
        }
    }
}

/// The ledger's oracle: each line's counts at the moment it counts.
#[derive(Default)]
struct Oracle(Vec<(i64, [u64; 8])>);

impl Oracle {
    fn add(&mut self, at_ms: i64, counts: [u64; 8]) {
        self.0.push((at_ms, counts));
    }

    /// Quantity `q` over `[from, to)`.
    fn sum(&self, q: usize, from: i64, to: i64) -> u64 {
        self.0
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .map(|(_, c)| c[q])
            .sum()
    }

    fn lifetime(&self, q: usize) -> u64 {
        self.0.iter().map(|(_, c)| c[q]).sum()
    }
}

/// How a backend takes the live stream and the history.
trait Backend {
    fn name(&self) -> &str;
    fn api(&self) -> &Prometheus;
    /// Loads the history the exporter wrote, as deploy/README.md says.
    fn load(&mut self, fx: &Fixture);
    /// The exporter's environment on this path (the live stream's and the history's).
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// `history` of the fixture's store, with the live series' own labels, checked against the
/// backend's query API at `check` first.
fn history(fx: &Fixture, format: &str, labels: &[(String, String)], check: &str) -> Vec<u8> {
    let mut args: Vec<String> = ["--format", format, "--check", check].map(String::from).to_vec();
    for (k, v) in labels {
        args.push("--label".into());
        args.push(format!("{k}={v}"));
    }
    history_in(fx, &args, &[])
}

/// `history` of the fixture's store, with `more` arguments and `env` besides the fixture's.
fn history_in(fx: &Fixture, more: &[String], env: &[(String, String)]) -> Vec<u8> {
    let mut args = vec!["history".to_string(), "--export-interval".into(), "2s".into()];
    args.extend_from_slice(more);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fx.command(&args).envs(env.iter().cloned()).output().unwrap();
    assert!(
        out.status.success(),
        "history: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("history: "), "{log}");
    out.stdout
}

/// The labels the live series carry besides their own: what `--label` must give the history.
fn live_labels(api: &Prometheus) -> Vec<(String, String)> {
    let mut labels = Vec::new();
    let ok = wait_until(PATIENCE, || {
        let Some(result) = api.query("reasonix_tokens_total", None) else {
            return false;
        };
        let Some(first) = result.first() else {
            return false;
        };
        labels = first["metric"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !["__name__", "model_ref", "provider", "source"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        true
    });
    assert!(ok, "the live stream never reached the backend");
    labels
}

/// A zone offset near `wanted_h` whose midnight is not within ten minutes of `now`: the live
/// lines then fall on one local day, whatever the time the test runs at.
fn zone_away_from_midnight(wanted_h: i64, now: i64) -> i64 {
    let near = |offset_s: i64| {
        (now + offset_s * 1000).rem_euclid(DAY_MS) < 600_000
            || (now + offset_s * 1000).rem_euclid(DAY_MS) > DAY_MS - 600_000
    };
    if near(wanted_h * 3600) {
        (wanted_h + 1) * 3600
    } else {
        wanted_h * 3600
    }
}

/// One column of the daily table: each row's local midnight and value.
type Rows = BTreeMap<i64, u64>;

/// The daily table over `range` as the backend answers Grafana, column by column (rows by their
/// local midnight, zero rows left out); and as the oracle has it.
fn daily_table(api: &Prometheus, oracle: &Oracle, range: &TimeRange) -> (Vec<Rows>, Vec<Rows>) {
    let dash = dashboard();
    let panel = common::dashboard::daily_totals_panel(&dash);
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for (q, column) in COLUMNS.iter().enumerate() {
        let target = panel["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["legendFormat"] == *column)
            .unwrap();
        let request = grafana::request(panel, target, range, &Datasource::default(), &ALL_VALUES);
        let Request::Range {
            start, end, step_s, ..
        } = &request
        else {
            panic!("the daily table is a range query")
        };
        assert_eq!(*step_s, 86400.0, "{request:?}");
        let rows: BTreeMap<i64, u64> = api
            .api(&request.path())
            .map(|data| {
                data["result"][0]["values"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .unwrap_or_default()
            .iter()
            .map(|v| {
                (
                    (v[0].as_f64().unwrap() * 1000.0) as i64,
                    v[1].as_str().unwrap().parse::<f64>().unwrap() as u64,
                )
            })
            .filter(|(_, v)| *v != 0)
            .collect();
        got.push(rows);
        let (start, end) = ((*start * 1000.0) as i64, (*end * 1000.0) as i64);
        want.push(
            (0..)
                .map(|i| start + i * DAY_MS)
                .take_while(|row| *row <= end)
                .map(|row| (row, oracle.sum(q, row, row + DAY_MS)))
                .filter(|(_, v)| *v != 0)
                .collect(),
        );
    }
    (got, want)
}

/// The instant value of `expr` now, if the backend has one.
fn value(api: &Prometheus, expr: &str) -> Option<f64> {
    let result = api.query(expr, None)?;
    result.first()?["value"][1].as_str()?.parse().ok()
}

/// The scenario of the module's header on `backend`, the live stream sent to `otlp_endpoint`.
fn scenario(backend: &mut dyn Backend, otlp_endpoint: &str) {
    let fx = Fixture::new();
    let mut lines = Lines(27);
    let mut oracle = Oracle::default();
    let now = now_ms();
    // Twenty days of history, then the half hour before the exporter starts.
    let mut history: Vec<Line> = (1..=20)
        .flat_map(|day| (0..12).map(move |i| (day, i)))
        .map(|(day, i)| now - day * DAY_MS + (i * 7_919_000 + day * 1_237_000) % DAY_MS)
        .chain((1..=5).map(|i| now - i * 300_000))
        .map(|at| lines.at(at))
        .collect();
    history.sort_by_key(|l| l.at_ms);
    for line in &history {
        let day = &line.text[7..17];
        fx.append(&format!("{day}.jsonl"), format!("{}\n", line.text).as_bytes());
        oracle.add(line.at_ms, line.counts);
    }
    // A copy of a line in a second file, and a line that is not one: each counted as the store
    // counts them (once, and not at all).
    let copied = &history[40];
    fx.append(
        &format!("{} (1).jsonl", &copied.text[7..17]),
        format!("{}\n{{\"ts\":\n", copied.text).as_bytes(),
    );
    let env = backend.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let daemon = fx.spawn_with(
        &[
            "--export-interval",
            "2s",
            "--poll-interval",
            "200ms",
            "--prometheus",
            "off",
            "--otlp-protocol",
            "http/protobuf",
            "--otlp-endpoint",
            otlp_endpoint,
        ],
        &env,
    );
    let total = |oracle: &Oracle| oracle.lifetime(5) as f64;
    let arrived = |api: &Prometheus, oracle: &Oracle| {
        wait_until(PATIENCE, || {
            value(api, "sum(reasonix_tokens_total)") == Some(total(oracle))
        })
    };
    assert!(
        arrived(backend.api(), &oracle),
        "{}: the first export never arrived: {}",
        backend.name(),
        daemon.log_text()
    );
    // Lines that arrive after the first export: the live stream counts them when they come,
    // the one written three days ago too.
    for at in [now_ms(), now_ms(), now - 3 * DAY_MS, now_ms()] {
        let line = lines.at(at);
        fx.append(
            &format!("{}.jsonl", &line.text[7..17]),
            format!("{}\n", line.text).as_bytes(),
        );
        oracle.add(now_ms(), line.counts);
    }
    assert!(
        arrived(backend.api(), &oracle),
        "{}: the live lines never arrived",
        backend.name()
    );
    backend.load(&fx);
    check(backend, &oracle, "history loaded");
    backend.load(&fx);
    check(backend, &oracle, "history loaded twice");
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
}

/// Every check of the module's header, on what `backend` answers now.
fn check(backend: &dyn Backend, oracle: &Oracle, when: &str) {
    let api = backend.api();
    let name = backend.name();
    for wanted_h in [8, -5] {
        let to_ms = now_ms();
        let range = TimeRange {
            from_ms: to_ms - 22 * DAY_MS,
            to_ms,
            utc_offset_s: zone_away_from_midnight(wanted_h, to_ms),
        };
        let mut table = daily_table(api, oracle, &range);
        // The history and the live stream's last points become searchable in their own time.
        let settled = wait_until(PATIENCE, || {
            table = daily_table(api, oracle, &range);
            table.0 == table.1
        });
        for (q, column) in COLUMNS.iter().enumerate() {
            assert_eq!(
                table.0[q],
                table.1[q],
                "{name}, {when}: daily {column} in UTC{:+}h",
                range.utc_offset_s / 3600
            );
        }
        assert!(settled);
        assert!(
            table.1[5].len() >= 20,
            "the table has every day of the history: {:?}",
            table.1[5]
        );
    }
    for (q, metric) in PROM_NAMES.iter().enumerate() {
        let resets = value(api, &format!("sum(resets({metric}[25d]))"));
        assert_eq!(resets, Some(0.0), "{name}, {when}: {metric} went down somewhere");
        let lifetime = value(api, &format!("sum({metric})"));
        assert_eq!(
            lifetime,
            Some(oracle.lifetime(q) as f64),
            "{name}, {when}: the lifetime of {metric}"
        );
    }
}

//! Contract §4, "Any window", end to end: every range panel of the shipped dashboard, asked the
//! way Grafana asks it (`common::grafana`), equals what the stores committed between their last
//! exports at or before the window's edges, on real backends.
//!
//! Two machines export every 2 s. Lines land in bursts at known times: one burst starts a new
//! model (cost in both billing modes) and a new source's turns, a second machine joins half-way
//! with its history, the first is stopped, misses lines, and is started again, and on the
//! collector path the collector is restarted. Between bursts, in quiet moments at least 5 s from
//! any line, `status --json` of each machine is the truth. Windows run from one quiet moment to
//! another (never a sample instant); the daily table is asked in a time zone whose midnight
//! falls in the scenario, so that its two rows split the scenario in two.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::collector::Collector;
use common::dashboard::{ALL_VALUES, CURRENCY, LIFETIME_PANELS, RULE_PANELS, dashboard, units_of};
use common::generator::Generator;
use common::grafana::{self, Datasource, Request, TimeRange};
use common::model::{Model, QUANTITIES, Series};
use common::prom_server::{Prometheus, encode};
use common::victoria::VictoriaMetrics;
use common::{Daemon, Fixture, http_get, wait_until};
use serde_json::Value;

/// How long a value may take to travel to a backend.
const PATIENCE: Duration = Duration::from_secs(40);
/// The quiet around a moment: no line lands closer to it than this.
const QUIET: Duration = Duration::from_secs(5);
/// How far from a moment a window's edge may fall and still stand for it.
const EDGE_MS: i64 = 1000;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn sleep_until_ms(at: i64) {
    let wait = at - now_ms();
    if wait > 0 {
        // The scenario's schedule (quiet gaps between bursts), not a wait for an outcome.
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// What a store has counted, as `status --json` says: tokens per series, spend in
/// [`CURRENCY`] per series and billing mode (10^-9 units), unpriced requests per series and reason.
#[derive(Debug, Clone, Default, PartialEq)]
struct Reading {
    tokens: BTreeMap<Series, [u64; 8]>,
    cost: BTreeMap<(Series, String), u128>,
    unpriced: BTreeMap<(Series, String), u64>,
}

impl Reading {
    fn of_status(status: &Value) -> Reading {
        let series = |v: &Value| {
            let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (text("model_ref"), text("provider"), text("source"))
        };
        let mut r = Reading::default();
        for s in status["series"].as_array().into_iter().flatten() {
            let mut values = [0u64; 8];
            for (v, key) in values.iter_mut().zip(QUANTITIES) {
                *v = s[key].as_u64().unwrap_or_default();
            }
            r.tokens.insert(series(s), values);
        }
        for c in status["cost"].as_array().into_iter().flatten() {
            if c["currency"] == CURRENCY {
                let mode = c["billing_mode"].as_str().unwrap().to_string();
                *r.cost.entry((series(c), mode)).or_default() += units_of(c["amount"].as_str().unwrap());
            }
        }
        for u in status["unpriced"].as_array().into_iter().flatten() {
            let reason = u["reason"].as_str().unwrap().to_string();
            *r.unpriced.entry((series(u), reason)).or_default() += u["requests"].as_u64().unwrap();
        }
        r
    }

    /// `self - base`, per entry (what grew since `base`).
    fn since(&self, base: &Reading) -> Reading {
        let mut out = self.clone();
        for (k, v) in &mut out.tokens {
            let b = base.tokens.get(k).copied().unwrap_or_default();
            for (x, y) in v.iter_mut().zip(b) {
                *x -= y;
            }
        }
        for (k, v) in &mut out.cost {
            *v -= base.cost.get(k).copied().unwrap_or_default();
        }
        for (k, v) in &mut out.unpriced {
            *v -= base.unpriced.get(k).copied().unwrap_or_default();
        }
        out
    }

    fn add(&mut self, other: &Reading) {
        for (k, v) in &other.tokens {
            let mine = self.tokens.entry(k.clone()).or_default();
            for (x, y) in mine.iter_mut().zip(v) {
                *x += y;
            }
        }
        for (k, v) in &other.cost {
            *self.cost.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.unpriced {
            *self.unpriced.entry(k.clone()).or_default() += v;
        }
    }

    fn quantity(&self, name: &str) -> f64 {
        let q = QUANTITIES.iter().position(|n| *n == name).unwrap();
        self.tokens.values().map(|v| v[q]).sum::<u64>() as f64
    }

    fn spend(&self, mode: &str) -> f64 {
        let units: u128 = self
            .cost
            .iter()
            .filter(|((_, m), _)| m == mode)
            .map(|(_, v)| v)
            .sum();
        units as f64 / 1e9
    }
}

/// A quiet moment: when, and each machine's reading then (`None` before it first exported).
struct Moment {
    at_ms: i64,
    readings: Vec<Option<Reading>>,
}

/// The scenario's truth.
#[derive(Default)]
struct Timeline {
    moments: Vec<Moment>,
}

impl Timeline {
    /// Machine `k`'s reading at `t`: the one of the last moment at or before it, a moment
    /// standing for the quiet around it (a window's start is `$__range`, whole seconds, before
    /// its end, so up to half a second away from the moment it was asked from).
    fn reading_at(&self, k: usize, t: i64) -> Option<&Reading> {
        self.moments
            .iter()
            .rev()
            .find(|m| m.at_ms - EDGE_MS <= t)?
            .readings[k]
            .as_ref()
    }

    /// Machine `k`'s history: its reading at its first export (the first moment it has one).
    fn history(&self, k: usize) -> Option<&Reading> {
        self.moments.iter().find_map(|m| m.readings[k].as_ref())
    }

    /// What grew in `(from, to]` over all machines, and the lifetime totals at `to` of the
    /// machines that exported in it.
    fn window(&self, from: i64, to: i64) -> (Reading, Reading) {
        let (mut grown, mut lifetime) = (Reading::default(), Reading::default());
        for k in 0..self.moments[0].readings.len() {
            let Some(end) = self.reading_at(k, to) else {
                continue;
            };
            let base = self.reading_at(k, from).or(self.history(k)).unwrap();
            grown.add(&end.since(base));
            lifetime.add(end);
        }
        (lifetime, grown)
    }
}

/// One machine: its ledger, its exporter and what it should have counted.
struct Machine {
    fx: Fixture,
    model: Model,
    generator: Generator,
    daemon: Option<Daemon>,
    /// How its exporter sends: to an OTLP endpoint, or served for a scrape.
    sink: Vec<String>,
    lines: usize,
}

/// Where the machines' exporters send.
#[derive(Clone)]
enum Sink {
    Otlp(String),
    /// Each machine serves `/metrics` on its port.
    Scraped([u16; 2]),
}

impl Machine {
    fn new(seed: u64, sink: &Sink, k: usize) -> Machine {
        let sink = match sink {
            Sink::Otlp(endpoint) => vec![
                "--prometheus".into(),
                "off".into(),
                "--otlp-protocol".into(),
                "http/protobuf".into(),
                "--otlp-endpoint".into(),
                endpoint.clone(),
            ],
            Sink::Scraped(ports) => vec![
                "--otlp".into(),
                "off".into(),
                "--prometheus".into(),
                format!("127.0.0.1:{}", ports[k]),
            ],
        };
        Machine {
            fx: Fixture::new(),
            model: Model::default(),
            generator: Generator::new(seed),
            daemon: None,
            sink,
            lines: 0,
        }
    }

    fn append(&mut self, day: &str, text: &str) {
        self.fx.append(&format!("{day}.jsonl"), text.as_bytes());
        self.model.feed(text.as_bytes());
    }

    /// `n` lines of the generator's mix on `day`.
    fn lines_land(&mut self, day: &str, n: usize) {
        let text = self.generator.day_file(day, n);
        self.append(day, &text);
    }

    /// Lines of a model and a source this machine has never seen: a new model's usage with
    /// quotes in both billing modes, and turns of a new source.
    fn new_series_land(&mut self, day: &str, model: &str, source: &str) {
        let mut text = String::new();
        for i in 0..6 {
            self.lines += 1;
            let n = self.lines;
            let mode = if i % 2 == 0 {
                "payg"
            } else {
                "subscription_equivalent"
            };
            text += &format!(
                r#"{{"ts":"{day}T10:{i:02}:00.{n:06}+08:00","model":"{model}","source":"cli","prompt":{p},"completion":{c},"reasoning":{r},"cache_hit":{h},"cache_miss":{m},"total":{t},"requests":1,"cost_amount":"0.00{n}7","cost_currency":"CNY","cost_complete":true,"billing_mode":"{mode}"}}"#,
                p = 1000 + n,
                c = 200 + n,
                r = 50 + n,
                h = 900,
                m = 100 + n,
                t = 1200 + 2 * n
            );
            text += "\n";
            text += &format!(r#"{{"ts":"{day}T10:{i:02}:30.{n:06}Z","source":"{source}","turn":true}}"#);
            text += "\n";
        }
        self.append(day, &text);
    }

    fn start(&mut self) {
        let mut args = vec!["--export-interval", "2s", "--poll-interval", "200ms"];
        args.extend(self.sink.iter().map(String::as_str));
        self.daemon = Some(self.fx.spawn(&args));
    }

    fn stop(&mut self) {
        let (status, _, log) = self.daemon.take().expect("running").terminate();
        assert!(status.success(), "{log}");
    }

    /// Waits until the store has every line that landed; its reading.
    fn reading(&self) -> Reading {
        let mut reading = Reading::default();
        let caught_up = wait_until(PATIENCE, || {
            let out = self.fx.run(&["status", "--json"]);
            let Ok(status) = serde_json::from_slice::<Value>(&out.stdout) else {
                return false;
            };
            reading = Reading::of_status(&status);
            let mut counted = reading.tokens.clone();
            counted.retain(|_, v| v.iter().any(|x| *x > 0));
            counted == self.model.expected.totals()
        });
        assert!(caught_up, "the store never had every line: {reading:?}");
        reading
    }
}

/// A backend the dashboard is asked of: the Prometheus HTTP API on `port`.
struct Backend {
    name: String,
    port: u16,
    /// VictoriaMetrics: answers for times in its latency offset (30 s) come from before it.
    victoria: bool,
}

impl Backend {
    fn api(&self, path: &str) -> Option<Value> {
        let body = http_get(self.port, &format!("/api/v1/{path}"), None)?;
        let json: Value = serde_json::from_str(&body).ok()?;
        (json["status"] == "success").then(|| json["data"].clone())
    }

    /// No ledger counter went down (`resets()` 0) over the last `span`.
    fn assert_never_reset(&self, span: &str) {
        for name in common::PROM_NAMES
            .iter()
            .chain(&["reasonix_cost_total", "reasonix_requests_unpriced_total"])
        {
            let q = format!("sum(resets({name}[{span}])) or vector(0)");
            let data = self
                .api(&format!("query?query={}&nocache=1", encode(&q)))
                .expect("resets() answers");
            let resets = data["result"][0]["value"][1].as_str().unwrap_or("NaN");
            assert_eq!(resets, "0", "{}: {name} went down", self.name);
        }
    }

    /// The sum of a counter over every store, as of now (a test's own question, not Grafana's:
    /// `nocache` lets VictoriaMetrics answer with what it has just taken).
    fn newest_sum(&self, metric: &str) -> Option<f64> {
        if self.victoria {
            let _ = http_get(self.port, "/internal/force_flush", None);
        }
        let q = format!("sum(last_over_time({metric}[10m]))");
        let data = self.api(&format!("query?query={}&nocache=1", encode(&q)))?;
        data["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

/// Takes a quiet moment: every store has its lines, every backend their last export, and no
/// line lands within [`QUIET`] of it (on a whole minute if `on_a_minute`). Returns its time.
fn moment(
    machines: &[Machine],
    backends: &[Backend],
    last_line: i64,
    timeline: &mut Timeline,
    on_a_minute: bool,
) -> i64 {
    let readings: Vec<Option<Reading>> = machines
        .iter()
        .enumerate()
        .map(|(k, m)| match m.daemon {
            Some(_) => Some(m.reading()),
            // A stopped machine keeps its last reading: it exported it before it stopped.
            None => timeline.moments.last().and_then(|at| at.readings[k].clone()),
        })
        .collect();
    let mut want = Reading::default();
    readings.iter().flatten().for_each(|r| want.add(r));
    for backend in backends {
        let arrived = wait_until(PATIENCE, || {
            backend.newest_sum("reasonix_tokens_total") == Some(want.quantity("total"))
                && backend.newest_sum("reasonix_requests_total") == Some(want.quantity("requests"))
                && backend.newest_sum("reasonix_turns_total") == Some(want.quantity("turns"))
        });
        assert!(arrived, "{}: the backend never had {want:?}", backend.name);
    }
    // Everything arrived before `at_ms - EDGE_MS`, and no line lands within QUIET of it.
    let mut at_ms = (now_ms() + EDGE_MS).max(last_line + QUIET.as_millis() as i64);
    if on_a_minute {
        at_ms = (at_ms + 59_999) / 60_000 * 60_000;
    }
    sleep_until_ms(at_ms);
    timeline.moments.push(Moment { at_ms, readings });
    sleep_until_ms(at_ms + QUIET.as_millis() as i64);
    at_ms
}

/// Runs the scenario with machines exporting to `sink` and checks every panel on every
/// backend; `restart_hop` restarts the first hop (a collector) mid-run.
fn scenario(sink: Sink, backends: &[Backend], mut restart_hop: impl FnMut()) {
    // `REASONIX_WINDOWS_SEED` other than 0 gives another scenario of the same kinds of events:
    // other ledgers, burst sizes and so times (how the acceptance is measured again).
    let seed: u64 = std::env::var("REASONIX_WINDOWS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut rng = common::generator::Rng::new(seed);
    let mut size = |base: usize| {
        if seed == 0 {
            base
        } else {
            base / 2 + rng.below(base as u64 * 2) as usize
        }
    };
    let mut machines = [
        Machine::new(301 + 10 * seed, &sink, 0),
        Machine::new(302 + 10 * seed, &sink, 1),
    ];
    let mut timeline = Timeline::default();
    let mut last_line = now_ms();
    let quiet = |machines: &[Machine], last_line: i64, timeline: &mut Timeline| {
        moment(machines, backends, last_line, timeline, false)
    };

    // Before anything: no machine has exported.
    let before = now_ms();
    timeline.moments.push(Moment {
        at_ms: before,
        readings: vec![None, None],
    });
    sleep_until_ms(before + 1000);

    // The first machine, with three days of history.
    for day in ["2026-10-01", "2026-10-02", "2026-10-03"] {
        machines[0].lines_land(day, size(150));
    }
    machines[0].start();
    let m0 = quiet(&machines, last_line, &mut timeline);

    machines[0].lines_land("2026-10-04", size(40));
    last_line = now_ms();
    let m1 = quiet(&machines, last_line, &mut timeline);

    // A model and a source never seen: series born after the store's first export.
    machines[0].new_series_land("2026-10-04", "deepseek/deepseek-v5-exp", "studio");
    last_line = now_ms();
    let m2 = quiet(&machines, last_line, &mut timeline);

    // The second machine joins, with history of its own (and a model of its own).
    machines[1].lines_land("2026-09-20", size(200));
    machines[1].new_series_land("2026-09-21", "moonshot/kimi-k3", "bot");
    machines[1].start();
    let m3 = quiet(&machines, last_line, &mut timeline);

    machines[0].lines_land("2026-10-05", size(30));
    machines[1].lines_land("2026-10-05", size(30));
    last_line = now_ms();
    // This moment is on a whole minute: the daily table's midnight, in a zone of whole minutes.
    let m4 = moment(&machines, backends, last_line, &mut timeline, true);

    // The first machine stopped; lines land meanwhile; started again.
    machines[0].stop();
    machines[0].lines_land("2026-10-06", size(25));
    machines[0].new_series_land("2026-10-06", "zhipu/glm-5", "remote");
    machines[1].lines_land("2026-10-06", size(20));
    machines[0].start();
    last_line = now_ms();
    let m5 = quiet(&machines, last_line, &mut timeline);

    // The first hop restarted, lines on both.
    restart_hop();
    machines[0].lines_land("2026-10-07", size(20));
    machines[1].lines_land("2026-10-07", size(20));
    last_line = now_ms();
    let m6 = quiet(&machines, last_line, &mut timeline);

    // VictoriaMetrics answers a query at a time within its latency offset (30 s by default) from
    // the data before that offset: Grafana users of a default VictoriaMetrics see that too, so
    // the windows are asked once their end is older than it.
    if backends.iter().any(|b| b.victoria) {
        sleep_until_ms(m6 + 31_000);
    }

    let windows = [
        ("everything", before, m6),
        ("a birth and a machine joining", m1, m3),
        ("a new model's first minutes", m0, m2),
        ("an exporter stopped and started", m3, m5),
        ("the collector restarted", m4, m6),
    ];
    for backend in backends {
        for (what, from, to) in windows {
            check_window(
                backend,
                &timeline,
                what,
                TimeRange {
                    from_ms: from,
                    to_ms: to,
                    utc_offset_s: 0,
                },
            );
        }
        // The daily table in a zone whose midnight is m4: two rows, split there.
        let utc_offset_s = (86_400_000 - m4.rem_euclid(86_400_000)) / 1000;
        let range = TimeRange {
            from_ms: before,
            to_ms: m6,
            utc_offset_s,
        };
        check_daily_table(backend, &timeline, range, m4);
        // Nothing ever went down: no counter reset anywhere in the scenario.
        backend.assert_never_reset(&format!("{}s", (now_ms() - before) / 1000 + 60));
    }
    for m in &mut machines {
        m.stop();
    }
}

/// A result's values by the labels `by` (joined with `/`), zeros left out.
fn by_labels(result: &[Value], by: &[&str]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in result {
        let v: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
        if v != 0.0 {
            let key: Vec<&str> = by
                .iter()
                .map(|l| r["metric"][*l].as_str().unwrap_or(""))
                .collect();
            *out.entry(key.join("/")).or_default() += v;
        }
    }
    out
}

/// The truth's growth by `pick` (a series' key), zeros left out.
fn grown_by<K>(
    map: &BTreeMap<K, impl Copy>,
    pick: impl Fn(&K) -> String,
    value: impl Fn(&K) -> f64,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for k in map.keys() {
        let v = value(k);
        if v != 0.0 {
            *out.entry(pick(k)).or_default() += v;
        }
    }
    out
}

/// What a panel must show over a window: a number, or numbers by label.
enum Want {
    One(f64),
    By(Vec<&'static str>, BTreeMap<String, f64>),
}

/// The truth of each amount panel of the dashboard; `None` for the panels that are not amounts
/// over the window (rates, the exporter's health).
fn want(panel: &str, lifetime: &Reading, grown: &Reading, range_s: f64) -> Option<Want> {
    let tokens = |q: &str| {
        let i = QUANTITIES.iter().position(|n| *n == q).unwrap();
        move |s: &Series| grown.tokens[s][i] as f64
    };
    let cost = |k: &(Series, String)| grown.cost[k] as f64 / 1e9;
    if let Some((_, q)) = LIFETIME_PANELS
        .iter()
        .find(|(n, _)| panel == format!("Lifetime {n}"))
    {
        return Some(Want::One(lifetime.quantity(q)));
    }
    Some(match panel {
        "Lifetime spend, pay-as-you-go" => Want::One(lifetime.spend("payg")),
        "Lifetime subscription equivalent" => Want::One(lifetime.spend("subscription_equivalent")),
        "Tokens (total)" => Want::One(grown.quantity("total")),
        "Prompt" => Want::One(grown.quantity("prompt")),
        "Completion" => Want::One(grown.quantity("completion")),
        "Reasoning" => Want::One(grown.quantity("reasoning")),
        "Requests" => Want::One(grown.quantity("requests")),
        "Turns" => Want::One(grown.quantity("turns")),
        "Cache hit ratio" => Want::One(grown.quantity("cache_hit") / grown.quantity("prompt")),
        "Requests per day (average)" => Want::One(grown.quantity("requests") / range_s * 86400.0),
        "Turns per day (average)" => Want::One(grown.quantity("turns") / range_s * 86400.0),
        "Tokens per request (average)" => Want::One(grown.quantity("total") / grown.quantity("requests")),
        "Top models by tokens" => Want::By(
            vec!["model_ref"],
            grown_by(&grown.tokens, |s| s.0.clone(), tokens("total")),
        ),
        "Top providers by tokens" => Want::By(
            vec!["provider"],
            grown_by(&grown.tokens, |s| s.1.clone(), tokens("total")),
        ),
        "Tokens by source" => Want::By(
            vec!["source"],
            grown_by(&grown.tokens, |s| s.2.clone(), tokens("total")),
        ),
        "Spend, pay-as-you-go" => Want::One(grown.spend("payg")),
        "Subscription equivalent" => Want::One(grown.spend("subscription_equivalent")),
        "Priced share of requests" => {
            let unpriced: u64 = grown.unpriced.values().sum();
            Want::One(1.0 - unpriced as f64 / grown.quantity("requests"))
        }
        "Unpriced requests by reason" => Want::By(
            vec!["reason"],
            grown_by(&grown.unpriced, |k| k.1.clone(), |k| grown.unpriced[k] as f64),
        ),
        "Spend by model" => Want::By(
            vec!["model_ref", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.0), cost),
        ),
        "Spend by provider" => Want::By(
            vec!["provider", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.1), cost),
        ),
        "Spend by source" => Want::By(
            vec!["source", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.2), cost),
        ),
        _ => return None,
    })
}

/// The instant panels that are not usage amounts: the exporter's own health.
const NOT_AMOUNTS: [&str; 3] = ["Rejected lines (range)", "Lag", "Ledger files"];

/// Exact: to the token for counts, to 10^-9 of the currency for spend, to 10^-12 for ratios.
fn exact(panel: &str, got: f64, want: f64) -> bool {
    if panel.contains("pend") || panel.contains("ubscription") {
        (got - want).abs() <= 1e-9
    } else if want.fract() == 0.0 && want.abs() < 1e15 {
        got == want
    } else {
        (got - want).abs() <= want.abs() * 1e-12
    }
}

/// Every panel of the dashboard over `range`, asked as Grafana asks, against the truth.
fn check_window(backend: &Backend, timeline: &Timeline, what: &str, range: TimeRange) {
    let dash = dashboard();
    let range_s = ((range.to_ms - range.from_ms) as f64 / 1000.0).round();
    // The window as the backend sees it: `$__range` whole seconds before `to`.
    let from = range.to_ms - range_s as i64 * 1000;
    let (lifetime, grown) = timeline.window(from, range.to_ms);
    assert!(grown.quantity("total") > 0.0, "{what}: nothing grew");
    let mut checked = 0;
    for panel in dash["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let request = grafana::request(panel, target, &range, &Datasource::default(), &ALL_VALUES);
            let data = backend
                .api(&request.path())
                .unwrap_or_else(|| panic!("{}: {title}: refused {request:?}", backend.name));
            let Request::Instant { query, .. } = &request else {
                continue;
            };
            let result = data["result"].as_array().cloned().unwrap_or_default();
            let Some(want) = want(title, &lifetime, &grown, range_s) else {
                assert!(
                    NOT_AMOUNTS.contains(&title) || RULE_PANELS.contains(&title),
                    "{title}: an instant panel without a truth"
                );
                continue;
            };
            let context = format!("{} [{what}] {title}: {query}", backend.name);
            match want {
                Want::One(want) => {
                    let got = result
                        .first()
                        .and_then(|r| r["value"][1].as_str()?.parse::<f64>().ok());
                    let got = got.unwrap_or_else(|| panic!("{context}: no data, want {want}"));
                    assert!(exact(title, got, want), "{context}: {got}, want {want}");
                }
                Want::By(labels, want) => {
                    let got = by_labels(&result, &labels);
                    let same = got.len() == want.len()
                        && got
                            .iter()
                            .all(|(k, g)| want.get(k).is_some_and(|w| exact(title, *g, *w)));
                    assert!(same, "{context}: {got:?}, want {want:?}");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 30, "{}: every amount panel was checked", backend.name);
}

/// The daily table over `range`: one row per local day, each the day's growth, the rows adding
/// up to the growth from the first row's midnight on.
fn check_daily_table(backend: &Backend, timeline: &Timeline, range: TimeRange, midnight: i64) {
    let dash = dashboard();
    let panel = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "table" && p["title"].as_str().unwrap().starts_with("Daily totals"))
        .unwrap();
    let columns = [
        ("Tokens", "total"),
        ("Prompt", "prompt"),
        ("Completion", "completion"),
        ("Reasoning", "reasoning"),
        ("Cache hit", "cache_hit"),
        ("Cache miss", "cache_miss"),
        ("Requests", "requests"),
        ("Turns", "turns"),
    ];
    let day = 86_400_000;
    let rows = [midnight - day, midnight];
    for target in panel["targets"].as_array().unwrap() {
        let column = target["legendFormat"].as_str().unwrap();
        let (_, q) = columns.iter().find(|(c, _)| *c == column).unwrap();
        let request = grafana::request(panel, target, &range, &Datasource::default(), &ALL_VALUES);
        let Request::Range { start, step_s, .. } = &request else {
            panic!("the daily table is a range query")
        };
        assert_eq!(
            (*step_s, (*start * 1000.0) as i64),
            (86400.0, midnight - day),
            "{request:?}"
        );
        let data = backend
            .api(&request.path())
            .unwrap_or_else(|| panic!("{}: refused {request:?}", backend.name));
        let values = data["result"][0]["values"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let got: Vec<(i64, f64)> = values
            .iter()
            .map(|v| {
                (
                    (v[0].as_f64().unwrap() * 1000.0) as i64,
                    v[1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        let want: Vec<(i64, f64)> = rows
            .iter()
            .map(|row| (*row, timeline.window(*row, row + day).1.quantity(q)))
            .collect();
        assert_eq!(got, want, "{}: daily {column}: {request:?}", backend.name);
        let total: f64 = got.iter().map(|(_, v)| v).sum();
        assert_eq!(
            total,
            timeline.window(rows[0], range.to_ms).1.quantity(q),
            "{}: the rows add up",
            backend.name
        );
    }
}

#[test]
fn grafana_requests_follow_grafanas_rules() {
    // Last hour, a 1000-point panel, a 15 s scrape interval: step 15 s, rate interval 1m0s.
    let panel = serde_json::json!({});
    let target = serde_json::json!({"expr": "rate(x[$__rate_interval]) / $__interval", "instant": false});
    let range = TimeRange {
        from_ms: 1_700_000_000_000,
        to_ms: 1_700_003_600_000,
        utc_offset_s: 0,
    };
    let Request::Range { query, step_s, .. } =
        grafana::request(&panel, &target, &range, &Datasource::default(), &[])
    else {
        panic!("a range query")
    };
    assert_eq!((query.as_str(), step_s), ("rate(x[1m0s]) / 15s", 15.0));
    // A daily table in UTC+08:00: rows at local midnights.
    let panel = serde_json::json!({"interval": "1d", "maxDataPoints": 10000});
    let target = serde_json::json!({"expr": "x[$__interval]"});
    let range = TimeRange {
        from_ms: 1_700_000_000_000,
        to_ms: 1_700_600_000_000,
        utc_offset_s: 8 * 3600,
    };
    let Request::Range {
        start, step_s, query, ..
    } = grafana::request(&panel, &target, &range, &Datasource::default(), &[])
    else {
        panic!("a range query")
    };
    assert_eq!((query.as_str(), step_s), ("x[1d]", 86400.0));
    assert_eq!((start as i64 + 8 * 3600) % 86400, 0, "a local midnight");
    assert!(start * 1000.0 <= range.from_ms as f64 && start * 1000.0 > (range.from_ms - 86_400_000) as f64);
    // An instant query: $__range in whole seconds (rounded), at `to`.
    let target = serde_json::json!({"expr": "increase(x[$__range]) / $__range_s", "instant": true});
    let range = TimeRange {
        from_ms: 1_000,
        to_ms: 3_601_600,
        utc_offset_s: 0,
    };
    let req = grafana::request(&panel, &target, &range, &Datasource::default(), &[]);
    assert_eq!(
        req,
        Request::Instant {
            query: "increase(x[3601s]) / 3601".into(),
            time: 3601.6
        }
    );
}

const MACHINE_OVERRIDES: &str = "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{grpc}\n      http:\n        endpoint: 127.0.0.1:{http}\nprocessors:\n  batch:\n    timeout: 1s\n";

/// Machines → collector (`single-machine.yaml`) → remote write, to Prometheus 3, Prometheus 2.42
/// and VictoriaMetrics at once.
#[test]
#[ignore = "needs the collector, Prometheus 3, VictoriaMetrics, Prometheus 2 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_through_the_collectors_remote_write() {
    let test = "every_window_is_exact_through_the_collectors_remote_write";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let Some(victoria) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let Some(prometheus2) = common::tools::installed(test, "prometheus", "prometheus") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let config = "global:\n  scrape_interval: 15s\n";
    let p3 = Prometheus::start_binary(
        &prometheus3,
        &root.path().join("p3"),
        config,
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let p2 = Prometheus::start_binary(
        &prometheus2,
        &root.path().join("p2"),
        config,
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    // One collector writing to all three: the shipped exporter and two more like it.
    let url = |port: u16| format!("http://127.0.0.1:{port}/api/v1/write");
    let overrides = format!(
        "{MACHINE_OVERRIDES}exporters:\n  prometheusremotewrite/p2:\n    endpoint: {}\n    resource_to_telemetry_conversion:\n      enabled: true\n  prometheusremotewrite/vm:\n    endpoint: {}\n    resource_to_telemetry_conversion:\n      enabled: true\npipelines:\n  metrics:\n    exporters: [prometheusremotewrite, prometheusremotewrite/p2, prometheusremotewrite/vm]\n",
        url(p2.port),
        vm.remote_write_url()
    );
    let mut collector = Collector::start(
        &otelcol,
        &root.path().join("collector"),
        "single-machine.yaml",
        &overrides,
        &[("PROMETHEUS_REMOTE_WRITE_URL", &url(p3.port))],
    );
    let endpoint = format!("http://127.0.0.1:{}/v1/metrics", collector.http);
    let backends = [
        Backend {
            name: "collector → remote write → Prometheus 3".into(),
            port: p3.port,
            victoria: false,
        },
        Backend {
            name: "collector → remote write → Prometheus 2.42".into(),
            port: p2.port,
            victoria: false,
        },
        Backend {
            name: "collector → remote write → VictoriaMetrics".into(),
            port: vm.port,
            victoria: true,
        },
    ];
    scenario(Sink::Otlp(endpoint), &backends, || collector.restart());
    assert_eq!(collector.failed_points(), 0.0, "{}", collector.log_text());
}

/// Prometheus 3 taking OTLP, its data under `dir`; and the endpoint to send to.
fn prometheus3_otlp(binary: &Path, dir: &Path) -> (Prometheus, String) {
    let p3 = Prometheus::start_binary(
        binary,
        dir,
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-otlp-receiver"],
        None,
    );
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", p3.port);
    (p3, endpoint)
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_prometheus_3s_otlp_endpoint() {
    let test = "every_window_is_exact_on_prometheus_3s_otlp_endpoint";
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (p3, endpoint) = prometheus3_otlp(&prometheus3, &root.path().join("p3"));
    let backends = [Backend {
        name: "exporter → Prometheus 3 OTLP".into(),
        port: p3.port,
        victoria: false,
    }];
    scenario(Sink::Otlp(endpoint), &backends, || {});
}

#[test]
#[ignore = "needs VictoriaMetrics (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_victoria_metrics_otlp() {
    let test = "every_window_is_exact_on_victoria_metrics_otlp";
    let Some(victoria) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    let backends = [Backend {
        name: "exporter → VictoriaMetrics OTLP".into(),
        port: vm.port,
        victoria: true,
    }];
    scenario(Sink::Otlp(vm.otlp_endpoint()), &backends, || {});
}

/// Prometheus 3 scraping each machine's `/metrics` (`deploy/prometheus/scrape-exporter.yml`)
/// with `created-timestamp-zero-ingestion`: a series born after a store's first publication
/// carries its birth as `_created`, which Prometheus makes a zero.
#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn every_window_is_exact_on_prometheus_3_scraping_metrics() {
    let test = "every_window_is_exact_on_prometheus_3_scraping_metrics";
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    // Two exporters' ports, known before they start (the second joins half-way): as a user's
    // scrape configuration names them.
    let ports = [common::free_port(), common::free_port()];
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-exporter.yml"),
    )
    .unwrap();
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 2s")
        .replace(
            "['127.0.0.1:9464']",
            &format!("['127.0.0.1:{}', '127.0.0.1:{}']", ports[0], ports[1]),
        );
    let p3 = Prometheus::start_binary(
        &prometheus3,
        &root.path().join("p3"),
        &config,
        &["--enable-feature=created-timestamp-zero-ingestion"],
        None,
    );
    let backends = [Backend {
        name: "Prometheus 3 ← /metrics".into(),
        port: p3.port,
        victoria: false,
    }];
    scenario(Sink::Scraped(ports), &backends, || {});
}

/// Contract §4, "Never down", for a store put back from a backup: the backend holds values of a
/// series the restored stream record does not know of. Its zero goes a millisecond after the
/// last export the record knows, before all of them: Prometheus refuses it as out of order (and
/// the values follow, not held up by it), VictoriaMetrics files it before them.
#[test]
#[ignore = "needs Prometheus 3, VictoriaMetrics (.ci/run); run with --include-ignored"]
fn a_store_restored_from_a_backup_never_goes_down_on_prometheus_3_and_victoria_metrics() {
    let test = "a_store_restored_from_a_backup_never_goes_down_on_prometheus_3_and_victoria_metrics";
    let (Some(prometheus3), Some(victoria)) = (
        common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3"),
        common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics"),
    ) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (p3, p3_endpoint) = prometheus3_otlp(&prometheus3, &root.path().join("p3"));
    let vm = VictoriaMetrics::start(&victoria, &root.path().join("vm"));
    let paths = [
        (
            Backend {
                name: "Prometheus 3 OTLP".into(),
                port: p3.port,
                victoria: false,
            },
            p3_endpoint,
        ),
        (
            Backend {
                name: "VictoriaMetrics OTLP".into(),
                port: vm.port,
                victoria: true,
            },
            vm.otlp_endpoint(),
        ),
    ];
    for (backend, endpoint) in &paths {
        let mut machine = Machine::new(41, &Sink::Otlp(endpoint.clone()), 0);
        let sink = machine.sink.clone();
        let once = |fx: &Fixture| {
            let mut args = vec!["once"];
            args.extend(sink.iter().map(String::as_str));
            let out = fx.run(&args);
            assert!(
                out.status.success(),
                "{}: {}",
                backend.name,
                String::from_utf8_lossy(&out.stderr)
            );
        };
        machine.lines_land("2026-10-05", 20);
        once(&machine.fx);
        let backup = root.path().join(format!("backup-{}", backend.port));
        common::copy_tree(&machine.fx.state, &backup);
        machine.new_series_land("2026-10-05", "zhipu/glm-5", "remote");
        once(&machine.fx);
        machine.lines_land("2026-10-05", 20);
        once(&machine.fx);
        std::fs::remove_dir_all(&machine.fx.state).unwrap();
        common::copy_tree(&backup, &machine.fx.state);
        machine.new_series_land("2026-10-05", "zhipu/glm-5", "remote");
        once(&machine.fx);
        let total: u64 = machine.model.expected.totals().values().map(|v| v[5]).sum();
        let arrived = wait_until(PATIENCE, || {
            backend.newest_sum("reasonix_tokens_total") == Some(total as f64)
        });
        assert!(
            arrived,
            "{}: {:?} for {total}",
            backend.name,
            backend.newest_sum("reasonix_tokens_total")
        );
        backend.assert_never_reset("1h");
    }
}

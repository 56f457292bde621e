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

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod scenario;

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

//! Contract §4 end to end: what Prometheus shows equals the store, to the token, on every path
//! people deploy, with real servers: an OpenTelemetry Collector built from pinned modules
//! (`.ci/tools`), Debian's Prometheus 2.42, Prometheus 3 and VictoriaMetrics.
//!
//! Each path runs one scenario: a backfill, `once` twice (over each protocol the path takes),
//! `run` with lines landing, SIGTERM, `kill -9`, restarts, the first hop (collector, or
//! Prometheus itself) restarted mid-run and down for a while. After it, every series' value in
//! Prometheus equals `status --json`, no series ever reset, and nothing was refused on the way.

#[path = "../common/mod.rs"]
mod common;

mod collector;
mod direct;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::collector::{Collector, MACHINE_OVERRIDES};
use common::dashboard::{Spend, check_panels, sums_of};
use common::generator::Generator;
use common::model::{Model, Series};
use common::pki::Pki;
use common::prom_server::Prometheus;
use common::victoria::VictoriaMetrics;
use common::{Daemon, Fixture, PROM_NAMES, assert_success, free_port, http_get, wait_until};
use serde_json::Value;

/// How long a value may take to travel exporter → collector → Prometheus.
const PATIENCE: Duration = Duration::from_secs(30);

/// Prometheus 2.42 from Debian (`.ci/run` installs it), accepting remote write.
fn prometheus2(test: &str, dir: &Path, config: &str) -> Option<(Prometheus, Restart)> {
    let binary = common::tools::installed(test, "prometheus", "prometheus")?;
    let restart = Restart {
        binary,
        dir: dir.to_path_buf(),
        config: config.to_string(),
        flags: vec!["--web.enable-remote-write-receiver".into()],
        port: free_port(),
        victoria: false,
    };
    Some((restart.start(), restart))
}

/// What it takes to start a Prometheus again, on the same port and data.
struct Restart {
    binary: PathBuf,
    dir: PathBuf,
    config: String,
    flags: Vec<String>,
    port: u16,
    /// The binary is VictoriaMetrics (`config` unused).
    victoria: bool,
}

impl Restart {
    fn start(&self) -> Prometheus {
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        if self.victoria {
            return VictoriaMetrics::start_on(&self.binary, &self.dir, self.port, &flags).into_api();
        }
        Prometheus::start_binary(&self.binary, &self.dir, &self.config, &flags, Some(self.port))
    }
}

/// The first hop after the exporter, which the scenario restarts and takes down.
enum Hop<'a> {
    Collector(&'a mut Collector),
    /// The backend itself (Prometheus 3's or VictoriaMetrics' OTLP endpoint); restarted on the
    /// same data.
    Prometheus,
    /// Prometheus scrapes the exporter: nothing in between.
    None,
}

/// One path from the exporter to a Prometheus.
struct Route<'a> {
    name: &'static str,
    prometheus: Option<Prometheus>,
    restart: Restart,
    hop: Hop<'a>,
    /// `(protocol, endpoint)` the exporter sends to; empty for the scrape path.
    endpoints: Vec<(&'static str, String)>,
    /// Variables the exporter needs for this path (a CA, a token).
    env: Vec<(String, String)>,
    /// The handler Prometheus receives on, whose refusals are counted (none when it scrapes).
    handler: Option<&'static str>,
    /// The scrape path: the exporter serves `/metrics` here.
    scrape_port: Option<u16>,
}

impl Route<'_> {
    fn prometheus(&self) -> &Prometheus {
        self.prometheus.as_ref().expect("Prometheus is up")
    }

    /// Every ledger series of `instance` as Prometheus has it last (staleness ignored).
    fn values(&self, instance: &str) -> BTreeMap<Series, [u64; 8]> {
        let mut out: BTreeMap<Series, [u64; 8]> = BTreeMap::new();
        for (q, name) in PROM_NAMES.iter().enumerate() {
            let expr = format!("last_over_time({name}{{instance=\"{instance}\"}}[1h])");
            for sample in self.prometheus().query(&expr, None).unwrap_or_default() {
                let label = |key: &str| sample["metric"][key].as_str().unwrap_or("").to_string();
                let value: f64 = sample["value"][1].as_str().unwrap().parse().unwrap();
                let series = (label("model_ref"), label("provider"), label("source"));
                out.entry(series).or_insert([0; 8])[q] = value as u64;
            }
        }
        out.retain(|_, v| v.iter().any(|x| *x > 0));
        out
    }

    /// When the newest sample of `instance`'s tokens was taken (Unix seconds).
    fn newest_sample(&self, instance: &str) -> f64 {
        let expr = format!("max(timestamp(reasonix_tokens_total{{instance=\"{instance}\"}}))");
        let at = self.prometheus().scalar(&expr);
        at.unwrap_or_else(|| panic!("{}: no sample time", self.name))
    }

    /// The instances that have ledger series.
    fn instances(&self) -> BTreeSet<String> {
        let data = self
            .prometheus()
            .api(&format!(
                "label/instance/values?match[]={}",
                common::prom_server::encode("{__name__=~\"reasonix_.*_total\"}")
            ))
            .unwrap_or(Value::Null);
        data.as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
    }

    /// Waits until Prometheus has `truth` for `instance`.
    fn wait_for(&self, instance: &str, truth: &BTreeMap<Series, [u64; 8]>, step: &str) {
        eprintln!("{}: {step}", self.name);
        let exact = wait_until(PATIENCE, || &self.values(instance) == truth);
        assert!(
            exact,
            "{}, {step}: Prometheus has {:?}, the store {truth:?}",
            self.name,
            self.values(instance)
        );
    }

    /// Requests Prometheus (or VictoriaMetrics) refused on the path's handler.
    fn refused(&self) -> f64 {
        let body = http_get(self.prometheus().port, "/metrics", None).unwrap_or_default();
        body.lines()
            .filter(|l| {
                l.starts_with("prometheus_http_requests_total{") && !l.contains("code=\"2")
                    || l.starts_with("vm_http_request_errors_total{")
            })
            .filter(|l| {
                self.handler.is_some_and(|h| {
                    l.contains(&format!("handler=\"{h}\"")) || l.contains(&format!("path=\"{h}\""))
                })
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }

    fn assert_nothing_refused(&mut self, step: &str) {
        assert_eq!(
            self.refused(),
            0.0,
            "{}, {step}: Prometheus refused requests",
            self.name
        );
        if let Hop::Collector(collector) = &self.hop {
            assert_eq!(
                collector.failed_points(),
                0.0,
                "{}, {step}: the collector failed to send: {}",
                self.name,
                collector.log_text()
            );
        }
    }

    fn hop_down(&mut self) {
        self.assert_nothing_refused("before the first hop went down");
        match &mut self.hop {
            Hop::Collector(collector) => collector.stop(),
            Hop::Prometheus => self.prometheus.take().expect("up").stop(),
            Hop::None => {}
        }
    }

    fn hop_up(&mut self) {
        match &mut self.hop {
            Hop::Collector(collector) => collector.restart(),
            Hop::Prometheus => self.prometheus = Some(self.restart.start()),
            Hop::None => {}
        }
    }
}

/// The exporter of one machine, on a ledger that grows as the scenario goes.
struct Machine {
    fx: Fixture,
    model: Model,
    generator: Generator,
    day: usize,
}

impl Machine {
    fn new(seed: u64) -> Machine {
        Machine {
            fx: Fixture::new(),
            model: Model::default(),
            generator: Generator::new(seed),
            day: 0,
        }
    }

    /// A day's worth of new lines.
    fn lines_land(&mut self, lines: usize) {
        self.day += 1;
        let day = format!("2026-10-{:02}", self.day);
        let text = self.generator.day_file(&day, lines);
        self.fx.append(&format!("{day}.jsonl"), text.as_bytes());
        self.model.feed(text.as_bytes());
    }

    /// `status --json`'s series: the truth every backend must show. Waits until the store has
    /// every line that landed (a running exporter, `daemon`, commits them within moments).
    fn truth(&self, daemon: Option<&Daemon>) -> BTreeMap<Series, [u64; 8]> {
        let mut truth = BTreeMap::new();
        let expected = self.model.expected.totals();
        let caught_up = wait_until(PATIENCE, || {
            let out = self.fx.run(&["status", "--json"]);
            let Ok(status) = serde_json::from_slice::<Value>(&out.stdout) else {
                return false;
            };
            truth = common::model::token_totals_of_status(&status);
            truth == expected
        });
        if !caught_up {
            let differ: Vec<String> = expected
                .keys()
                .chain(truth.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|series| truth.get(*series) != expected.get(*series))
                .map(|series| {
                    format!(
                        "{series:?}: store {:?}, ledger {:?}",
                        truth.get(series),
                        expected.get(series)
                    )
                })
                .collect();
            panic!(
                "the store never had every line: {differ:#?}\nstatus: {}\nexporter: {}",
                String::from_utf8_lossy(&self.fx.run(&["status", "--json"]).stderr),
                daemon.map(Daemon::log_text).unwrap_or_default()
            );
        }
        truth
    }

    /// The spend side of `status --json` (what the store has: call after [`Machine::truth`]).
    fn spend(&self) -> Spend {
        let out = self.fx.run(&["status", "--json"]);
        Spend::of_status(&serde_json::from_slice(&out.stdout).unwrap())
    }

    fn once(&self, path: &Route<'_>, protocol: &str, endpoint: &str) {
        let mut cmd = self
            .fx
            .command(&["once", "--otlp-protocol", protocol, "--otlp-endpoint", endpoint]);
        cmd.envs(path.env.iter().map(|(k, v)| (k, v)));
        assert_success(&cmd.output().unwrap());
    }

    fn run(&self, path: &Route<'_>) -> Daemon {
        let mut args = vec!["--export-interval", "1s", "--poll-interval", "200ms"];
        let listen;
        match (path.scrape_port, path.endpoints.last()) {
            (Some(port), _) => {
                listen = format!("127.0.0.1:{port}");
                args.extend(["--otlp", "off", "--prometheus", &listen]);
            }
            (None, Some((protocol, endpoint))) => {
                args.extend(["--prometheus", "off", "--otlp-protocol", protocol]);
                args.extend(["--otlp-endpoint", endpoint]);
            }
            (None, None) => unreachable!("a path without endpoints scrapes"),
        }
        let env: Vec<(&str, &str)> = path.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.fx.spawn_with(&args, &env)
    }
}

/// Two moments of a scenario at which Prometheus had the store's values exactly: Unix seconds
/// of a sample, and the values then.
struct Window {
    instance: String,
    start: (f64, BTreeMap<Series, [u64; 8]>, Spend),
    end: (f64, BTreeMap<Series, [u64; 8]>, Spend),
}

/// The scenario of the module's header, for `machine` on `path`. Returns the window from the
/// restart after `kill -9` to the end.
fn scenario(path: &mut Route<'_>, machine: &mut Machine) -> Window {
    let before = path.instances();
    // A backfill (long enough that every series, cost ones included, is there before the
    // window the dashboard is checked over), then `once` over each protocol the path takes.
    machine.lines_land(2000);
    let instance = if path.endpoints.is_empty() {
        let daemon = machine.run(path);
        let instance = learn_instance(path, &before);
        path.wait_for(&instance, &machine.truth(Some(&daemon)), "backfill by run");
        let (status, _, log) = daemon.terminate();
        assert!(status.success(), "{log}");
        instance
    } else {
        for _ in 0..2 {
            for (protocol, endpoint) in path.endpoints.clone() {
                machine.once(path, protocol, &endpoint);
                machine.lines_land(20);
            }
        }
        let (protocol, endpoint) = path.endpoints[0].clone();
        machine.once(path, protocol, &endpoint);
        let instance = learn_instance(path, &before);
        path.wait_for(&instance, &machine.truth(None), "backfill and once");
        instance
    };

    // `run` with lines landing; SIGTERM; lines while it is stopped.
    let daemon = machine.run(path);
    machine.lines_land(40);
    path.wait_for(&instance, &machine.truth(Some(&daemon)), "run");
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    machine.lines_land(30);

    // Restart, then `kill -9` and restart again.
    let daemon = machine.run(path);
    path.wait_for(&instance, &machine.truth(Some(&daemon)), "restart after SIGTERM");
    machine.lines_land(25);
    path.wait_for(
        &instance,
        &machine.truth(Some(&daemon)),
        "lines after the restart",
    );
    daemon.kill9();
    machine.lines_land(25);
    let daemon = machine.run(path);
    let truth = machine.truth(Some(&daemon));
    path.wait_for(&instance, &truth, "restart after kill -9");
    let start = (path.newest_sample(&instance), truth, machine.spend());

    // The first hop restarted mid-run, then down for a while.
    path.hop_down();
    path.hop_up();
    machine.lines_land(20);
    path.wait_for(&instance, &machine.truth(Some(&daemon)), "first hop restarted");
    path.hop_down();
    machine.lines_land(20);
    if path.scrape_port.is_none() {
        // The exporter notices, and goes on ingesting.
        assert!(
            wait_until(PATIENCE, || daemon.log_text().contains("retrying with backoff")),
            "{}",
            daemon.log_text()
        );
    }
    path.hop_up();
    path.wait_for(&instance, &machine.truth(Some(&daemon)), "first hop back");
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");

    // Every series exact, none ever reset, nothing refused.
    let truth = machine.truth(None);
    path.wait_for(&instance, &truth, "the end");
    let end = (path.newest_sample(&instance), truth, machine.spend());
    let counters: Vec<String> = path
        .prometheus()
        .api("label/__name__/values")
        .and_then(|names| names.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.starts_with("reasonix") && n.ends_with("_total"))
        .map(String::from)
        .collect();
    assert!(counters.len() >= 10, "{}: counters {counters:?}", path.name);
    let resets: f64 = counters
        .iter()
        .map(|name| {
            path.prometheus()
                .scalar(&format!(
                    "sum(resets({name}{{instance=\"{instance}\"}}[1h])) or vector(0)"
                ))
                .unwrap_or_else(|| panic!("resets() of {name} answers"))
        })
        .sum();
    assert_eq!(resets, 0.0, "{}: counter resets", path.name);
    path.assert_nothing_refused("the end");
    Window { instance, start, end }
}

/// The one instance that appeared since `before`: the store's `service.instance.id` (or, when
/// Prometheus scrapes, the exporter's address).
fn learn_instance(path: &Route<'_>, before: &BTreeSet<String>) -> String {
    let mut new = BTreeSet::new();
    assert!(
        wait_until(PATIENCE, || {
            new = path.instances().difference(before).cloned().collect();
            !new.is_empty()
        }),
        "{}: no series arrived",
        path.name
    );
    assert_eq!(new.len(), 1, "{}: one store, one instance: {new:?}", path.name);
    new.pop_first().unwrap()
}

/// Every panel of the shipped dashboard, evaluated by the Prometheus the remote-write path
/// filled, over the scenario's window: the Lifetime panels equal the store's lifetime sums, the
/// range panels what the store committed within the window (tests/deploy/grafana_dashboard.rs
/// has the rules every panel follows, and the same check on the scrape path).
fn dashboard_panels_are_exact(path: &Route<'_>, window: &Window) {
    let (start, before, spend_before) = &window.start;
    let (end, after, spend) = &window.end;
    assert!(
        after.keys().all(|series| before.contains_key(series)),
        "the scenario's window has no new series (tests/windows/ has them)"
    );
    let lifetime = sums_of(after.values());
    let earlier = sums_of(before.values());
    let grown: Vec<u64> = lifetime.iter().zip(earlier).map(|(a, b)| a - b).collect();
    assert!(grown.iter().all(|g| *g > 0), "every quantity grew: {grown:?}");
    assert_eq!(path.instances().len(), 1, "{}", window.instance);
    check_panels(
        path.prometheus(),
        (*start, *end),
        lifetime,
        grown.try_into().unwrap(),
        (spend, &spend.since(spend_before)),
    );
}

//! Issue "The past at its own time", end to end: a ledger of many days, written in two time
//! zones, counted by an exporter whose live stream goes to a real backend; its history written
//! by `history` and loaded the way deploy/README.md says ("Bring your history"), twice; the
//! live stream running on. Every row of the shipped dashboard's daily table, asked as Grafana
//! asks it in two dashboard zones, equals an oracle of the ledger's lines at their own times
//! (and of the live lines at the time they were counted); no series resets over the whole span;
//! the lifetime is the store's.

mod common;

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

struct Prometheus3 {
    binary: std::path::PathBuf,
    promtool: std::path::PathBuf,
    dir: std::path::PathBuf,
    server: Option<Prometheus>,
    port: u16,
}

impl Prometheus3 {
    fn start(&mut self) {
        self.server = Some(Prometheus::start_binary(
            &self.binary,
            &self.dir,
            "global:\n  scrape_interval: 15s\n",
            // Its retention covers the history (15 days by default: older blocks are deleted).
            &["--web.enable-otlp-receiver", "--storage.tsdb.retention.time=1y"],
            Some(self.port),
        ));
    }
}

impl Backend for Prometheus3 {
    fn name(&self) -> &str {
        "Prometheus 3 (OTLP, history by promtool)"
    }

    fn api(&self) -> &Prometheus {
        self.server.as_ref().expect("running")
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(self.api());
        let file = fx.root.path().join("history.om");
        let check = format!("http://127.0.0.1:{}", self.port);
        std::fs::write(&file, history(fx, "openmetrics", &labels, &check)).unwrap();
        let out = Command::new(&self.promtool)
            .args([
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "--max-block-duration=486h",
            ])
            .arg(&file)
            .arg(self.dir.join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The recipe: blocks in the data dir, then a restart (or wait for the next compaction).
        self.server.take().unwrap().stop();
        self.start();
    }
}

/// A Prometheus 3 with a 30-day out-of-order window (the history's twenty days fit) and a year's
/// retention, taking what `receiver` (its flag) says.
fn prometheus3_with_window(binary: &std::path::Path, dir: &std::path::Path, receiver: &str) -> Prometheus {
    Prometheus::start_binary(
        binary,
        dir,
        "global:\n  scrape_interval: 15s\nstorage:\n  tsdb:\n    out_of_order_time_window: 30d\n",
        &[receiver, "--storage.tsdb.retention.time=1y"],
        None,
    )
}

/// Prometheus 3 taking the history over OTLP, within an out-of-order window longer than it.
struct Prometheus3Ooo {
    server: Prometheus,
    endpoint: String,
}

impl Backend for Prometheus3Ooo {
    fn name(&self) -> &str {
        "Prometheus 3 (OTLP, history by OTLP in its out-of-order window)"
    }

    fn api(&self) -> &Prometheus {
        &self.server
    }

    fn load(&mut self, fx: &Fixture) {
        // The recipe: the same endpoint and settings as the live stream, no labels to give.
        let args = [
            "--format",
            "otlp",
            "--otlp-protocol",
            "http/protobuf",
            "--otlp-endpoint",
            &self.endpoint,
        ];
        let out = history_in(fx, &args.map(String::from), &[]);
        assert!(out.is_empty(), "nothing on standard output");
    }
}

/// Prometheus 3 behind the shipped team gateway (TLS, a bearer token, `team` and `user`
/// promoted from the resource, remote write), with an out-of-order window: the history sent
/// over OTLP the way the live stream goes.
struct BehindGateway {
    server: Prometheus,
    endpoint: String,
    env: Vec<(String, String)>,
    gateway: common::collector::Collector,
}

impl Backend for BehindGateway {
    fn name(&self) -> &str {
        "Prometheus 3 behind the team gateway (remote write; history by OTLP through the gateway)"
    }

    fn api(&self) -> &Prometheus {
        &self.server
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(&self.server);
        assert!(
            labels.contains(&("team".into(), "platform".into()))
                && labels.contains(&("user".into(), "alice".into())),
            "the gateway promotes team and user: {labels:?}"
        );
        let args = [
            "--format",
            "otlp",
            "--otlp-protocol",
            "http/protobuf",
            "--otlp-endpoint",
            &self.endpoint,
        ];
        history_in(fx, &args.map(String::from), &self.env);
        assert_eq!(self.gateway.failed_points(), 0.0, "{}", self.gateway.log_text());
    }

    fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }
}

struct Victoria {
    api: Prometheus,
}

impl Backend for Victoria {
    fn name(&self) -> &str {
        "VictoriaMetrics (OTLP, history by /api/v1/import)"
    }

    fn api(&self) -> &Prometheus {
        &self.api
    }

    fn load(&mut self, fx: &Fixture) {
        let labels = live_labels(&self.api);
        let check = format!("http://127.0.0.1:{}", self.api.port);
        // A label missed is said before anything is written, with the one to give.
        let missed = fx.run(&["history", "--format", "victoriametrics", "--check", &check]);
        let said = String::from_utf8_lossy(&missed.stderr);
        assert!(!missed.status.success() && missed.stdout.is_empty(), "{said}");
        let (name, value) = &labels[0];
        assert!(said.contains(&format!("--label {name}={value}")), "{said}");
        let body = history(fx, "victoriametrics", &labels, &check);
        post(self.api.port, "/api/v1/import", &body);
        post(self.api.port, "/internal/resetRollupResultCache", b"");
    }
}

/// `POST path` with `body` over HTTP/1.0; asserts a 2xx answer.
fn post(port: u16, path: &str, body: &[u8]) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(
        response.starts_with("HTTP/1.1 2") || response.starts_with("HTTP/1.0 2"),
        "{path}: {response}"
    );
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
    let panel = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "table" && p["title"].as_str().unwrap().starts_with("Daily totals"))
        .unwrap();
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

#[test]
#[ignore = "needs Prometheus 3 and promtool 3 (.ci/run); run with --include-ignored"]
fn the_history_is_every_day_exactly_on_prometheus_3_with_the_live_stream_on() {
    let test = "the_history_is_every_day_exactly_on_prometheus_3_with_the_live_stream_on";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let Some(promtool) = common::tools::built(test, "REASONIX_PROMTOOL3", "promtool3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut p3 = Prometheus3 {
        binary,
        promtool,
        dir: root.path().join("p3"),
        server: None,
        port: common::free_port(),
    };
    p3.start();
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", p3.port);
    scenario(&mut p3, &endpoint);
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn the_history_over_otlp_is_every_day_exactly_on_prometheus_3_with_an_out_of_order_window() {
    let test = "the_history_over_otlp_is_every_day_exactly_on_prometheus_3_with_an_out_of_order_window";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = prometheus3_with_window(&binary, &root.path().join("p3"), "--web.enable-otlp-receiver");
    let endpoint = format!("http://127.0.0.1:{}/api/v1/otlp/v1/metrics", server.port);
    let mut p3 = Prometheus3Ooo {
        server,
        endpoint: endpoint.clone(),
    };
    scenario(&mut p3, &endpoint);
}

#[test]
#[ignore = "needs the collector and Prometheus 3 (.ci/run); run with --include-ignored"]
fn the_history_through_the_team_gateway_is_every_day_exactly_with_its_promoted_labels() {
    let test = "the_history_through_the_team_gateway_is_every_day_exactly_with_its_promoted_labels";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let server = prometheus3_with_window(
        &binary,
        &root.path().join("p3"),
        "--web.enable-remote-write-receiver",
    );
    let pki_dir = root.path().join("pki");
    std::fs::create_dir_all(&pki_dir).unwrap();
    let pki = common::pki::Pki::new(&pki_dir);
    let (cert, key) = pki.write_server(&pki_dir);
    let token = "team-token-9b2e";
    let url = format!("http://127.0.0.1:{}/api/v1/write", server.port);
    let overrides = common::collector::MACHINE_OVERRIDES.to_string()
        + "pipelines:\n  metrics:\n    exporters: [prometheusremotewrite/mimir]\n";
    let gateway = common::collector::Collector::start(
        &otelcol,
        &root.path().join("gateway"),
        "team-gateway.yaml",
        &overrides,
        &[
            ("REASONIX_GATEWAY_TOKEN", token),
            ("GATEWAY_TLS_CERT", cert.to_str().unwrap()),
            ("GATEWAY_TLS_KEY", key.to_str().unwrap()),
            ("PROMETHEUS_REMOTE_WRITE_URL", &url),
            ("OTLP_BACKEND_TOKEN", "unused"),
        ],
    );
    let endpoint = format!("https://localhost:{}/v1/metrics", gateway.http);
    let env = [
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", pki.ca.display().to_string()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{token}"),
        ),
        ("OTEL_RESOURCE_ATTRIBUTES", "team=platform,user=alice".to_string()),
    ];
    let mut behind = BehindGateway {
        server,
        endpoint: endpoint.clone(),
        env: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        gateway,
    };
    scenario(&mut behind, &endpoint);
}

#[test]
#[ignore = "needs VictoriaMetrics (.ci/run); run with --include-ignored"]
fn the_history_is_every_day_exactly_on_victoria_metrics_with_the_live_stream_on() {
    let test = "the_history_is_every_day_exactly_on_victoria_metrics_with_the_live_stream_on";
    let Some(binary) = common::tools::built(test, "REASONIX_VICTORIA", "victoria-metrics") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let vm = VictoriaMetrics::start(&binary, &root.path().join("vm"));
    let endpoint = vm.otlp_endpoint();
    let mut victoria = Victoria { api: vm.into_api() };
    scenario(&mut victoria, &endpoint);
}

#[test]
#[ignore = "needs Prometheus 3 (.ci/run); run with --include-ignored"]
fn history_over_otlp_to_a_prometheus_without_an_out_of_order_window_is_one_line_that_says_so() {
    let test = "history_over_otlp_to_a_prometheus_without_an_out_of_order_window_is_one_line_that_says_so";
    let Some(binary) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let server = Prometheus::start_binary(
        &binary,
        &root.path().join("p3"),
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-otlp-receiver"],
        Some(port),
    );
    let fx = Fixture::new();
    let line = Lines(5).at(now_ms() - 3 * DAY_MS);
    fx.append(
        &format!("{}.jsonl", &line.text[7..17]),
        format!("{}\n", line.text).as_bytes(),
    );
    let endpoint = format!("http://user:secret@127.0.0.1:{port}/api/v1/otlp/v1/metrics");
    let otlp = [
        "--otlp-protocol",
        "http/protobuf",
        "--otlp-endpoint",
        endpoint.as_str(),
    ];
    let once = fx.run(&[&otlp[..], &["once"]].concat());
    assert!(once.status.success(), "{}", String::from_utf8_lossy(&once.stderr));
    let out = fx.run(&[&["history", "--format", "otlp"], &otlp[..]].concat());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{log}");
    let error = log.lines().last().unwrap_or_default();
    assert!(
        error.contains("HTTP 400") && error.contains("out_of_order_time_window"),
        "the backend's refusal, and the window to set: {log}"
    );
    assert!(error.contains("127.0.0.1"), "the endpoint is named: {log}");
    assert!(!log.contains("secret"), "no credentials: {log}");
    server.stop();
}

#[test]
fn the_frontier_is_noted_once_at_the_first_send_and_kept_by_reset_state() {
    let fx = Fixture::new();
    let day = DAY_MS * (now_ms() / DAY_MS - 3);
    let mut lines = Lines(11);
    let (a, b) = (lines.at(day + 3_600_000), lines.at(day + 7_200_000));
    let name = format!("{}.jsonl", &a.text[7..17]);
    fx.append(&name, format!("{}\n{}\n", a.text, b.text).as_bytes());
    let frontier = fx.state.join("history");
    // Counted, never sent: no frontier, and `history` says why.
    let counted = fx.run(&["--otlp", "off", "once"]);
    assert!(
        counted.status.success(),
        "{}",
        String::from_utf8_lossy(&counted.stderr)
    );
    assert!(!frontier.exists());
    let refused = fx.run(&["history"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("has not exported or served anything yet"));
    // The first send notes it; later sends, a line counted after it, and --reset-state keep it.
    let receiver = common::receiver::Receiver::http();
    let otlp = [
        "--otlp-protocol",
        receiver.protocol,
        "--otlp-endpoint",
        receiver.endpoint.as_str(),
    ];
    let once = |more: &[&str]| {
        let out = fx.run(&[&otlp[..], more, &["once"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    once(&[]);
    let noted = std::fs::read(&frontier).expect("the frontier, at the first send");
    fx.append(&name, format!("{}\n", lines.at(day + 10_800_000).text).as_bytes());
    once(&[]);
    once(&["--reset-state"]);
    assert_eq!(
        std::fs::read(&frontier).unwrap(),
        noted,
        "noted once, kept by --reset-state"
    );
    // Its history is the two lines counted before the first send, not the one after.
    let out = fx.run(&["history"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && log.contains("history: 2 lines as"),
        "{log}"
    );
    // Each series' last point, added up.
    let mut last = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut fields = line.split(' ');
        if let (Some(series), Some(value)) = (fields.next(), fields.next())
            && series.starts_with("reasonix_prompt_tokens_total{")
        {
            last.insert(series.to_owned(), value.parse::<u64>().unwrap());
        }
    }
    assert_eq!(last.values().sum::<u64>(), a.counts[0] + b.counts[0]);
}

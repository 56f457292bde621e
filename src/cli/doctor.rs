//! `doctor`: every resolved path and where it came from, the ledger, the store, the collector and
//! the Prometheus port; each problem with its fix. Exits non-zero when something is wrong.
//! Header values are never shown, only how many headers are set.

use std::path::Path;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use prost::Message;
use serde::Deserialize;

use crate::delivery::Delivery;
use crate::export::health::ExportHealth;
use crate::export::transport::{OtlpProtocol, SendError, Transport};
use crate::inert_text::ShowPath;
use crate::ledger::decode::{Decoded, decode};
use crate::ledger::discover::ledger_files;
use crate::settings::Settings;
use crate::status_file::StatusJson;
use crate::store::{Store, StoreError};

/// The lines of a report: what was checked, and the fix for what is wrong.
#[derive(Default)]
struct Report {
    lines: Vec<String>,
    problems: usize,
}

impl Report {
    fn ok(&mut self, topic: &str, text: String) {
        self.lines.push(format!("  ok       {topic:<12} {text}"));
    }
    fn info(&mut self, topic: &str, text: String) {
        self.lines.push(format!("  -        {topic:<12} {text}"));
    }
    fn problem(&mut self, topic: &str, text: String, fix: &str) {
        self.problems += 1;
        self.lines.push(format!("  PROBLEM  {topic:<12} {text}"));
        self.lines.push(format!("           {:<12} fix: {fix}", ""));
    }
}

/// The top-level entry point for `reasonix-exporter doctor`.
pub async fn doctor(settings: &Settings) -> anyhow::Result<()> {
    let mut report = Report::default();
    check_config(settings, &mut report);
    check_ledger(settings, &mut report);
    check_store(settings, &mut report);
    check_collector(settings, &mut report).await;
    check_prometheus(settings, &mut report).await;
    check_sandbox(settings, &mut report);
    let mut text = format!("reasonix-exporter {} doctor\n", env!("CARGO_PKG_VERSION"));
    for line in &report.lines {
        text.push_str(line);
        text.push('\n');
    }
    if report.problems == 0 {
        text.push_str("no problems found\n");
    }
    super::print(text.as_bytes())?;
    if report.problems > 0 {
        anyhow::bail!("{} problem(s) found; see the fixes above", report.problems);
    }
    Ok(())
}

fn check_sandbox(settings: &Settings, report: &mut Report) {
    let origin = &settings.sandbox.origin;
    let text = match (settings.sandbox.value, crate::sandbox::kernel_abi()) {
        (false, _) => format!("off (from {origin})"),
        (true, Some(abi)) => format!(
            "on (from {origin}): run and once read only below the stats dir and write only below the state dir (landlock ABI {abi})"
        ),
        (true, None) => format!(
            "on (from {origin}), but {}: the exporter runs without it",
            crate::sandbox::UNAVAILABLE
        ),
    };
    report.info("sandbox", text);
}

fn check_config(settings: &Settings, report: &mut Report) {
    match &settings.config_file {
        Some(path) => report.ok("config", format!("{} (read, no unknown keys)", path.shown())),
        None => report.info(
            "config",
            "no config file; flags, variables and defaults only".into(),
        ),
    }
    // Every setting not at its default, in the catalog's order, with where it came from; never
    // a value (header values are secrets).
    let set: Vec<String> = crate::settings::catalog::SETTINGS
        .iter()
        .filter_map(|def| Some(format!("{} (from {})", def.key, settings.set_from(def.key)?)))
        .collect();
    let text = if set.is_empty() {
        "every setting at its default".to_string()
    } else {
        set.join(", ")
    };
    report.info("settings", text);
}

fn check_ledger(settings: &Settings, report: &mut Report) {
    let dir = &settings.stats_dir.value;
    let origin = &settings.stats_dir.origin;
    let files = match ledger_files(dir) {
        Ok(files) => files,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return report.problem(
                "stats dir",
                format!("{} (from {origin}) does not exist", dir.shown()),
                "install Reasonix and use it once (it creates the folder), or point --stats-dir or REASONIX_HOME at the folder that holds its stats",
            );
        }
        Err(e) => {
            return report.problem(
                "stats dir",
                format!("{} (from {origin}) cannot be read: {e}", dir.shown()),
                "give the user running the exporter read access to the folder and its *.jsonl files",
            );
        }
    };
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f.path(dir)).ok())
        .map(|m| m.len())
        .sum();
    let newest = files
        .iter()
        .filter_map(|f| Some((std::fs::metadata(f.path(dir)).ok()?.modified().ok()?, f)))
        .max_by_key(|(mtime, _)| *mtime)
        .and_then(|(_, f)| last_line_time(&f.path(dir)));
    report.ok(
        "stats dir",
        format!(
            "{} (from {origin}): {} ledger files, {}{}",
            dir.shown(),
            files.len(),
            human_bytes(bytes),
            newest
                .map(|ts| format!(", newest line at {ts}"))
                .unwrap_or_default()
        ),
    );
    if files.is_empty() {
        report.info(
            "stats dir",
            "no *.jsonl files yet: Reasonix writes the first when it makes a request".into(),
        );
    }
}

/// The `ts` of the last complete line of `path` (read-only; only `ts` is looked at).
fn last_line_time(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Ts {
        ts: Option<String>,
    }
    let file = crate::ledger::tail::open_read_only(path).ok()?;
    let len = file.metadata().ok()?.len();
    let window = len.min(64 * 1024);
    let mut buf = vec![0; window as usize];
    let read = crate::ledger::checkpoint::read_at(&file, &mut buf, len - window).ok()?;
    let buf = &buf[..read];
    let end = memchr::memrchr(b'\n', buf)?;
    let start = memchr::memrchr(b'\n', &buf[..end]).map_or(0, |i| i + 1);
    let line = &buf[start..end];
    if !matches!(decode(line), Decoded::Row(_)) {
        return None;
    }
    serde_json::from_slice::<Ts>(line).ok()?.ts
}

fn check_store(settings: &Settings, report: &mut Report) {
    let dir = &settings.state_dir.value;
    let origin = &settings.state_dir.origin;
    if !dir.join("store").exists() {
        return report.info(
            "store",
            format!(
                "none yet under {} (from {origin}); the first run creates it",
                dir.shown()
            ),
        );
    }
    match Store::open_briefly(dir) {
        Ok(mut store) => {
            let delivery = match Delivery::open(&mut store, false) {
                Ok(delivery) => delivery,
                Err(e) => return report_unusable(report, e),
            };
            let counts = store.counts();
            report.ok(
                "store",
                format!(
                    "{} (from {origin}): format {}, {}, {} lines counted, {} series{}",
                    store.path().shown(),
                    crate::store::FORMAT_VERSION,
                    human_bytes(store.disk_size()),
                    counts.counted,
                    store.series_count(),
                    if delivery.pending_export().is_some() {
                        ", one export awaiting confirmation"
                    } else {
                        ""
                    }
                ),
            );
            report_pricing(&store, report);
            report_clock(&delivery, report);
        }
        Err(StoreError::Locked { owner, .. }) => {
            report.ok(
                "store",
                format!(
                    "{} is in use by a running reasonix-exporter{}",
                    dir.shown(),
                    owner.map(|p| format!(" (pid {p})")).unwrap_or_default()
                ),
            );
            report_pricing_of_snapshot(dir, report);
            if let Some(problem) = ExportHealth::load(dir).and_then(|h| h.problem()) {
                report.problem(
                    "exports",
                    problem,
                    "check the collector's logs and limits (a request size limit, a rate limit, a refused token); the exporter retries on its own",
                );
            }
        }
        Err(e) => report_unusable(report, e),
    }
}

/// A store that cannot be opened, and the fix.
fn report_unusable(report: &mut Report, e: StoreError) {
    match e {
        StoreError::Corrupt { .. } | StoreError::NewerFormat { .. } => report.problem(
            "store",
            e.to_string(),
            "run `reasonix-exporter once --reset-state` to rebuild it from the ledger",
        ),
        _ => report.problem(
            "store",
            e.to_string(),
            "make the state dir writable, or choose another with --state-dir",
        ),
    }
}

/// A stream dated ahead of the clock: written while the clock ran fast.
fn report_clock(delivery: &Delivery, report: &mut Report) {
    let now = crate::export::otlp::now_ns();
    let stream = delivery.stream();
    if stream.ahead_of(now) {
        let ahead = std::time::Duration::from_secs((stream.newest_ns() - now) / 1_000_000_000);
        report.problem(
            "clock",
            format!(
                "the store's stream is dated {} ahead of the clock: the clock ran fast when it was written",
                humantime::format_duration(ahead)
            ),
            "make sure the clock is right now (`timedatectl`); the next `run` or `once` dates the stream by it again",
        );
    }
}

/// How many requests carry Reasonix's price quote, and why the others do not.
fn report_pricing(store: &Store, report: &mut Report) {
    let doc = StatusJson::of(store.lifetime(), store.counts());
    let mut text = pricing_text(&doc);
    if !store.cost_pass().is_empty() {
        let left = super::status::cost_pass_left(store.cost_pass().len());
        text.push_str(&format!("; {left}"));
    }
    report.ok("cost", text);
}

/// The same from the snapshot a running daemon keeps, when the store is in its hands.
fn report_pricing_of_snapshot(state_dir: &Path, report: &mut Report) {
    let doc = crate::own_files::read_own(
        &crate::status_file::path_in(state_dir),
        crate::own_files::MAX_OWN_BYTES,
    )
    .ok()
    .and_then(|bytes| serde_json::from_slice::<StatusJson>(&bytes).ok());
    if let Some(doc) = doc {
        report.ok("cost", pricing_text(&doc));
    }
}

fn pricing_text(doc: &StatusJson) -> String {
    let (priced, unpriced) = doc.requests_by_pricing();
    let reasons: Vec<String> = unpriced
        .iter()
        .map(|(reason, n)| format!("{reason} {n}"))
        .collect();
    let unpriced = if reasons.is_empty() {
        "none".to_string()
    } else {
        reasons.join(", ")
    };
    format!("{priced} requests priced by Reasonix; unpriced: {unpriced}")
}

async fn check_collector(settings: &Settings, report: &mut Report) {
    let Some(otlp) = &settings.otlp else {
        return report.info(
            "OTLP",
            "export is off (--otlp off or OTEL_SDK_DISABLED=true)".into(),
        );
    };
    let target = &otlp.target;
    let headers = if target.headers.0.is_empty() {
        String::new()
    } else {
        format!(", {} header(s) set (values hidden)", target.headers.0.len())
    };
    let mut tls = String::new();
    if let Some(ca) = &target.tls.ca {
        tls.push_str(&format!(", CA {}", ca.path.shown()));
    }
    if let Some((cert, _)) = &target.tls.client {
        tls.push_str(&format!(", client certificate {}", cert.path.shown()));
    }
    let what = format!(
        "{} {}{}{}",
        target.protocol.as_str(),
        target.shown_endpoint(),
        headers,
        tls
    );
    let transport = match Transport::new(target) {
        Ok(t) => t,
        Err(e) => {
            return report.problem(
                "OTLP",
                format!("{what}: {e}"),
                "fix the OTLP setting it names (the endpoint, a header, a TLS file)",
            );
        }
    };
    // An empty export request: valid OTLP that carries no data.
    let empty = ExportMetricsServiceRequest::default().encode_to_vec();
    match transport.send(&empty).await {
        Ok(_) => report.ok(
            "OTLP",
            format!(
                "{what}: reachable, accepts exports; this store's stream is service.instance.id {}",
                crate::export::resource::instance_of(&crate::export::resource::resource(
                    &settings
                        .naming
                        .beside()
                        .unwrap_or_else(|e| format!("unknown ({e})")),
                    &otlp.resource
                ))
            ),
        ),
        Err(e) => report.problem("OTLP", format!("{what}: {e}"), fix_for(&e, target.protocol)),
    }
}

/// What to do about a failed empty export, by what failed.
fn fix_for(error: &SendError, protocol: OtlpProtocol) -> &'static str {
    let said = error.to_string();
    match error {
        _ if said.contains("certificate") || said.contains("TLS") => {
            "check TLS: the CA that signed the collector's certificate (--otlp-certificate), or the client identity it asks for (--otlp-client-certificate, --otlp-client-key)"
        }
        SendError::NotSent(_) if said.contains("does not speak HTTP/1.1") => {
            "that is a gRPC port: use --otlp-protocol grpc, or the collector's HTTP port (4318) with /v1/metrics"
        }
        SendError::Refused { .. } if said.contains("404") && protocol == OtlpProtocol::HttpProtobuf => {
            "something answers there, with no OTLP receiver at that path: an HTTP endpoint ends in /v1/metrics (port 4318 by default); check --otlp-endpoint"
        }
        SendError::Refused { .. } => "the collector refused an empty export: its log says why",
        SendError::Unknown(_) if said.contains("timed out") || said.contains("DeadlineExceeded") => {
            "the collector did not answer in time: check that it is up and not overloaded, or raise OTEL_EXPORTER_OTLP_TIMEOUT"
        }
        SendError::Unknown(_) => {
            "something answers there, not in this protocol: OTLP over HTTP (port 4318) and gRPC (port 4317) are not interchangeable; check --otlp-protocol and the port"
        }
        SendError::NotSent(_) => {
            "start an OpenTelemetry Collector there (deploy/README.md has one), or point --otlp-endpoint at yours, or use --otlp off to only count"
        }
    }
}

async fn check_prometheus(settings: &Settings, report: &mut Report) {
    let Some(addr) = settings.prometheus.value else {
        return report.info("Prometheus", "endpoint is off".into());
    };
    if let Some(path) = &settings.web_config {
        match crate::export::web::Web::load(path) {
            Ok(web) => {
                let tls = web.current().is_ok_and(|active| active.tls.is_some());
                let scheme = if tls { "TLS" } else { "plain HTTP" };
                report.ok("web config", format!("{} reads ({scheme})", path.shown()));
            }
            Err(e) => report.problem(
                "web config",
                e.to_string(),
                "fix the field it names, or leave --web-config out",
            ),
        }
    }
    match tokio::net::TcpListener::bind(addr).await {
        Ok(_) => report.ok("Prometheus", format!("{addr} is free for /metrics")),
        // Behind TLS or a password, a running exporter cannot be asked without its credentials.
        Err(_) if settings.web_config.is_some() => report.info(
            "Prometheus",
            format!("{addr} is in use: a running reasonix-exporter, or another program"),
        ),
        Err(e) => {
            if serves_our_metrics(addr).await {
                report.ok(
                    "Prometheus",
                    format!("{addr} is served by a running reasonix-exporter"),
                );
            } else {
                report.problem(
                    "Prometheus",
                    format!("cannot listen on {addr}: {e}"),
                    "stop what uses the port, or choose another with --prometheus ADDR (or --prometheus off)",
                );
            }
        }
    }
}

/// Whether `addr` answers `/metrics` with our metrics (a running daemon holds the port).
async fn serves_our_metrics(addr: std::net::SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await
            .ok()?;
        let mut body = Vec::new();
        stream.read_to_end(&mut body).await.ok()?;
        Some(String::from_utf8_lossy(&body).contains("reasonix_exporter_lines_read"))
    };
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(2), attempt).await,
        Ok(Some(true))
    )
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

//! `history`: the store's history at its own time, on standard output; progress on standard
//! error. Reads the state dir's history frontier and the ledger, and nothing else: it runs
//! beside a running exporter.

use std::io::Write;
use std::time::Instant;

use super::args::HistoryFormat;
use crate::events::history as events;
use crate::export::payload::Temporality;
use crate::export::transport::redacted;
use crate::history::check::{self, Labels, Verdict};
use crate::history::{self, Grid, OtlpSink, Progress, Text, TextSink};
use crate::series::Quantity;
use crate::settings::Settings;
use crate::store::history::HistoryFrontier;
use opentelemetry_proto::tonic::common::v1::any_value;

/// Labels a history series has already, or that name the metric: `--label` cannot set them.
const OWN_LABELS: [&str; 7] = [
    "__name__",
    "model_ref",
    "provider",
    "source",
    "currency",
    "billing_mode",
    "reason",
];

/// Progress is said at most this often.
const PROGRESS_EVERY_S: u64 = 5;

/// The top-level entry point for `reasonix-exporter history`.
pub fn history(
    settings: &Settings,
    format: HistoryFormat,
    labels: &[String],
    check: Option<&str>,
) -> anyhow::Result<()> {
    let labels = labels_of(labels)?;
    let frontier = history::frontier_of(&settings.state_dir.value)?;
    if let Some(url) = check {
        if format == HistoryFormat::Otlp {
            anyhow::bail!(
                "--check is for the text formats: over OTLP the history carries the live stream's own resource, so its series are the live ones; leave --check out"
            );
        }
        check_labels(url, &frontier, &labels, &settings.naming.beside()?)?;
    }
    let interval_ms = settings.export_interval.value.as_millis() as u64;
    // A first send dated ahead of the clock (one that ran fast) ends the history now: the stream
    // has come back to the clock's time since.
    let now_ns = crate::export::otlp::now_ns();
    let grid = Grid::new(interval_ms, frontier.first_sent_ns.min(now_ns));
    let started = Instant::now();
    let mut said = Instant::now();
    let progress = |p: &Progress| {
        if said.elapsed().as_secs() >= PROGRESS_EVERY_S {
            said = Instant::now();
            events::progress(p);
        }
    };
    let stats_dir = &settings.stats_dir.value;
    let text = match format {
        HistoryFormat::Openmetrics => Text::OpenMetrics,
        HistoryFormat::Victoriametrics => Text::VictoriaMetrics,
        HistoryFormat::Otlp => {
            if !labels.is_empty() {
                anyhow::bail!(
                    "--label is for the text formats: over OTLP the history carries the live stream's own resource (service.name, service.instance.id, OTEL_RESOURCE_ATTRIBUTES), as its series do; leave --label out"
                );
            }
            let mut sink = otlp_sink(settings)?;
            let summary = history::write(stats_dir, &frontier, &grid, &[], &mut sink, progress)?;
            let to = format!("{} requests to {}", sink.requests, sink.endpoint);
            say_written(&summary, &grid, started, &to);
            return Ok(());
        }
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut sink = TextSink::new(text, &mut out);
    let summary = match history::write(stats_dir, &frontier, &grid, &labels, &mut sink, progress) {
        // A reader that went away (`| head`) ends the output quietly.
        Err(history::HistoryError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        other => other?,
    };
    say_written(&summary, &grid, started, "standard output");
    Ok(())
}

/// Whether every series of the history is a live series at `url`, labels and all.
fn check_labels(
    url: &str,
    frontier: &HistoryFrontier,
    given: &[(String, String)],
    instance: &str,
) -> anyhow::Result<()> {
    let metric = Quantity::Total.names().prom_name;
    let own: Vec<Labels> = (frontier.first_values.tokens.iter())
        .filter(|(_, totals)| totals.get(Quantity::Total) > 0)
        .map(|(key, _)| {
            key.pairs()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .collect();
    // From the stream's first point on (the series API's start is inclusive): no point of a
    // history loaded before is that late, so only the live stream's series answer.
    let start_s = frontier.first_sent_ns.div_ceil(1_000_000_000);
    let end_s = crate::export::otlp::now_ns() / 1_000_000_000 + 60;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let live = runtime.block_on(check::live_series(
        url,
        metric,
        (start_s, end_s),
        (&own, given, instance),
    ))?;
    match check::verdict(&own, given, &live, instance) {
        Verdict::Match(series) => {
            events::checked(series, &redacted(url));
            Ok(())
        }
        Verdict::Missing { series, found } => {
            Err(history::HistoryError::Labels(check::mismatch(url, metric, given, &series, &found)).into())
        }
    }
}

/// The sink to the live stream's own OTLP endpoint, under its own resource.
fn otlp_sink(settings: &Settings) -> anyhow::Result<OtlpSink> {
    let Some(otlp) = &settings.otlp else {
        anyhow::bail!(
            "history --format otlp sends to the OTLP endpoint the live stream goes to, and none is set: give the exporter's own --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT, or its config file)"
        );
    };
    if otlp.temporality == Temporality::Delta {
        anyhow::bail!(
            "history --format otlp writes cumulative points, and the stream is delta (its first export carried the whole history as one increment): the history would be counted twice; load it with --format openmetrics or victoriametrics into the backend that keeps the converted series"
        );
    }
    let resource = crate::export::resource::resource(&settings.naming.beside()?, &otlp.resource);
    // The resource comes from this run's settings and environment: said, so that a run without
    // the service's environment (its team and user) is seen before it makes second series.
    let attributes: Vec<String> = (resource.attributes.iter())
        .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(v) => {
                Some(format!("{}={}", kv.key, crate::inert_text::one_line(v, 200)))
            }
            _ => None,
        })
        .collect();
    events::resource(&attributes.join(","));
    Ok(OtlpSink::new(&otlp.target, resource)?)
}

/// The closing lines: files left out, and what was written where.
fn say_written(summary: &history::Summary, grid: &Grid, started: Instant, to: &str) {
    for file in &summary.files_missing {
        events::file_changed(file);
    }
    let step_s = (grid.step_ms() / 1000) as u64;
    let seconds = started.elapsed().as_secs_f64();
    let written = events::Written {
        lines: summary.lines,
        points: summary.points,
        series: summary.series,
        seconds,
        step_s,
    };
    events::written(written, to);
    let _ = std::io::stderr().flush();
}

/// The `--label` values, checked.
fn labels_of(labels: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let labels = labels
        .iter()
        .map(|l| label(l))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some((name, _)) = labels
        .iter()
        .find(|(n, _)| labels.iter().filter(|(m, _)| m == n).count() > 1)
    {
        anyhow::bail!("--label '{name}' is given twice: give each label once");
    }
    Ok(labels)
}

/// `NAME=VALUE` as a label, or why it is not one.
fn label(text: &str) -> anyhow::Result<(String, String)> {
    let Some((name, value)) = text.split_once('=') else {
        anyhow::bail!("--label '{text}' is not NAME=VALUE (e.g. --label job=reasonix)");
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid || name.starts_with("__") || OWN_LABELS.contains(&name) {
        anyhow::bail!(
            "--label '{name}' cannot be given: a label name is letters, digits and '_', not beginning with '__' nor one of the series' own ({})",
            OWN_LABELS.join(", ")
        );
    }
    Ok((name.to_owned(), value.to_owned()))
}

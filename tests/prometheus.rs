//! A real Prometheus server (Debian's `prometheus`, installed by .ci/run) scrapes `run`'s
//! `/metrics`: PromQL sums equal the model's totals, and across an exporter restart no series
//! goes down (`resets()` is 0).

mod common;

use std::time::Duration;

use common::generator::{Generator, days};
use common::model::{Model, QUANTITIES};
use common::prom_server::Prometheus;
use common::{Fixture, PROM_NAMES, scrape_totals, wait_until};

fn sums(model: &Model) -> [u64; 8] {
    let mut sum = [0u64; 8];
    for v in model.expected.totals().values() {
        for (a, b) in sum.iter_mut().zip(v) {
            *a += b;
        }
    }
    sum
}

#[test]
#[ignore = "needs Prometheus 2 (.ci/run); run with --include-ignored"]
fn promql_sums_equal_the_totals_and_nothing_resets_across_a_restart() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(41);
    let all_days = days(3);
    for day in &all_days[..2] {
        let text = generator.day_file(day, 300);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let args = ["--otlp", "off", "--prometheus", "127.0.0.1:0"];
    let daemon = fx.spawn(&args);
    let port = daemon.metrics_port();
    assert!(wait_until(Duration::from_secs(20), || scrape_totals(port)
        == Some(model.expected.totals())));

    let Some(prometheus) = Prometheus::scraping(&fx.root.path().join("prometheus"), port) else {
        common::tools::skip("prometheus is not installed (.ci/run installs it)");
        return;
    };
    let want = sums(&model);
    let all_equal = |want: &[u64; 8]| {
        PROM_NAMES
            .iter()
            .zip(want)
            .all(|(name, want)| prometheus.scalar(&format!("sum({name})")) == Some(*want as f64))
    };
    assert!(
        wait_until(Duration::from_secs(30), || all_equal(&want)),
        "PromQL sums never matched {want:?}"
    );
    // Per series too, for the total tokens.
    for ((model_ref, provider, source), totals) in model.expected.totals() {
        let expr = format!(
            r#"sum(reasonix_tokens_total{{model_ref="{model_ref}",provider="{provider}",source="{source}"}})"#
        );
        let got = prometheus.scalar(&expr).unwrap_or(0.0);
        assert_eq!(
            got,
            totals[QUANTITIES.iter().position(|q| *q == "total").unwrap()] as f64,
            "{expr}"
        );
    }

    // Restart the exporter, then add a day: values carry on from the store, never going down.
    // On the same port: Prometheus scrapes the address it was given.
    let (status, _, _) = daemon.terminate();
    assert!(status.success());
    let listen = format!("127.0.0.1:{port}");
    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", &listen]);
    let text = generator.day_file(&all_days[2], 200);
    fx.append(&format!("{}.jsonl", all_days[2]), text.as_bytes());
    model.feed(text.as_bytes());
    let want = sums(&model);
    assert!(
        wait_until(Duration::from_secs(30), || all_equal(&want)),
        "after the restart, sums never matched"
    );
    for name in PROM_NAMES {
        let resets = prometheus.scalar(&format!("sum(resets({name}[10m]))"));
        assert_eq!(resets, Some(0.0), "a {name} series went down across the restart");
    }
    // Prometheus asks for OpenMetrics first: a scrape it could not parse would show as up == 0.
    assert!(wait_until(Duration::from_secs(10), || prometheus
        .scalar(r#"up{job="reasonix"}"#)
        == Some(1.0)));
    drop(daemon);
}

/// The first scrape of a restarted `run` already has the store's totals, self-metrics included,
/// even while its first poll still reads a large backlog: `/metrics` is served only once they are
/// published. (Served before, a scrape in that moment showed every lifetime counter at zero,
/// which Prometheus takes for a reset.)
#[test]
fn the_first_scrape_after_a_start_has_the_stores_totals() {
    let fx = Fixture::new();
    let mut before = Model::default();
    let mut generator = Generator::new(43);
    let all_days = days(2);
    let text = generator.day_file(&all_days[0], 2000);
    fx.append(&format!("{}.jsonl", all_days[0]), text.as_bytes());
    before.feed(text.as_bytes());
    fx.append(&format!("{}.jsonl", all_days[0]), b"not json\n");
    common::assert_success(&fx.run(&["once", "--otlp", "off"]));
    // A backlog for the first poll of `run` to read while the scrape comes.
    let mut after = Model::default();
    after.feed(text.as_bytes());
    let backlog = generator.day_file(&all_days[1], 100_000);
    fx.append(&format!("{}.jsonl", all_days[1]), backlog.as_bytes());
    after.feed(backlog.as_bytes());

    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", "127.0.0.1:0"]);
    // As soon as the address is known, with no waiting for anything to appear.
    let port = daemon.metrics_port();
    let page = common::http_get(port, "/metrics", None).unwrap();
    let totals = scrape_totals(port).unwrap();
    assert!(
        totals == before.expected.totals() || totals == after.expected.totals(),
        "{totals:?}"
    );
    assert!(
        page.contains("reasonix_exporter_lines_rejected_total{reason=\"invalid_json\"} 1"),
        "{page}"
    );
}

/// A scraper that takes gzip (Prometheus does by default) gets the same exposition gzipped;
/// one that does not, or refuses it with `q=0`, gets it plain.
#[test]
fn metrics_are_gzipped_for_a_scraper_that_takes_gzip() {
    use std::io::{Read, Write};
    let fx = Fixture::new();
    let text = Generator::new(44).day_file(&days(1)[0], 200);
    fx.append(&format!("{}.jsonl", days(1)[0]), text.as_bytes());
    common::assert_success(&fx.run(&["once", "--otlp", "off"]));
    let daemon = fx.spawn(&[
        "--otlp",
        "off",
        "--prometheus",
        "127.0.0.1:0",
        "--poll-interval",
        "1h",
        "--watch",
        "off",
    ]);
    let port = daemon.metrics_port();
    assert!(wait_until(Duration::from_secs(20), || {
        common::http_get(port, "/-/ready", None).is_some_and(|r| r.contains("Ready"))
    }));
    let get = |encoding: &str| -> (String, Vec<u8>) {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.0\r\nHost: localhost\r\nAccept-Encoding: {encoding}\r\n\r\n"
        )
        .unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let at = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        (
            String::from_utf8_lossy(&response[..at]).to_ascii_lowercase(),
            response[at + 4..].to_vec(),
        )
    };
    let (head, plain) = get("identity");
    assert!(!head.contains("content-encoding"), "{head}");
    let (head, _) = get("gzip;q=0, identity");
    assert!(!head.contains("content-encoding"), "{head}");
    let (head, gzipped) = get("gzip");
    assert!(
        head.contains("content-encoding: gzip") && head.contains("vary: accept-encoding"),
        "{head}"
    );
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(gzipped.as_slice())
        .read_to_end(&mut unzipped)
        .unwrap();
    // The ledger's counters (the process's own gauges move between two scrapes).
    let counters = |body: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(body)
            .lines()
            .filter(|l| l.starts_with("reasonix_") && !l.starts_with("reasonix_exporter_"))
            .map(str::to_string)
            .collect()
    };
    let (plain, unzipped) = (counters(&plain), counters(&unzipped));
    assert!(plain.len() > 100, "{} counter lines", plain.len());
    assert!(
        plain == unzipped,
        "the gzipped exposition differs from the plain one"
    );
    drop(daemon);
}

/// The `_created` (Unix ms) `/metrics` serves for the series of `model`'s tokens, once it serves
/// them at all.
fn created_of(port: u16, model: &str) -> Option<u64> {
    let text = common::http_get(
        port,
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    )?;
    let line = text.lines().find(|l| {
        l.starts_with("reasonix_tokens_created{") && l.contains(&format!("model_ref=\"{model}\""))
    })?;
    let (secs, ms) = line.rsplit_once(' ')?.1.split_once('.')?;
    Some(secs.parse::<u64>().ok()? * 1000 + ms.parse::<u64>().ok()?)
}

/// A usage line of `model` at minute `minute` of a morning.
fn line(model: &str, minute: u32) -> String {
    format!(
        r#"{{"ts":"2026-11-30T10:{minute:02}:00+08:00","model":"{model}","source":"code","prompt":900,"completion":40,"reasoning":0,"cache_hit":600,"cache_miss":300,"total":940,"requests":1}}"#
    )
}

/// [`created_of`], waited for until `/metrics` serves the series.
fn first_created_of(port: u16, model: &str) -> u64 {
    let mut created = None;
    let served = wait_until(Duration::from_secs(20), || {
        created = created_of(port, model);
        created.is_some()
    });
    assert!(served, "/metrics never served {model}");
    created.unwrap()
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Contract §4, "/metrics is a view of the same stream", for a store put back from a backup:
/// a series the lost runs served gets a `_created` no later than its first scrape then, so no
/// Prometheus that ingests start times inserts a zero after the values it scraped.
#[test]
fn a_store_restored_from_a_backup_serves_no_birth_after_what_was_scraped() {
    let fx = Fixture::new();
    fx.append_lines("2026-11-30.jsonl", &[&line("deepseek-chat", 0)]);
    let (daemon, _) = fx.spawn_serving(&[]);
    daemon.terminate();
    let backup = fx.root.path().join("backup");
    common::files::copy_tree(&fx.state, &backup);

    let (daemon, port) = fx.spawn_serving(&["--poll-interval", "100ms"]);
    fx.append_lines("2026-11-30.jsonl", &[&line("kimi-k2", 1)]);
    let mut created = None;
    assert!(wait_until(Duration::from_secs(20), || {
        created = created_of(port, "kimi-k2");
        created.is_some()
    }));
    let first_scraped_ms = unix_ms();
    let created = created.unwrap();
    assert!(
        created <= first_scraped_ms,
        "a birth after the scrape that first saw it"
    );
    daemon.terminate();

    std::fs::remove_dir_all(&fx.state).unwrap();
    common::files::copy_tree(&backup, &fx.state);
    let (daemon, port) = fx.spawn_serving(&[]);
    let again = first_created_of(port, "kimi-k2");
    assert!(
        again <= created,
        "born again at {again} ms, after the lost run served it (from {first_scraped_ms} ms, born {created} ms)"
    );
    daemon.terminate();
}

/// A series that lands while `run` (serving `/metrics` alone) is stopped is born just after the
/// last publication of the run before — not at the stream's start, which Prometheus would take
/// for no zero at all — and before the first scrape that can see it.
#[test]
fn a_series_that_lands_while_run_is_stopped_is_born_after_its_last_publication() {
    let fx = Fixture::new();
    fx.append_lines("2026-11-30.jsonl", &[&line("deepseek-chat", 0)]);
    let (daemon, _) = fx.spawn_serving(&[]);
    // Long enough that the stream's start is far behind the stop.
    std::thread::sleep(Duration::from_millis(1500));
    let stopped_ms = unix_ms();
    daemon.terminate();
    fx.append_lines("2026-11-30.jsonl", &[&line("kimi-k2", 1)]);
    let (daemon, port) = fx.spawn_serving(&[]);
    let started_ms = unix_ms();
    let created = first_created_of(port, "kimi-k2");
    assert!(
        created + 1000 >= stopped_ms && created <= started_ms,
        "born at {created} ms; stopped at {stopped_ms} ms, started at {started_ms} ms"
    );
    daemon.terminate();
}

/// The value of an unlabelled metric in a text exposition.
fn value_of(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// A store rebuilt from the ledger (`--reset-state`, or its folder deleted) serves, from its
/// first scrape on, no value below what the run before served: Prometheus reads a drop as a
/// reset, and `increase()` would count the whole history again.
#[test]
fn a_store_rebuilt_from_the_ledger_serves_nothing_below_what_was_served() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(44);
    // Enough files that the rebuild lasts many scrapes.
    for day in days(3000) {
        let text = generator.day_file(&day, 8);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let (daemon, port) = fx.spawn_serving(&[]);
    assert!(wait_until(Duration::from_secs(60), || scrape_totals(port)
        == Some(model.expected.totals())));
    let served = scrape_totals(port).unwrap();
    let counted_name = "reasonix_exporter_lines_counted_total";
    let counted = value_of(&common::http_get(port, "/metrics", None).unwrap(), counted_name).unwrap();
    daemon.terminate();

    for rebuild in ["--reset-state", "a deleted store"] {
        let extra: &[&str] = if rebuild == "--reset-state" {
            &["--reset-state"]
        } else {
            std::fs::remove_dir_all(fx.state.join("store")).unwrap();
            &[]
        };
        let mut args = vec!["--otlp", "off", "--prometheus", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let daemon = fx.spawn(&args);
        let port = daemon.metrics_port();
        let during = scrapes_while_rebuilding(port, &served, counted, rebuild, &model, &daemon);
        eprintln!("{during} scrapes during the rebuild after {rebuild}");
        assert!(
            during > 0,
            "no scrape came during the rebuild after {rebuild}: make the ledger longer"
        );
        daemon.terminate();
    }
}

/// The same after a `kill -9`: what `/metrics` served in the minute before it (lines counted
/// since its last durable note) is never served lower by the store rebuilt after it.
#[test]
fn a_store_rebuilt_after_a_kill_serves_nothing_below_what_was_served_before_it() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(45);
    let all_days = days(3000);
    for day in &all_days {
        let text = generator.day_file(day, 8);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let (daemon, port) = fx.spawn_serving(&["--poll-interval", "100ms"]);
    assert!(wait_until(Duration::from_secs(60), || scrape_totals(port)
        == Some(model.expected.totals())));
    // Lines counted after the publication noted at the catch-up: served, then the process killed.
    let last = all_days.last().unwrap();
    let more = generator.day_file(last, 50);
    fx.append(&format!("{last}.jsonl"), more.as_bytes());
    model.feed(more.as_bytes());
    assert!(wait_until(Duration::from_secs(20), || scrape_totals(port)
        == Some(model.expected.totals())));
    let served = scrape_totals(port).unwrap();
    daemon.kill9();

    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", "127.0.0.1:0", "--reset-state"]);
    let port = daemon.metrics_port();
    let during = scrapes_while_rebuilding(port, &served, 0.0, "a kill", &model, &daemon);
    assert!(
        during > 0,
        "no scrape came during the rebuild: make the ledger longer"
    );
    daemon.terminate();
}

/// Scrapes `port` until it serves `model`'s totals after its first poll, each scrape asserting
/// that no series of `served`, nor the lines counted (`counted`), went below what was served
/// before the rebuild (`rebuild` names it); how many scrapes came before that first poll ended.
fn scrapes_while_rebuilding(
    port: u16,
    served: &std::collections::BTreeMap<common::model::Series, [u64; 8]>,
    counted: f64,
    rebuild: &str,
    model: &Model,
    daemon: &common::Daemon,
) -> usize {
    let mut during = 0;
    assert!(
        wait_until(Duration::from_secs(60), || {
            let Some(body) = common::http_get(port, "/metrics", None) else {
                return false;
            };
            let Some(now) = scrape_totals(port) else {
                return false;
            };
            for (series, values) in served {
                let value = now.get(series).copied().unwrap_or_default();
                assert!(
                    value.iter().zip(values).all(|(a, b)| a >= b),
                    "after {rebuild}, {series:?} served {value:?}, below {values:?}"
                );
            }
            let lines = value_of(&body, "reasonix_exporter_lines_counted_total").unwrap_or_default();
            assert!(
                lines >= counted,
                "after {rebuild}, {lines} lines counted served, below {counted}"
            );
            let polled = value_of(&body, "reasonix_exporter_last_poll_end_timestamp_seconds");
            if polled == Some(0.0) {
                during += 1;
            }
            polled > Some(0.0) && now == model.expected.totals()
        }),
        "the rebuild after {rebuild} never served the totals: {}",
        daemon.log_text()
    );
    during
}

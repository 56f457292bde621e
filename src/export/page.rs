//! `/`, a page for a person: the version, links, the store's lifetime totals per series and
//! currency (the numbers of `status`), the lines read, how the last delivery to each sink went
//! and how the ledger is being read. No ledger content beyond the labels `status` shows, no
//! paths; every label escaped.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use tokio::sync::watch;

use super::prometheus::ScrapeView;
use super::self_metrics::{BUILD, Sink, SinkRun};
use crate::series::Quantity;
use crate::status_file::{StatusJson, thousands};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}\
th,td{padding:.25em .75em;border-bottom:1px solid #ddd;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
.note{color:#666}";

/// The page for the view published last.
pub async fn page(State(views): State<watch::Receiver<Arc<ScrapeView>>>) -> impl IntoResponse {
    let view = views.borrow().clone();
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        render(&view),
    )
}

/// The page's HTML.
pub fn render(view: &ScrapeView) -> String {
    let doc = StatusJson::of(&view.lifetime, &view.self_stats.counts);
    let mut out = String::with_capacity(4096 + doc.series.len() * 400);
    let [(_, version), (_, revision), (_, rustc)] = BUILD;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>reasonix-exporter</title>\
         <style>{STYLE}</style></head><body>\n<h1>reasonix-exporter</h1>\n\
         <p id=\"build\">version {} (commit {}, rustc {}) · <a href=\"metrics\">/metrics</a> · \
         <a href=\"-/healthy\">/-/healthy</a> · <a href=\"-/ready\">/-/ready</a></p>\n",
        escaped(version),
        escaped(revision),
        escaped(rustc),
    );
    tokens(&mut out, &doc);
    cost(&mut out, &doc);
    reading(&mut out, view, &doc);
    deliveries(&mut out, view);
    out.push_str("</body></html>\n");
    out
}

/// The token table: a row per series, then the total.
fn tokens(out: &mut String, doc: &StatusJson) {
    out.push_str("<h2>Tokens and requests, the store's lifetime totals</h2>\n<table id=\"series\"><thead><tr><th>model_ref</th><th>provider</th><th>source</th>");
    for q in Quantity::ALL {
        let _ = write!(out, "<th>{}</th>", q.key());
    }
    out.push_str("</tr></thead><tbody>\n");
    let mut sum = crate::series::Totals::default();
    for series in &doc.series {
        sum.add(&series.totals);
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            escaped(&series.model_ref),
            escaped(&series.provider),
            escaped(&series.source)
        );
        for q in Quantity::ALL {
            let _ = write!(out, "<td class=\"n\">{}</td>", thousands(series.totals.get(q)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody><tfoot><tr><th>total</th><th></th><th></th>");
    for q in Quantity::ALL {
        let _ = write!(out, "<td class=\"n\">{}</td>", thousands(sum.get(q)));
    }
    out.push_str("</tr></tfoot></table>\n");
}

/// Spend per series and currency, never added across currencies.
fn cost(out: &mut String, doc: &StatusJson) {
    if doc.cost.is_empty() {
        return;
    }
    out.push_str("<h2>Spend, Reasonix's estimate at list price (not a bill)</h2>\n<table id=\"cost\"><thead><tr><th>model_ref</th><th>provider</th><th>source</th><th>billing_mode</th><th>currency</th><th>amount</th></tr></thead><tbody>\n");
    for c in &doc.cost {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            escaped(&c.model_ref),
            escaped(&c.provider),
            escaped(&c.source),
            escaped(&c.billing_mode),
            escaped(&c.currency),
            escaped(&c.amount)
        );
    }
    out.push_str("</tbody></table>\n");
}

/// The ledger lines and how the ledger is being read.
fn reading(out: &mut String, view: &ScrapeView, doc: &StatusJson) {
    let l = &doc.lines;
    let _ = write!(
        out,
        "<h2>The ledger</h2>\n<table id=\"lines\"><tbody>\
         <tr><th>lines read</th><td class=\"n\">{}</td></tr>\
         <tr><th>counted</th><td class=\"n\">{}</td></tr>\
         <tr><th>duplicate</th><td class=\"n\">{}</td></tr>\
         <tr><th>rejected</th><td class=\"n\">{}</td></tr>\
         <tr><th>files watched</th><td class=\"n\">{}</td></tr>\
         <tr><th>last poll ended</th><td>{}</td></tr></tbody></table>\n",
        thousands(l.read),
        thousands(l.counted),
        thousands(l.duplicate),
        thousands(l.rejected),
        thousands(view.self_stats.files_tracked),
        when(view.self_stats.last_poll_end),
    );
    if !view.ready {
        out.push_str("<p class=\"note\">The first reading of the ledger is still going on: the totals are still growing towards the ledger's.</p>\n");
    }
}

/// How the last delivery to each sink went.
fn deliveries(out: &mut String, view: &ScrapeView) {
    out.push_str("<h2>Deliveries</h2>\n<table id=\"sinks\"><tbody>\n");
    for (sink, run) in Sink::ALL.iter().zip(&view.self_stats.sinks) {
        let what = match sink {
            Sink::Otlp => "last OTLP export",
            Sink::Prometheus => "last hand-off to /metrics",
        };
        let _ = writeln!(
            out,
            "<tr><th>{what}</th><td id=\"{}\">{}</td></tr>",
            sink.label(),
            outcome(run)
        );
    }
    out.push_str("</tbody></table>\n");
}

fn outcome(run: &Option<SinkRun>) -> String {
    match run {
        None => "none yet in this run (or off)".into(),
        Some(run) if run.success => format!("succeeded, in {:.3} s", run.seconds),
        Some(run) => format!("failed, after {:.3} s (see the log and doctor)", run.seconds),
    }
}

/// A Unix time in seconds as UTC, to the second; "not yet" for 0.
fn when(unix_seconds: f64) -> String {
    if unix_seconds <= 0.0 {
        return "not yet".into();
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_seconds as u64);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `text` with HTML's special characters as entities.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::series::{AttrSet, Sums, Totals};

    #[test]
    fn labels_are_escaped_and_the_numbers_are_the_stores() {
        let mut totals = Totals::default();
        totals.set(Quantity::Prompt, 1_234_567);
        let attrs = AttrSet {
            model_ref: "<script>alert('x')</script>".into(),
            provider: "a&b".into(),
            source: "cli".into(),
        };
        let view = ScrapeView {
            lifetime: Sums {
                tokens: BTreeMap::from([(attrs, totals)]),
                ..Sums::default()
            },
            ..ScrapeView::default()
        };
        let html = render(&view);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("<td>a&amp;b</td>"));
        assert!(html.contains("<td class=\"n\">1,234,567</td>"));
        assert!(html.contains("still going on"), "not caught up yet");
    }
}

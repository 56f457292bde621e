//! `/metrics` for Prometheus, from the store's lifetime totals (docs/counting-rules.md): values never go
//! down across restarts, and a scrape sees only what is committed. OpenMetrics (with `_created`)
//! when the scraper asks for it, the classic text format otherwise.
//!
//! Hand-formatted rather than through `prometheus-client`: that crate (0.26) cannot write
//! `_created` for counters, and our values are a snapshot of the store, not live metric objects.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use tokio::sync::watch;

use super::self_metrics::{Kind, SelfStats};
use crate::series::{FamilyKey, Metric, MetricWalk, Number, Quantity, Sums, SumsByKey, walk_sums};
use crate::store::stream::SeriesId;

/// What a scrape shows: published by the daemon after every commit.
#[derive(Debug, Clone, Default)]
pub struct ScrapeView {
    pub lifetime: Sums,
    /// When each series born after the store's first publication was born (Unix ns): its
    /// `_created`, from which a scraper that ingests it counts the series' first value. A series
    /// the store had at its first publication (its history) has none: its first value is not
    /// growth (docs/counting-rules.md, "Births").
    pub births: Arc<BTreeMap<SeriesId, u64>>,
    pub self_stats: SelfStats,
    /// The run's first reading of the ledger has ended, or found no stats folder (`/-/ready`).
    pub ready: bool,
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `/metrics`: the view as OpenMetrics or the classic text format, as the scraper asks.
pub async fn metrics(
    State(scrape_views): State<watch::Receiver<Arc<ScrapeView>>>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let view = scrape_views.borrow().clone();
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let openmetrics = wants_openmetrics(&accept.join(","));
    let body = encode(&view, openmetrics);
    let encodings: Vec<&str> = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let content_type = (header::CONTENT_TYPE, if openmetrics { OPENMETRICS } else { TEXT });
    // Prometheus asks for gzip by default, as client_golang's handler serves it: a fraction
    // of the bytes, for a scrape of every series.
    let vary = (header::VARY, "Accept-Encoding");
    if wants_gzip(&encodings.join(",")) {
        let gzipped = super::gzip(body.as_bytes());
        ([content_type, vary, (header::CONTENT_ENCODING, "gzip")], gzipped).into_response()
    } else {
        ([content_type, vary], body).into_response()
    }
}

/// Whether an `Accept-Encoding` header takes gzip: `gzip` (or `x-gzip`, or `*` when gzip is not
/// named) with a quality above zero.
fn wants_gzip(accept_encoding: &str) -> bool {
    let (mut gzip, mut any) = (None, None);
    for coding in accept_encoding.split(',') {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, q)| q.trim().parse::<f64>().unwrap_or(0.0));
        match name.as_str() {
            "gzip" | "x-gzip" => gzip = Some(q),
            "*" => any = Some(q),
            _ => {}
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// Whether an `Accept` header asks for OpenMetrics: its quality (`q`, 1 when not given) is above
/// zero and no lower than the text format's (`text/plain`, `text/*` or `*/*`), as a scraper that
/// lists both ranks them (Prometheus: OpenMetrics 0.5, text 0.3 or 0.4, unless told otherwise).
fn wants_openmetrics(accept: &str) -> bool {
    let (mut openmetrics, mut text) = (0.0_f64, 0.0_f64);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        // `q` is case-insensitive, between 0 and 1; one that cannot be read leaves the range out.
        let q = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, q)| {
                q.trim().parse::<f64>().ok().filter(|q| (0.0..=1.0).contains(q))
            });
        let Some(q) = q else { continue };
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    openmetrics > 0.0 && openmetrics >= text
}

/// The exposition text for `view`.
pub fn encode(view: &ScrapeView, openmetrics: bool) -> String {
    let mut out = String::with_capacity(4096 + view.lifetime.len() * Quantity::COUNT * 120);
    let births = openmetrics.then_some(&*view.births);
    // Every quantity of a known series, zeros too: a counter Prometheus first sees above zero
    // loses that first increment to `increase()`. The spend as the exact decimal, never a float.
    let Ok(()) = walk_sums(
        &mut Exposition {
            out: &mut out,
            births,
        },
        &view.lifetime,
    );
    for metric in view.self_stats.metrics() {
        let (name, kind) = match metric.kind {
            Kind::Counter | Kind::ProcessCounter => (format!("{}_total", metric.prom_name), "counter"),
            Kind::Gauge => (metric.prom_name.to_string(), "gauge"),
        };
        header_lines(
            &mut out,
            if openmetrics { metric.prom_name } else { &name },
            metric.help,
            kind,
        );
        for (reason, value) in &metric.values {
            let mut pairs = metric.constant.to_vec();
            pairs.extend(reason.map(|r| (metric.label, r)));
            let labels = if pairs.is_empty() {
                String::new()
            } else {
                labels(&pairs)
            };
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// The counted metrics as exposition text (a walk over the metrics): each one's header, then a
/// sample per series (and, in OpenMetrics, its birth as `_created` when it has one: `births` is
/// `None` for the classic format).
struct Exposition<'a> {
    out: &'a mut String,
    births: Option<&'a BTreeMap<SeriesId, u64>>,
}

impl MetricWalk<SumsByKey> for Exposition<'_> {
    type Error = std::convert::Infallible;

    fn metric<K: FamilyKey>(
        &mut self,
        metric: Metric,
        series: &BTreeMap<K, K::Sum>,
    ) -> Result<(), Self::Error> {
        let (out, births) = (&mut *self.out, self.births);
        let names = metric.names();
        let openmetrics = births.is_some();
        let total_name = names.prom_name;
        let name = total_name.trim_end_matches("_total");
        header_lines(
            out,
            if openmetrics { name } else { total_name },
            names.description,
            "counter",
        );
        for (key, sum) in series {
            let labels = labels(&key.pairs());
            let _ = match metric.number(sum) {
                Number::Int(n) => writeln!(out, "{total_name}{labels} {n}"),
                Number::Amount(a) => writeln!(out, "{total_name}{labels} {a}"),
            };
            // Most stores have no born series: then no key is encoded for the look-up.
            let born = births
                .filter(|b| !b.is_empty())
                .and_then(|b| b.get(&(metric.family(), key.encode())));
            if let Some(ns) = born {
                // Seconds to the millisecond, written exactly (a float of nanoseconds would not be).
                let ms = ns / 1_000_000;
                let _ = writeln!(out, "{name}_created{labels} {}.{:03}", ms / 1000, ms % 1000);
            }
        }
        Ok(())
    }
}

fn header_lines(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `{k="v",…}` with the exposition format's escaping.
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(key);
        out.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn gzip_when_the_scraper_takes_it() {
        for taken in [
            "gzip",
            "deflate, gzip;q=1.0, *;q=0.5",
            "x-gzip",
            "*",
            "GZIP;Q=0.3",
        ] {
            assert!(wants_gzip(taken), "{taken}");
        }
        for refused in ["", "identity", "gzip;q=0", "*;q=0", "gzip;q=0, *", "br"] {
            assert!(!wants_gzip(refused), "{refused}");
        }
    }

    use super::*;
    use crate::series::{AttrSet, Family, Totals};

    fn view() -> ScrapeView {
        let mut totals = Totals::default();
        totals.set(Quantity::Prompt, 7517);
        totals.set(Quantity::Requests, 1);
        let attrs = AttrSet {
            model_ref: r#"we"ird\model"#.into(),
            provider: "deepseek".into(),
            source: "cli".into(),
        };
        let born = (Family::Tokens, attrs.encode());
        ScrapeView {
            lifetime: Sums {
                tokens: BTreeMap::from([(attrs, totals)]),
                ..Sums::default()
            },
            births: Arc::new(BTreeMap::from([(born, 1_764_500_000_250_000_000)])),
            self_stats: SelfStats::default(),
            ready: true,
        }
    }

    #[test]
    fn openmetrics_is_served_when_asked_for_above_the_text_format() {
        let prometheus_2 = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert!(wants_openmetrics(prometheus_2));
        assert!(wants_openmetrics("application/openmetrics-text"));
        for text in [
            "",
            "text/plain",
            "application/openmetrics-text;q=0",
            "application/openmetrics-text; version=1.0.0; q=0.0, text/plain",
            "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5",
            "application/openmetrics-text;Q=0",
            "application/openmetrics-text;q=often",
        ] {
            assert!(!wants_openmetrics(text), "{text}");
        }
    }

    #[test]
    fn text_format_has_counters_with_escaped_labels() {
        let text = encode(&view(), false);
        assert!(
            text.contains("# TYPE reasonix_prompt_tokens_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains(r#"reasonix_prompt_tokens_total{model_ref="we\"ird\\model",provider="deepseek",source="cli"} 7517"#),
            "{text}"
        );
        assert!(!text.contains("_created"), "the classic format has no _created");
        assert!(
            text.contains(
                r#"reasonix_tokens_total{model_ref="we\"ird\\model",provider="deepseek",source="cli"} 0"#
            ),
            "a known series' zero quantities are there from the start: {text}"
        );
        assert!(text.contains("reasonix_exporter_lines_rejected_total{reason=\"invalid_json\"} 0"));
    }

    #[test]
    fn spend_is_the_exact_decimal_per_currency() {
        let mut view = view();
        let attrs = AttrSet::folded();
        let cost = crate::series::cost::CostSeries {
            attrs: attrs.clone(),
            currency: "JPY".into(),
            billing_mode: "payg".into(),
        };
        let amount = crate::ledger::quote::Amount::parse("999999999999999999.999999999").unwrap();
        view.lifetime.cost.insert(cost, amount);
        let unpriced = crate::series::cost::UnpricedSeries {
            attrs,
            reason: "no_price".into(),
        };
        view.lifetime.unpriced.insert(unpriced, 3);
        let text = encode(&view, true);
        assert!(
            text.contains(r#"reasonix_cost_total{model_ref="other",provider="other",source="other",currency="JPY",billing_mode="payg"} 999999999999999999.999999999"#),
            "{text}"
        );
        assert!(text.contains("# TYPE reasonix_cost counter\n"), "{text}");
        assert!(
            text.contains(r#"reasonix_requests_unpriced_total{model_ref="other",provider="other",source="other",reason="no_price"} 3"#),
            "{text}"
        );
    }

    #[test]
    fn openmetrics_has_a_born_series_created_and_eof() {
        let text = encode(&view(), true);
        assert!(text.contains("# TYPE reasonix_prompt_tokens counter\n"), "{text}");
        assert!(text.contains("reasonix_prompt_tokens_created{"), "{text}");
        assert!(text.contains("} 1764500000.250\n"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn a_series_of_the_history_has_no_created() {
        let mut view = view();
        view.births = Arc::default();
        let text = encode(&view, true);
        assert!(!text.contains("_created"), "{text}");
    }
}

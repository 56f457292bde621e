//! The shipped Grafana dashboard's queries, run against a real Prometheus as Grafana would send
//! them, and checked against what the store says: the Lifetime panels equal the lifetime sums,
//! the range panels what was committed within the window.

#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

use super::model::{Model, QUANTITIES};
use super::prom_server::{Prometheus, encode};

/// Every `expr` of the dashboard with its panel's title and whether it is an instant query.
pub struct Query {
    pub panel: String,
    pub expr: String,
    pub instant: bool,
}

pub fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/reasonix.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the dashboard is JSON")
}

pub fn queries(dash: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(Query {
                panel: panel["title"].as_str().unwrap().to_string(),
                expr: target["expr"].as_str().unwrap().to_string(),
                instant: target["instant"].as_bool().unwrap_or(false),
            });
        }
    }
    out
}

/// A query as Grafana would send it: variables as "All", ranges as given.
pub fn substitute(expr: &str, range_ms: u64) -> String {
    expr.replace("$instance", ".*")
        .replace("$provider", ".*")
        .replace("$model_ref", ".*")
        .replace("$source", ".*")
        .replace("$__rate_interval", "5s")
        .replace("$__range", &format!("{range_ms}ms"))
        .replace("$__interval", "1h")
}

pub fn first_value(result: &[Value]) -> Option<f64> {
    result.first()?["value"][1].as_str()?.parse().ok()
}

/// The sums over all series of the model's eight quantities.
pub fn sums(model: &Model) -> [u64; 8] {
    sums_of(model.expected.totals().values())
}

pub fn sums_of<'a>(series: impl Iterator<Item = &'a [u64; 8]>) -> [u64; 8] {
    let mut sum = [0; 8];
    for totals in series {
        for (s, t) in sum.iter_mut().zip(totals) {
            *s += t;
        }
    }
    sum
}

fn quantity(name: &str) -> usize {
    QUANTITIES.iter().position(|q| *q == name).unwrap()
}

/// Runs every panel's queries over the window `[start, end]` (Unix seconds, both sample
/// instants, so that `increase()` has nothing to extrapolate) and checks that each returns
/// data, that each Lifetime panel equals `lifetime` and each range totals panel `grown` (the
/// sums of the eight quantities), and that the variables have values.
pub fn check_panels(prometheus: &Prometheus, start: f64, end: f64, lifetime: [u64; 8], grown: [u64; 8]) {
    let range_ms = ((end - start) * 1000.0).round() as u64;
    let dash = dashboard();
    let totals = [
        ("tokens", "total"),
        ("prompt", "prompt"),
        ("completion", "completion"),
        ("reasoning", "reasoning"),
        ("cache hit", "cache_hit"),
        ("cache miss", "cache_miss"),
        ("requests", "requests"),
        ("turns", "turns"),
    ];
    let range_totals = [
        ("Tokens (total)", "total"),
        ("Prompt", "prompt"),
        ("Completion", "completion"),
        ("Reasoning", "reasoning"),
        ("Requests", "requests"),
        ("Turns", "turns"),
    ];
    let mut checked = 0;
    for q in queries(&dash) {
        let expr = substitute(&q.expr, range_ms);
        let result = if q.instant {
            prometheus.query(&expr, Some(end))
        } else {
            prometheus
                .api(&format!(
                    "query_range?query={}&start={start:.3}&end={end:.3}&step=1",
                    encode(&expr)
                ))
                .and_then(|data| data["result"].as_array().cloned())
        };
        let result = result.unwrap_or_else(|| panic!("{}: Prometheus refused {expr}", q.panel));
        assert!(!result.is_empty(), "{}: no data for {expr}", q.panel);
        let want = if let Some(name) = q.panel.strip_prefix("Lifetime ") {
            let (_, key) = totals
                .iter()
                .find(|(title, _)| *title == name)
                .expect("a lifetime panel");
            Some(lifetime[quantity(key)] as f64)
        } else if let Some((_, key)) = range_totals.iter().find(|(title, _)| *title == q.panel) {
            Some(grown[quantity(key)] as f64)
        } else if q.panel == "Cache hit ratio" && q.instant {
            Some(grown[quantity("cache_hit")] as f64 / grown[quantity("prompt")] as f64)
        } else {
            None
        };
        if let Some(want) = want {
            let got = first_value(&result).unwrap();
            assert!(
                (got - want).abs() <= want.abs() * 1e-12,
                "{}: {got} != {want} ({expr})",
                q.panel
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        totals.len() + range_totals.len() + 1,
        "every totals panel was checked"
    );

    for var in dash["templating"]["list"].as_array().unwrap() {
        let Some(definition) = var["definition"].as_str() else {
            continue;
        };
        let inner = definition
            .strip_prefix("label_values(")
            .and_then(|d| d.strip_suffix(')'))
            .unwrap();
        let (selector, label) = inner.rsplit_once(", ").unwrap();
        let selector = substitute(selector, range_ms);
        let values = prometheus
            .api(&format!("label/{label}/values?match[]={}", encode(&selector)))
            .unwrap();
        assert!(
            !values.as_array().unwrap().is_empty(),
            "variable {label}: no values for {selector}"
        );
    }
}

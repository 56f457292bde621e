//! The shipped Grafana dashboard's queries, run against a real Prometheus as Grafana would send
//! them, and checked against what the store says: the Lifetime panels equal the lifetime sums,
//! the range panels what was committed within the window.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::grafana::{self, Datasource, Request, TimeRange};
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

/// The dashboard's "Daily totals" table panel.
pub fn daily_totals_panel(dash: &Value) -> &Value {
    dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "table" && p["title"].as_str().unwrap().starts_with("Daily totals"))
        .expect("the dashboard has its Daily totals table")
}

/// Every panel with each of its targets.
pub fn targets(dash: &Value) -> Vec<(&Value, &Value)> {
    let mut out = Vec::new();
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push((panel, target));
        }
    }
    out
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

pub fn first_value(result: &[Value]) -> Option<f64> {
    result.first()?["value"][1].as_str()?.parse().ok()
}

/// The Lifetime panels, `Lifetime <name>`, and the quantity each shows.
pub const LIFETIME_PANELS: [(&str, &str); 8] = [
    ("tokens", "total"),
    ("prompt", "prompt"),
    ("completion", "completion"),
    ("reasoning", "reasoning"),
    ("cache hit", "cache_hit"),
    ("cache miss", "cache_miss"),
    ("requests", "requests"),
    ("turns", "turns"),
];

/// The panels that read what the shipped rules record (budgets) or evaluate (alerts): empty on a
/// Prometheus without the rules, and checked with them loaded by tests/alerts.rs.
pub const RULE_PANELS: [&str; 2] = ["Budget use", "Firing alerts"];

/// The dashboard's variables with every value chosen, and one currency: [`CURRENCY`].
pub const ALL_VALUES: [(&str, &str); 5] = [
    ("instance", ".*"),
    ("provider", ".*"),
    ("model_ref", ".*"),
    ("source", ".*"),
    ("currency", CURRENCY),
];

/// The currency the spend panels are checked in (the generator's ledgers have two).
pub const CURRENCY: &str = "CNY";

/// The spend side of the truth in [`CURRENCY`]: the amount per billing mode (exact, in 10^-9
/// units) and the unpriced requests per reason, over all series.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spend {
    pub cost: BTreeMap<String, u128>,
    pub unpriced: BTreeMap<String, u64>,
}

impl Spend {
    pub fn of_model(model: &Model) -> Spend {
        let mut spend = Spend::default();
        for ((_, currency, mode), units) in &model.expected.cost {
            if currency == CURRENCY {
                *spend.cost.entry(mode.clone()).or_default() += units;
            }
        }
        for ((_, reason), n) in &model.expected.unpriced {
            *spend.unpriced.entry(reason.clone()).or_default() += n;
        }
        spend
    }

    /// From `status --json`.
    pub fn of_status(status: &Value) -> Spend {
        let mut spend = Spend::default();
        for c in status["cost"].as_array().unwrap() {
            if c["currency"] == CURRENCY {
                let units = units_of(c["amount"].as_str().unwrap());
                *spend
                    .cost
                    .entry(c["billing_mode"].as_str().unwrap().into())
                    .or_default() += units;
            }
        }
        for u in status["unpriced"].as_array().unwrap() {
            *spend
                .unpriced
                .entry(u["reason"].as_str().unwrap().into())
                .or_default() += u["requests"].as_u64().unwrap();
        }
        spend
    }

    /// What grew since `earlier`.
    pub fn since(&self, earlier: &Spend) -> Spend {
        Spend {
            cost: self
                .cost
                .iter()
                .map(|(k, v)| (k.clone(), v - earlier.cost.get(k).copied().unwrap_or(0)))
                .collect(),
            unpriced: self
                .unpriced
                .iter()
                .map(|(k, v)| (k.clone(), v - earlier.unpriced.get(k).copied().unwrap_or(0)))
                .filter(|(_, v)| *v > 0)
                .collect(),
        }
    }

    /// The amount of `billing_mode` as the double nearest to it.
    fn amount(&self, billing_mode: &str) -> f64 {
        super::model::decimal(self.cost.get(billing_mode).copied().unwrap_or(0))
            .parse()
            .unwrap()
    }
}

/// An exact decimal in 10^-9 units.
pub fn units_of(decimal: &str) -> u128 {
    let (whole, fraction) = decimal.split_once('.').unwrap_or((decimal, ""));
    whole.parse::<u128>().unwrap() * 1_000_000_000 + format!("{fraction:0<9}").parse::<u128>().unwrap()
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

/// The spend panels [`check_spend_panel`] knows.
const SPEND_PANELS: usize = 7;

/// Whether a spend panel's `result` is the truth; `None` for other panels.
fn check_spend_panel(
    panel: &str,
    result: &[Value],
    (lifetime, grown): (&Spend, &Spend),
    tokens: [u64; 8],
) -> Option<bool> {
    let close = |got: f64, want: f64| (got - want).abs() <= want.abs() * 1e-9;
    let value = || first_value(result).unwrap();
    let by = |label: &str| -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for r in result {
            let v: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
            if v != 0.0 {
                *out.entry(r["metric"][label].as_str().unwrap().to_string())
                    .or_default() += v;
            }
        }
        out
    };
    Some(match panel {
        "Lifetime spend, pay-as-you-go" => close(value(), lifetime.amount("payg")),
        "Lifetime subscription equivalent" => close(value(), lifetime.amount("subscription_equivalent")),
        "Spend, pay-as-you-go" => close(value(), grown.amount("payg")),
        "Subscription equivalent" => close(value(), grown.amount("subscription_equivalent")),
        "Priced share of requests" => {
            let unpriced: u64 = grown.unpriced.values().sum();
            close(
                value(),
                1.0 - unpriced as f64 / tokens[quantity("requests")] as f64,
            )
        }
        "Unpriced requests by reason" => {
            let want: BTreeMap<String, f64> = grown
                .unpriced
                .iter()
                .map(|(k, v)| (k.clone(), *v as f64))
                .collect();
            by("reason") == want
        }
        "Spend by model" => {
            let got = by("billing_mode");
            ["payg", "subscription_equivalent"]
                .iter()
                .all(|mode| close(got.get(*mode).copied().unwrap_or(0.0), grown.amount(mode)))
        }
        _ => return None,
    })
}

fn quantity(name: &str) -> usize {
    QUANTITIES.iter().position(|q| *q == name).unwrap()
}

/// Runs every panel's queries as Grafana sends them (`super::grafana`) for the dashboard range
/// from just after the sample at `start` to just after the one at `end` (Unix seconds; the
/// values hold still around both), and checks that each returns data, that each Lifetime panel
/// equals `lifetime` and each range totals panel `grown` (the sums of the eight quantities),
/// and that the variables have values.
///
/// The spend panels in [`CURRENCY`] likewise: the Lifetime ones equal `spend.0`, the range ones
/// `spend.1` (what grew in the window), each billing mode apart; the priced share is one less
/// the unpriced requests over all requests of the window.
pub fn check_panels(
    prometheus: &Prometheus,
    (start, end): (f64, f64),
    lifetime: [u64; 8],
    grown: [u64; 8],
    spend: (&Spend, &Spend),
) {
    // Past the samples by more than `$__range`'s rounding to whole seconds, before the next.
    let range = TimeRange {
        from_ms: (start * 1000.0) as i64 + 600,
        to_ms: (end * 1000.0) as i64 + 600,
        utc_offset_s: 0,
    };
    let vars = ALL_VALUES;
    let dash = dashboard();
    let totals = LIFETIME_PANELS;
    let range_totals = [
        ("Tokens (total)", "total"),
        ("Prompt", "prompt"),
        ("Completion", "completion"),
        ("Reasoning", "reasoning"),
        ("Requests", "requests"),
        ("Turns", "turns"),
    ];
    let mut checked = 0;
    for (panel, target) in targets(&dash) {
        let q = Query {
            panel: panel["title"].as_str().unwrap().to_string(),
            expr: target["expr"].as_str().unwrap().to_string(),
            instant: target["instant"].as_bool().unwrap_or(false),
        };
        // The data source set to the scrape (or export) interval of these tests' servers, 1 s.
        let ds = Datasource {
            scrape_interval_ms: 1000,
        };
        let request = grafana::request(panel, target, &range, &ds, &vars);
        let expr = match &request {
            Request::Instant { query, .. } | Request::Range { query, .. } => query.clone(),
        };
        let result = prometheus
            .api(&request.path())
            .and_then(|data| data["result"].as_array().cloned());
        let result = result.unwrap_or_else(|| panic!("{}: Prometheus refused {expr}", q.panel));
        if RULE_PANELS.contains(&q.panel.as_str()) {
            continue;
        }
        assert!(!result.is_empty(), "{}: no data for {expr}", q.panel);
        if let Some(ok) = check_spend_panel(&q.panel, &result, spend, grown) {
            assert!(ok, "{}: {result:?} ({expr}), want {spend:?}", q.panel);
            checked += 1;
            continue;
        }
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
        totals.len() + range_totals.len() + 1 + SPEND_PANELS,
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
        let selector = selector.replace("$instance", ".*").replace("$provider", ".*");
        let values = prometheus
            .api(&format!("label/{label}/values?match[]={}", encode(&selector)))
            .unwrap();
        assert!(
            !values.as_array().unwrap().is_empty(),
            "variable {label}: no values for {selector}"
        );
    }
}

//! The scenario, and every panel over its windows and the daily table, asked as Grafana asks.

use super::*;

/// Takes a quiet moment: every store has its lines, every backend their last export, and no
/// line lands within [`QUIET`] of it (on a whole minute if `on_a_minute`). Returns its time.
fn moment(
    machines: &[Machine],
    backends: &[Backend],
    last_line: i64,
    timeline: &mut Timeline,
    on_a_minute: bool,
) -> i64 {
    let readings: Vec<Option<Reading>> = machines
        .iter()
        .enumerate()
        .map(|(k, m)| match m.daemon {
            Some(_) => Some(m.reading()),
            // A stopped machine keeps its last reading: it exported it before it stopped.
            None => timeline.moments.last().and_then(|at| at.readings[k].clone()),
        })
        .collect();
    let mut want = Reading::default();
    readings.iter().flatten().for_each(|r| want.add(r));
    for backend in backends {
        let arrived = wait_until(PATIENCE, || {
            backend.newest_sum("reasonix_tokens_total") == Some(want.quantity("total"))
                && backend.newest_sum("reasonix_requests_total") == Some(want.quantity("requests"))
                && backend.newest_sum("reasonix_turns_total") == Some(want.quantity("turns"))
        });
        assert!(arrived, "{}: the backend never had {want:?}", backend.name);
    }
    // Everything arrived before `at_ms - EDGE_MS`, and no line lands within QUIET of it.
    let mut at_ms = (now_ms() + EDGE_MS).max(last_line + QUIET.as_millis() as i64);
    if on_a_minute {
        at_ms = (at_ms + 59_999) / 60_000 * 60_000;
    }
    sleep_until_ms(at_ms);
    timeline.moments.push(Moment { at_ms, readings });
    sleep_until_ms(at_ms + QUIET.as_millis() as i64);
    at_ms
}

/// Runs the scenario with machines exporting to `sink` and checks every panel on every
/// backend; `restart_hop` restarts the first hop (a collector) mid-run.
pub(crate) fn scenario(sink: Sink, backends: &[Backend], mut restart_hop: impl FnMut()) {
    // `REASONIX_WINDOWS_SEED` other than 0 gives another scenario of the same kinds of events:
    // other ledgers, burst sizes and so times (how the acceptance is measured again).
    let seed: u64 = std::env::var("REASONIX_WINDOWS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut rng = common::generator::Rng::new(seed);
    let mut size = |base: usize| {
        if seed == 0 {
            base
        } else {
            base / 2 + rng.below(base as u64 * 2) as usize
        }
    };
    let mut machines = [
        Machine::new(301 + 10 * seed, &sink, 0),
        Machine::new(302 + 10 * seed, &sink, 1),
    ];
    let mut timeline = Timeline::default();
    let mut last_line = now_ms();
    let quiet = |machines: &[Machine], last_line: i64, timeline: &mut Timeline| {
        moment(machines, backends, last_line, timeline, false)
    };

    // Before anything: no machine has exported.
    let before = now_ms();
    timeline.moments.push(Moment {
        at_ms: before,
        readings: vec![None, None],
    });
    sleep_until_ms(before + 1000);

    // The first machine, with three days of history.
    for day in ["2026-10-01", "2026-10-02", "2026-10-03"] {
        machines[0].lines_land(day, size(150));
    }
    machines[0].start();
    let m0 = quiet(&machines, last_line, &mut timeline);

    machines[0].lines_land("2026-10-04", size(40));
    last_line = now_ms();
    let m1 = quiet(&machines, last_line, &mut timeline);

    // A model and a source never seen: series born after the store's first export.
    machines[0].new_series_land("2026-10-04", "deepseek/deepseek-v5-exp", "studio");
    last_line = now_ms();
    let m2 = quiet(&machines, last_line, &mut timeline);

    // The second machine joins, with history of its own (and a model of its own).
    machines[1].lines_land("2026-09-20", size(200));
    machines[1].new_series_land("2026-09-21", "moonshot/kimi-k3", "bot");
    machines[1].start();
    let m3 = quiet(&machines, last_line, &mut timeline);

    machines[0].lines_land("2026-10-05", size(30));
    machines[1].lines_land("2026-10-05", size(30));
    last_line = now_ms();
    // This moment is on a whole minute: the daily table's midnight, in a zone of whole minutes.
    let m4 = moment(&machines, backends, last_line, &mut timeline, true);

    // The first machine stopped; lines land meanwhile; started again.
    machines[0].stop();
    machines[0].lines_land("2026-10-06", size(25));
    machines[0].new_series_land("2026-10-06", "zhipu/glm-5", "remote");
    machines[1].lines_land("2026-10-06", size(20));
    machines[0].start();
    last_line = now_ms();
    let m5 = quiet(&machines, last_line, &mut timeline);

    // The first hop restarted, lines on both.
    restart_hop();
    machines[0].lines_land("2026-10-07", size(20));
    machines[1].lines_land("2026-10-07", size(20));
    last_line = now_ms();
    let m6 = quiet(&machines, last_line, &mut timeline);

    // VictoriaMetrics answers a query at a time within its latency offset (30 s by default) from
    // the data before that offset: Grafana users of a default VictoriaMetrics see that too, so
    // the windows are asked once their end is older than it.
    if backends.iter().any(|b| b.victoria) {
        sleep_until_ms(m6 + 31_000);
    }

    let windows = [
        ("everything", before, m6),
        ("a birth and a machine joining", m1, m3),
        ("a new model's first minutes", m0, m2),
        ("an exporter stopped and started", m3, m5),
        ("the collector restarted", m4, m6),
    ];
    for backend in backends {
        for (what, from, to) in windows {
            check_window(
                backend,
                &timeline,
                what,
                TimeRange {
                    from_ms: from,
                    to_ms: to,
                    utc_offset_s: 0,
                },
            );
        }
        // The daily table in a zone whose midnight is m4: two rows, split there.
        let utc_offset_s = (86_400_000 - m4.rem_euclid(86_400_000)) / 1000;
        let range = TimeRange {
            from_ms: before,
            to_ms: m6,
            utc_offset_s,
        };
        check_daily_table(backend, &timeline, range, m4);
        // Nothing ever went down: no counter reset anywhere in the scenario.
        backend.assert_never_reset(&format!("{}s", (now_ms() - before) / 1000 + 60));
    }
    for m in &mut machines {
        m.stop();
    }
}

/// A result's values by the labels `by` (joined with `/`), zeros left out.
fn by_labels(result: &[Value], by: &[&str]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in result {
        let v: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
        if v != 0.0 {
            let key: Vec<&str> = by
                .iter()
                .map(|l| r["metric"][*l].as_str().unwrap_or(""))
                .collect();
            *out.entry(key.join("/")).or_default() += v;
        }
    }
    out
}

/// The truth's growth by `pick` (a series' key), zeros left out.
fn grown_by<K>(
    map: &BTreeMap<K, impl Copy>,
    pick: impl Fn(&K) -> String,
    value: impl Fn(&K) -> f64,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for k in map.keys() {
        let v = value(k);
        if v != 0.0 {
            *out.entry(pick(k)).or_default() += v;
        }
    }
    out
}

/// What a panel must show over a window: a number, or numbers by label.
enum Want {
    One(f64),
    By(Vec<&'static str>, BTreeMap<String, f64>),
}

/// The truth of each amount panel of the dashboard; `None` for the panels that are not amounts
/// over the window (rates, the exporter's health).
fn want(panel: &str, lifetime: &Reading, grown: &Reading, range_s: f64) -> Option<Want> {
    let tokens = |q: &str| {
        let i = QUANTITIES.iter().position(|n| *n == q).unwrap();
        move |s: &Series| grown.tokens[s][i] as f64
    };
    let cost = |k: &(Series, String)| grown.cost[k] as f64 / 1e9;
    if let Some((_, q)) = LIFETIME_PANELS
        .iter()
        .find(|(n, _)| panel == format!("Lifetime {n}"))
    {
        return Some(Want::One(lifetime.quantity(q)));
    }
    Some(match panel {
        "Lifetime spend, pay-as-you-go" => Want::One(lifetime.spend("payg")),
        "Lifetime subscription equivalent" => Want::One(lifetime.spend("subscription_equivalent")),
        "Tokens (total)" => Want::One(grown.quantity("total")),
        "Prompt" => Want::One(grown.quantity("prompt")),
        "Completion" => Want::One(grown.quantity("completion")),
        "Reasoning" => Want::One(grown.quantity("reasoning")),
        "Requests" => Want::One(grown.quantity("requests")),
        "Turns" => Want::One(grown.quantity("turns")),
        "Cache hit ratio" => Want::One(grown.quantity("cache_hit") / grown.quantity("prompt")),
        "Requests per day (average)" => Want::One(grown.quantity("requests") / range_s * 86400.0),
        "Turns per day (average)" => Want::One(grown.quantity("turns") / range_s * 86400.0),
        "Tokens per request (average)" => Want::One(grown.quantity("total") / grown.quantity("requests")),
        "Top models by tokens" => Want::By(
            vec!["model_ref"],
            grown_by(&grown.tokens, |s| s.0.clone(), tokens("total")),
        ),
        "Top providers by tokens" => Want::By(
            vec!["provider"],
            grown_by(&grown.tokens, |s| s.1.clone(), tokens("total")),
        ),
        "Tokens by source" => Want::By(
            vec!["source"],
            grown_by(&grown.tokens, |s| s.2.clone(), tokens("total")),
        ),
        "Spend, pay-as-you-go" => Want::One(grown.spend("payg")),
        "Subscription equivalent" => Want::One(grown.spend("subscription_equivalent")),
        "Priced share of requests" => {
            let unpriced: u64 = grown.unpriced.values().sum();
            Want::One(1.0 - unpriced as f64 / grown.quantity("requests"))
        }
        "Unpriced requests by reason" => Want::By(
            vec!["reason"],
            grown_by(&grown.unpriced, |k| k.1.clone(), |k| grown.unpriced[k] as f64),
        ),
        "Spend by model" => Want::By(
            vec!["model_ref", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.0), cost),
        ),
        "Spend by provider" => Want::By(
            vec!["provider", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.1), cost),
        ),
        "Spend by source" => Want::By(
            vec!["source", "billing_mode"],
            grown_by(&grown.cost, |(s, m)| format!("{}/{m}", s.2), cost),
        ),
        _ => return None,
    })
}

/// The instant panels that are not usage amounts: the exporter's own health.
const NOT_AMOUNTS: [&str; 3] = ["Rejected lines (range)", "Lag", "Ledger files"];

/// Exact: to the token for counts, to 10^-9 of the currency for spend, to 10^-12 for ratios.
fn exact(panel: &str, got: f64, want: f64) -> bool {
    if panel.contains("pend") || panel.contains("ubscription") {
        (got - want).abs() <= 1e-9
    } else if want.fract() == 0.0 && want.abs() < 1e15 {
        got == want
    } else {
        (got - want).abs() <= want.abs() * 1e-12
    }
}

/// Every panel of the dashboard over `range`, asked as Grafana asks, against the truth.
fn check_window(backend: &Backend, timeline: &Timeline, what: &str, range: TimeRange) {
    let dash = dashboard();
    let range_s = ((range.to_ms - range.from_ms) as f64 / 1000.0).round();
    // The window as the backend sees it: `$__range` whole seconds before `to`.
    let from = range.to_ms - range_s as i64 * 1000;
    let (lifetime, grown) = timeline.window(from, range.to_ms);
    assert!(grown.quantity("total") > 0.0, "{what}: nothing grew");
    let mut checked = 0;
    for panel in dash["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let request = grafana::request(panel, target, &range, &Datasource::default(), &ALL_VALUES);
            let data = backend
                .api(&request.path())
                .unwrap_or_else(|| panic!("{}: {title}: refused {request:?}", backend.name));
            let Request::Instant { query, .. } = &request else {
                continue;
            };
            let result = data["result"].as_array().cloned().unwrap_or_default();
            let Some(want) = want(title, &lifetime, &grown, range_s) else {
                assert!(
                    NOT_AMOUNTS.contains(&title) || RULE_PANELS.contains(&title),
                    "{title}: an instant panel without a truth"
                );
                continue;
            };
            let context = format!("{} [{what}] {title}: {query}", backend.name);
            match want {
                Want::One(want) => {
                    let got = result
                        .first()
                        .and_then(|r| r["value"][1].as_str()?.parse::<f64>().ok());
                    let got = got.unwrap_or_else(|| panic!("{context}: no data, want {want}"));
                    assert!(exact(title, got, want), "{context}: {got}, want {want}");
                }
                Want::By(labels, want) => {
                    let got = by_labels(&result, &labels);
                    let same = got.len() == want.len()
                        && got
                            .iter()
                            .all(|(k, g)| want.get(k).is_some_and(|w| exact(title, *g, *w)));
                    assert!(same, "{context}: {got:?}, want {want:?}");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 30, "{}: every amount panel was checked", backend.name);
}

/// The daily table over `range`: one row per local day, each the day's growth, the rows adding
/// up to the growth from the first row's midnight on.
fn check_daily_table(backend: &Backend, timeline: &Timeline, range: TimeRange, midnight: i64) {
    let dash = dashboard();
    let panel = common::dashboard::daily_totals_panel(&dash);
    let columns = [
        ("Tokens", "total"),
        ("Prompt", "prompt"),
        ("Completion", "completion"),
        ("Reasoning", "reasoning"),
        ("Cache hit", "cache_hit"),
        ("Cache miss", "cache_miss"),
        ("Requests", "requests"),
        ("Turns", "turns"),
    ];
    let day = 86_400_000;
    let rows = [midnight - day, midnight];
    for target in panel["targets"].as_array().unwrap() {
        let column = target["legendFormat"].as_str().unwrap();
        let (_, q) = columns.iter().find(|(c, _)| *c == column).unwrap();
        let request = grafana::request(panel, target, &range, &Datasource::default(), &ALL_VALUES);
        let Request::Range { start, step_s, .. } = &request else {
            panic!("the daily table is a range query")
        };
        assert_eq!(
            (*step_s, (*start * 1000.0) as i64),
            (86400.0, midnight - day),
            "{request:?}"
        );
        let data = backend
            .api(&request.path())
            .unwrap_or_else(|| panic!("{}: refused {request:?}", backend.name));
        let values = data["result"][0]["values"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let got: Vec<(i64, f64)> = values
            .iter()
            .map(|v| {
                (
                    (v[0].as_f64().unwrap() * 1000.0) as i64,
                    v[1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        let want: Vec<(i64, f64)> = rows
            .iter()
            .map(|row| (*row, timeline.window(*row, row + day).1.quantity(q)))
            .collect();
        assert_eq!(got, want, "{}: daily {column}: {request:?}", backend.name);
        let total: f64 = got.iter().map(|(_, v)| v).sum();
        assert_eq!(
            total,
            timeline.window(rows[0], range.to_ms).1.quantity(q),
            "{}: the rows add up",
            backend.name
        );
    }
}

#[test]
fn grafana_requests_follow_grafanas_rules() {
    // Last hour, a 1000-point panel, a 15 s scrape interval: step 15 s, rate interval 1m0s.
    let panel = serde_json::json!({});
    let target = serde_json::json!({"expr": "rate(x[$__rate_interval]) / $__interval", "instant": false});
    let range = TimeRange {
        from_ms: 1_700_000_000_000,
        to_ms: 1_700_003_600_000,
        utc_offset_s: 0,
    };
    let Request::Range { query, step_s, .. } =
        grafana::request(&panel, &target, &range, &Datasource::default(), &[])
    else {
        panic!("a range query")
    };
    assert_eq!((query.as_str(), step_s), ("rate(x[1m0s]) / 15s", 15.0));
    // A daily table in UTC+08:00: rows at local midnights.
    let panel = serde_json::json!({"interval": "1d", "maxDataPoints": 10000});
    let target = serde_json::json!({"expr": "x[$__interval]"});
    let range = TimeRange {
        from_ms: 1_700_000_000_000,
        to_ms: 1_700_600_000_000,
        utc_offset_s: 8 * 3600,
    };
    let Request::Range {
        start, step_s, query, ..
    } = grafana::request(&panel, &target, &range, &Datasource::default(), &[])
    else {
        panic!("a range query")
    };
    assert_eq!((query.as_str(), step_s), ("x[1d]", 86400.0));
    assert_eq!((start as i64 + 8 * 3600) % 86400, 0, "a local midnight");
    assert!(start * 1000.0 <= range.from_ms as f64 && start * 1000.0 > (range.from_ms - 86_400_000) as f64);
    // An instant query: $__range in whole seconds (rounded), at `to`.
    let target = serde_json::json!({"expr": "increase(x[$__range]) / $__range_s", "instant": true});
    let range = TimeRange {
        from_ms: 1_000,
        to_ms: 3_601_600,
        utc_offset_s: 0,
    };
    let req = grafana::request(&panel, &target, &range, &Datasource::default(), &[]);
    assert_eq!(
        req,
        Request::Instant {
            query: "increase(x[3601s]) / 3601".into(),
            time: 3601.6
        }
    );
}

//! Budgets end to end (issue "Budgets and alerts"): two exporters feed a real Prometheus, one
//! scraped and one through a real collector's remote write; Prometheus evaluates the rules
//! `reasonix-exporter rules` made of a budgets file; a real Alertmanager delivers to a webhook
//! here. The ledgers grow past each budget's warning and past the budget; each alert arrives
//! once, with the numbers the stores hold for the day, and resolves when the day ends. The day
//! is made to end a minute or so into the test by the budgets' time zone (an offset that puts
//! midnight there), never by waiting for a real one.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::alertmanager::{Alertmanager, Delivered, Webhook};
use common::collector::{Collector, MACHINE_OVERRIDES};
use common::dashboard::{ALL_VALUES, units_of};
use common::grafana::{self, Datasource, TimeRange};
use common::prom_server::Prometheus;
use common::{Daemon, Fixture, assert_success, wait_until};
use serde_json::Value;

/// How long a line may take to reach an alert at the webhook (poll, export or scrape, the
/// collector's batch, a rule evaluation, Alertmanager's group wait).
const PATIENCE: Duration = Duration::from_secs(40);

/// The most the steps before midnight may take: midnight is put at least this far ahead.
const BEFORE_MIDNIGHT: u64 = 50;

/// A ledger line of `amount` CNY, pay-as-you-go, priced by Reasonix; `n` makes it unique.
fn priced_line(n: u32, amount: &str) -> String {
    format!(
        "{{\"ts\":\"2026-12-01T10:00:{:02}.{n:06}+08:00\",\"model\":\"deepseek/deepseek-v4-flash\",\"source\":\"cli\",\"prompt\":100,\"completion\":10,\"total\":110,\"requests\":1,\"cost_amount\":\"{amount}\",\"cost_currency\":\"CNY\",\"cost_complete\":true,\"billing_mode\":\"payg\"}}",
        n % 60
    )
}

/// The store's lifetime pay-as-you-go CNY, exact (10^-9 units), once it has `lines` lines.
fn lifetime_cny(fx: &Fixture, lines: u64) -> u128 {
    let mut units = None;
    let counted = wait_until(PATIENCE, || {
        let out = fx.run(&["status", "--json"]);
        let Ok(status) = serde_json::from_slice::<Value>(&out.stdout) else {
            return false;
        };
        units = Some(
            status["cost"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["currency"] == "CNY" && c["billing_mode"] == "payg")
                .map(|c| units_of(c["amount"].as_str().unwrap()))
                .sum(),
        );
        status["lines"]["counted"].as_u64() == Some(lines)
    });
    assert!(counted, "the store never counted {lines} lines");
    units.unwrap()
}

/// A machine: its ledger, its exporter, the lines it has written.
struct Machine {
    fx: Fixture,
    lines: u32,
    daemon: Option<Daemon>,
}

impl Machine {
    /// A machine whose ledger holds 10 CNY of history: far past every budget, and never spent.
    fn with_history() -> Machine {
        let mut machine = Machine {
            fx: Fixture::new(),
            lines: 0,
            daemon: None,
        };
        machine.write(&["4", "6"]);
        machine
    }

    fn write(&mut self, amounts: &[&str]) {
        for amount in amounts {
            self.lines += 1;
            let line = priced_line(self.lines, amount);
            self.fx.append_lines("2026-12-01.jsonl", &[&line]);
        }
    }

    fn lifetime(&self) -> u128 {
        lifetime_cny(&self.fx, u64::from(self.lines))
    }
}

/// Seconds since 1970 now.
fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A fixed offset (`+HH:MM`) that makes `at` (a whole minute) a local midnight.
fn offset_with_midnight_at(at: u64) -> String {
    let east = (86_400 - at % 86_400) % 86_400;
    let (sign, seconds) = if east > 43_200 {
        ('-', 86_400 - east)
    } else {
        ('+', east)
    };
    format!("{sign}{:02}:{:02}", seconds / 3600, seconds % 3600 / 60)
}

/// The budgets file of the test: a day in a zone whose midnight is `midnight`; warnings at half.
fn budgets(midnight: u64, scraped_instance: &str) -> String {
    format!(
        "time_zone = \"{}\"\ninterval = \"1s\"\nfor = \"0s\"\nwarn_at = [0.5]\nbudget = [\n  {{ spend = \"2 CNY\", per = \"day\", instance = \"{scraped_instance}\" }},\n  {{ spend = \"3 CNY\", per = \"day\", team = \"payments\" }},\n  {{ spend = \"4 CNY\", per = \"day\" }},\n]\n",
        offset_with_midnight_at(midnight)
    )
}

/// What the webhook has for `budget`'s alert `name`, by status.
fn delivered<'a>(all: &'a [Delivered], name: &str, budget: &str) -> Vec<&'a Delivered> {
    all.iter()
        .filter(|a| a.labels["alertname"] == name && a.labels["budget"] == budget)
        .collect()
}

/// Waits until the webhook has the firing of `name` for `budget`; checks its numbers against
/// `spent` (exact, 10^-9 units) and returns it.
fn arrives(hook: &Webhook, name: &str, budget: &str, spent: u128) -> Delivered {
    let mut found = None;
    let came = wait_until(PATIENCE, || {
        found = delivered(&hook.alerts(), name, budget)
            .first()
            .map(|a| (*a).clone());
        found.is_some()
    });
    assert!(
        came,
        "{name} for `{budget}` never arrived; the webhook has {:?}",
        hook.alerts()
    );
    let alert = found.unwrap();
    assert_eq!(alert.status, "firing");
    assert_eq!(alert.labels["currency"], "CNY");
    assert_eq!(alert.labels["billing_mode"], "payg");
    assert_eq!(alert.labels["period"], "day");
    let shown: f64 = alert.annotations["spent"].as_str().unwrap().parse().unwrap();
    let truth = spent as f64 / 1e9;
    assert!(
        (shown - truth).abs() < 1e-9,
        "{name} for `{budget}` says {shown} CNY spent; the stores hold {truth}"
    );
    let summary = alert.annotations["summary"].as_str().unwrap();
    assert!(summary.contains(&format!("{truth:.2} CNY")), "{summary}");
    alert
}

#[test]
#[ignore = "needs the collector, Prometheus 2, Alertmanager (.ci/run); run with --include-ignored"]
fn budget_alerts_arrive_once_with_the_stores_numbers_and_resolve_at_midnight() {
    let test = "budget_alerts_arrive_once_with_the_stores_numbers_and_resolve_at_midnight";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let Some(prometheus) = common::tools::installed(test, "prometheus", "prometheus") else {
        return;
    };
    let Some(alertmanager) =
        common::tools::installed(test, "prometheus-alertmanager", "prometheus-alertmanager")
    else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let hook = Webhook::start();
    let am = Alertmanager::start(&alertmanager, &root.path().join("alertmanager"), &hook);

    // Machine A is scraped; machine B (team payments) goes through a collector's remote write.
    let mut a = Machine::with_history();
    let mut b = Machine::with_history();
    let (daemon, a_port) = a.fx.spawn_serving(&["--poll-interval", "200ms"]);
    a.daemon = Some(daemon);
    let instance_a = format!("127.0.0.1:{a_port}");

    let midnight = (now() + BEFORE_MIDNIGHT).div_ceil(60) * 60;
    let rules_path = root.path().join("reasonix.rules.yml");
    let budgets_path = root.path().join("budgets.toml");
    std::fs::write(&budgets_path, budgets(midnight, &instance_a)).unwrap();
    let out = a.fx.run(&["rules", budgets_path.to_str().unwrap()]);
    assert_success(&out);
    std::fs::write(&rules_path, &out.stdout).unwrap();

    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: ['{}', '{}']\nalerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{}']\nscrape_configs:\n  - job_name: reasonix-exporter\n    static_configs:\n      - targets: ['{instance_a}']\n",
        rules_path.display(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/prometheus/rules/reasonix-fleet.rules.yml")
            .display(),
        am.port
    );
    let prom = Prometheus::start_binary(
        &prometheus,
        &root.path().join("prometheus"),
        &config,
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let url = format!("http://127.0.0.1:{}/api/v1/write", prom.port);
    let collector = Collector::start(
        &otelcol,
        &root.path().join("collector"),
        "single-machine.yaml",
        MACHINE_OVERRIDES,
        &[
            ("PROMETHEUS_REMOTE_WRITE_URL", &url),
            ("REASONIX_TEAM", "payments"),
        ],
    );
    let (_, endpoint) = collector.endpoints().pop().unwrap();
    let args = [
        "--prometheus",
        "off",
        "--otlp-protocol",
        "http/protobuf",
        "--otlp-endpoint",
        &endpoint,
    ];
    let mut b_args = vec!["--export-interval", "1s", "--poll-interval", "200ms"];
    b_args.extend(args);
    b.daemon = Some(b.fx.spawn(&b_args));

    // Both stores' history has reached Prometheus and its rules: nothing of it is spent.
    let history = (a.lifetime(), b.lifetime());
    let day_budgets = [
        format!("instance={instance_a} 2 CNY a day"),
        "team=payments 3 CNY a day".to_string(),
        "everyone 4 CNY a day".to_string(),
    ];
    for budget in &day_budgets {
        let query = format!("reasonix_budget:spent{{budget=\"{budget}\"}}");
        let zero = wait_until(PATIENCE, || {
            let spent = prom.scalar(&query);
            let both = prom.scalar("count(count by (instance) (reasonix_cost_total))");
            spent == Some(0.0) && both == Some(2.0)
        });
        assert!(zero, "`{budget}` did not start at 0: {:?}", prom.scalar(&query));
    }

    let spent = |a: &Machine, b: &Machine| (a.lifetime() - history.0, b.lifetime() - history.1);
    a.write(&["1.234567891"]);
    let (sa, _) = spent(&a, &b);
    arrives(&hook, "ReasonixBudgetWarning", &day_budgets[0], sa);
    b.write(&["1.876543219"]);
    let (sa, sb) = spent(&a, &b);
    arrives(&hook, "ReasonixBudgetWarning", &day_budgets[1], sb);
    arrives(&hook, "ReasonixBudgetWarning", &day_budgets[2], sa + sb);
    a.write(&["1"]);
    let (sa, sb) = spent(&a, &b);
    arrives(&hook, "ReasonixBudgetExhausted", &day_budgets[0], sa);
    arrives(&hook, "ReasonixBudgetExhausted", &day_budgets[2], sa + sb);
    b.write(&["1.5"]);
    let (_, sb) = spent(&a, &b);
    arrives(&hook, "ReasonixBudgetExhausted", &day_budgets[1], sb);
    assert!(
        now() < midnight,
        "the steps took past the test's midnight: raise BEFORE_MIDNIGHT"
    );
    check_dashboard_panels(&prom, &day_budgets);

    // Midnight: a new day has spent nothing; every alert resolves, once.
    let episodes = [
        ("ReasonixBudgetWarning", &day_budgets[0]),
        ("ReasonixBudgetWarning", &day_budgets[1]),
        ("ReasonixBudgetWarning", &day_budgets[2]),
        ("ReasonixBudgetExhausted", &day_budgets[0]),
        ("ReasonixBudgetExhausted", &day_budgets[1]),
        ("ReasonixBudgetExhausted", &day_budgets[2]),
    ];
    let until_midnight = Duration::from_secs(midnight.saturating_sub(now()));
    let resolved = wait_until(until_midnight + PATIENCE, || {
        let all = hook.alerts();
        episodes.iter().all(|(name, budget)| {
            delivered(&all, name, budget)
                .iter()
                .any(|a| a.status == "resolved")
        })
    });
    assert!(
        resolved,
        "not every alert resolved at midnight: {:?}",
        hook.alerts()
    );
    assert!(
        now() >= midnight,
        "alerts resolved before midnight: {:?}",
        hook.alerts()
    );
    let all = hook.alerts();
    let mut per_episode = BTreeMap::new();
    for alert in &all {
        let key = (
            alert.labels["alertname"].as_str().unwrap().to_string(),
            alert.labels["budget"].as_str().unwrap_or_default().to_string(),
            alert.status.clone(),
        );
        *per_episode.entry(key).or_insert(0) += 1;
    }
    let mut expected = BTreeMap::new();
    for (name, budget) in &episodes {
        for status in ["firing", "resolved"] {
            expected.insert((name.to_string(), budget.to_string(), status.to_string()), 1);
        }
    }
    assert_eq!(per_episode, expected, "each alert once per episode, nothing else");
    drop(collector);
}

/// The dashboard's budget panels, asked as Grafana asks them over the last hour: each budget's
/// use is its spend over its amount, and the firing alerts are listed.
fn check_dashboard_panels(prom: &Prometheus, budgets: &[String]) {
    let dash = common::dashboard::dashboard();
    let to_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let range = TimeRange {
        from_ms: to_ms - 3_600_000,
        to_ms,
        utc_offset_s: 0,
    };
    let ask = |title: &str| {
        let (panel, target) = common::dashboard::targets(&dash)
            .into_iter()
            .find(|(panel, _)| panel["title"] == title)
            .unwrap_or_else(|| panic!("the dashboard has no panel `{title}`"));
        let request = grafana::request(panel, target, &range, &Datasource::default(), &ALL_VALUES);
        let data = prom
            .api(&request.path())
            .unwrap_or_else(|| panic!("{title}: refused {request:?}"));
        data["result"].as_array().cloned().unwrap_or_default()
    };
    let used = ask("Budget use");
    for budget in budgets {
        let row = used
            .iter()
            .find(|r| r["metric"]["budget"] == budget.as_str())
            .unwrap_or_else(|| panic!("`{budget}` is not on the budget panel: {used:?}"));
        let shown: f64 = row["value"][1].as_str().unwrap().parse().unwrap();
        let spent = prom
            .scalar(&format!("reasonix_budget:spent{{budget=\"{budget}\"}}"))
            .unwrap();
        let amount: f64 = row["metric"]["amount"].as_str().unwrap().parse().unwrap();
        assert!((shown - spent / amount).abs() < 1e-12, "{budget}: {shown}");
        assert!(shown >= 1.0, "{budget}: used up, the panel shows {shown}");
    }
    let firing = ask("Firing alerts");
    for budget in budgets {
        let listed = firing.iter().any(|r| {
            r["metric"]["alertname"] == "ReasonixBudgetExhausted" && r["metric"]["budget"] == budget.as_str()
        });
        assert!(listed, "`{budget}` is not among the firing alerts: {firing:?}");
    }
}

#[test]
fn the_rules_command_says_what_is_wrong_in_one_line() {
    let fx = Fixture::new();
    let dir = fx.root.path();
    let fifo = dir.join("budgets.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(
        dir.join("typo.toml"),
        "budget = [{ spend = \"500 CNY\", per = \"week\" }]\n",
    )
    .unwrap();
    std::fs::write(dir.join("zone.toml"), "time_zone = \"Mars/Olympus\"\n").unwrap();
    for (file, says) in [
        ("missing.toml", "cannot be read"),
        ("budgets.fifo", "not a regular file"),
        (
            "typo.toml",
            "budget 1 (`500 CNY`): per = `week`: write per = \"day\" or per = \"month\"",
        ),
        (
            "zone.toml",
            "time_zone = `Mars/Olympus`: a name such as \"Asia/Shanghai\"",
        ),
    ] {
        let started = std::time::Instant::now();
        let out = fx.run(&["rules", dir.join(file).to_str().unwrap()]);
        assert!(started.elapsed() < Duration::from_secs(10), "{file}: it waited");
        assert!(!out.status.success(), "{file}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.contains(says) && err.contains(file), "{file}: {err}");
        assert!(out.stdout.is_empty(), "{file}: rules printed despite the error");
    }
}

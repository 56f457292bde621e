//! `deploy/` checked with the real tools where this machine has them: promtool on the Prometheus
//! configurations, the collector configurations against the components the contrib distribution
//! really has, every Grafana panel query run against a real Prometheus that scraped a running
//! exporter (the totals panels equal the model's totals), `systemd-analyze verify` on the
//! unit, and the launchd plist parsed.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use yaml_rust2::{Yaml, YamlLoader};

use common::dashboard::{Spend, check_panels, dashboard, first_value, queries, sums};
use common::generator::{Generator, days};
use common::model::Model;
use common::prom_server::Prometheus;
use common::{BIN, Fixture, scrape_totals, wait_until};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("deploy/{path}: {e}"))
}

fn installed(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        common::tools::skip(&format!("{tool} is not installed (.ci/run installs it)"));
    }
    found
}

/// The shipped collector configurations (the builder's manifest is not one).
fn collector_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(deploy("collector"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml") && n != "builder.yaml")
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    files
}

/// `otelcol validate` on every shipped collector file, with the variables it needs and test
/// certificates where it names files: the real collector knows its components and their
/// settings.
#[test]
#[ignore = "needs the collector (.ci/run); run with --include-ignored"]
fn every_collector_file_passes_otelcol_validate() {
    let test = "every_collector_file_passes_otelcol_validate";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = common::pki::Pki::new(dir.path());
    let (cert, key) = pki.write_server(dir.path());
    for file in collector_files() {
        let out = Command::new(&otelcol)
            .arg("validate")
            .arg(format!(
                "--config={}",
                deploy(&format!("collector/{file}")).display()
            ))
            .env("REASONIX_GATEWAY_TOKEN", "token")
            .env("REASONIX_GATEWAY_ENDPOINT", "localhost:4317")
            .env("REASONIX_GATEWAY_CA", &pki.ca)
            .env("GATEWAY_TLS_CERT", &cert)
            .env("GATEWAY_TLS_KEY", &key)
            .env("OTLP_BACKEND_TOKEN", "token")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "otelcol validate rejects deploy/collector/{file}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
#[ignore = "needs promtool (.ci/run); run with --include-ignored"]
fn prometheus_configurations_pass_promtool() {
    if !installed("promtool") {
        return;
    }
    for name in ["prometheus.yml", "scrape-exporter.yml", "scrape-collector.yml"] {
        let out = Command::new("promtool")
            .args(["check", "config"])
            .arg(deploy(&format!("prometheus/{name}")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool rejects deploy/prometheus/{name}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `kind type` pairs from deploy/collector/components.txt.
fn known_components() -> BTreeSet<(String, String)> {
    read("collector/components.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (kind, name) = l.split_once(' ').expect("`kind type`");
            (kind.to_string(), name.trim().to_string())
        })
        .collect()
}

fn keys(yaml: &Yaml) -> Vec<String> {
    yaml.as_hash()
        .map(|h| h.keys().filter_map(|k| k.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn names(list: &Yaml) -> Vec<String> {
    list.as_vec()
        .map(|v| v.iter().filter_map(|n| n.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Every `authenticator: <name>` anywhere below `yaml`.
fn authenticators(yaml: &Yaml, out: &mut Vec<String>) {
    if let Some(hash) = yaml.as_hash() {
        for (k, v) in hash {
            match (k.as_str(), v.as_str()) {
                (Some("authenticator"), Some(name)) => out.push(name.to_string()),
                _ => authenticators(v, out),
            }
        }
    }
}

#[test]
fn collector_configurations_name_only_real_components_and_wire_them_up() {
    let known = known_components();
    for file in collector_files() {
        let text = read(&format!("collector/{file}"));
        let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let config = &docs[0];
        let mut defined = BTreeSet::new();
        for (section, kind) in [
            ("receivers", "receiver"),
            ("processors", "processor"),
            ("exporters", "exporter"),
            ("extensions", "extension"),
        ] {
            for id in keys(&config[section]) {
                let component = id.split('/').next().unwrap().to_string();
                assert!(
                    known.contains(&(kind.to_string(), component.clone())),
                    "{file}: {kind} `{component}` is not in otelcol-contrib (deploy/collector/components.txt)"
                );
                defined.insert((section, id));
            }
        }
        let service = &config["service"];
        for ext in names(&service["extensions"]) {
            assert!(
                defined.contains(&("extensions", ext.clone())),
                "{file}: extension {ext} is not defined"
            );
        }
        let mut auth = Vec::new();
        authenticators(config, &mut auth);
        for name in auth {
            assert!(
                names(&service["extensions"]).contains(&name),
                "{file}: authenticator {name} is not an enabled extension"
            );
        }
        let pipelines = keys(&service["pipelines"]);
        assert_eq!(pipelines, ["metrics"], "{file}: one metrics pipeline");
        let pipeline = &service["pipelines"]["metrics"];
        for section in ["receivers", "processors", "exporters"] {
            let used = names(&pipeline[section]);
            assert!(
                !used.is_empty() || section == "processors",
                "{file}: no {section}"
            );
            for id in used {
                assert!(
                    defined.contains(&(section, id.clone())),
                    "{file}: pipeline uses {section} {id}, which is not defined"
                );
            }
        }
        // Cumulative in, cumulative out: converting here as well as exporting delta is the
        // double conversion the README warns about.
        assert!(
            !names(&pipeline["processors"])
                .iter()
                .any(|p| p.starts_with("deltatocumulative")),
            "{file}: deltatocumulative is for delta exporters only (see the file's header)"
        );
    }
}

#[test]
fn compose_refers_to_files_that_exist_and_the_images_ci_runs() {
    let compose = read("compose/docker-compose.yml");
    let docs = YamlLoader::load_from_str(&compose).expect("docker-compose.yml is YAML");
    let services = &docs[0]["services"];
    assert_eq!(
        keys(services),
        ["collector", "prometheus", "alertmanager", "grafana", "exporter"]
    );
    for service in keys(services) {
        for volume in names(&services[service.as_str()]["volumes"]) {
            let source = volume.split(':').next().unwrap();
            if source.starts_with("..") {
                assert!(
                    deploy("compose").join(source).exists(),
                    "compose {service} mounts {source}, which is not in the repository"
                );
            }
        }
    }
    let ports: Vec<String> = keys(services)
        .iter()
        .flat_map(|s| names(&services[s.as_str()]["ports"]))
        .collect();
    assert!(
        ports.iter().all(|p| p.starts_with("127.0.0.1:")),
        "every published port is on loopback: {ports:?}"
    );
    // The exporter's image is the one `cargo xtask dist` builds and tests/shipped.rs runs, and
    // Prometheus the version the tests run (.ci/tools builds v0.3XX.Y, which is 3.XX.Y).
    let exporter = &services["exporter"];
    assert!(
        exporter["build"].is_badvalue(),
        "compose builds no image of its own"
    );
    assert_eq!(
        exporter["image"].as_str(),
        Some(format!("reasonix-exporter:{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let tools = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/tools")).unwrap();
    let module = tools
        .lines()
        .find_map(|l| l.strip_prefix("PROMETHEUS_MODULE="))
        .unwrap();
    let minor: u32 = module.split("@v0.").nth(1).unwrap()[..3].parse().unwrap();
    let patch = module.rsplit('.').next().unwrap();
    assert_eq!(
        services["prometheus"]["image"].as_str(),
        Some(format!("prom/prometheus:v3.{}.{patch}", minor - 300).as_str())
    );
}

#[test]
#[ignore = "needs systemd-analyze (.ci/run); run with --include-ignored"]
fn systemd_unit_verifies() {
    if !installed("systemd-analyze") {
        return;
    }
    let unit = read("systemd/reasonix-exporter.service");
    for required in [
        "ProtectSystem=strict",
        "ReadOnlyPaths=%h/.reasonix/stats",
        "ReadWritePaths=%S/reasonix-exporter",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "Restart=on-failure",
    ] {
        assert!(unit.contains(required), "the unit lacks {required}");
    }
    // verify checks that ExecStart's binary exists: point it at the one just built.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reasonix-exporter.service");
    std::fs::write(&path, unit.replace("%h/.cargo/bin/reasonix-exporter", BIN)).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let about_unit: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("reasonix-exporter"))
        .collect();
    assert!(
        out.status.success() && about_unit.is_empty(),
        "systemd-analyze verify:\n{stderr}"
    );
}

/// The unit's system-call filter, expanded by systemd itself, lets the exporter enter its own
/// landlock sandbox (a filtered call would kill it with SIGSYS at start).
#[test]
#[ignore = "needs systemd-analyze, a kernel with landlock (.ci/run); run with --include-ignored"]
fn systemd_unit_lets_the_exporter_sandbox_itself() {
    if !installed("systemd-analyze") {
        return;
    }
    fn expand(entry: &str, into: &mut std::collections::BTreeSet<String>) {
        if !entry.starts_with('@') {
            into.insert(entry.to_string());
            return;
        }
        let out = Command::new("systemd-analyze")
            .args(["syscall-filter", entry])
            .output()
            .unwrap();
        assert!(out.status.success(), "systemd-analyze syscall-filter {entry}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        for line in text.lines().filter(|l| l.starts_with("    ")) {
            let name = line.trim();
            if !name.starts_with('#') && !name.is_empty() {
                expand(name, into);
            }
        }
    }
    let unit = read("systemd/reasonix-exporter.service");
    let (mut allowed, mut denied) = (Default::default(), Default::default());
    for filter in unit.lines().filter_map(|l| l.strip_prefix("SystemCallFilter=")) {
        let (set, names) = match filter.strip_prefix('~') {
            Some(names) => (&mut denied, names),
            None => (&mut allowed, filter),
        };
        for name in names.split_whitespace() {
            expand(name, set);
        }
    }
    for call in [
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
        "prctl",
    ] {
        assert!(
            allowed.contains(call) && !denied.contains(call),
            "the unit's SystemCallFilter= kills the exporter at {call}"
        );
    }
}

#[test]
fn launchd_plist_is_a_valid_property_list() {
    let value =
        plist::Value::from_file(deploy("launchd/io.reasonix.exporter.plist")).expect("valid plist XML");
    let dict = value.as_dictionary().expect("a dictionary");
    assert_eq!(
        dict.get("Label").and_then(|v| v.as_string()),
        Some("io.reasonix.exporter")
    );
    let args: Vec<&str> = dict
        .get("ProgramArguments")
        .and_then(|v| v.as_array())
        .expect("ProgramArguments")
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    assert!(
        args[0].ends_with("/reasonix-exporter") && args[1] == "run",
        "{args:?}"
    );
}

/// The range of every `rate(...[R])` / `increase(...[R])` / `last_over_time(...[R])` in `expr`.
fn counter_ranges(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for function in ["rate(", "increase(", "last_over_time("] {
        for (at, _) in expr.match_indices(function) {
            // `irate(` is not `rate(`.
            if at > 0 && expr.as_bytes()[at - 1].is_ascii_alphabetic() {
                continue;
            }
            let rest = &expr[at..];
            let open = rest.find('[').expect("a range");
            let close = rest[open..].find(']').unwrap() + open;
            out.push(rest[open + 1..close].to_string());
        }
    }
    out
}

#[test]
fn dashboard_queries_follow_the_counter_rules() {
    let dash = dashboard();
    let vars: Vec<&str> = dash["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(
        vars,
        [
            "datasource",
            "instance",
            "provider",
            "model_ref",
            "source",
            "currency"
        ]
    );
    let currency = dash["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "currency")
        .unwrap();
    assert_eq!(
        (&currency["multi"], &currency["includeAll"]),
        (&false.into(), &false.into()),
        "one currency at a time: amounts of different currencies are never added"
    );
    let all = queries(&dash);
    assert!(all.len() >= 30, "{} queries", all.len());
    for q in &all {
        let ranges = counter_ranges(&q.expr);
        // Each counter is read in one of three ways: its newest value (Lifetime panels), its
        // growth over the window (last in the window, less the last at or before its start or
        // else the first in it: docs/counting-rules.md, "Any window"), or a rate in a panel
        // whose title says per second or per hour.
        let reads = q.expr.matches("_total{").count();
        let lifetime = q.panel.starts_with("Lifetime ");
        let rate = q.expr.contains("rate(");
        if rate {
            let says = ["per second", "per hour", "ratio"];
            assert!(
                says.iter().any(|w| q.panel.contains(w)),
                "{}: a rate not titled as one",
                q.panel
            );
        }
        let daily = q.panel.starts_with("Daily totals");
        let window = if daily { "$__interval" } else { "$__range" };
        if lifetime {
            assert_eq!(
                ranges,
                vec!["$__range".to_string(); reads],
                "{}: {}",
                q.panel,
                q.expr
            );
            assert!(!q.expr.contains("min_over_time("), "{}: {}", q.panel, q.expr);
        } else if rate {
            assert_eq!(
                ranges,
                vec!["$__rate_interval".to_string(); reads],
                "{}: {}",
                q.panel,
                q.expr
            );
        } else if q.expr.contains("reasonix_exporter_") && !q.expr.contains("_total{") {
            assert!(ranges.is_empty(), "{}: {}", q.panel, q.expr);
        } else {
            assert_eq!(
                reads % 3,
                0,
                "{}: a counter outside a growth: {}",
                q.panel,
                q.expr
            );
            assert_eq!(q.expr.matches("min_over_time(").count(), reads / 3, "{}", q.expr);
            assert!(
                !q.expr.contains("increase(") && !q.expr.contains("rate("),
                "{}: {}",
                q.panel,
                q.expr
            );
            for (i, range) in ranges.iter().enumerate() {
                // Per growth: the newest in the window, the newest within a day before it.
                let want = if i % 2 == 0 { window } else { "1d" };
                assert_eq!(range, want, "{}: {}", q.panel, q.expr);
            }
        }
        // Different quantities are never added (`prompt` includes the cache split, `completion`
        // the reasoning).
        for (at, _) in q.expr.match_indices(" + ") {
            let (left, right) = (&q.expr[..at], &q.expr[at..]);
            assert!(
                !(left.contains("_total{") && right.contains("_total{")),
                "{}: adds counters: {}",
                q.panel,
                q.expr
            );
        }
        // Spend: one currency, and pay-as-you-go never added to subscription equivalents.
        if q.expr.contains("reasonix_cost_total{") {
            assert!(
                q.expr.contains(r#"currency="$currency""#),
                "{}: {}",
                q.panel,
                q.expr
            );
            let apart = q.expr.contains("billing_mode=\"") || q.expr.contains(", billing_mode)");
            assert!(apart, "{}: billing modes added: {}", q.panel, q.expr);
        }
        // A budget has its own scope: the variables do not filter it.
        let budgets = q.expr.contains("reasonix_budget:");
        if q.expr.contains("reasonix_") && !q.expr.contains("reasonix_exporter_") && !budgets {
            for var in ["$instance", "$provider", "$model_ref", "$source"] {
                assert!(q.expr.contains(var), "{}: ignores {var}: {}", q.panel, q.expr);
            }
        }
    }
}

#[test]
#[ignore = "needs Prometheus 2 (.ci/run); run with --include-ignored"]
fn every_dashboard_panel_returns_data_and_the_totals_panels_are_exact() {
    if !installed("prometheus") {
        return;
    }
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(77);
    let all_days = days(3);
    for day in &all_days {
        let text = generator.day_file(day, 200);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", "127.0.0.1:0"]);
    let port = daemon.metrics_port();
    assert!(wait_until(Duration::from_secs(20), || scrape_totals(port)
        == Some(model.expected.totals())));

    // Prometheus, with the repository's own scrape configuration pointed at this exporter.
    let config = read("prometheus/scrape-exporter.yml")
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("127.0.0.1:9464", &format!("127.0.0.1:{port}"));
    let prometheus = Prometheus::start(&fx.root.path().join("prometheus"), &config).unwrap();
    let before = sums(&model);
    let total_at =
        |want: u64| move |p: &Prometheus| p.scalar("sum(reasonix_tokens_total)") == Some(want as f64);
    let scraped = total_at(before[5]);
    assert!(wait_until(Duration::from_secs(30), || scraped(&prometheus)));

    // Lines that land while Prometheus watches, for the series it already knows: a series
    // Prometheus first sees above zero lost that first step to `increase()` (documented).
    let known = model.expected.clone();
    let spend_before = Spend::of_model(&model);
    let mut added = 0;
    while added < 150 {
        let line = generator.line(&all_days[2]);
        let mut alone = Model::default();
        alone.line(line.as_bytes());
        let new = &alone.expected;
        if new.series.keys().all(|s| known.series.contains_key(s))
            && new.cost.keys().all(|k| known.cost.contains_key(k))
            && new.unpriced.keys().all(|k| known.unpriced.contains_key(k))
        {
            fx.append(&format!("{}.jsonl", all_days[2]), format!("{line}\n").as_bytes());
            model.line(line.as_bytes());
            added += 1;
        }
    }
    let after = sums(&model);
    let grown: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert!(grown.iter().all(|g| *g > 0), "every quantity grew: {grown:?}");
    let scraped = total_at(after[5]);
    assert!(wait_until(Duration::from_secs(30), || scraped(&prometheus)));
    // Let a few more scrapes of the final values land.
    let last_ts = || {
        first_value(
            &prometheus
                .query("max(timestamp(reasonix_tokens_total))", None)
                .unwrap_or_default(),
        )
    };
    let seen_final = last_ts().unwrap();
    assert!(wait_until(Duration::from_secs(10), || last_ts().unwrap() >= seen_final + 2.0));

    // The dashboard's window: from the first scrape to the last, both sample instants, so that
    // `increase()` has nothing to extrapolate.
    let end = last_ts().unwrap();
    let samples = prometheus.query("reasonix_tokens_total[10m]", Some(end)).unwrap();
    let start = samples
        .iter()
        .filter_map(|s| s["values"][0][0].as_f64())
        .fold(f64::INFINITY, f64::min);

    let spend = Spend::of_model(&model);
    let spend_grown = spend.since(&spend_before);
    assert!(
        ["payg", "subscription_equivalent"]
            .iter()
            .all(|m| spend_grown.cost.get(*m).is_some_and(|v| *v > 0)),
        "spend of both billing modes grew: {spend_grown:?}"
    );
    check_panels(
        &prometheus,
        (start, end),
        after,
        grown.try_into().unwrap(),
        (&spend, &spend_grown),
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let version = String::from_utf8(out.stdout).unwrap();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = head.unwrap_or_else(|| "unknown".into());
    assert_eq!(
        version.trim(),
        format!(
            "reasonix-exporter {} (commit {commit})",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn completions_and_man_page_come_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "completions {shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("otlp-endpoint"),
            "{shell}"
        );
    }
    let out = Command::new(BIN).arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH reasonix-exporter 1"), "a roff man page");
}

/// The budget rules beside each budgets file, and the file they are made from.
const BUDGET_RULES: [(&str, &str); 2] = [
    (
        "prometheus/rules/budgets.toml",
        "prometheus/rules/reasonix-budgets.rules.yml",
    ),
    (
        "prometheus/rules/tests/budgets.toml",
        "prometheus/rules/tests/budgets.rules.yml",
    ),
];

/// The rule files Prometheus loads, and the unit tests of their alerts.
const RULE_FILES: [&str; 3] = [
    "prometheus/rules/reasonix-budgets.rules.yml",
    "prometheus/rules/reasonix-fleet.rules.yml",
    "prometheus/rules/tests/budgets.rules.yml",
];
const RULE_TESTS: [&str; 2] = [
    "prometheus/rules/tests/budgets.test.yml",
    "prometheus/rules/tests/fleet.test.yml",
];

#[test]
fn budget_rules_are_what_the_rules_command_makes_of_their_budgets() {
    for (budgets, rules) in BUDGET_RULES {
        let out = Command::new(BIN)
            .arg("rules")
            .arg(deploy(budgets))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            String::from_utf8(out.stdout).unwrap() == read(rules),
            "deploy/{rules} is not what the command makes: reasonix-exporter rules deploy/{budgets} > deploy/{rules}"
        );
    }
}

/// Every `alertname` of the unit tests with whether a case expects it firing (`true`) or not.
fn alert_cases() -> BTreeSet<(String, bool)> {
    let mut cases = BTreeSet::new();
    for file in RULE_TESTS {
        let doc = &YamlLoader::load_from_str(&read(file)).unwrap()[0];
        for test in doc["tests"].as_vec().unwrap() {
            for case in test["alert_rule_test"].as_vec().into_iter().flatten() {
                let name = case["alertname"].as_str().unwrap().to_string();
                let fires = case["exp_alerts"].as_vec().is_some_and(|a| !a.is_empty());
                cases.insert((name, fires));
            }
        }
    }
    cases
}

#[test]
fn every_alert_has_a_case_that_fires_it_and_one_that_must_not() {
    let cases = alert_cases();
    let mut alerts = BTreeSet::new();
    for file in RULE_FILES {
        let doc = &YamlLoader::load_from_str(&read(file)).unwrap()[0];
        for group in doc["groups"].as_vec().unwrap() {
            for rule in group["rules"].as_vec().unwrap() {
                let Some(name) = rule["alert"].as_str() else {
                    continue;
                };
                alerts.insert(name.to_string());
                for key in ["summary", "runbook_url"] {
                    assert!(rule["annotations"][key].as_str().is_some(), "{name}: no {key}");
                }
                assert!(
                    rule["labels"]["severity"].as_str().is_some(),
                    "{name}: no severity"
                );
                assert!(rule["for"].as_str().is_some(), "{name}: no for:");
                let anchor = rule["annotations"]["runbook_url"].as_str().unwrap();
                let anchor = anchor.rsplit_once('#').unwrap().1;
                assert_eq!(anchor, name.to_lowercase());
                assert!(
                    read("README.md").contains(&format!("#### {name}\n")),
                    "{name}: no runbook section in deploy/README.md"
                );
            }
        }
    }
    assert_eq!(alerts.len(), 9, "{alerts:?}");
    for name in &alerts {
        for fires in [true, false] {
            assert!(
                cases.contains(&(name.clone(), fires)),
                "{name}: no unit test in which it {}",
                if fires { "fires" } else { "must not fire" }
            );
        }
    }
}

#[test]
#[ignore = "needs promtool (.ci/run); run with --include-ignored"]
fn rule_files_pass_promtool_and_their_unit_tests() {
    if !installed("promtool") {
        return;
    }
    let run = |args: &[&str], file: &str| {
        let out = Command::new("promtool")
            .args(args)
            .arg(deploy(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {} deploy/{file}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for file in RULE_FILES {
        run(&["check", "rules"], file);
    }
    for file in RULE_TESTS {
        run(&["test", "rules"], file);
    }
}

/// Budgets files at the edges of what `rules` accepts: Prometheus' longest duration, the
/// shortest interval, compound durations, warnings 0.01 % apart, names in other scripts.
const EDGE_BUDGETS: [&str; 3] = [
    "interval = \"1s\"\nfor = \"292y\"\nwarn_at = [0.5, 0.5001, 0.9999]\nbudget = [{ spend = \"1 CNY\", per = \"day\", team = \"équipe 東京\" }]\n",
    "interval = \"1m59s999ms\"\nfor = \"1y2w3d4h5m6s7ms\"\nbudget = [{ spend = \"0.000000001 USD\", per = \"month\", name = \"Zoë: budget, ok\" }]\n",
    "time_zone = \"Asia/Kathmandu\"\nfor = \"0s\"\nbudget = [{ spend = \"5 EUR\", per = \"day\", warn_at = [0.25, 0.75] }, { spend = \"5 EUR\", per = \"month\", user = \"bob\" }]\n",
];

#[test]
#[ignore = "needs promtool (.ci/run); run with --include-ignored"]
fn whatever_rules_accepts_promtool_accepts_with_its_lints_fatal() {
    if !installed("promtool") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, budgets) in EDGE_BUDGETS.iter().enumerate() {
        let path = dir.path().join(format!("budgets-{i}.toml"));
        std::fs::write(&path, budgets).unwrap();
        let out = Command::new(BIN).arg("rules").arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{budgets}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rules = dir.path().join(format!("budgets-{i}.rules.yml"));
        std::fs::write(&rules, &out.stdout).unwrap();
        let check = Command::new("promtool")
            .args(["check", "rules", "--lint=all", "--lint-fatal"])
            .arg(&rules)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{budgets}: promtool refuses what rules made:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
#[ignore = "needs amtool (.ci/run installs prometheus-alertmanager); run with --include-ignored"]
fn alertmanager_example_passes_amtool() {
    if !installed("amtool") {
        return;
    }
    let out = Command::new("amtool")
        .args(["check-config"])
        .arg(deploy("alertmanager/alertmanager.yml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "amtool rejects deploy/alertmanager/alertmanager.yml:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

//! Prometheus and Alertmanager: configurations, budget and fleet rules, their alerts and runbooks.

use super::*;

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

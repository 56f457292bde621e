//! Each budget's alerts: its warnings, its critical and its forecast (the fleet's coverage
//! alerts are deploy/prometheus/rules/reasonix-fleet.rules.yml, which holds nothing of a budget).
//! Every alert has a `for:`, a `severity`, a summary with the numbers and a `runbook_url` into
//! the runbook (deploy/README.md, "Budgets and alerts").

use super::budgets::{Budget, Budgets, Period, Scope};
use super::periods::{COUNTERS, PeriodExprs, growth_rule};

/// One alerting rule as it is written out.
pub struct Alert<'a> {
    pub name: &'a str,
    pub expr: String,
    pub pending: &'a str,
    pub severity: &'a str,
    pub labels: Vec<(&'a str, String)>,
    pub summary: String,
    /// Annotations besides the summary and the runbook link.
    pub annotations: Vec<(&'a str, String)>,
}

/// Writes `alert`, its runbook link `runbook#<name in lower case>`.
pub fn write(out: &mut String, alert: &Alert<'_>, runbook: &str) {
    out.push_str(&format!(
        "      - alert: {}\n        expr: {}\n        for: {}\n        labels:\n          severity: {}\n",
        alert.name,
        super::periods::block(&alert.expr),
        alert.pending,
        alert.severity
    ));
    for (key, value) in &alert.labels {
        out.push_str(&format!("          {key}: {}\n", quoted(value)));
    }
    out.push_str(&format!(
        "        annotations:\n          summary: {}\n",
        quoted(&alert.summary)
    ));
    for (key, value) in &alert.annotations {
        out.push_str(&format!("          {key}: {}\n", quoted(value)));
    }
    out.push_str(&format!(
        "          runbook_url: {}\n",
        quoted(&format!("{runbook}#{}", alert.name.to_lowercase()))
    ));
}

/// A YAML single-quoted string (the budgets file allows no control characters in it).
pub fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The budget's spend so far, as a rule: the growth of its scope's level, in its currency and
/// billing mode, or 0 before anything was spent (so that the dashboard shows every budget).
pub fn spent_expr(budget: &Budget) -> String {
    let period = budget.period.as_str();
    let (level, scope) = match &budget.scope {
        Scope::Everyone => ("", String::new()),
        Scope::Label(label, value) => (level_of(label), format!("{label}=\"{value}\", ")),
    };
    format!(
        "sum({}{{{scope}currency=\"{}\", billing_mode=\"{}\"}})\nor vector(0)",
        growth_rule(level, &COUNTERS[0], period),
        budget.currency,
        budget.billing_mode
    )
}

fn level_of(label: &str) -> &'static str {
    match label {
        "team" => "team:",
        "user" => "user:",
        _ => "instance:",
    }
}

/// The labels every series and alert of a budget carries.
pub fn budget_labels(budget: &Budget) -> Vec<(&'static str, String)> {
    let mut labels = vec![
        ("budget", budget.name.clone()),
        ("scope", budget.scope.text()),
        ("period", budget.period.as_str().into()),
        ("currency", budget.currency.clone()),
        ("billing_mode", budget.billing_mode.clone()),
        ("amount", budget.amount.clone()),
    ];
    if let Scope::Label(label, value) = &budget.scope {
        labels.push((label, value.clone()));
    }
    labels
}

/// The budget's warnings, its critical and its forecast.
pub fn budget_alerts(budgets: &Budgets, budget: &Budget, period: &PeriodExprs, out: &mut String) {
    let spent = format!("reasonix_budget:spent{{budget=\"{}\"}}", budget.name);
    let what = format!(
        "{} {} {} budget for {}",
        budget.amount,
        budget.currency,
        mode_text(&budget.billing_mode),
        match budget.period {
            Period::Day => "today",
            Period::Month => "this month",
        }
    );
    let who = budget.scope.text();
    let spent_text = format!("{{{{ printf \"%.2f\" $value }}}} {}", budget.currency);
    for fraction in &budget.warn_at {
        let percent = percent(*fraction);
        let alert = Alert {
            name: "ReasonixBudgetWarning",
            expr: format!("{spent} >= {fraction} * {}", budget.amount),
            pending: &budgets.pending,
            severity: "warning",
            labels: vec![
                ("budget", budget.name.clone()),
                ("threshold", format!("{percent}%")),
            ],
            summary: format!("{who} has spent {spent_text} of its {what}: past {percent} %."),
            annotations: vec![("spent", "{{ $value }}".into())],
        };
        write(out, &alert, &budgets.runbook);
    }
    let exhausted = Alert {
        name: "ReasonixBudgetExhausted",
        expr: format!("{spent} >= {}", budget.amount),
        pending: &budgets.pending,
        severity: "critical",
        labels: vec![("budget", budget.name.clone()), ("threshold", "100%".into())],
        summary: format!("{who} has spent {spent_text}: its {what} is used up."),
        annotations: vec![("spent", "{{ $value }}".into())],
    };
    write(out, &exhausted, &budgets.runbook);
    let (e, amount) = (&period.elapsed, &budget.amount);
    let forecast = Alert {
        name: "ReasonixBudgetForecast",
        expr: format!(
            "(time() - ({e}) + {amount} * ({e}) / {spent}) < time() - ({e}) + {}\nand {spent} < {amount}\nand on() (vector({e}) >= {})",
            period.length, period.quiet
        ),
        pending: &budgets.pending,
        severity: "warning",
        labels: vec![("budget", budget.name.clone()), ("threshold", "forecast".into())],
        summary: format!(
            "At this pace {who} passes its {what} on {{{{ $value | humanizeTimestamp }}}} (UTC), before the {} ends; spent so far {{{{ with query `{spent}` }}}}{{{{ . | first | value | printf \"%.2f\" }}}}{{{{ end }}}} {}.",
            budget.period.as_str(),
            budget.currency
        ),
        annotations: Vec::new(),
    };
    write(out, &forecast, &budgets.runbook);
}

/// How a summary names a billing mode: a subscription equivalent is never money spent.
fn mode_text(mode: &str) -> String {
    match mode {
        "payg" => "pay-as-you-go".into(),
        "subscription_equivalent" => "subscription-equivalent (not money spent)".into(),
        other => format!("`{other}`"),
    }
}

/// `0.8` → `80`, `0.125` → `12.5`.
pub(super) fn percent(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

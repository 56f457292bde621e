//! The budgets file: a team lead's budgets, one short entry each, read and checked. What the
//! rules made of it say is in `periods.rs` and `alerts.rs`.
//!
//! ```toml
//! time_zone = "Asia/Shanghai"
//! budget = [
//!   { spend = "500 CNY", per = "month", team = "payments" },
//! ]
//! ```

use serde::Deserialize;

use super::zone::Zone;

/// The budgets and how their alerts behave.
#[derive(Debug, Clone, PartialEq)]
pub struct Budgets {
    /// The days and months of every budget.
    pub zone: Zone,
    /// How often Prometheus evaluates the rules (a Prometheus duration, e.g. `1m`).
    pub interval: String,
    /// How long a budget alert's condition must hold before it fires (`for:`).
    pub pending: String,
    /// Where the runbook is: each alert links to its section (`…#reasonixbudgetexhausted`).
    pub runbook: String,
    pub budgets: Vec<Budget>,
}

/// One budget: an amount of one currency, in one billing mode, for one scope, per period.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// What the alerts and the dashboard call it, e.g. `team=payments 500 CNY a month`.
    pub name: String,
    pub scope: Scope,
    /// The amount as written (a plain decimal), e.g. `500`.
    pub amount: String,
    pub currency: String,
    /// `payg` unless said otherwise; `subscription_equivalent` is never money spent.
    pub billing_mode: String,
    pub period: Period,
    /// The fractions of the amount that warn, lowest first, each below 1.
    pub warn_at: Vec<f64>,
}

/// Whose spend a budget holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Everyone,
    /// A label the gateway sets (`team`, `user`) or Prometheus' `instance`, and its value.
    Label(&'static str, String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

impl Period {
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }
}

impl Scope {
    /// `everyone`, or `team=payments`.
    pub fn text(&self) -> String {
        match self {
            Scope::Everyone => "everyone".into(),
            Scope::Label(label, value) => format!("{label}={value}"),
        }
    }
}

/// The file as written: every key optional but the budgets, nothing unknown.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    time_zone: Option<String>,
    warn_at: Option<Vec<f64>>,
    interval: Option<String>,
    #[serde(rename = "for")]
    pending: Option<String>,
    runbook: Option<String>,
    #[serde(default)]
    budget: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    spend: String,
    per: String,
    team: Option<String>,
    user: Option<String>,
    instance: Option<String>,
    billing_mode: Option<String>,
    warn_at: Option<Vec<f64>>,
    name: Option<String>,
}

/// Where the runbook is when the file does not say: this repository's deploy guide.
pub const RUNBOOK: &str = "deploy/README.md";
const WARN_AT: [f64; 1] = [0.8];
const INTERVAL: &str = "1m";
const PENDING: &str = "5m";

/// Reads a budgets file's text; an error names the budget (by its place) and what to write.
pub fn parse(text: &str) -> Result<Budgets, String> {
    let file: File = toml::from_str(text).map_err(|e| one_line(&e.to_string()))?;
    let zone = Zone::parse(file.time_zone.as_deref().unwrap_or("UTC"))?;
    let warn_at = fractions(file.warn_at.as_deref().unwrap_or(&WARN_AT), "warn_at")?;
    let (interval, seconds) = duration(file.interval.as_deref().unwrap_or(INTERVAL), "interval")?;
    if seconds == 0 {
        return Err(format!(
            "interval = `{interval}`: at least \"1s\" (the rules are evaluated in whole seconds)"
        ));
    }
    if seconds > 120 {
        return Err(format!(
            "interval = `{interval}`: at most \"2m\" (the rules carry each value a few evaluations)"
        ));
    }
    let (pending, _) = duration(file.pending.as_deref().unwrap_or(PENDING), "for")?;
    let runbook = file.runbook.unwrap_or_else(|| RUNBOOK.into());
    if runbook.chars().any(|c| hidden(c) || matches!(c, '#' | '{' | '}')) {
        return Err(
            "runbook: a URL without control, invisible or bidirectional characters, braces or a `#…` part"
                .into(),
        );
    }
    let mut budgets = Vec::new();
    for (i, entry) in file.budget.into_iter().enumerate() {
        let at = format!("budget {} (`{}`)", i + 1, entry.spend);
        let budget = entry.check(&warn_at).map_err(|e| format!("{at}: {e}"))?;
        if budgets.iter().any(|b: &Budget| b.name == budget.name) {
            return Err(format!(
                "{at}: a second budget named `{}`; give one a `name`",
                budget.name
            ));
        }
        budgets.push(budget);
    }
    Ok(Budgets {
        zone,
        interval,
        pending,
        runbook,
        budgets,
    })
}

impl Entry {
    fn check(self, file_warn_at: &[f64]) -> Result<Budget, String> {
        let (amount, currency) = spend(&self.spend)?;
        let period = match self.per.as_str() {
            "day" => Period::Day,
            "month" => Period::Month,
            other => return Err(format!("per = `{other}`: write per = \"day\" or per = \"month\"")),
        };
        let scopes = [
            ("team", self.team),
            ("user", self.user),
            ("instance", self.instance),
        ];
        let mut given = scopes.into_iter().filter_map(|(label, v)| Some((label, v?)));
        let scope = match (given.next(), given.next()) {
            (None, _) => Scope::Everyone,
            (Some((label, value)), None) => Scope::Label(label, label_value(label, value)?),
            (Some(_), Some(_)) => return Err("one of team, user or instance, not two".into()),
        };
        let billing_mode = label_value("billing_mode", self.billing_mode.unwrap_or("payg".into()))?;
        let warn_at = match self.warn_at {
            Some(list) => fractions(&list, "warn_at")?,
            None => file_warn_at.to_vec(),
        };
        let name = match self.name {
            Some(name) => label_value("name", name)?,
            None => {
                let mode = if billing_mode == "payg" {
                    String::new()
                } else {
                    format!(" {billing_mode}")
                };
                format!("{} {amount} {currency} a {}{mode}", scope.text(), period.as_str())
            }
        };
        Ok(Budget {
            name,
            scope,
            amount,
            currency,
            billing_mode,
            period,
            warn_at,
        })
    }
}

/// `"500 CNY"`: a plain decimal above zero and an ISO 4217-shaped code, as Reasonix writes them.
fn spend(text: &str) -> Result<(String, String), String> {
    let wrong = || format!("spend = `{text}`: write an amount and a currency, e.g. spend = \"500 CNY\"");
    let (amount, currency) = text.trim().split_once(' ').ok_or_else(wrong)?;
    let currency = currency.trim();
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, "0"));
    let digits =
        |s: &str, most: usize| !s.is_empty() && s.len() <= most && s.bytes().all(|b| b.is_ascii_digit());
    // No leading zero: PromQL reads `010` as octal.
    let leading_zero = whole.len() > 1 && whole.starts_with('0');
    if !digits(whole, 15)
        || !digits(fraction, 9)
        || leading_zero
        || amount.bytes().all(|b| b == b'0' || b == b'.')
    {
        return Err(wrong());
    }
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(wrong());
    }
    Ok((amount.to_string(), currency.to_string()))
}

/// A character a label value may not hold, as the exporter's own labels may not (contract §2):
/// a control character, or one that shows as nothing or reorders text on screen.
fn hidden(c: char) -> bool {
    c.is_control() || crate::inert_text::is_invisible(c) || crate::inert_text::is_bidi_control(c)
}

/// A label value a budget matches or carries: at most 256 bytes as the exporter's own labels,
/// nothing a reader cannot see, and none of the characters that quote or template in the rules
/// made of it (so that the value means itself in PromQL, YAML and the alerts' templates alike).
fn label_value(key: &str, value: String) -> Result<String, String> {
    let quoting = |c: char| matches!(c, '"' | '\\' | '\'' | '`' | '{' | '}');
    if value.is_empty() || value.len() > 256 || value.chars().any(|c| hidden(c) || quoting(c)) {
        return Err(format!(
            "{key}: 1 to 256 bytes without control, invisible or bidirectional characters, quotes, backslashes or braces"
        ));
    }
    Ok(value)
}

/// Warning fractions: each above 0 and below 1 (100 % is the critical alert), lowest first.
fn fractions(list: &[f64], key: &str) -> Result<Vec<f64>, String> {
    let mut out = list.to_vec();
    if out.iter().any(|f| !(*f > 0.0 && *f < 1.0)) {
        return Err(format!(
            "{key}: fractions between 0 and 1, e.g. {key} = [0.8] (100 % always alerts)"
        ));
    }
    out.sort_by(f64::total_cmp);
    out.dedup();
    // Each warning alert is labelled with its percentage: two that print alike would be two
    // rules Prometheus takes for one (promtool's duplicate-rule check).
    for pair in out.windows(2) {
        let (a, b) = (super::alerts::percent(pair[0]), super::alerts::percent(pair[1]));
        if a == b {
            return Err(format!(
                "{key}: {} and {} are both {a} %; give fractions at least 0.0001 apart",
                pair[0], pair[1]
            ));
        }
    }
    Ok(out)
}

/// A Prometheus duration such as `30s`, `1m` or `1h30m`, as Prometheus reads one: each unit at
/// most once, from years down to milliseconds, the whole within Go's 292 years; above zero (but
/// for `for`). With its length in whole seconds (a part in milliseconds counts as none).
fn duration(text: &str, key: &str) -> Result<(String, u64), String> {
    const UNITS: [(&str, u64); 7] = [
        ("y", 31_536_000_000),
        ("w", 604_800_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("ms", 1),
        ("m", 60_000),
        ("s", 1_000),
    ];
    /// The units in the order Prometheus takes them.
    const ORDER: [&str; 7] = ["y", "w", "d", "h", "m", "s", "ms"];
    let wrong = || {
        format!(
            "{key} = `{text}`: a duration such as \"30s\", \"1m\" or \"1h30m\" (each unit once, largest first)"
        )
    };
    let mut rest = text;
    let (mut any, mut millis, mut next_unit) = (false, 0u128, 0);
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let unit = UNITS.into_iter().find(|(u, _)| rest[digits..].starts_with(u));
        let (Some((unit, scale)), true) = (unit, digits > 0) else {
            return Err(wrong());
        };
        let at = ORDER
            .iter()
            .position(|u| *u == unit)
            .expect("every unit is ordered");
        if at < next_unit {
            return Err(wrong());
        }
        next_unit = at + 1;
        any |= rest[..digits].bytes().any(|b| b != b'0');
        let n: u128 = rest[..digits].parse().unwrap_or(u128::MAX);
        millis = millis.saturating_add(n.saturating_mul(u128::from(scale)));
        rest = &rest[digits + unit.len()..];
    }
    // Go's time.Duration: nanoseconds in an i64.
    if millis.saturating_mul(1_000_000) > i64::MAX as u128 {
        return Err(format!(
            "{key} = `{text}`: out of range (Prometheus takes at most 292 years)"
        ));
    }
    if !any && key != "for" {
        return Err(format!("{key} = `{text}`: a duration above zero, e.g. \"1m\""));
    }
    let text = if text.is_empty() { "0s".into() } else { text.into() };
    Ok((text, (millis / 1000) as u64))
}

/// A TOML error's first line with its place (toml's own message spans several lines).
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_case_is_one_line() {
        let b = parse("budget = [{ spend = \"500 CNY\", per = \"month\", team = \"payments\" }]").unwrap();
        assert_eq!(b.zone, Zone::parse("UTC").unwrap());
        let budget = &b.budgets[0];
        assert_eq!(budget.name, "team=payments 500 CNY a month");
        assert_eq!(budget.scope, Scope::Label("team", "payments".into()));
        assert_eq!((budget.amount.as_str(), budget.currency.as_str()), ("500", "CNY"));
        assert_eq!(budget.billing_mode, "payg");
        assert_eq!(budget.warn_at, vec![0.8]);
        assert_eq!((b.interval.as_str(), b.pending.as_str()), ("1m", "5m"));
    }

    #[test]
    fn durations_are_read_as_prometheus_reads_them() {
        for (text, seconds) in [
            ("1h30m", 5400),
            ("1y2w3d4h5m6s7ms", 33_019_506),
            ("292y", 9_208_512_000),
            ("90s", 90),
            ("1s500ms", 1),
        ] {
            assert_eq!(duration(text, "for"), Ok((text.to_owned(), seconds)), "{text}");
        }
        assert_eq!(duration("0s", "for"), Ok(("0s".to_owned(), 0)));
    }

    #[test]
    fn a_subscription_equivalent_budget_is_named_so() {
        let b = parse("budget = [{ spend = \"9.5 USD\", per = \"day\", billing_mode = \"subscription_equivalent\", warn_at = [0.9, 0.5] }]").unwrap();
        assert_eq!(
            b.budgets[0].name,
            "everyone 9.5 USD a day subscription_equivalent"
        );
        assert_eq!(b.budgets[0].warn_at, vec![0.5, 0.9]);
    }

    #[test]
    fn mistakes_are_one_line_naming_the_budget_and_the_fix() {
        for (text, says) in [
            (
                "budget = [{ spend = \"500\", per = \"month\" }]",
                "budget 1 (`500`): spend = `500`: write an amount and a currency",
            ),
            (
                "budget = [{ spend = \"500 cny\", per = \"month\" }]",
                "write an amount and a currency",
            ),
            (
                "budget = [{ spend = \"0 CNY\", per = \"month\" }]",
                "write an amount and a currency",
            ),
            (
                "budget = [{ spend = \"1e3 CNY\", per = \"month\" }]",
                "write an amount and a currency",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"week\" }]",
                "per = `week`: write per = \"day\" or per = \"month\"",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\", team = \"a\", user = \"b\" }]",
                "one of team, user or instance",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\", team = \"a\\u0007\" }]",
                "team: 1 to 256 bytes",
            ),
            (
                "warn_at = [1.0]\nbudget = []",
                "warn_at: fractions between 0 and 1",
            ),
            ("interval = \"0s\"", "interval = `0s`: a duration above zero"),
            ("interval = \"fast\"", "interval = `fast`: a duration such as"),
            // Prometheus' grammar: each unit once, largest first, within 292 years.
            ("interval = \"30s30s\"", "interval = `30s30s`: a duration such as"),
            ("interval = \"1m1h\"", "interval = `1m1h`: a duration such as"),
            ("for = \"5m1d\"", "for = `5m1d`: a duration such as"),
            ("for = \"300y\"", "for = `300y`: out of range"),
            ("for = \"293y\"", "for = `293y`: out of range"),
            ("interval = \"1ms\"", "interval = `1ms`: at least \"1s\""),
            (
                "warn_at = [0.8, 0.80001]\nbudget = []",
                "warn_at: 0.8 and 0.80001 are both 80 %",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\", team = \"pay\\u202Ements\" }]",
                "team: 1 to 256 bytes without control, invisible or bidirectional",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\", user = \"bo\\u200Bb\" }]",
                "user: 1 to 256 bytes",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\", name = \"x\\u2066y\" }]",
                "name: 1 to 256 bytes",
            ),
            (
                "budget = [{ spend = \"5 CNY\", per = \"day\" }, { spend = \"5 CNY\", per = \"day\" }]",
                "budget 2 (`5 CNY`): a second budget named `everyone 5 CNY a day`",
            ),
            ("budgets = []", "unknown field `budgets`"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}

//! Recording rules for what was counted today and this month, in the budgets' time zone, exact
//! in the sense of contract §4's "Any window": per series, the newest value less the value at
//! the period's start (the last point at or before it), or, for a series whose first point is in
//! the period, less that first point (a birth's zero, or a store's history, which is therefore
//! never spent).
//!
//! PromQL has no range "since midnight", so each series' value at the period's start is kept by
//! a rule that reads its own previous value: taken when the period starts, from the point at or
//! before that moment (a subquery whose one-minute steps fall on the boundary), carried from one
//! evaluation to the next while the period lasts. A series with a start and no point since (a
//! machine that is off) has grown by 0, recorded as such, so that nothing of a period before is
//! ever carried into this one. For the first `SETTLE` seconds of a period it
//! is taken again at every evaluation, so that a point that reaches Prometheus late (remote write
//! through a collector's batch) still counts for the period it belongs to.

use super::zone::Zone;

/// How long after a period starts its starting values are taken again (seconds).
pub const SETTLE: u32 = 300;

/// How far back a rule reads its own last value: a few evaluations (at most 2 minutes apart),
/// and less than [`SETTLE`], so that what it carries was recorded in the current period, never
/// in the one before (a series absent for an evaluation has a stale marker, which a range skips).
pub const CARRY: &str = "4m";

/// A counter the periods are kept for.
pub struct Counter {
    /// The Prometheus name, e.g. `reasonix_cost_total`.
    pub metric: &'static str,
    /// The rules' stem, e.g. `reasonix_cost`.
    pub stem: &'static str,
    /// The labels each aggregation keeps besides its level's (`currency`, `billing_mode`).
    pub kept: &'static str,
}

pub const COUNTERS: [Counter; 2] = [
    Counter {
        metric: "reasonix_cost_total",
        stem: "reasonix_cost",
        kept: "currency, billing_mode",
    },
    Counter {
        metric: "reasonix_tokens_total",
        stem: "reasonix_tokens",
        kept: "",
    },
];

/// The levels of aggregation: a rule's prefix and the labels it sums by.
pub const LEVELS: [(&str, &str); 4] = [
    ("instance:", "job, instance"),
    ("team:", "team"),
    ("user:", "user"),
    ("", ""),
];

/// The local time of the rules' zone, as a Unix time shifted by its offset (the first rule).
pub const LOCAL_TIME: &str = "reasonix:local_time_seconds";

/// What PromQL needs of one period: an id that changes when it does, the seconds since it
/// started, its length, and the test of "this step is its first second" inside a subquery.
pub struct PeriodExprs {
    pub name: &'static str,
    pub id: String,
    pub elapsed: String,
    pub length: String,
    pub boundary: String,
    /// How long the forecast stays quiet after the period starts (seconds).
    pub quiet: u32,
}

pub fn periods(zone: &Zone) -> [PeriodExprs; 2] {
    let local = format!("scalar({LOCAL_TIME})");
    let step_local = format!("(time() + {})", zone.offset_expr());
    let midnight = format!("(vector({step_local} % 86400) == 0)");
    [
        PeriodExprs {
            name: "day",
            id: format!("scalar(floor({LOCAL_TIME} / 86400))"),
            elapsed: format!("{local} % 86400"),
            length: "86400".into(),
            boundary: midnight.clone(),
            quiet: 4 * 3600,
        },
        PeriodExprs {
            name: "month",
            id: format!("scalar(year({LOCAL_TIME}) * 12 + month({LOCAL_TIME}))"),
            elapsed: format!("(scalar(day_of_month({LOCAL_TIME})) - 1) * 86400 + {local} % 86400"),
            length: format!("scalar(days_in_month({LOCAL_TIME})) * 86400"),
            boundary: format!("{midnight} and on() (day_of_month(vector{step_local}) == 1)"),
            quiet: 2 * 86400,
        },
    ]
}

/// The name of the rule holding `counter`'s growth in `period` at `level`, e.g.
/// `team:reasonix_cost:month`.
pub fn growth_rule(level: &str, counter: &Counter, period: &str) -> String {
    format!("{level}{}:{period}", counter.stem)
}

/// The rules of one counter in one period: its series' starting values, their growth, and the
/// growth summed at each level.
pub fn rules(counter: &Counter, p: &PeriodExprs, out: &mut String) {
    let (m, stem, name) = (counter.metric, counter.stem, p.name);
    let same_period = format!("(vector({}) == last_over_time(reasonix:{name}_id[1d]))", p.id);
    let settled = format!("(vector({}) >= {SETTLE})", p.elapsed);
    record(
        out,
        &format!("{stem}:{name}_start"),
        &format!(
            "(\n  last_over_time({stem}:{name}_start[{CARRY}])\n    and on() {settled}\n    and on() {same_period}\n)\nor\nlast_over_time((last_over_time({m}[1d]) and on() {})[10m:1m])\nor\nmin_over_time({m}[10m])",
            p.boundary
        ),
    );
    record(
        out,
        &format!("{stem}:{name}_series"),
        &format!(
            "(last_over_time({m}[10m]) - {stem}:{name}_start)\nor\n(last_over_time({stem}:{name}_series[{CARRY}]) and on() {settled} and on() {same_period})\nor\n({stem}:{name}_start * 0)"
        ),
    );
    for (level, by) in LEVELS {
        let by = [by, counter.kept]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        record(
            out,
            &growth_rule(level, counter, name),
            &format!("sum by ({by}) ({stem}:{name}_series)"),
        );
    }
}

/// The rules that end the group: each period's id, read by the next evaluation to tell that a
/// period has changed.
pub fn ids(periods: &[PeriodExprs], out: &mut String) {
    for p in periods {
        record(
            out,
            &format!("reasonix:{}_id", p.name),
            &format!("vector({})", p.id),
        );
    }
}

/// One recording rule, its expression a YAML block.
pub fn record(out: &mut String, name: &str, expr: &str) {
    out.push_str(&format!(
        "      - record: {name}\n        expr: {}\n",
        block(expr)
    ));
}

/// `text` as a YAML literal block in a rule: nothing in PromQL (`#`, `: `, quotes) is read as YAML.
pub fn block(text: &str) -> String {
    let mut out = String::from("|\n");
    for line in text.lines() {
        out.push_str("          ");
        out.push_str(line);
        out.push('\n');
    }
    out.pop();
    out
}

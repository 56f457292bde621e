//! `reasonix-exporter rules BUDGETS`: a budgets file made into one Prometheus rule file, with
//! the recording rules of today's and this month's counts in the budgets' time zone and each
//! budget's alerts. Generated rather than written by hand
//! because PromQL knows no time zone and no "since midnight": the rules carry the zone's offsets
//! and each budget's numbers, and a budget stays one short line for its team lead.

pub mod alerts;
pub mod budgets;
pub mod periods;
pub mod zone;

use std::path::Path;

use anyhow::Context as _;

use budgets::Budgets;

use crate::inert_text::ShowPath;

/// The most a budgets file may hold: far more than any team writes.
const MAX_BUDGETS_BYTES: u64 = 1 << 20;

/// The top-level entry point for `rules`: the rule file for the budgets at `path`.
pub fn rules(path: &Path) -> anyhow::Result<Vec<u8>> {
    let shown = crate::inert_text::one_line(&path.shown().to_string(), 200);
    let bytes = crate::own_files::read_named(path, MAX_BUDGETS_BYTES)
        .with_context(|| format!("the budgets file {shown} cannot be read"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("the budgets file {shown} is not UTF-8 text"))?;
    let budgets = budgets::parse(&text).map_err(|e| anyhow::anyhow!("the budgets file {shown}: {e}"))?;
    Ok(render(&budgets).into_bytes())
}

/// The rule file: one group, evaluated in order, so that each rule reads what the rules before
/// it recorded at the same moment, and the periods' ids, last, what the previous evaluation saw.
pub fn render(budgets: &Budgets) -> String {
    let mut out = format!(
        "# Made by `reasonix-exporter rules` from a budgets file: change that file and run it again.\n# Days and months are those of {}; its changes of offset are carried up to 2036.\ngroups:\n  - name: reasonix-budgets\n    interval: {}\n    rules:\n",
        budgets.zone.name, budgets.interval
    );
    periods::record(
        &mut out,
        periods::LOCAL_TIME,
        &format!("vector(time() + {})", budgets.zone.offset_expr()),
    );
    let periods = periods::periods(&budgets.zone);
    for counter in &periods::COUNTERS {
        for period in &periods {
            periods::rules(counter, period, &mut out);
        }
    }
    for budget in &budgets.budgets {
        let period = &periods[budget.period as usize];
        let labels = alerts::budget_labels(budget);
        record_labelled(
            &mut out,
            "reasonix_budget:spent",
            &alerts::spent_expr(budget),
            &labels,
        );
        record_labelled(
            &mut out,
            "reasonix_budget:amount",
            &format!("vector({})", budget.amount),
            &labels,
        );
        let use_expr = format!(
            "reasonix_budget:spent{{budget=\"{}\"}} / {}",
            budget.name, budget.amount
        );
        record_labelled(&mut out, "reasonix_budget:use", &use_expr, &labels[..1]);
        alerts::budget_alerts(budgets, budget, period, &mut out);
    }
    periods::ids(&periods, &mut out);
    out
}

fn record_labelled(out: &mut String, name: &str, expr: &str, labels: &[(&str, String)]) {
    periods::record(out, name, expr);
    if !labels.is_empty() {
        out.push_str("        labels:\n");
        for (key, value) in labels {
            out.push_str(&format!("          {key}: {}\n", alerts::quoted(value)));
        }
    }
}

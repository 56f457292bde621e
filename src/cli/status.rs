//! `status`: lifetime totals from the store, per attribute set, and ingestion counts. No network.

use anyhow::Context;

use crate::inert_text::ShowPath;
use crate::series::{Quantity, Totals};
use crate::settings::Settings;
use crate::status_file::{self, StatusJson, thousands};
use crate::store::{Store, StoreError};

/// The top-level entry point for `reasonix-exporter status`.
pub fn status(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let state_dir = &settings.state_dir.value;
    let (doc, pass_left) = match Store::open_briefly(state_dir) {
        Ok(store) => (
            StatusJson::of(store.lifetime(), store.counts()),
            store.cost_pass().len(),
        ),
        Err(StoreError::Locked { owner, .. }) => {
            let path = status_file::path_in(state_dir);
            let bytes =
                crate::own_files::read_own(&path, crate::own_files::MAX_OWN_BYTES).with_context(|| {
                    format!(
                        "the store is in use by a running exporter and its snapshot {} cannot be read",
                        path.shown()
                    )
                })?;
            let doc = serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "snapshot {} is unreadable; it is rewritten on the next commit",
                    path.shown()
                )
            })?;
            crate::events::daemon::status_from_snapshot(owner);
            (doc, 0)
        }
        Err(e) => return Err(e.into()),
    };
    let text = if json {
        // The JSON keeps the documented shape (series and lines); where `run` serves `/metrics`
        // is for the table.
        let doc = StatusJson {
            prometheus: None,
            ..doc
        };
        serde_json::to_string_pretty(&doc).expect("plain data serialises")
    } else {
        let mut table = render_table(&doc);
        if pass_left > 0 {
            table.push('\n');
            table.push_str(&cost_pass_left(pass_left));
        }
        table
    };
    super::print(format!("{text}\n").as_bytes())?;
    Ok(())
}

fn render_table(doc: &StatusJson) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = ["model_ref", "provider", "source"].map(String::from).to_vec();
    header.extend(Quantity::ALL.iter().map(|q| q.key().to_string()));
    rows.push(header);
    let mut sum = Totals::default();
    for series in &doc.series {
        sum.add(&series.totals);
        let mut row = vec![
            series.model_ref.clone(),
            series.provider.clone(),
            series.source.clone(),
        ];
        row.extend(Quantity::ALL.map(|q| thousands(series.totals.get(q))));
        rows.push(row);
    }
    let mut total_row = vec!["total".to_string(), String::new(), String::new()];
    total_row.extend(Quantity::ALL.map(|q| thousands(sum.get(q))));
    rows.push(total_row);

    let mut out = aligned(&rows, 3, true);
    out.push_str(&render_cost(doc));
    let l = &doc.lines;
    out.push_str(&format!(
        "\nlines: {} read, {} counted, {} duplicate, {} rejected",
        thousands(l.read),
        thousands(l.counted),
        thousands(l.duplicate),
        thousands(l.rejected)
    ));
    if let Some(addr) = &doc.prometheus {
        out.push_str(&format!("\nrun serves /metrics on http://{addr}/metrics"));
    }
    out
}

/// `rows` in columns two spaces apart: the first `labels` columns left-aligned, the rest (numbers)
/// right-aligned; with `total_rule`, a rule above the last row.
fn aligned(rows: &[Vec<String>], labels: usize, total_rule: bool) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|col| rows.iter().map(|r| r[col].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if total_rule && i == rows.len() - 1 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(col, (cell, w))| {
                if col < labels {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Spend per currency (never added across currencies), then the requests without a price.
fn render_cost(doc: &StatusJson) -> String {
    let mut out = String::new();
    let mut currencies: Vec<&str> = doc.cost.iter().map(|c| c.currency.as_str()).collect();
    currencies.sort_unstable();
    currencies.dedup();
    for currency in currencies {
        out.push_str(&format!(
            "\ncost in {currency}, Reasonix's estimate at list price (not a bill):\n"
        ));
        let header = ["model_ref", "provider", "source", "billing_mode", "amount"];
        let mut rows = vec![header.map(String::from).to_vec()];
        rows.extend(doc.cost.iter().filter(|c| c.currency == currency).map(|c| {
            let cells = [&c.model_ref, &c.provider, &c.source, &c.billing_mode, &c.amount];
            cells.map(|cell| cell.clone()).to_vec()
        }));
        out.push_str(&aligned(&rows, 4, false));
    }
    // Per series and reason in `--json`; here, how many went unpriced and why.
    let (_, reasons) = doc.requests_by_pricing();
    if !reasons.is_empty() {
        let listed: Vec<String> = reasons
            .iter()
            .map(|(r, n)| format!("{r} {}", thousands(*n)))
            .collect();
        out.push_str(&format!("\nrequests unpriced: {}\n", listed.join(", ")));
    }
    out
}

/// What an upgraded store's cost pass has still to do (`status` and `doctor`).
pub fn cost_pass_left(files: usize) -> String {
    format!(
        "the cost of the lines counted before the upgrade is still to be read from {files} ledger files: the next `once` or `run` adds it"
    )
}

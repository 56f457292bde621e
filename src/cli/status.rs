//! `status`: lifetime totals from the store, per attribute set, and ingestion counts. No network.

use serde::Serialize;

use super::settings::Settings;
use crate::series::{AttrSet, Quantity, Totals};
use crate::store::Store;
use crate::store::counts::IngestCounts;

#[derive(Debug, Serialize)]
struct StatusJson<'a> {
    series: Vec<SeriesJson<'a>>,
    lines: LinesJson,
}

#[derive(Debug, Serialize)]
struct SeriesJson<'a> {
    model_ref: &'a str,
    provider: &'a str,
    source: &'a str,
    prompt: u64,
    completion: u64,
    reasoning: u64,
    cache_hit: u64,
    cache_miss: u64,
    total: u64,
    requests: u64,
    turns: u64,
}

#[derive(Debug, Serialize)]
struct LinesJson {
    read: u64,
    counted: u64,
    duplicate: u64,
    rejected: u64,
}

/// The top-level entry point for `reasonix-exporter status`.
pub fn status(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let store = Store::open(&settings.state_dir.value, false)?;
    let text = if json {
        render_json(store.lifetime(), store.counts())
    } else {
        render_table(store.lifetime(), store.counts())
    };
    println!("{text}");
    Ok(())
}

fn render_json(lifetime: &std::collections::BTreeMap<AttrSet, Totals>, counts: &IngestCounts) -> String {
    let series = lifetime
        .iter()
        .map(|(a, t)| SeriesJson {
            model_ref: &a.model_ref,
            provider: &a.provider,
            source: &a.source,
            prompt: t.get(Quantity::Prompt),
            completion: t.get(Quantity::Completion),
            reasoning: t.get(Quantity::Reasoning),
            cache_hit: t.get(Quantity::CacheHit),
            cache_miss: t.get(Quantity::CacheMiss),
            total: t.get(Quantity::Total),
            requests: t.get(Quantity::Requests),
            turns: t.get(Quantity::Turns),
        })
        .collect();
    let status = StatusJson {
        series,
        lines: LinesJson {
            read: counts.read(),
            counted: counts.counted,
            duplicate: counts.duplicate,
            rejected: counts.rejected_total(),
        },
    };
    serde_json::to_string_pretty(&status).expect("plain data serialises")
}

fn render_table(lifetime: &std::collections::BTreeMap<AttrSet, Totals>, counts: &IngestCounts) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = ["model_ref", "provider", "source"].map(String::from).to_vec();
    header.extend(Quantity::ALL.iter().map(|q| q.key().to_string()));
    rows.push(header);
    let mut sum = Totals::default();
    for (attrs, totals) in lifetime {
        sum.add(totals);
        let mut row = vec![
            attrs.model_ref.clone(),
            attrs.provider.clone(),
            attrs.source.clone(),
        ];
        row.extend(Quantity::ALL.iter().map(|q| thousands(totals.get(*q))));
        rows.push(row);
    }
    let mut total_row = vec!["total".to_string(), String::new(), String::new()];
    total_row.extend(Quantity::ALL.iter().map(|q| thousands(sum.get(*q))));
    rows.push(total_row);

    let widths: Vec<usize> = (0..rows[0].len())
        .map(|col| rows.iter().map(|r| r[col].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if i == rows.len() - 1 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            // Labels left-aligned, numbers right-aligned.
            .map(|(col, (cell, w))| {
                if col < 3 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\nlines: {} read, {} counted, {} duplicate, {} rejected",
        thousands(counts.read()),
        thousands(counts.counted),
        thousands(counts.duplicate),
        thousands(counts.rejected_total())
    ));
    out
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}

//! `status`: lifetime totals from the store, per attribute set, and ingestion counts. No network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::settings::Settings;
use crate::series::{AttrSet, Quantity, Totals};
use crate::store::counts::IngestCounts;
use crate::store::{Store, StoreError};

/// The `status --json` document.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusJson {
    pub series: Vec<SeriesJson>,
    pub lines: LinesJson,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SeriesJson {
    pub model_ref: String,
    pub provider: String,
    pub source: String,
    pub prompt: u64,
    pub completion: u64,
    pub reasoning: u64,
    pub cache_hit: u64,
    pub cache_miss: u64,
    pub total: u64,
    pub requests: u64,
    pub turns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LinesJson {
    pub read: u64,
    pub counted: u64,
    pub duplicate: u64,
    pub rejected: u64,
}

/// Where a running daemon leaves its latest committed totals for `status`, since the store
/// itself is locked while it runs.
pub fn snapshot_path(state_dir: &Path) -> PathBuf {
    state_dir.join("status.json")
}

/// The top-level entry point for `reasonix-exporter status`.
pub fn status(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let state_dir = &settings.state_dir.value;
    let doc = match Store::open_briefly(state_dir) {
        Ok(store) => StatusJson::of(store.lifetime(), store.counts()),
        Err(StoreError::Locked { owner, .. }) => {
            let path = snapshot_path(state_dir);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "the store is in use by a running exporter and its snapshot {} cannot be read",
                    path.display()
                )
            })?;
            let doc = serde_json::from_str(&text).with_context(|| {
                format!(
                    "snapshot {} is unreadable; it is rewritten on the next commit",
                    path.display()
                )
            })?;
            tracing::debug!(
                "read from the running exporter's last commit{}",
                owner.map(|p| format!(" (pid {p})")).unwrap_or_default()
            );
            doc
        }
        Err(e) => return Err(e.into()),
    };
    let text = if json {
        serde_json::to_string_pretty(&doc).expect("plain data serialises")
    } else {
        render_table(&doc)
    };
    println!("{text}");
    Ok(())
}

/// Writes the snapshot `status` reads while the daemon holds the store: a temporary file renamed
/// over the old one, so a reader never sees half of it.
pub fn write_snapshot(state_dir: &Path, doc: &StatusJson) -> std::io::Result<()> {
    write_json(&snapshot_path(state_dir), doc)
}

/// Writes `value` as JSON to a temporary file renamed over `path`. Not fsynced: these files are
/// views of the store for other commands, rewritten on the next change.
pub fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(tmp, path)
}

impl StatusJson {
    pub fn of(lifetime: &BTreeMap<AttrSet, Totals>, counts: &IngestCounts) -> StatusJson {
        let series = lifetime
            .iter()
            .map(|(a, t)| SeriesJson {
                model_ref: a.model_ref.clone(),
                provider: a.provider.clone(),
                source: a.source.clone(),
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
        StatusJson {
            series,
            lines: LinesJson {
                read: counts.read(),
                counted: counts.counted,
                duplicate: counts.duplicate,
                rejected: counts.rejected_total(),
            },
        }
    }
}

impl SeriesJson {
    fn values(&self) -> [u64; 8] {
        [
            self.prompt,
            self.completion,
            self.reasoning,
            self.cache_hit,
            self.cache_miss,
            self.total,
            self.requests,
            self.turns,
        ]
    }
}

fn render_table(doc: &StatusJson) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = ["model_ref", "provider", "source"].map(String::from).to_vec();
    header.extend(Quantity::ALL.iter().map(|q| q.key().to_string()));
    rows.push(header);
    let mut sum = [0u64; 8];
    for series in &doc.series {
        let values = series.values();
        for (a, b) in sum.iter_mut().zip(values) {
            *a = a.saturating_add(b);
        }
        let mut row = vec![
            series.model_ref.clone(),
            series.provider.clone(),
            series.source.clone(),
        ];
        row.extend(values.iter().map(|v| thousands(*v)));
        rows.push(row);
    }
    let mut total_row = vec!["total".to_string(), String::new(), String::new()];
    total_row.extend(sum.iter().map(|v| thousands(*v)));
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
    let l = &doc.lines;
    out.push_str(&format!(
        "\nlines: {} read, {} counted, {} duplicate, {} rejected",
        thousands(l.read),
        thousands(l.counted),
        thousands(l.duplicate),
        thousands(l.rejected)
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

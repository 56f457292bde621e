//! The frontier's lines read again: each file's history region, checked against the hash the
//! store took of it, every line decoded and counted once (a copy in another file is the same
//! line, as the seen set has it), by series and grid point.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::{Grid, HistoryError, Summary};
use crate::ledger::decode::{Decoded, decode};
use crate::ledger::discover::ledger_files;
use crate::ledger::quote::Amount;
use crate::ledger::tail::{self, CHUNK};
use crate::series::cost::{CostSeries, UnpricedSeries};
use crate::series::{AttrSet, Part, QuickHash, SeriesDeltas, Sums, Totals};
use crate::store::history::{FrontierFile, HistoryFrontier};
use crate::store::seen::LineHash;

/// Each series' growth, as `(grid point, delta)` in the order read.
#[derive(Debug, Default)]
pub struct Timelines {
    pub tokens: BTreeMap<AttrSet, Vec<(i64, Totals)>>,
    pub cost: BTreeMap<CostSeries, Vec<(i64, Amount)>>,
    pub unpriced: BTreeMap<UnpricedSeries, Vec<(i64, u64)>>,
}

impl Timelines {
    pub fn series(&self) -> usize {
        self.tokens.len() + self.cost.len() + self.unpriced.len()
    }

    fn add(&mut self, at: i64, sums: Sums) {
        for (key, delta) in sums.tokens {
            self.tokens.entry(key).or_default().push((at, delta));
        }
        for (key, delta) in sums.cost {
            self.cost.entry(key).or_default().push((at, delta));
        }
        for (key, delta) in sums.unpriced {
            self.unpriced.entry(key).or_default().push((at, delta));
        }
    }

    fn append(&mut self, other: Timelines) {
        for (key, mut growth) in other.tokens {
            self.tokens.entry(key).or_default().append(&mut growth);
        }
        for (key, mut growth) in other.cost {
            self.cost.entry(key).or_default().append(&mut growth);
        }
        for (key, mut growth) in other.unpriced {
            self.unpriced.entry(key).or_default().append(&mut growth);
        }
    }
}

/// How far reading has come, after each file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_done: u64,
    pub bytes: u64,
    pub lines: u64,
}

/// Reads every file of `frontier` in `stats_dir`: its lines' growth by series and grid point,
/// and what was read. A file that is gone, or no longer begins with the bytes the store counted,
/// is left out and named in the summary (its lines cannot be placed; the cap keeps the join
/// safe).
pub fn read(
    stats_dir: &Path,
    frontier: &HistoryFrontier,
    grid: &Grid,
    mut progress: impl FnMut(&Progress),
) -> Result<(Timelines, Summary), HistoryError> {
    let found = ledger_files(stats_dir).map_err(HistoryError::StatsDir)?;
    let mut seen: HashSet<u128, QuickHash> = HashSet::default();
    let (mut timelines, mut summary) = (Timelines::default(), Summary::default());
    let mut done = Progress {
        files_done: 0,
        files: frontier.files.len(),
        bytes_done: 0,
        bytes: frontier.files.iter().map(|f| f.offset).sum(),
        lines: 0,
    };
    for file in &frontier.files {
        let name = crate::shown::one_line(&String::from_utf8_lossy(&file.name), 255);
        let path = found
            .iter()
            .find(|f| f.name.as_encoded_bytes() == file.name.as_slice())
            .map(|f| f.path.clone());
        let read = match path {
            Some(path) => {
                read_file(&path, file, &frontier.first_values, grid, &mut seen).map_err(|error| {
                    HistoryError::Ledger {
                        file: name.clone(),
                        error,
                    }
                })?
            }
            None => None,
        };
        match read {
            Some((lines, growth)) => {
                timelines.append(growth);
                summary.lines += lines;
                done.lines += lines;
            }
            None => summary.files_missing.push(name),
        }
        done.files_done += 1;
        done.bytes_done += file.offset;
        progress(&done);
    }
    Ok((timelines, summary))
}

/// The lines of `file`'s history region and their growth, or `None` when the file no longer
/// holds the bytes the store counted (its new lines are left in `seen` only if it does).
fn read_file(
    path: &Path,
    file: &FrontierFile,
    known: &Sums,
    grid: &Grid,
    seen: &mut HashSet<u128, QuickHash>,
) -> std::io::Result<Option<(u64, Timelines)>> {
    let mut tail = match tail::open_region(path, 0, file.offset) {
        Ok(tail) => tail,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = vec![0; CHUNK];
    let mut growth = Timelines::default();
    let mut added: Vec<u128> = Vec::new();
    let mut step = Step::default();
    while !tail.at_end() {
        let n = tail.next_chunk(&mut buf, |lines, _| {
            for line in lines {
                let Decoded::Row(row) = decode(line) else {
                    continue;
                };
                let hash = LineHash::of(line).0;
                if !seen.insert(hash) {
                    continue;
                }
                added.push(hash);
                let at = grid.point_of(row.at_ms);
                if step.at != Some(at) {
                    step.flush(known, &mut growth);
                    step.at = Some(at);
                }
                step.deltas.add(&known.tokens, &row, Part::Whole);
            }
        })?;
        tail.take_skipped();
        if n == 0 {
            break;
        }
    }
    step.flush(known, &mut growth);
    let checkpoint = tail.checkpoint()?;
    if checkpoint.offset != file.offset || checkpoint.prefix.hash != file.prefix_hash {
        for hash in added {
            seen.remove(&hash);
        }
        return Ok(None);
    }
    Ok(Some((added.len() as u64, growth)))
}

/// The lines of one grid point being added up (lines come in time order, mostly).
#[derive(Default)]
struct Step {
    at: Option<i64>,
    deltas: SeriesDeltas,
}

impl Step {
    fn flush(&mut self, known: &Sums, growth: &mut Timelines) {
        if let Some(at) = self.at.take() {
            growth.add(at, std::mem::take(&mut self.deltas).by_series(known));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Quantity;
    use xxhash_rust::xxh3::xxh3_64;

    const LINE_A: &str = r#"{"ts":"2026-11-01T10:00:00.5+08:00","model":"deepseek-chat","source":"cli","prompt":10,"completion":5,"total":15,"requests":1}"#;
    const LINE_B: &str = r#"{"ts":"2026-11-02T10:00:00Z","model":"deepseek-chat","source":"cli","prompt":20,"completion":5,"total":25,"requests":1}"#;

    fn frontier_of(dir: &Path, names: &[&str]) -> HistoryFrontier {
        let files = names
            .iter()
            .map(|name| {
                let bytes = std::fs::read(dir.join(name)).unwrap();
                FrontierFile {
                    name: name.as_bytes().to_vec(),
                    offset: bytes.len() as u64,
                    prefix_hash: xxh3_64(&bytes),
                }
            })
            .collect();
        HistoryFrontier {
            first_sent_ns: 1_800_000_000_000_000_000,
            files,
            first_values: Sums::default(),
        }
    }

    fn total(timelines: &Timelines) -> u64 {
        let growth = timelines.tokens.values().flatten();
        growth.map(|(_, t)| t.get(Quantity::Total)).sum()
    }

    #[test]
    fn each_line_counts_once_at_its_own_time_and_only_up_to_the_frontier() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("2026-11-01.jsonl"),
            format!("{LINE_A}\nnot json\n{LINE_B}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("2026-11-01 (1).jsonl"), format!("{LINE_A}\n")).unwrap();
        let frontier = frontier_of(dir.path(), &["2026-11-01.jsonl", "2026-11-01 (1).jsonl"]);
        // Appended after the first send: the live stream's.
        let mut later = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("2026-11-01.jsonl"))
            .unwrap();
        std::io::Write::write_all(&mut later, format!("{LINE_B}x\n").as_bytes()).unwrap();
        let grid = Grid::new(60_000, frontier.first_sent_ns);
        let (timelines, summary) = read(dir.path(), &frontier, &grid, |_| {}).unwrap();
        assert_eq!((summary.lines, total(&timelines)), (2, 40));
        let points: Vec<i64> = timelines.tokens.values().flatten().map(|(at, _)| *at).collect();
        let a = crate::ledger::timestamp::unix_ms_of_rfc3339("2026-11-01T10:00:00.5+08:00").unwrap();
        assert_eq!(
            points[0],
            (a / 60_000 + 1) * 60_000,
            "the grid time after the line"
        );
        assert!(summary.files_missing.is_empty());
    }

    #[test]
    fn a_file_that_changed_or_went_is_left_out_and_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2026-11-01.jsonl"), format!("{LINE_A}\n")).unwrap();
        std::fs::write(dir.path().join("2026-11-02.jsonl"), format!("{LINE_B}\n")).unwrap();
        std::fs::write(dir.path().join("2026-11-03.jsonl"), format!("{LINE_A}\n")).unwrap();
        let frontier = frontier_of(
            dir.path(),
            &["2026-11-01.jsonl", "2026-11-02.jsonl", "2026-11-03.jsonl"],
        );
        std::fs::write(dir.path().join("2026-11-01.jsonl"), format!("{LINE_B}\n")).unwrap();
        std::fs::remove_file(dir.path().join("2026-11-02.jsonl")).unwrap();
        let grid = Grid::new(60_000, frontier.first_sent_ns);
        let (timelines, summary) = read(dir.path(), &frontier, &grid, |_| {}).unwrap();
        assert_eq!(summary.files_missing, ["2026-11-01.jsonl", "2026-11-02.jsonl"]);
        // The changed file's line A is not taken from it, so its copy in the third file counts.
        assert_eq!((summary.lines, total(&timelines)), (1, 15));
    }
}

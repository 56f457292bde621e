//! The frontier's lines read again, twice: once to check each file's history region against
//! the hash the store took of it and to learn the days (blocks) its lines fall on (`days.rs`),
//! once to count every line once (a copy in another file is the same line, as the seen set has
//! it), by series and grid point, handing each day on as soon as every file with lines of it is
//! read. A file that spans the whole history (a merged backup) holds every day from when it is
//! read until the end.
//! A copy of a line has the line's `ts`, so it falls on the same day: the lines seen are kept
//! per day, and only the days being read are held.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use super::{Grid, HistoryError, Summary};
use crate::ledger::decode::{Decoded, decode};
use crate::ledger::discover::ledger_files;
use crate::ledger::quote::Amount;
use crate::ledger::tail::{self, CHUNK};
use crate::series::cost::{CostSeries, UnpricedSeries};
use crate::series::{AttrSet, Part, QuickHash, SeriesDeltas, Sums, Totals};
use crate::store::history::{FrontierChain, FrontierFile, HistoryFrontier};
use crate::store::seen::LineHash;

/// Each series' growth in one block, as `(grid point, delta)` in the order read.
#[derive(Debug, Default)]
pub struct Timelines {
    pub tokens: BTreeMap<AttrSet, Vec<(i64, Totals)>>,
    pub cost: BTreeMap<CostSeries, Vec<(i64, Amount)>>,
    pub unpriced: BTreeMap<UnpricedSeries, Vec<(i64, u64)>>,
}

impl Timelines {
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
}

pub use crate::events::history::Progress;

/// A frontier file that still holds what the store counted: where it is and its lines' days.
struct Checked<'a> {
    path: PathBuf,
    name: String,
    frontier_file: &'a FrontierFile,
    days: Vec<i64>,
}

/// Reads every file of `frontier` in `stats_dir` and hands `block` each day's growth, days in
/// time order; what was read. A file that is gone, or no longer begins with the bytes the store
/// counted, is left out and named in the summary (its lines cannot be placed; the cap keeps the
/// join safe).
pub fn read(
    stats_dir: &Path,
    frontier: &HistoryFrontier,
    grid: &Grid,
    mut progress: impl FnMut(&Progress),
    mut block: impl FnMut(Timelines) -> Result<(), HistoryError>,
) -> Result<Summary, HistoryError> {
    let (mut files, mut summary) = check_files(stats_dir, frontier, grid, &mut progress)?;
    // In the order of their first day, so that days close early and in order.
    files.sort_by(|a, b| (a.days.first(), &a.name).cmp(&(b.days.first(), &b.name)));
    let mut unread: BTreeMap<i64, usize> = BTreeMap::new();
    for day in files.iter().flat_map(|f| &f.days) {
        *unread.entry(*day).or_default() += 1;
    }
    let mut open: BTreeMap<i64, Day> = BTreeMap::new();
    let mut done = progress_of("counted", frontier);
    for file in &files {
        let lines = count_file(file, &frontier.first_values, grid, &mut open)?;
        summary.lines += lines;
        for day in &file.days {
            *unread.get_mut(day).expect("counted above") -= 1;
        }
        while let Some(entry) = unread.first_entry().filter(|e| *e.get() == 0) {
            if let Some(day) = open.remove(&entry.remove_entry().0) {
                block(day.growth)?;
            }
        }
        (done.files_done, done.bytes_done, done.lines) = (
            done.files_done + 1,
            done.bytes_done + file.frontier_file.offset,
            summary.lines,
        );
        progress(&done);
    }
    // Every day is handed on, the last once the last file is read: each day counted in `open`
    // is one of a file's days, and each file's days reach zero once it is read.
    debug_assert!(open.is_empty(), "days never handed on: {:?}", open.keys());
    Ok(summary)
}

fn progress_of(pass: &'static str, frontier: &HistoryFrontier) -> Progress {
    Progress {
        pass,
        files_done: 0,
        files: frontier.files.len(),
        bytes_done: 0,
        bytes: frontier.files.iter().map(|f| f.offset).sum(),
        lines: 0,
    }
}

/// The first reading: the files that still hold what the store counted, with their days, and
/// the summary naming those that do not.
fn check_files<'a>(
    stats_dir: &Path,
    frontier: &'a HistoryFrontier,
    grid: &Grid,
    progress: &mut impl FnMut(&Progress),
) -> Result<(Vec<Checked<'a>>, Summary), HistoryError> {
    let found = ledger_files(stats_dir).map_err(HistoryError::StatsDir)?;
    let (mut files, mut summary) = (Vec::new(), Summary::default());
    let mut done = progress_of("checked", frontier);
    for file in &frontier.files {
        let name = crate::inert_text::one_line(&String::from_utf8_lossy(&file.name), 255);
        let path = found
            .iter()
            .find(|f| f.name.as_encoded_bytes() == file.name.as_slice())
            .map(|f| f.path(stats_dir));
        // The last day is every file's: a line without a time falls on it.
        let mut days = BTreeSet::from([Grid::block_of(grid.point_of(None))]);
        let held = match &path {
            Some(path) => read_region(path, file, |line| {
                super::days::days_of(line, grid, |day| {
                    days.insert(day);
                });
            })
            .map_err(|error| HistoryError::Ledger {
                file: name.clone(),
                error,
            })?,
            None => false,
        };
        match path {
            Some(path) if held => files.push(Checked {
                path,
                name,
                frontier_file: file,
                days: days.into_iter().collect(),
            }),
            _ => summary.files_missing.push(name),
        }
        (done.files_done, done.bytes_done) = (done.files_done + 1, done.bytes_done + file.offset);
        progress(&done);
    }
    Ok((files, summary))
}

/// The lines of one day being read: those seen, and the growth of those counted.
#[derive(Default)]
struct Day {
    seen: HashSet<u128, QuickHash>,
    growth: Timelines,
}

/// The second reading of a checked file: each line not seen before on its day counted into
/// `open` at its grid point; how many were.
fn count_file(
    file: &Checked<'_>,
    known: &Sums,
    grid: &Grid,
    open: &mut BTreeMap<i64, Day>,
) -> Result<u64, HistoryError> {
    let mut step = Step::default();
    let (mut lines, mut misread) = (0, false);
    let held = read_region(&file.path, file.frontier_file, |line| {
        let Decoded::Row(row) = decode(line) else {
            return;
        };
        let at = grid.point_of(row.at_ms);
        let block = Grid::block_of(at);
        // A day the first reading did not find is one already handed on, or never to be.
        if file.days.binary_search(&block).is_err() {
            misread = true;
            return;
        }
        let day = open.entry(block).or_default();
        if !day.seen.insert(LineHash::of(line).0) {
            return;
        }
        lines += 1;
        if step.at != Some(at) {
            step.flush(known, open);
            step.at = Some(at);
        }
        step.deltas.add(&known.tokens, &row, Part::Whole);
    });
    step.flush(known, open);
    match held {
        Ok(true) if misread => Err(HistoryError::Misread(file.name.clone())),
        Ok(true) => Ok(lines),
        Ok(false) => Err(HistoryError::Changed(file.name.clone())),
        Err(error) => Err(HistoryError::Ledger {
            file: file.name.clone(),
            error,
        }),
    }
}

/// Calls `each` with every line of `file`'s history region; whether the file still holds the
/// bytes the store counted (false too when it is gone).
fn read_region(path: &Path, file: &FrontierFile, mut each: impl FnMut(&[u8])) -> std::io::Result<bool> {
    let mut tail = match tail::open_region(path, 0, file.offset) {
        Ok(tail) => tail,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut buf = vec![0; CHUNK];
    while !tail.at_end() {
        let n = tail.next_chunk(&mut buf, |lines, _| {
            lines.iter().for_each(|line| each(line));
        })?;
        tail.take_skipped();
        if n == 0 {
            break;
        }
    }
    let checkpoint = tail.checkpoint()?;
    let hash = match file.chain {
        FrontierChain::Blocks => Some(checkpoint.prefix.hash),
        FrontierChain::Streamed => tail.streamed_hash(),
    };
    Ok(checkpoint.offset == file.offset && hash == Some(file.prefix_hash))
}

/// The lines of one grid point being added up (lines come in time order, mostly).
#[derive(Default)]
struct Step {
    at: Option<i64>,
    deltas: SeriesDeltas,
}

impl Step {
    fn flush(&mut self, known: &Sums, open: &mut BTreeMap<i64, Day>) {
        if let Some(at) = self.at.take() {
            let day = open.entry(Grid::block_of(at)).or_default();
            day.growth
                .add(at, std::mem::take(&mut self.deltas).by_series(known));
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
                    chain: FrontierChain::Streamed,
                }
            })
            .collect();
        HistoryFrontier {
            first_sent_ns: 1_800_000_000_000_000_000,
            files,
            first_values: Sums::default(),
        }
    }

    fn total(blocks: &[Timelines]) -> u64 {
        let growth = blocks.iter().flat_map(|b| b.tokens.values().flatten());
        growth.map(|(_, t)| t.get(Quantity::Total)).sum()
    }

    /// The blocks handed on, in order, and the summary.
    fn read_all(dir: &Path, frontier: &HistoryFrontier, grid: &Grid) -> (Vec<Timelines>, Summary) {
        let mut blocks = Vec::new();
        let summary = read(
            dir,
            frontier,
            grid,
            |_| {},
            |b| {
                blocks.push(b);
                Ok(())
            },
        )
        .unwrap();
        (blocks, summary)
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
        let (blocks, summary) = read_all(dir.path(), &frontier, &grid);
        assert_eq!((summary.lines, total(&blocks)), (2, 40));
        assert_eq!(blocks.len(), 2, "a block per day, in order");
        let points: Vec<i64> = blocks
            .iter()
            .flat_map(|b| b.tokens.values().flatten())
            .map(|(at, _)| *at)
            .collect();
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
        let (blocks, summary) = read_all(dir.path(), &frontier, &grid);
        assert_eq!(summary.files_missing, ["2026-11-01.jsonl", "2026-11-02.jsonl"]);
        // The changed file's line A is not taken from it, so its copy in the third file counts.
        assert_eq!((summary.lines, total(&blocks)), (1, 15));
    }

    #[test]
    fn a_day_is_handed_on_once_every_file_with_its_lines_is_read() {
        let dir = tempfile::tempdir().unwrap();
        // A copy of the first day's line, late in the third day's file.
        std::fs::write(dir.path().join("2026-11-01.jsonl"), format!("{LINE_A}\n")).unwrap();
        std::fs::write(dir.path().join("2026-11-02.jsonl"), format!("{LINE_B}\n")).unwrap();
        std::fs::write(
            dir.path().join("2026-11-03.jsonl"),
            format!("{LINE_B}x\n{LINE_A}\n"),
        )
        .unwrap();
        let names = ["2026-11-03.jsonl", "2026-11-02.jsonl", "2026-11-01.jsonl"];
        let frontier = frontier_of(dir.path(), &names);
        let grid = Grid::new(60_000, frontier.first_sent_ns);
        let (blocks, summary) = read_all(dir.path(), &frontier, &grid);
        assert_eq!((summary.lines, total(&blocks)), (2, 40), "the copy counts once");
        let days: Vec<i64> = blocks
            .iter()
            .map(|b| Grid::block_of(b.tokens.values().flatten().next().unwrap().0))
            .collect();
        assert!(
            days.windows(2).all(|w| w[0] < w[1]),
            "days in time order: {days:?}"
        );
    }
}

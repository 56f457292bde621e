//! Model-based test: random sequences of what happens to a Reasonix ledger and to the
//! exporter — appends, split writes, torn tails completed or repaired the way Reasonix does,
//! copies, truncations, in-place rewrites, new day files, deletions, lost checkpoints, a lost
//! store, a moved home, restarts — run against the real ingestion (the library, in process, on
//! a real filesystem) and against a tiny model of docs/counting-rules.md: every distinct complete line
//! that was ever on disk when a poll looked is counted exactly once. Totals must agree after
//! every step.
//!
//! `PROPTEST_CASES=5000 cargo test --release --test model_based` for a longer run.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use reasonix_exporter::ingest;
use reasonix_exporter::series::Quantity;
use reasonix_exporter::store::Store;

use common::generator::{Generator, days};
use common::model::{Model, Series};

/// File names the steps act on: four day files and two names for copies.
const FILES: [&str; 6] = [
    "2026-08-01.jsonl",
    "2026-08-02.jsonl",
    "2026-08-03.jsonl",
    "2026-08-04.jsonl",
    "2026-08-01 (1).jsonl",
    "backup.jsonl",
];

#[derive(Debug, Clone)]
enum Step {
    /// Whole lines appended to a file (created if need be).
    Append {
        file: usize,
        lines: usize,
    },
    /// One line written in two parts, with a poll in between.
    SplitWrite {
        file: usize,
        cut: usize,
    },
    /// A line cut short: a torn tail with no `\n`.
    Tear {
        file: usize,
        cut: usize,
    },
    /// The torn tail's missing bytes arrive after all.
    CompleteTorn {
        file: usize,
    },
    /// Reasonix's repair before its next append: a lone `\n` after the fragment.
    RepairTorn {
        file: usize,
    },
    Copy {
        from: usize,
        to: usize,
    },
    /// Truncated to a fraction of its size (possibly mid-line).
    Truncate {
        file: usize,
        keep_permille: u64,
    },
    /// One digit of a count changed in place: same size, same inode, new content.
    Rewrite {
        file: usize,
    },
    Delete {
        file: usize,
    },
    /// Every file replaced by a copy of itself (new inodes): no checkpoint can be trusted.
    LoseCheckpoints,
    /// The store folder deleted: everything still on disk is read again.
    LoseStore,
    /// The Reasonix home moved: the stats folder is somewhere else now.
    MoveHome,
    /// The exporter stopped and started.
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    let file = 0..FILES.len();
    prop_oneof![
        6 => (file.clone(), 1..6usize).prop_map(|(file, lines)| Step::Append { file, lines }),
        2 => (file.clone(), 1..400usize).prop_map(|(file, cut)| Step::SplitWrite { file, cut }),
        2 => (file.clone(), 1..400usize).prop_map(|(file, cut)| Step::Tear { file, cut }),
        1 => file.clone().prop_map(|file| Step::CompleteTorn { file }),
        1 => file.clone().prop_map(|file| Step::RepairTorn { file }),
        2 => (file.clone(), file.clone()).prop_map(|(from, to)| Step::Copy { from, to }),
        1 => (file.clone(), 0..1000u64).prop_map(|(file, keep_permille)| Step::Truncate { file, keep_permille }),
        1 => file.clone().prop_map(|file| Step::Rewrite { file }),
        1 => file.prop_map(|file| Step::Delete { file }),
        1 => Just(Step::LoseCheckpoints),
        1 => Just(Step::LoseStore),
        1 => Just(Step::MoveHome),
        1 => Just(Step::Restart),
    ]
}

/// The world: a Reasonix home on disk, the exporter's store, and the model.
struct World {
    _root: tempfile::TempDir,
    stats: PathBuf,
    homes: usize,
    state: PathBuf,
    store: Option<Store>,
    generator: Generator,
    /// Per file, the rest of a line torn by `Tear`.
    torn: BTreeMap<usize, String>,
    model: Model,
}

impl World {
    fn new(seed: u64) -> World {
        let root = tempfile::tempdir().unwrap();
        let stats = root.path().join("home0").join("stats");
        std::fs::create_dir_all(&stats).unwrap();
        let state = root.path().join("state");
        let store = Some(Store::open(&state, false).unwrap());
        World {
            _root: root,
            stats,
            homes: 0,
            state,
            store,
            generator: Generator::new(seed),
            torn: BTreeMap::new(),
            model: Model::default(),
        }
    }

    fn path(&self, file: usize) -> PathBuf {
        self.stats.join(FILES[file])
    }

    fn append(&self, file: usize, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(file))
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    fn line(&mut self, file: usize) -> String {
        // Lines carry the day of the file they are written to (copies: the first day).
        let day = &days(4)[file.min(3)];
        self.generator.line(day)
    }

    /// A poll of the real exporter, and the model looking at the same files.
    fn poll(&mut self) {
        let store = self.store.as_mut().unwrap();
        ingest::poll(store, &self.stats).unwrap();
        for entry in std::fs::read_dir(&self.stats).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            self.model.feed(&bytes);
        }
    }

    fn check(&self, history: &[Step]) {
        let store = self.store.as_ref().unwrap();
        let got: BTreeMap<Series, [u64; 8]> = store
            .lifetime()
            .tokens
            .iter()
            .map(|(attrs, totals)| {
                let [(_, model_ref), (_, provider), (_, source)] = attrs.pairs();
                let series = (model_ref.to_string(), provider.to_string(), source.to_string());
                (series, Quantity::ALL.map(|q| totals.get(q)))
            })
            .collect();
        assert_eq!(got, self.model.expected.totals(), "after {history:#?}");
        let cost: BTreeMap<(Series, String, String), String> = store
            .lifetime()
            .cost
            .iter()
            .map(|(k, amount)| {
                let a = &k.attrs;
                let series = (a.model_ref.clone(), a.provider.clone(), a.source.clone());
                (
                    (series, k.currency.clone(), k.billing_mode.clone()),
                    amount.to_string(),
                )
            })
            .collect();
        assert_eq!(
            cost,
            self.model.expected.cost_decimals(),
            "cost, after {history:#?}"
        );
        let unpriced: BTreeMap<(Series, String), u64> = store
            .lifetime()
            .unpriced
            .iter()
            .map(|(k, n)| {
                let a = &k.attrs;
                let series = (a.model_ref.clone(), a.provider.clone(), a.source.clone());
                ((series, k.reason.clone()), *n)
            })
            .collect();
        assert_eq!(
            unpriced, self.model.expected.unpriced,
            "unpriced, after {history:#?}"
        );
        assert_eq!(
            store.counts().counted,
            self.model.expected.counted,
            "counted, after {history:#?}"
        );
    }

    fn apply(&mut self, step: &Step, history: &[Step]) {
        match *step {
            Step::Append { file, lines } => {
                let mut text = String::new();
                for _ in 0..lines {
                    text.push_str(&self.line(file));
                    text.push('\n');
                }
                self.append(file, text.as_bytes());
            }
            Step::SplitWrite { file, cut } => {
                let line = format!("{}\n", self.line(file));
                let cut = cut.min(line.len() - 1);
                self.append(file, &line.as_bytes()[..cut]);
                self.poll();
                self.check(history);
                self.append(file, &line.as_bytes()[cut..]);
            }
            Step::Tear { file, cut } => {
                let line = self.line(file);
                let cut = cut.min(line.len() - 1);
                self.append(file, &line.as_bytes()[..cut]);
                self.torn.insert(file, line[cut..].to_string());
            }
            Step::CompleteTorn { file } => {
                if let Some(rest) = self.torn.remove(&file) {
                    self.append(file, format!("{rest}\n").as_bytes());
                }
            }
            Step::RepairTorn { file } => {
                let path = self.path(file);
                let ends_torn = std::fs::read(&path).is_ok_and(|b| !b.is_empty() && !b.ends_with(b"\n"));
                if ends_torn {
                    self.append(file, b"\n");
                }
                self.torn.remove(&file);
            }
            Step::Copy { from, to } => {
                if from != to && self.path(from).exists() {
                    std::fs::copy(self.path(from), self.path(to)).unwrap();
                    self.torn.remove(&to);
                }
            }
            Step::Truncate { file, keep_permille } => {
                if let Ok(f) = std::fs::OpenOptions::new().write(true).open(self.path(file)) {
                    let len = f.metadata().unwrap().len();
                    f.set_len(len * keep_permille / 1000).unwrap();
                    self.torn.remove(&file);
                }
            }
            Step::Rewrite { file } => {
                let path = self.path(file);
                let mut bytes = std::fs::read(&path).unwrap_or_default();
                let digit_at = find(&bytes, b"\"total\":")
                    .map(|at| at + 8)
                    // A torn line can end right after the key.
                    .filter(|&at| bytes.get(at).is_some_and(u8::is_ascii_digit));
                if let Some(at) = digit_at {
                    bytes[at] = b'1' + (bytes[at] - b'0') % 9;
                    // In place: same inode, same size.
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .unwrap()
                        .write_all(&bytes)
                        .unwrap();
                }
            }
            Step::Delete { file } => {
                let _ = std::fs::remove_file(self.path(file));
                self.torn.remove(&file);
            }
            Step::LoseCheckpoints => {
                for file in 0..FILES.len() {
                    let path = self.path(file);
                    if path.exists() {
                        let tmp = path.with_extension("tmp");
                        std::fs::copy(&path, &tmp).unwrap();
                        std::fs::rename(&tmp, &path).unwrap();
                    }
                }
            }
            Step::LoseStore => {
                drop(self.store.take());
                std::fs::remove_dir_all(self.state.join("store")).unwrap();
                self.store = Some(Store::open(&self.state, false).unwrap());
                // The rules: what is still on disk is read again, from nothing.
                self.model = Model::default();
            }
            Step::MoveHome => {
                self.homes += 1;
                let home = self
                    .stats
                    .parent()
                    .unwrap()
                    .with_file_name(format!("home{}", self.homes));
                std::fs::rename(self.stats.parent().unwrap(), &home).unwrap();
                self.stats = home.join("stats");
            }
            Step::Restart => {
                drop(self.store.take());
                self.store = Some(Store::open(&self.state, false).unwrap());
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        max_shrink_iters: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn totals_agree_with_the_model_after_every_step(
        seed in any::<u64>(),
        steps in proptest::collection::vec(step(), 1..25),
    ) {
        let mut world = World::new(seed);
        for (i, step) in steps.iter().enumerate() {
            let history = &steps[..=i];
            world.apply(step, history);
            world.poll();
            world.check(history);
        }
    }
}

/// The moved home must be read from its new place: a sanity check of the world itself.
#[test]
fn the_world_reads_what_it_writes() {
    let mut world = World::new(1);
    let history = [Step::Append { file: 0, lines: 3 }];
    world.apply(&history[0], &history);
    world.poll();
    world.check(&history);
    assert_eq!(world.model.expected.counted, 3);
    assert!(Path::new(&world.stats).join(FILES[0]).exists());
}

//! `run`'s full verifications (contract §5): every byte a growing file's checkpoint covers is
//! read again once its last full verification is more than an hour old, on a thread of its own
//! at a tenth of a core, so that a rewrite in the middle of a file followed by an append is found
//! within the hour. A poll meanwhile trusts growth from the file's identity, its times and its
//! last block (`ledger/checkpoint.rs`).
//!
//! The daemon hands the thread one file at a time and applies its verdict to the store at the
//! next poll: the checkpoint's verification time moved on, or, when the bytes changed, the
//! checkpoint put back to the file's start (the file is read again; the seen set keeps every
//! unchanged line from counting twice).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crate::ledger::checkpoint::{Checkpoint, FileStat, Verified};
use crate::ledger::tail::open_read_only;
use crate::store::{Batch, Store, StoreError};

/// The share of one core the verifications take at most.
const SHARE: f64 = 0.1;

/// How often the store is searched for checkpoints due, when none is waiting.
const SCAN_EVERY: Duration = Duration::from_secs(60);

/// How many due checkpoints one search takes up.
const TAKEN_PER_SCAN: usize = 64;

struct Job {
    name: OsString,
    path: PathBuf,
    checkpoint: Checkpoint,
}

/// What the thread found of a job's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Every byte as it was consumed, when the verification began.
    Held { at_ns: u64 },
    /// Bytes it had consumed are not there any more.
    Changed,
    /// Not checked: the file is gone, replaced, or could not be read; its next poll sees to it.
    Unchecked,
}

struct Verdict {
    name: OsString,
    checkpoint: Checkpoint,
    found: Found,
}

/// The verifications' thread, and what it was handed.
pub struct Verifier {
    jobs: Sender<Job>,
    verdicts: Receiver<Verdict>,
    in_flight: bool,
    waiting: VecDeque<(OsString, Checkpoint)>,
    /// Where the search for checkpoints due goes on: after the last one it took up, so that files
    /// that cannot be checked (gone, unreadable) never hold the others back.
    after: Option<OsString>,
    next_scan: Instant,
}

impl Verifier {
    /// Starts the thread; it ends with the process, or once this is dropped and its file done.
    pub fn start() -> std::io::Result<Verifier> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (verdict_tx, verdicts) = mpsc::channel();
        std::thread::Builder::new().name("verify".into()).spawn(move || {
            for job in job_rx {
                let found = verify(&job.path, &job.checkpoint, SHARE);
                let verdict = Verdict {
                    name: job.name,
                    checkpoint: job.checkpoint,
                    found,
                };
                if verdict_tx.send(verdict).is_err() {
                    break;
                }
            }
        })?;
        Ok(Verifier {
            jobs,
            verdicts,
            in_flight: false,
            waiting: VecDeque::new(),
            after: None,
            next_scan: Instant::now(),
        })
    }

    /// After a poll: applies the verdict that came, if one did, and hands the thread the next
    /// file due. Returns the names of the files found changed (read again from their start by
    /// the next poll).
    pub fn tend(&mut self, store: &mut Store, stats_dir: &Path) -> Result<Vec<OsString>, StoreError> {
        let mut changed = Vec::new();
        match self.verdicts.try_recv() {
            Ok(verdict) => {
                self.in_flight = false;
                if apply(store, &verdict)? {
                    changed.push(verdict.name);
                }
            }
            Err(TryRecvError::Empty) => {}
            // The thread is gone (it cannot panic short of a bug): said once, no verification
            // from now on.
            Err(TryRecvError::Disconnected) => {
                if std::mem::take(&mut self.in_flight) {
                    crate::events::ledger::verification_stopped("its thread ended");
                }
                return Ok(changed);
            }
        }
        if self.in_flight {
            return Ok(changed);
        }
        if self.waiting.is_empty() && Instant::now() >= self.next_scan {
            let due = store.due_checkpoints(crate::ledger::now_ns(), TAKEN_PER_SCAN, self.after.as_ref())?;
            // The whole store searched: again in a while, from its first name.
            if due.len() < TAKEN_PER_SCAN {
                self.next_scan = Instant::now() + SCAN_EVERY;
            }
            self.after = due
                .last()
                .filter(|_| due.len() == TAKEN_PER_SCAN)
                .map(|(name, _)| name.clone());
            self.waiting = due.into();
        }
        if let Some((name, checkpoint)) = self.waiting.pop_front() {
            let path = stats_dir.join(&name);
            self.in_flight = self
                .jobs
                .send(Job {
                    name,
                    path,
                    checkpoint,
                })
                .is_ok();
        }
        Ok(changed)
    }
}

/// Reads again every byte `checkpoint` covers, at most `share` of a core.
fn verify(path: &Path, checkpoint: &Checkpoint, share: f64) -> Found {
    let at_ns = crate::ledger::now_ns();
    let Ok(file) = open_read_only(path) else {
        return Found::Unchecked;
    };
    let now = match file.metadata() {
        Ok(meta) => FileStat::of(&meta),
        Err(_) => return Found::Unchecked,
    };
    if !now.same_file(&checkpoint.stat) || now.size < checkpoint.offset {
        return Found::Unchecked;
    }
    let mut since_rest = Instant::now();
    let mut pace = |_: usize| {
        let busy = since_rest.elapsed();
        if busy >= Duration::from_millis(5) {
            std::thread::sleep(busy.mul_f64(1.0 / share - 1.0));
            since_rest = Instant::now();
        }
    };
    let found = match checkpoint.verify(&file, &mut pace) {
        Ok(Some(_)) => Found::Held { at_ns },
        Ok(None) => Found::Changed,
        Err(_) => Found::Unchecked,
    };
    // The last stretch rested for too, so that a run of small files keeps to the share.
    std::thread::sleep(since_rest.elapsed().mul_f64(1.0 / share - 1.0));
    found
}

/// Notes a verdict in the store, if the checkpoint it speaks of is still the file's (the same
/// file, not read again from its start since); whether the file was found changed.
fn apply(store: &mut Store, verdict: &Verdict) -> Result<bool, StoreError> {
    let Some(current) = store.checkpoint(&verdict.name)? else {
        return Ok(false);
    };
    let verified = verdict.checkpoint;
    let same = current.stat.same_file(&verified.stat)
        && current.offset >= verified.offset
        && current.prefix.len == current.offset
        && current.verified.at_ns == verified.verified.at_ns;
    let updated = match verdict.found {
        _ if !same => return Ok(false),
        Found::Unchecked => return Ok(false),
        Found::Held { at_ns } => Checkpoint {
            verified: Verified {
                at_ns,
                len: verified.offset,
            },
            ..current
        },
        Found::Changed => current.distrusted(),
    };
    let mut batch = Batch::default();
    batch.set_checkpoint(verdict.name.clone(), updated);
    store.commit(batch)?;
    Ok(verdict.found == Found::Changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::poll_listed;
    use crate::ledger::tail::FullCheck;
    use std::sync::atomic::AtomicBool;

    const HOUR_NS: u64 = 3600 * 1_000_000_000;

    fn lines(from: usize, to: usize) -> String {
        (from..to)
            .map(|i| format!("{{\"ts\":\"2026-12-01T10:00:00Z\",\"model\":\"deepseek-chat\",\"total\":{i},\"requests\":1}}\n"))
            .collect()
    }

    /// A temporary folder with an empty stats folder, and the path of a day file in it.
    fn ledger() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("stats");
        std::fs::create_dir(&stats).unwrap();
        let path = stats.join("2026-12-01.jsonl");
        (dir, stats, path)
    }

    fn poll(store: &mut Store, stats: &Path) {
        let listing = crate::ingest::list(stats);
        poll_listed(store, listing, &AtomicBool::new(false), FullCheck::InBackground).unwrap();
    }

    /// The checkpoint of `name`, as if its last full verification were two hours old.
    fn age(store: &mut Store, name: &str) -> Checkpoint {
        let name = OsString::from(name);
        let mut checkpoint = store.checkpoint(&name).unwrap().unwrap();
        checkpoint.verified.at_ns = crate::ledger::now_ns() - 2 * HOUR_NS;
        put(store, name, checkpoint);
        checkpoint
    }

    /// Commits `checkpoint` as `name`'s.
    fn put(store: &mut Store, name: OsString, checkpoint: Checkpoint) {
        let mut batch = Batch::default();
        batch.set_checkpoint(name, checkpoint);
        store.commit(batch).unwrap();
    }

    #[test]
    fn a_rewrite_in_the_middle_then_an_append_is_found_and_each_line_counts_once() {
        let (dir, stats, path) = ledger();
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        let first = lines(0, 3_000);
        std::fs::write(&path, &first).unwrap();
        poll(&mut store, &stats);
        assert_eq!(store.counts().counted, 3_000);

        // A line far from the end changed in place, then an append: a poll trusts the growth.
        let changed = first.replacen("\"total\":100,\"requests\":1", "\"total\":100,\"requests\":2", 1);
        assert_ne!(changed, first);
        std::fs::write(&path, format!("{changed}{}", lines(3_000, 3_001))).unwrap();
        poll(&mut store, &stats);
        assert_eq!(
            store.counts().counted,
            3_001,
            "the changed line waits for the verification"
        );

        // Not due yet: nothing handed over.
        let mut verifier = Verifier::start().unwrap();
        assert!(verifier.tend(&mut store, &stats).unwrap().is_empty());
        assert!(!verifier.in_flight);

        // Due: found, and the next poll reads the file again, counting the changed line alone.
        age(&mut store, "2026-12-01.jsonl");
        verifier.next_scan = Instant::now();
        assert!(verifier.tend(&mut store, &stats).unwrap().is_empty());
        assert!(verifier.in_flight);
        let found = loop {
            let found = verifier.tend(&mut store, &stats).unwrap();
            if !verifier.in_flight {
                break found;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(found, vec![OsString::from("2026-12-01.jsonl")]);
        poll(&mut store, &stats);
        assert_eq!(store.counts().counted, 3_002);
        assert_eq!(store.counts().duplicate, 3_000);
    }

    /// This thread's processor time.
    #[cfg(unix)]
    fn thread_cpu() -> Duration {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    #[test]
    #[cfg(unix)]
    fn a_verification_takes_a_tenth_of_a_core_at_most() {
        let (dir, stats, path) = ledger();
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        std::fs::write(&path, lines(0, 50_000)).unwrap();
        poll(&mut store, &stats);
        let checkpoint = age(&mut store, "2026-12-01.jsonl");
        let (wall, cpu) = (Instant::now(), thread_cpu());
        assert!(matches!(verify(&path, &checkpoint, SHARE), Found::Held { .. }));
        let (wall, cpu) = (wall.elapsed(), thread_cpu() - cpu);
        let share = cpu.as_secs_f64() / wall.as_secs_f64();
        assert!(
            share <= 0.15,
            "{cpu:?} of {wall:?}: {:.0} % of a core",
            share * 100.0
        );
    }

    /// Files that cannot be checked (deleted since they grew) never hold the others back: the
    /// search goes on after the last file it took up.
    #[test]
    fn files_gone_since_do_not_hold_the_others_back() {
        let (dir, stats, _) = ledger();
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        let names: Vec<String> = (0..TAKEN_PER_SCAN + 3)
            .map(|i| format!("2026-{i:04}.jsonl"))
            .collect();
        for name in &names {
            std::fs::write(stats.join(name), lines(0, 2)).unwrap();
        }
        poll(&mut store, &stats);
        for name in &names {
            let mut checkpoint = age(&mut store, name);
            checkpoint.verified.len = 0;
            put(&mut store, name.into(), checkpoint);
        }
        for name in &names[..TAKEN_PER_SCAN] {
            std::fs::remove_file(stats.join(name)).unwrap();
        }
        let mut verifier = Verifier::start().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let last = OsString::from(names.last().unwrap());
        while store
            .checkpoint(&last)
            .unwrap()
            .unwrap()
            .verification_due(crate::ledger::now_ns())
        {
            assert!(
                Instant::now() < deadline,
                "the files still there were never verified"
            );
            verifier.tend(&mut store, &stats).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_file_that_only_grew_is_found_as_it_was_and_its_time_moves_on() {
        let (dir, stats, path) = ledger();
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        std::fs::write(&path, lines(0, 2_000)).unwrap();
        poll(&mut store, &stats);
        let aged = age(&mut store, "2026-12-01.jsonl");
        // Grown since: the verification covers what the checkpoint had then.
        std::fs::write(&path, lines(0, 2_500)).unwrap();
        poll(&mut store, &stats);
        let verdict = Verdict {
            name: "2026-12-01.jsonl".into(),
            checkpoint: aged,
            found: verify(&path, &aged, 1.0),
        };
        let Found::Held { at_ns } = verdict.found else {
            panic!("{:?}", verdict.found)
        };
        // The checkpoint moved on since the job was handed over, with the old verification.
        assert!(!apply(&mut store, &verdict).unwrap());
        let after = store.checkpoint(&verdict.name).unwrap().unwrap();
        assert_eq!(
            after.verified,
            Verified {
                at_ns,
                len: aged.offset
            }
        );
        assert!(after.offset > aged.offset);
        assert!(!after.verification_due(crate::ledger::now_ns()));
    }
}

//! The reading half of the cost pass (`store/upgrade/before_cost.rs`): each region a store made
//! before cost had read, read again for the quotes of the lines it counted then.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ledger::decode::{Decoded, decode};
use crate::ledger::discover::LedgerFile;
use crate::ledger::tail::{self, CHUNK};
use crate::series::Part;
use crate::store::PassFile;
use crate::store::seen::LineHash;
use crate::store::{Batch, Store, StoreError};

/// Reads what is left of the pass, committing as it goes; ends the pass once every region is
/// read. A region's file is found by name, or by device and inode if it was renamed. A file that
/// cannot be read now keeps its region for the next poll (the usual reading reports it, rate
/// limited); one that is gone has nothing left to give (its lines' cost is not known: an
/// under-count, never a double count). Stops early, with what was read committed, once `stop`
/// is set.
pub fn run(
    store: &mut Store,
    stats_dir: &Path,
    files: &[LedgerFile],
    stop: &AtomicBool,
) -> Result<(), StoreError> {
    let regions = store.cost_pass().clone();
    let mut batch = Batch::default();
    let mut all_read = true;
    for (name, region) in regions {
        let by_identity = |f: &&LedgerFile| f.stat.dev == region.dev && f.stat.ino == region.ino;
        let found = files
            .iter()
            .find(|f| f.name == name)
            .or_else(|| files.iter().find(by_identity));
        let Some(file) = found else {
            batch.set_pass_progress(name, None);
            continue;
        };
        match read_region(store, &mut batch, &name, &file.path(stats_dir), region, stop)? {
            Region::Done => {
                batch.set_pass_progress(name, None);
                if stop.load(Ordering::Relaxed) {
                    return store.commit(batch);
                }
            }
            Region::Unreadable(e) => {
                crate::events::store::cost_pass_unreadable(&name, &e);
                all_read = false;
            }
            Region::Stopped => {
                store.commit(batch)?;
                return Ok(());
            }
        }
    }
    if all_read {
        batch.finish_pass();
        crate::events::store::cost_pass_over();
    }
    store.commit(batch)
}

enum Region {
    Done,
    Unreadable(std::io::Error),
    Stopped,
}

/// Reads the file at `path` over `region`, adding the quote of each line counted before cost.
/// A line too long to hold was rejected when it was counted: the tailer skips it, and it adds
/// nothing.
fn read_region(
    store: &mut Store,
    batch: &mut Batch,
    name: &std::ffi::OsString,
    path: &Path,
    mut region: PassFile,
    stop: &AtomicBool,
) -> Result<Region, StoreError> {
    let mut tail = match tail::open_region(path, region.done, region.end) {
        Ok(tail) => tail,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Region::Done),
        Err(e) => return Ok(Region::Unreadable(e)),
    };
    let mut buf = vec![0; CHUNK];
    loop {
        let mut failure = None;
        let read = tail.next_chunk(&mut buf, |lines, _| {
            failure = lines
                .iter()
                .try_for_each(|line| add_quote(store, batch, line))
                .err();
        });
        let n = match read {
            Ok(0) => return Ok(Region::Done),
            Ok(n) => n,
            Err(e) => return Ok(Region::Unreadable(e)),
        };
        if let Some(e) = failure {
            return Err(e);
        }
        tail.take_skipped();
        batch.counts.bytes += n as u64;
        region.done = tail.consumed();
        batch.set_pass_progress(name.clone(), Some(region));
        if !tail.at_end() && stop.load(Ordering::Relaxed) {
            return Ok(Region::Stopped);
        }
        if batch.is_full() {
            store.commit(std::mem::take(batch))?;
        }
        if tail.at_end() {
            return Ok(Region::Done);
        }
    }
}

/// Adds the quote of `line` if the store counted the line before cost and the pass has not
/// added it yet (a copy of it in another file, or a run before a crash).
fn add_quote(store: &Store, batch: &mut Batch, line: &[u8]) -> Result<(), StoreError> {
    let Decoded::Row(row) = decode(line) else {
        return Ok(());
    };
    let hash = LineHash::of(line);
    if !store.was_seen(batch, row.day, hash)? {
        // Not counted before cost (a file rewritten since): the usual reading counts it whole.
        return Ok(());
    }
    if store.mark_costed(batch, row.day, hash)? {
        batch.add(store.fold_known(), &row, Part::QuoteOnly);
    }
    Ok(())
}

//! The seen set's partitions (and the cost pass's set's): a day's depth and partitions as
//! committed, those a batch holds ([`Partitions`]), and how a batch's partitions are written
//! back, a day split deeper when one of its partitions outgrew [`LEAF_MAX`] (see `seen.rs`).

use std::collections::{HashMap, HashSet};

use super::engine::{Engine, Write, keys};
use super::error::StoreError;
use super::seen::{
    FIRST_DEPTH, LEAF_MAX, LineHash, LineSet, MAX_DEPTH, Partition, PartitionKey, decode_depth, deeper, split,
};
use crate::ledger::timestamp::Day;
use crate::series::QuickHash;

/// How deep `day` of `set` is split, as committed.
fn depth_of(db: &Engine, set: LineSet, day: Option<Day>) -> Result<u8, StoreError> {
    match db.get(&keys::depth(set, day))? {
        None => Ok(FIRST_DEPTH),
        Some(bytes) => {
            decode_depth(&bytes).ok_or_else(|| StoreError::unreadable(db.path(), "seen-set depth"))
        }
    }
}

/// The partition of `set` at `key`, as committed (empty when there is none yet).
fn partition(db: &Engine, set: LineSet, key: &PartitionKey) -> Result<Partition, StoreError> {
    match db.get(&keys::partition(set, key))? {
        None => Ok(Partition::default()),
        Some(bytes) => {
            Partition::decode(&bytes).ok_or_else(|| StoreError::unreadable(db.path(), "seen-set partition"))
        }
    }
}

/// Adds the partitions `batch` changed to `write`: each rewritten whole, or, for a day one of
/// whose partitions now holds more than [`LEAF_MAX`] hashes, the whole day split deeper.
pub(super) fn write(db: &Engine, write: &mut Write, batch: &Partitions) -> Result<(), StoreError> {
    let set = batch.set();
    for (day, held) in &batch.days {
        let changed = || {
            held.partitions
                .iter()
                .map(|&at| batch.get(at))
                .filter(|(_, p)| p.is_dirty())
        };
        if changed().all(|(_, partition)| partition.len() <= LEAF_MAX) || held.depth == MAX_DEPTH {
            for (key, partition) in changed() {
                write.insert(keys::partition(set, key), partition.encode());
            }
            continue;
        }
        split_day(db, write, batch, *day, held.depth, &held.partitions)?;
    }
    Ok(())
}

/// Rewrites every partition of `day` at the depth its hashes call for (the stored ones and
/// those the batch holds at `partitions`), its old keys removed and its depth key written,
/// all in `write`.
fn split_day(
    db: &Engine,
    write: &mut Write,
    batch: &Partitions,
    day: Option<Day>,
    depth: u8,
    partitions: &[usize],
) -> Result<(), StoreError> {
    let set = batch.set();
    let held: HashSet<Vec<u8>> = partitions
        .iter()
        .map(|&at| keys::partition(set, &batch.get(at).0))
        .collect();
    let mut hashes = Vec::new();
    let prefix = keys::day_prefix(set, day);
    for entry in db.scan(&prefix) {
        let (rest, value) = entry?;
        let key = [&prefix[..], &rest].concat();
        if !held.contains(&key) {
            let stored = Partition::decode(&value)
                .ok_or_else(|| StoreError::unreadable(db.path(), "seen-set partition"))?;
            stored.merge_into(&mut hashes);
        }
        write.remove(key);
    }
    for &at in partitions {
        batch.get(at).1.merge_into(&mut hashes);
    }
    hashes.sort_unstable();
    // The partitions are disjoint; one hash twice would make a partition unreadable.
    hashes.dedup();
    let depth = deeper(hashes.len(), depth);
    for (bucket, bytes) in split(&hashes, depth) {
        write.insert(keys::partition(set, &PartitionKey { day, depth, bucket }), bytes);
    }
    write.insert(keys::depth(set, day), [depth]);
    Ok(())
}

/// The partitions of one set a batch holds, by day, with the last day's at hand by bucket: a day
/// file's lines all land on its day, and hashing a key for every line showed in the backfill
/// profile.
#[derive(Debug)]
pub(super) struct Partitions {
    set: LineSet,
    all: Vec<(PartitionKey, Partition)>,
    index: HashMap<PartitionKey, usize, QuickHash>,
    /// Each day's depth, as the store had it, and its partitions' places in `all`.
    pub(super) days: HashMap<Option<Day>, BatchDay, QuickHash>,
    /// The last day looked up, its depth, and its partitions' places in `all` by bucket (up to
    /// [`RECENT_DEPTH`]; deeper days go through `index`).
    recent: Option<(Option<Day>, u8, Vec<u32>)>,
}

/// A day as a batch holds it.
#[derive(Debug)]
pub(super) struct BatchDay {
    pub(super) depth: u8,
    pub(super) partitions: Vec<usize>,
}

/// The deepest day whose buckets the batch keeps in a table (4,096 of them).
const RECENT_DEPTH: u8 = 12;

const NOT_LOADED: u32 = u32::MAX;

impl Partitions {
    pub(super) fn new(set: LineSet) -> Partitions {
        Partitions {
            set,
            all: Vec::new(),
            index: HashMap::default(),
            days: HashMap::default(),
            recent: None,
        }
    }

    pub(super) fn set(&self) -> LineSet {
        self.set
    }

    pub(super) fn get(&self, at: usize) -> &(PartitionKey, Partition) {
        &self.all[at]
    }

    /// The partition of `hash`, read once from the committed set in `db` when it is not here yet
    /// (and its day's depth, once a day).
    pub(super) fn of(
        &mut self,
        db: &Engine,
        day: Option<Day>,
        hash: LineHash,
    ) -> Result<&mut Partition, StoreError> {
        let depth = match &self.recent {
            Some((recent_day, depth, _)) if *recent_day == day => *depth,
            _ => {
                let depth = match self.days.get(&day) {
                    Some(known) => known.depth,
                    None => {
                        let depth = depth_of(db, self.set, day)?;
                        self.days.insert(
                            day,
                            BatchDay {
                                depth,
                                partitions: Vec::new(),
                            },
                        );
                        depth
                    }
                };
                let mut slots = self.recent.take().map(|(_, _, slots)| slots).unwrap_or_default();
                slots.clear();
                if depth <= RECENT_DEPTH {
                    slots.resize(1 << depth, NOT_LOADED);
                }
                self.recent = Some((day, depth, slots));
                depth
            }
        };
        let key = PartitionKey::of(day, depth, hash);
        let bucket = key.bucket as usize;
        let cached = match &self.recent {
            Some((_, _, slots)) => slots.get(bucket).copied().filter(|&at| at != NOT_LOADED),
            None => None,
        };
        let at = match cached
            .map(|at| at as usize)
            .or_else(|| self.index.get(&key).copied())
        {
            Some(at) => at,
            None => {
                let partition = partition(db, self.set, &key)?;
                self.all.push((key, partition));
                let at = self.all.len() - 1;
                self.index.insert(key, at);
                if let Some(known) = self.days.get_mut(&day) {
                    known.partitions.push(at);
                }
                at
            }
        };
        if let Some((_, _, slots)) = &mut self.recent
            && let Some(slot) = slots.get_mut(bucket)
        {
            *slot = at as u32;
        }
        Ok(&mut self.all[at].1)
    }
}

//! The store's side of the seen set (and of the cost pass's set): a day's depth and partitions
//! as committed, and how a batch's partitions are written back, a day split deeper when one of
//! its partitions outgrew [`LEAF_MAX`] (see `seen.rs`).

use std::collections::HashSet;

use super::batch::Partitions;
use super::engine::{Write, keys};
use super::seen::{
    FIRST_DEPTH, LEAF_MAX, LineSet, MAX_DEPTH, Partition, PartitionKey, decode_depth, deeper, split,
};
use super::{Store, StoreError};
use crate::ledger::timestamp::Day;

impl Store {
    /// How deep `day` of `set` is split, as committed.
    pub(super) fn depth_of(&self, set: LineSet, day: Option<Day>) -> Result<u8, StoreError> {
        match self.get(&keys::depth(set, day))? {
            None => Ok(FIRST_DEPTH),
            Some(bytes) => decode_depth(&bytes).ok_or_else(|| self.corrupt("seen-set depth")),
        }
    }

    /// The partition of `set` at `key`, as committed (empty when there is none yet).
    pub(super) fn partition(&self, set: LineSet, key: &PartitionKey) -> Result<Partition, StoreError> {
        match self.get(&keys::partition(set, key))? {
            None => Ok(Partition::default()),
            Some(bytes) => Partition::decode(&bytes).ok_or_else(|| self.corrupt("seen-set partition")),
        }
    }

    /// Adds the partitions `batch` changed to `write`: each rewritten whole, or, for a day one of
    /// whose partitions now holds more than [`LEAF_MAX`] hashes, the whole day split deeper.
    pub(super) fn write_partitions(&self, write: &mut Write, batch: &Partitions) -> Result<(), StoreError> {
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
            self.split_day(write, batch, *day, held.depth, &held.partitions)?;
        }
        Ok(())
    }

    /// Rewrites every partition of `day` at the depth its hashes call for (the stored ones and
    /// those the batch holds at `partitions`), its old keys removed and its depth key written,
    /// all in `write`.
    fn split_day(
        &self,
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
        for entry in self.db.scan(&prefix) {
            let (rest, value) = entry?;
            let key = [&prefix[..], &rest].concat();
            if !held.contains(&key) {
                let stored = Partition::decode(&value).ok_or_else(|| self.corrupt("seen-set partition"))?;
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
}

//! The seen set: every line ever counted, by xxh3-128 of its exact bytes, partitioned by the day
//! of the line's own `ts`.
//!
//! A per-key sled insert caps ingestion at ~150k lines/s and costs ~100 bytes a line on disk, so
//! hashes are grouped: each day is split into `2^depth` partitions by the hash's top bits, each a
//! sorted array of 16-byte big-endian numbers. A batch loads the partitions it touches once, and
//! writes each back once. A day starts at depth 2 (four partitions: more measured slower for
//! small ledgers, many tiny sled items) and is split deeper, whole, in the commit that takes one
//! of its partitions past [`LEAF_MAX`] hashes: so a new line rewrites a few KiB whatever the
//! day's size, and no sled node (up to 17 neighbouring partitions) reaches sled's 128 KiB frame
//! limit, past which each rewrite becomes a blob file sled 0.34 never reclaims. A day deeper than
//! 2 says so under its depth key (`engine/keys.rs`).
//! The partition key comes from the line's content, never from where it was found, so copies and
//! moved homes land in the same partition and dedupe for free.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::xxh3_128;

use crate::ledger::timestamp::Day;

/// The identity of a line: xxh3-128 of its bytes, without the `\n` and one `\r` before it (a
/// copy converted to CRLF line ends holds the same lines). No path, no offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineHash(pub u128);

impl LineHash {
    pub fn of(line: &[u8]) -> LineHash {
        LineHash(xxh3_128(line.strip_suffix(b"\r").unwrap_or(line)))
    }
}

/// The two sets of lines the store keeps by partition: the seen set, and while the cost pass of
/// an upgraded store lasts, the lines whose cost it added (`store/upgrade/before_cost.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSet {
    Seen,
    Costed,
}

/// A day's depth when it has no depth key: four partitions.
pub const FIRST_DEPTH: u8 = 2;

/// The deepest a day is split: 16M partitions, billions of lines.
pub const MAX_DEPTH: u8 = 24;

/// A partition past this many hashes (6 KiB) has its day split deeper at commit: 17 of them, a
/// full sled node, stay under sled's 128 KiB frame limit.
pub const LEAF_MAX: usize = 384;

/// A split goes deep enough that partitions hold this many hashes on average, or fewer.
const LEAF_TARGET: usize = 192;

/// Which partition a line's hash lives in: its `ts` day (or one day-less group for lines without
/// a usable `ts`: rejected lines, rows with no timestamp), and a bucket of that day at its depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionKey {
    pub day: Option<Day>,
    pub depth: u8,
    pub bucket: u32,
}

/// One write of the day's bytes, the depth and the bucket: a batch hashes a key for every line.
impl std::hash::Hash for PartitionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut bytes = [0u8; 16];
        if let Some(day) = &self.day {
            bytes[..10].copy_from_slice(day.as_bytes());
            bytes[10] = 1;
        }
        bytes[11] = self.depth;
        bytes[12..].copy_from_slice(&self.bucket.to_le_bytes());
        state.write(&bytes);
    }
}

impl PartitionKey {
    /// The partition of `hash` in `day` split to `depth`.
    pub fn of(day: Option<Day>, depth: u8, hash: LineHash) -> PartitionKey {
        PartitionKey {
            day,
            depth,
            bucket: bucket_of(hash.0, depth),
        }
    }
}

/// A stored depth, when it is one this build could have written.
pub fn decode_depth(bytes: &[u8]) -> Option<u8> {
    match bytes {
        [depth] if (FIRST_DEPTH + 1..=MAX_DEPTH).contains(depth) => Some(*depth),
        _ => None,
    }
}

/// The depth a day of `lines` hashes is split to, deeper than `current`.
pub fn deeper(lines: usize, current: u8) -> u8 {
    let mut depth = current + 1;
    while depth < MAX_DEPTH && lines > LEAF_TARGET << depth {
        depth += 1;
    }
    depth.min(MAX_DEPTH)
}

fn bucket_of(hash: u128, depth: u8) -> u32 {
    (hash >> (128 - u32::from(depth))) as u32
}

/// `hashes` (sorted, of one day) cut into the partitions of `depth`: each non-empty bucket and
/// its encoded partition, in bucket order.
pub fn split(hashes: &[u128], depth: u8) -> Vec<(u32, Vec<u8>)> {
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    for &hash in hashes {
        let bucket = bucket_of(hash, depth);
        match out.last_mut() {
            Some((last, bytes)) if *last == bucket => bytes.extend_from_slice(&hash.to_be_bytes()),
            _ => out.push((bucket, hash.to_be_bytes().to_vec())),
        }
    }
    out
}

/// Hashes a [`LineHash`] by taking its low 64 bits: it is already a uniform hash, and SipHash
/// over it showed in the backfill profile.
#[derive(Debug, Default, Clone, Copy)]
pub struct HashIsKey(u64);

impl Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used for u128 keys; kept correct for any other caller.
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_u128(&mut self, value: u128) {
        self.0 = value as u64;
    }
}

/// One partition, as loaded for a batch, plus what the batch added to it.
#[derive(Debug, Default)]
pub struct Partition {
    stored: Vec<u128>,
    added: HashSet<u128, BuildHasherDefault<HashIsKey>>,
}

const HASH_LEN: usize = 16;

/// The room a partition's new hashes start with (1 KiB): past the first doublings, small enough
/// that a ledger of many sparse days does not pay for it in memory.
const FIRST_CAPACITY: usize = 64;

impl Partition {
    /// Decodes a stored partition; `None` when the bytes are not a sorted array of hashes.
    pub fn decode(bytes: &[u8]) -> Option<Partition> {
        if !bytes.len().is_multiple_of(HASH_LEN) {
            return None;
        }
        let stored: Vec<u128> = bytes
            .chunks_exact(HASH_LEN)
            .map(|c| u128::from_be_bytes(c.try_into().expect("16 bytes")))
            .collect();
        stored.windows(2).all(|w| w[0] < w[1]).then_some(Partition {
            stored,
            added: HashSet::default(),
        })
    }

    /// Adds `hash`; `false` when it was already there (a duplicate line).
    pub fn insert(&mut self, hash: LineHash) -> bool {
        if self.stored.binary_search(&hash.0).is_ok() {
            return false;
        }
        if self.added.capacity() == 0 {
            // A backfill adds hundreds to a partition: skip the first few doublings.
            self.added.reserve(FIRST_CAPACITY);
        }
        self.added.insert(hash.0)
    }

    pub fn contains(&self, hash: LineHash) -> bool {
        self.stored.binary_search(&hash.0).is_ok() || self.added.contains(&hash.0)
    }

    pub fn is_dirty(&self) -> bool {
        !self.added.is_empty()
    }

    /// How many hashes it holds, stored and added.
    pub fn len(&self) -> usize {
        self.stored.len() + self.added.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored hashes and the added ones, merged in order, appended to `out`.
    pub fn merge_into(&self, out: &mut Vec<u128>) {
        let mut added: Vec<u128> = self.added.iter().copied().collect();
        added.sort_unstable();
        out.reserve(self.stored.len() + added.len());
        let (mut a, mut b) = (self.stored.iter().peekable(), added.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            out.push(*next.expect("peeked"));
        }
    }

    /// The stored hashes and the added ones, merged into one sorted array.
    pub fn encode(&self) -> Vec<u8> {
        let mut merged = Vec::new();
        self.merge_into(&mut merged);
        merged.iter().flat_map(|hash| hash.to_be_bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_reports_duplicates_and_encode_merges_sorted() {
        let mut p = Partition::decode(&[]).unwrap();
        for h in [5u128, 1, 9] {
            assert!(p.insert(LineHash(h)));
        }
        assert!(!p.insert(LineHash(5)));
        let mut reloaded = Partition::decode(&p.encode()).unwrap();
        assert!(!reloaded.is_dirty());
        assert!(!reloaded.insert(LineHash(9)));
        assert!(reloaded.insert(LineHash(3)));
        assert!(reloaded.insert(LineHash(u128::MAX)));
        let merged = Partition::decode(&reloaded.encode()).unwrap();
        assert_eq!(merged.stored, [1, 3, 5, 9, u128::MAX]);
    }

    #[test]
    fn a_split_goes_deep_enough_and_keeps_every_hash_in_its_bucket() {
        assert_eq!(deeper(LEAF_MAX * 4 + 1, FIRST_DEPTH), 4);
        assert_eq!(deeper(10, FIRST_DEPTH), 3);
        assert_eq!(deeper(usize::MAX, 5), MAX_DEPTH);
        assert_eq!(deeper(0, MAX_DEPTH), MAX_DEPTH);
        let hashes: Vec<u128> = (0..4000u128)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
            .collect();
        let mut sorted = hashes.clone();
        sorted.sort_unstable();
        let depth = deeper(sorted.len(), FIRST_DEPTH);
        let parts = split(&sorted, depth);
        let mut seen = 0;
        for (bucket, bytes) in &parts {
            let partition = Partition::decode(bytes).unwrap();
            for hash in &partition.stored {
                assert_eq!(PartitionKey::of(None, depth, LineHash(*hash)).bucket, *bucket);
            }
            assert!(
                partition.len() <= LEAF_MAX,
                "{} hashes in bucket {bucket}",
                partition.len()
            );
            seen += partition.len();
        }
        assert_eq!(seen, hashes.len());
        assert!(parts.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn only_a_depth_this_build_writes_is_read() {
        assert_eq!(decode_depth(&[11]), Some(11));
        for bad in [&[][..], &[2], &[MAX_DEPTH + 1], &[11, 0]] {
            assert_eq!(decode_depth(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn garbage_is_not_a_partition() {
        assert!(Partition::decode(&[1, 2, 3]).is_none());
        let mut unsorted = 2u128.to_be_bytes().to_vec();
        unsorted.extend_from_slice(&1u128.to_be_bytes());
        assert!(Partition::decode(&unsorted).is_none());
    }
}

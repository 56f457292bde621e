//! The seen set: every line ever counted, by xxh3-128 of its exact bytes, partitioned by the day
//! of the line's own `ts`.
//!
//! A per-key sled insert caps ingestion at ~150k lines/s and costs ~100 bytes a line on disk, so
//! hashes are grouped: each day is split into [`BUCKETS`] partitions by the hash's top bits, each
//! a sorted array of 16-byte big-endian numbers. A batch loads the partitions it touches once,
//! and writes each back once. Buckets keep every value under sled's 128 KiB item limit (≈33 KB at
//! 3M lines a year, ≈110 KB at 10M), past which a value becomes a blob file rewritten whole on
//! every change; more buckets measured slower for small ledgers (many tiny sled items).
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

/// Where the cost pass keeps the lines whose cost it added.
pub const COST_PASS_PREFIX: &[u8] = b"p/";

/// How many partitions a day is split into, by the top bits of the hash.
pub const BUCKETS: u8 = 4;

/// Which partition a line's hash lives in: its `ts` day (or one day-less group for lines without
/// a usable `ts`: rejected lines, rows with no timestamp), and a bucket of that day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionKey {
    pub day: Option<Day>,
    pub bucket: u8,
}

/// One write of the day's bytes and the bucket: a batch hashes a key for every line.
impl std::hash::Hash for PartitionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut bytes = [0u8; 12];
        if let Some(day) = &self.day {
            bytes[..10].copy_from_slice(day.as_bytes());
            bytes[10] = 1;
        }
        bytes[11] = self.bucket;
        state.write(&bytes);
    }
}

impl PartitionKey {
    pub fn of(day: Option<Day>, hash: LineHash) -> PartitionKey {
        PartitionKey {
            day,
            bucket: bucket_of(hash.0),
        }
    }

    /// `s/<day>/<bucket>`, or `s/-/<bucket>` without a day; the bucket as one hex digit.
    pub fn store_key(&self) -> Vec<u8> {
        self.key_under(b"s/")
    }

    /// The same partition of the cost pass's set (`store/cost_pass.rs`): `p/<day>/<bucket>`.
    pub fn cost_pass_key(&self) -> Vec<u8> {
        self.key_under(COST_PASS_PREFIX)
    }

    fn key_under(&self, prefix: &[u8]) -> Vec<u8> {
        let mut out = prefix.to_vec();
        match &self.day {
            Some(day) => out.extend_from_slice(day.as_bytes()),
            None => out.push(b'-'),
        }
        bucket_key(&out, self.bucket)
    }
}

/// A day's key with a bucket appended: `<day key>/<hex digit>`.
fn bucket_key(day_key: &[u8], bucket: u8) -> Vec<u8> {
    let mut out = day_key.to_vec();
    out.push(b'/');
    out.push(b"0123456789abcdef"[bucket as usize]);
    out
}

fn bucket_of(hash: u128) -> u8 {
    (hash >> 126) as u8
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

    /// The stored hashes and the added ones, merged into one sorted array.
    pub fn encode(&self) -> Vec<u8> {
        let mut added: Vec<u128> = self.added.iter().copied().collect();
        added.sort_unstable();
        let mut out = Vec::with_capacity((self.stored.len() + added.len()) * HASH_LEN);
        let (mut a, mut b) = (self.stored.iter().peekable(), added.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            out.extend_from_slice(&next.expect("peeked").to_be_bytes());
        }
        out
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
    fn store_keys() {
        let day = crate::ledger::timestamp::day_of_rfc3339("2026-08-07T00:00:00Z");
        let key = PartitionKey::of(day, LineHash(0b10 << 126 | 5));
        assert_eq!(key.store_key(), b"s/2026-08-07/2".to_vec());
        assert_eq!(PartitionKey::of(None, LineHash(1)).store_key(), b"s/-/0".to_vec());
    }

    #[test]
    fn garbage_is_not_a_partition() {
        assert!(Partition::decode(&[1, 2, 3]).is_none());
        let mut unsorted = 2u128.to_be_bytes().to_vec();
        unsorted.extend_from_slice(&1u128.to_be_bytes());
        assert!(Partition::decode(&unsorted).is_none());
    }
}

//! Every key the store writes, in one table (all values little-endian):
//!
//! | key | value |
//! |---|---|
//! | `version` | u32, the store's format |
//! | `created` | u64 ns since the epoch |
//! | `counts` | [`IngestCounts`] |
//! | `exports` | u64: delta exports begun (the export record outside sled has the last one's number) |
//! | `pending.delta` | [`PendingExport`] |
//! | `t/<series key>`, `d/<series key>` | lifetime and delivered [`Totals`], with their width |
//! | `$/<cost key>`, `$d/<cost key>` | lifetime and delivered spend (u128, 10^-9 units) |
//! | `u/<unpriced key>`, `ud/<unpriced key>` | lifetime and delivered unpriced requests (u64) |
//! | `c/<file name>` | a [`Checkpoint`] |
//! | `s/<day>/<bucket>`, `s/<day>/<depth>/<bucket>` | a seen-set [`Partition`] (deeper once the day is split past four) |
//! | `sd/<day>` | that day's depth (u8) |
//! | `q/<file name>` | while an upgrade's cost pass lasts: its progress in that file |
//! | `p/…`, `pd/<day>` | while it lasts: the lines whose cost it added, as `s/` and `sd/` |
//!
//! [`IngestCounts`]: crate::store::counts::IngestCounts
//! [`PendingExport`]: crate::store::PendingExport
//! [`Totals`]: crate::series::Totals
//! [`Checkpoint`]: crate::ledger::checkpoint::Checkpoint
//! [`Partition`]: crate::store::seen::Partition

use std::ffi::OsString;

use crate::ledger::timestamp::Day;
use crate::series::Family;
use crate::store::seen::{FIRST_DEPTH, LineSet, PartitionKey};

/// The layout of the store's keys and values (this file). An older format this build
/// reads is upgraded where it is loaded (`upgrade/`); any other is refused with `--reset-state`
/// as the fix (the ledger is read again).
pub const FORMAT_VERSION: u32 = 7;

pub const VERSION: &[u8] = b"version";
pub const CREATED: &[u8] = b"created";
pub const COUNTS: &[u8] = b"counts";
pub const PENDING: &[u8] = b"pending.delta";
pub const EXPORTS: &[u8] = b"exports";
pub const CHECKPOINTS: &[u8] = b"c/";
pub const PASS_REGIONS: &[u8] = b"q/";

/// Where the lifetime (or, with `delivered`, the delivered) sums of `family` live.
pub fn family_prefix(family: Family, delivered: bool) -> &'static [u8] {
    match (family, delivered) {
        (Family::Tokens, false) => b"t/",
        (Family::Tokens, true) => b"d/",
        (Family::Cost, false) => b"$/",
        (Family::Cost, true) => b"$d/",
        (Family::Unpriced, false) => b"u/",
        (Family::Unpriced, true) => b"ud/",
    }
}

pub fn checkpoint(name: &OsString) -> Vec<u8> {
    [CHECKPOINTS, name.as_encoded_bytes()].concat()
}

/// The cost pass's progress in the file `name`.
pub fn pass_region(name: &[u8]) -> Vec<u8> {
    [PASS_REGIONS, name].concat()
}

/// Where a set's partitions live: `s/` or `p/`.
pub fn set_prefix(set: LineSet) -> &'static [u8] {
    match set {
        LineSet::Seen => b"s/",
        LineSet::Costed => b"p/",
    }
}

/// Where a set's days deeper than [`FIRST_DEPTH`] say their depth: `sd/` or `pd/`.
pub fn depth_prefix(set: LineSet) -> &'static [u8] {
    match set {
        LineSet::Seen => b"sd/",
        LineSet::Costed => b"pd/",
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// At depth 2 `s/<day>/<bucket>`, the bucket as one hex digit (`s/-/<bucket>` without a day);
/// deeper `s/<day>/<depth>/<bucket>`, the depth as two decimal digits and the bucket as
/// `depth / 4` hex digits, rounded up. Under `p/` for the cost pass's set.
pub fn partition(set: LineSet, at: &PartitionKey) -> Vec<u8> {
    let mut out = day_prefix(set, at.day);
    if at.depth == FIRST_DEPTH {
        out.push(HEX[at.bucket as usize]);
    } else {
        out.extend_from_slice(format!("{:02}/", at.depth).as_bytes());
        let digits = at.depth.div_ceil(4) as usize;
        out.extend_from_slice(format!("{:0digits$x}", at.bucket).as_bytes());
    }
    out
}

/// What every partition key of `day` in `set` starts with: `s/<day>/`, or `s/-/`.
pub fn day_prefix(set: LineSet, day: Option<Day>) -> Vec<u8> {
    let mut out = set_prefix(set).to_vec();
    push_day(&mut out, day);
    out.push(b'/');
    out
}

/// Where a day deeper than [`FIRST_DEPTH`] keeps its depth (one byte): `sd/<day>` or `sd/-`.
pub fn depth(set: LineSet, day: Option<Day>) -> Vec<u8> {
    let mut out = depth_prefix(set).to_vec();
    push_day(&mut out, day);
    out
}

fn push_day(out: &mut Vec<u8>, day: Option<Day>) {
    match &day {
        Some(day) => out.extend_from_slice(day.as_bytes()),
        None => out.push(b'-'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::seen::LineHash;

    #[test]
    fn partition_keys() {
        let day = crate::ledger::timestamp::day_of_rfc3339("2026-08-07T00:00:00Z");
        let at = PartitionKey::of(day, FIRST_DEPTH, LineHash(0b10 << 126 | 5));
        assert_eq!(partition(LineSet::Seen, &at), b"s/2026-08-07/2".to_vec());
        assert_eq!(partition(LineSet::Costed, &at), b"p/2026-08-07/2".to_vec());
        let none = PartitionKey::of(None, FIRST_DEPTH, LineHash(1));
        assert_eq!(partition(LineSet::Seen, &none), b"s/-/0".to_vec());
        let deep = PartitionKey::of(day, 11, LineHash(0x3ff << 117));
        assert_eq!(deep.bucket, 0x3ff);
        assert_eq!(partition(LineSet::Seen, &deep), b"s/2026-08-07/11/3ff".to_vec());
        assert_eq!(depth(LineSet::Seen, day), b"sd/2026-08-07".to_vec());
        assert!(partition(LineSet::Seen, &deep).starts_with(&day_prefix(LineSet::Seen, day)));
    }
}

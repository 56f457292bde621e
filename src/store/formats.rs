//! Golden bytes for every layout the store writes: a value built here, encoded, must equal the
//! bytes committed in `testdata/formats/<name>.hex`, and those bytes must decode to the value.
//! Round trips alone pass when both sides change together, and every store written before the
//! change would then be misread. A failure here means a format change: give it a new version
//! (the store's `FORMAT_VERSION`, a record's version byte) and new fixtures, deliberately.
//!
//! A missing fixture fails with the hex to commit.

use std::ffi::OsString;
use std::path::PathBuf;

use super::counts::IngestCounts;
use super::engine::keys::FORMAT_VERSION;
use super::engine::keys::{self, family_prefix};
use super::export_record::ExportRecord;
use super::history::{FrontierChain, FrontierFile, HistoryFrontier};
use super::pass_regions::PassFile;
use super::pending_export::PendingExport;
use super::records::frame::Record as _;
use super::recovery;
use super::seen::{FIRST_DEPTH, LineHash, LineSet, Partition, PartitionKey, decode_depth};
use super::stream::StreamRecord;
use crate::ledger::checkpoint::{BlockChain, Chain, Checkpoint, FileStat, Fingerprint, Verified};
use crate::ledger::decode::Rejection;
use crate::ledger::quote::Amount;
use crate::ledger::timestamp::day_of_rfc3339;
use crate::series::cost::{CostSeries, SeriesKey, UnpricedSeries};
use crate::series::{AttrSet, Family, Quantity, Sums, Totals};

/// The bytes of `testdata/formats/<name>.hex` (hex digits, white space ignored), checked
/// against `encoded`.
fn golden(name: &str, encoded: &[u8]) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("testdata/formats/{name}.hex"));
    let hex: String = encoded.iter().map(|b| format!("{b:02x}")).collect();
    let Ok(text) = std::fs::read_to_string(&path) else {
        panic!(
            "{} is missing; if this layout is new, commit it with:\n{hex}",
            path.display()
        );
    };
    let digits: String = text.split_whitespace().collect();
    assert_eq!(
        digits, hex,
        "{name}: the layout changed (see this file's comment)"
    );
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

/// The bytes of `testdata/formats/<name>.hex` for a layout this build only reads (one written
/// before cost).
fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("testdata/formats/{name}.hex"));
    let digits: String = std::fs::read_to_string(&path)
        .unwrap()
        .split_whitespace()
        .collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

fn attrs() -> AttrSet {
    AttrSet {
        model_ref: "deepseek/deepseek-v4-flash".into(),
        provider: "deepseek".into(),
        source: "desktop".into(),
    }
}

/// Every quantity of format 6 set: one added later leaves these bytes as they are.
fn totals() -> Totals {
    let mut totals = Totals::default();
    for (i, q) in Quantity::ALL[..8].iter().copied().enumerate() {
        totals.set(q, (i as u64 + 1) * 1_000_003);
    }
    totals
}

fn cost_key() -> CostSeries {
    CostSeries {
        attrs: attrs(),
        currency: "CNY".into(),
        billing_mode: "subscription_equivalent".into(),
    }
}

fn unpriced_key() -> UnpricedSeries {
    UnpricedSeries {
        attrs: attrs(),
        reason: "no_price".into(),
    }
}

fn sums() -> Sums {
    let mut sums = tokens_only();
    sums.cost.insert(
        cost_key(),
        Amount::from_units(999_999_999_999_999_999_999_999_999),
    );
    sums.unpriced.insert(unpriced_key(), 12_345);
    sums
}

/// What layouts from before cost hold.
fn tokens_only() -> Sums {
    let mut sums = Sums::default();
    sums.tokens.insert(attrs(), totals());
    sums.tokens.insert(AttrSet::folded(), Totals::default());
    sums
}

fn pending() -> PendingExport {
    PendingExport {
        delivered_after: sums(),
    }
}

#[test]
fn series_keys_and_values() {
    let prefixed = |family: Family, key: Vec<u8>| [family_prefix(family, false), &key].concat();
    let bytes = golden("series-key", &prefixed(Family::Tokens, attrs().encode()));
    assert_eq!(AttrSet::decode(&bytes[2..]), Some(attrs()));
    let bytes = golden("totals", &totals().encode());
    let mut sums = Sums::default();
    sums.insert_encoded(Family::Tokens, &attrs().encode(), &bytes)
        .unwrap();
    assert_eq!(sums.tokens[&attrs()], totals());
    // Before widths: eight u64s, read by the upgrade alone.
    let old = fixture("totals-before-width");
    assert_eq!(old, bytes[1..], "the same quantities, without the width");
    assert!(
        Sums::default()
            .insert_encoded(Family::Tokens, &attrs().encode(), &old)
            .is_none()
    );
    let bytes = golden(
        "cost-key",
        &prefixed(Family::Cost, SeriesKey::encode(&cost_key())),
    );
    assert_eq!(CostSeries::decode(&bytes[2..]), Some(cost_key()));
    let amount = Amount::from_units(999_999_999_999_999_999_999_999_999);
    assert_eq!(Amount::decode(&golden("amount", &amount.encode())), Some(amount));
    let bytes = golden(
        "unpriced-key",
        &prefixed(Family::Unpriced, unpriced_key().encode()),
    );
    assert_eq!(UnpricedSeries::decode(&bytes[2..]), Some(unpriced_key()));
    let prefixes: Vec<&[u8]> = Family::ALL
        .into_iter()
        .flat_map(|f| [family_prefix(f, false), family_prefix(f, true)])
        .collect();
    assert_eq!(prefixes, [&b"t/"[..], b"d/", b"$/", b"$d/", b"u/", b"ud/"]);
}

#[test]
fn cost_pass_region_and_set_key() {
    let region = PassFile {
        done: 4096,
        end: 98_700,
        dev: 0x801,
        ino: 1_234_567,
    };
    assert_eq!(
        PassFile::decode(&golden("cost-pass-region", &region.encode())),
        Some(region)
    );
    let day = day_of_rfc3339("2026-08-07T00:22:43.571662+08:00");
    golden(
        "cost-pass-key",
        &keys::partition(
            LineSet::Costed,
            &PartitionKey::of(day, FIRST_DEPTH, LineHash(1 << 127 | 5)),
        ),
    );
}

#[test]
fn checkpoint() {
    let stat = FileStat {
        dev: 0x801,
        ino: 1_234_567,
        size: 98_765,
        mtime_ns: 1_764_500_000_123_456_789,
        ctime_ns: 1_764_500_000_223_456_789,
    };
    let mut prefix = BlockChain::default();
    prefix.update(&[b'x'; 98_700]);
    let verified = Verified {
        at_ns: 1_764_500_000_323_456_789,
        len: 65_536,
    };
    let checkpoint = Checkpoint::take(stat, 98_700, &prefix, 98_765, verified);
    let bytes = golden("checkpoint", &checkpoint.encode());
    assert_eq!(Checkpoint::decode(&bytes), Some(checkpoint));
    // Taken before blocks: its hash made in one stream, never verified since.
    let streamed = Checkpoint {
        stat,
        offset: 98_700,
        prefix: Fingerprint {
            len: 98_700,
            hash: 0xdead_beef_cafe_f00d,
            chain: Chain::Streamed,
        },
        verified: Verified::default(),
    };
    assert_eq!(
        Checkpoint::decode(&fixture("checkpoint-before-blocks")),
        Some(streamed)
    );
    // Taken before the change time was kept: the reserved field was 0.
    let before = Checkpoint {
        stat: FileStat { ctime_ns: 0, ..stat },
        ..streamed
    };
    assert_eq!(
        Checkpoint::decode(&fixture("checkpoint-before-ctime")),
        Some(before)
    );
    let key = keys::checkpoint(&OsString::from("2026-08-07.jsonl"));
    golden("checkpoint-key", &key);
}

fn counts() -> IngestCounts {
    let mut counts = IngestCounts {
        counted: 11,
        duplicate: 22,
        folded: 33,
        bytes: 44,
        ..IngestCounts::default()
    };
    for (i, why) in Rejection::ALL.into_iter().enumerate() {
        for _ in 0..=i {
            counts.reject(why);
        }
    }
    counts
}

#[test]
fn ingest_counts() {
    let counts = counts();
    let bytes = golden("ingest-counts", &counts.encode());
    assert_eq!(IngestCounts::decode(&bytes), Some(counts));
    // Written before `bad_compaction`: it starts at 0.
    let mut before = counts;
    *before.rejected.last_mut().unwrap() = 0;
    let old = fixture("ingest-counts-before-bad-compaction");
    assert_eq!(IngestCounts::decode(&old), Some(before));
    // And before `too_long`: six reasons.
    let mut six = before;
    six.rejected[6] = 0;
    assert_eq!(IngestCounts::decode(&old[..(4 + 6) * 8]), Some(six));
}

#[test]
fn seen_set_partition_and_its_key() {
    let day = day_of_rfc3339("2026-08-07T00:22:43.571662+08:00");
    let hashes = [LineHash(7), LineHash(1 << 127 | 5), LineHash(u128::MAX)];
    let mut partition = Partition::default();
    for hash in hashes {
        assert!(partition.insert(hash));
    }
    let bytes = golden("seen-partition", &partition.encode());
    let mut read = Partition::decode(&bytes).unwrap();
    for hash in hashes {
        assert!(!read.insert(hash), "{hash:?} is in the committed partition");
    }
    golden(
        "seen-key",
        &keys::partition(
            LineSet::Seen,
            &PartitionKey::of(day, FIRST_DEPTH, LineHash(1 << 127 | 5)),
        ),
    );
    golden(
        "seen-key-no-day",
        &keys::partition(LineSet::Seen, &PartitionKey::of(None, FIRST_DEPTH, LineHash(7))),
    );
    golden(
        "seen-key-deeper",
        &keys::partition(LineSet::Seen, &PartitionKey::of(day, 13, LineHash(1 << 127 | 5))),
    );
    let depth = golden("seen-depth", &[13]);
    assert_eq!(decode_depth(&depth), Some(13));
    golden("seen-depth-key", &keys::depth(LineSet::Seen, day));
}

#[test]
fn pending_export_and_export_record() {
    let bytes = golden("pending-export", &pending().encode());
    assert_eq!(PendingExport::decode(&bytes), Some(pending()));
    let record = ExportRecord {
        created_ns: 1_764_500_000_123_456_789,
        number: 42,
        pending: pending(),
    };
    let bytes = golden("export-record", &record.encode());
    assert_eq!(ExportRecord::decode(&bytes), Some(record.clone()));
    // Before widths (format 4 and 5, export record 3).
    let old = fixture("pending-export-before-width");
    assert_eq!(super::upgrade::pending_before_width(&old), Some(pending()));
    assert_eq!(PendingExport::decode(&old), None, "refused by today's reader");
    assert_eq!(
        ExportRecord::decode(&fixture("export-record-version-3")),
        Some(record)
    );
}

/// Written before cost: read as the token sums they hold.
#[test]
fn pending_export_and_export_record_before_cost() {
    let bytes = fixture("pending-export-before-cost");
    let before = PendingExport {
        delivered_after: tokens_only(),
    };
    assert_eq!(super::upgrade::pending_before_cost(&bytes), Some(before.clone()));
    let record = ExportRecord::decode(&fixture("export-record-before-cost")).unwrap();
    assert_eq!((record.number, record.pending), (42, before));
}

fn stream() -> StreamRecord {
    let mut record = StreamRecord::starting(1_764_500_000_123_456_789);
    record.last_time_ns = 1_764_500_060_000_000_000;
    record.own.insert("reasonix_exporter.lines.read".into(), 77);
    record
}

#[test]
fn stream_record() {
    let mut record = stream();
    record.marks = sums();
    let version_2 = record.clone();
    record.births.insert((Family::Tokens, attrs().encode()), 0);
    record
        .births
        .insert((Family::Cost, cost_key().encode()), 1_764_500_090_000_000_000);
    let version_3 = record.clone();
    record.published_ns = 1_764_500_095_000_000_000;
    let version_4 = record.clone();
    record.served = sums();
    record.served_counts = counts();
    let mut version_5 = record.clone();
    // Its counts were written before `bad_compaction`.
    *version_5.served_counts.rejected.last_mut().unwrap() = 0;
    record.instance = Some("alice@laptop/0123abcd".into());
    let bytes = golden("stream-record", &record.encode());
    assert_eq!(StreamRecord::decode(&bytes), Some(record.clone()));
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-version-6")),
        Some(record),
        "version 6, before totals were stored with their width"
    );
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-version-5")),
        Some(version_5),
        "version 5, before the store's identity was kept"
    );
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-version-4")),
        Some(version_4),
        "version 4, before what /metrics served"
    );
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-version-3")),
        Some(version_3),
        "version 3, before the publication's time"
    );
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-version-2")),
        Some(version_2),
        "version 2, before births"
    );
    let mut before = stream();
    before.marks.tokens.insert(attrs(), totals());
    assert_eq!(
        StreamRecord::decode(&fixture("stream-record-before-cost")),
        Some(before),
        "version 1, before cost"
    );
}

#[test]
fn history_frontier() {
    let frontier = HistoryFrontier {
        first_sent_ns: 1_764_500_060_000_000_000,
        files: vec![FrontierFile {
            name: b"2026-11-30.jsonl".to_vec(),
            offset: 12_345,
            prefix_hash: 0x0123_4567_89ab_cdef,
            chain: FrontierChain::Blocks,
        }],
        first_values: sums(),
    };
    let bytes = golden("history-frontier", &frontier.encode());
    assert_eq!(HistoryFrontier::decode(&bytes), Some(frontier.clone()));
    // Before version 3, every prefix hash was made in one stream.
    let mut streamed = frontier;
    streamed.files[0].chain = FrontierChain::Streamed;
    assert_eq!(
        HistoryFrontier::decode(&fixture("history-frontier-version-2")),
        Some(streamed.clone()),
        "version 2, before blocks"
    );
    assert_eq!(
        HistoryFrontier::decode(&fixture("history-frontier-version-1")),
        Some(streamed),
        "version 1, before totals were stored with their width"
    );
}

#[test]
fn store_header_values_and_marker() {
    assert_eq!(FORMAT_VERSION, 7, "a new format needs new fixtures");
    golden("format-version", &FORMAT_VERSION.to_le_bytes());
    assert_eq!(fixture("format-version-before-blocks"), 6u32.to_le_bytes());
    assert_eq!(fixture("format-version-before-width"), 5u32.to_le_bytes());
    assert_eq!(fixture("format-version-before-split"), 4u32.to_le_bytes());
    assert_eq!(fixture("format-version-before-cost"), 3u32.to_le_bytes());
    let marker = golden("marker", b"1764500000123456789\n");
    assert_eq!(recovery::parse_marker(&marker), Some(1_764_500_000_123_456_789));
}

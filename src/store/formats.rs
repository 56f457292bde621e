//! Golden bytes for every layout the store writes: a value built here, encoded, must equal the
//! bytes committed in `testdata/formats/<name>.hex`, and those bytes must decode to the value.
//! Round trips alone pass when both sides change together, and every store written before the
//! change would then be misread. A failure here means a format change: give it a new version
//! (the store's `FORMAT_VERSION`, a record's version byte) and new fixtures, deliberately.
//!
//! A missing fixture fails with the hex to commit.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use super::counts::IngestCounts;
use super::engine::{self, PREFIX_DELIVERED, PREFIX_TOTALS};
use super::export_record::ExportRecord;
use super::seen::{LineHash, Partition, PartitionKey};
use super::stream::StreamRecord;
use super::{FORMAT_VERSION, PendingExport, recovery};
use crate::ledger::checkpoint::{Checkpoint, FileStat};
use crate::ledger::decode::Rejection;
use crate::ledger::timestamp::day_of_rfc3339;
use crate::series::{AttrSet, Quantity, Totals};

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

fn attrs() -> AttrSet {
    AttrSet {
        model_ref: "deepseek/deepseek-v4-flash".into(),
        provider: "deepseek".into(),
        source: "desktop".into(),
    }
}

fn totals() -> Totals {
    let mut totals = Totals::default();
    for (i, q) in Quantity::ALL.into_iter().enumerate() {
        totals.set(q, (i as u64 + 1) * 1_000_003);
    }
    totals
}

fn pending() -> PendingExport {
    let mut delivered_after = BTreeMap::new();
    delivered_after.insert(attrs(), totals());
    delivered_after.insert(AttrSet::folded(), Totals::default());
    PendingExport { delivered_after }
}

#[test]
fn series_key_and_totals() {
    let key = engine::series_key(PREFIX_TOTALS, &attrs());
    let bytes = golden("series-key", &key);
    assert_eq!(AttrSet::decode(&bytes[PREFIX_TOTALS.len()..]), Some(attrs()));
    assert_eq!(engine::series_key(PREFIX_DELIVERED, &attrs())[..2], *b"d/");
    let bytes = golden("totals", &totals().encode());
    assert_eq!(Totals::decode(&bytes), Some(totals()));
}

#[test]
fn checkpoint() {
    let stat = FileStat {
        dev: 0x801,
        ino: 1_234_567,
        size: 98_765,
        mtime_ns: 1_764_500_000_123_456_789,
    };
    let checkpoint = Checkpoint::take(stat, 98_700, 0xdead_beef_cafe_f00d, 98_765);
    let bytes = golden("checkpoint", &checkpoint.encode());
    assert_eq!(Checkpoint::decode(&bytes), Some(checkpoint));
    let key = engine::checkpoint_key(&OsString::from("2026-08-07.jsonl"));
    golden("checkpoint-key", &key);
}

#[test]
fn ingest_counts() {
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
    let bytes = golden("ingest-counts", &counts.encode());
    assert_eq!(IngestCounts::decode(&bytes), Some(counts));
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
        &PartitionKey::of(day, LineHash(1 << 127 | 5)).store_key(),
    );
    golden(
        "seen-key-no-day",
        &PartitionKey::of(None, LineHash(7)).store_key(),
    );
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
    assert_eq!(ExportRecord::decode(&bytes), Some(record));
}

#[test]
fn stream_record() {
    let mut record = StreamRecord::starting(1_764_500_000_123_456_789);
    record.last_time_ns = 1_764_500_060_000_000_000;
    record.series.insert(attrs(), totals());
    record.own.insert("reasonix_exporter.lines.read".into(), 77);
    let bytes = golden("stream-record", &record.encode());
    assert_eq!(StreamRecord::decode(&bytes), Some(record));
}

#[test]
fn store_header_values_and_marker() {
    assert_eq!(FORMAT_VERSION, 3, "a new format needs new fixtures");
    golden("format-version", &FORMAT_VERSION.to_le_bytes());
    let marker = golden("marker", b"1764500000123456789\n");
    assert_eq!(recovery::parse_marker(&marker), Some(1_764_500_000_123_456_789));
}

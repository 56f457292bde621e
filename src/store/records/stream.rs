//! The stream record: what keeps the store's cumulative stream one stream for its whole life.
//!
//! Backends keep one series per label set, read a drop in value as a counter reset, and refuse a
//! sample older than the newest they hold. So every cumulative point carries the store's lifetime
//! total under one start time, and this small file beside the store remembers, per point,
//! the highest value ever sent (its *mark*), the start time, and the newest point time:
//!
//! - the start time outlives the store (`--reset-state` keeps this file), so a rebuilt store
//!   continues the same stream;
//! - a point below its mark (a store that came back behind what was exported and has not caught
//!   up from the ledger) is held instead of sent, so no exported value ever goes down;
//! - each export's time is later than the last one's by at least a millisecond, whatever the
//!   clock does, so that no two points of a series share a millisecond or arrive out of order.
//!
//! - when each series was born, for `/metrics`' `_created`: a series the store had when it first
//!   published its totals is history (no birth: its first value is not growth), a later one is
//!   born a millisecond after the last publication without it, or, for one that came with a
//!   run's catch-up, after the newest moment this record knows of (docs/counting-rules.md,
//!   "Births").
//!
//! It is written and `fsync`ed before the export it describes is sent: a mark may then be higher
//! than what reached the backend (held a little longer), never lower.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::frame::{self, Record};
use crate::bytes::put_sized;
use crate::series::{Family, Sums};
use crate::store::counts::IngestCounts;
use crate::store::error::StoreError;

const FILE: &str = "stream";
const MAGIC: &[u8; 8] = b"rxstream";
/// 7 stores totals with their width (`Totals::encode_into`); 6 adds the store's identity; 5 what `/metrics` served; 4 the last publication's time; 3 the series' births; 2 marks
/// the cost families too; 1 (before cost) is read as tokens only.
const VERSION: u8 = 7;

/// How far ahead of the clock a record's times may be and still be the clock's own (backends
/// refuse points dated more than 10 minutes ahead): beyond, the clock ran fast when they were
/// written.
pub const AHEAD_LIMIT_NS: u64 = 10 * 60 * 1_000_000_000;

/// A series as stored: its family and its key's bytes.
pub type SeriesId = (Family, Vec<u8>);

/// The state of the store's cumulative stream, as last exported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamRecord {
    /// The start time of every cumulative point, for the store's whole life (Unix ns).
    pub start_ns: u64,
    /// The newest point time sent (Unix ns); 0 before the first export.
    pub last_time_ns: u64,
    /// The highest value sent, per ledger series and quantity (with delta, raised to what the
    /// collector has once it has it).
    pub marks: Sums,
    /// The highest value sent of each of the exporter's own counters, by point name.
    pub own: BTreeMap<String, u64>,
    /// Every series the store has published, and when it was born (Unix ns); 0 for history,
    /// what the store had when it first published. Empty until then.
    pub births: BTreeMap<SeriesId, u64>,
    /// A moment `/metrics` served the series `births` lists, and none other (Unix ns; 0 for
    /// none known): noted now and then, and at a clean stop, so that a series a next run finds
    /// is dated just after it.
    pub published_ns: u64,
    /// What `/metrics` served at that moment, series by series, and of the exporter's lifetime
    /// line counts: a store rebuilt from the ledger serves no less while it catches up (a
    /// scraper reads a lower value as a reset, and counts the whole history again).
    pub served: Sums,
    pub served_counts: IngestCounts,
    /// The store's identity towards backends (`service.instance.id`), kept from the first time
    /// the stream is recorded on: whatever spelling of the state dir reaches the store later,
    /// and whatever the way an identity is made becomes, the backend's series stays one.
    /// `None` in a record written before identities were kept.
    pub instance: Option<String>,
}

impl StreamRecord {
    /// A new stream starting at `start_ns`, nothing sent yet.
    pub fn starting(start_ns: u64) -> StreamRecord {
        StreamRecord {
            start_ns,
            ..StreamRecord::default()
        }
    }

    /// The identity the store goes by: the one this record keeps; for a stream that went out
    /// before records kept one, the one it went out under (`legacy`); else `fresh`.
    pub fn identity_or(&self, fresh: impl FnOnce() -> String, legacy: &str) -> String {
        match &self.instance {
            Some(kept) => kept.clone(),
            None if self.never_sent() => fresh(),
            None => legacy.to_owned(),
        }
    }

    /// Whether the stream has never gone out: not exported, not published.
    pub fn never_sent(&self) -> bool {
        self.last_time_ns == 0 && self.births.is_empty()
    }

    /// Whether this record's times run ahead of the clock `now_ns` by more than [`AHEAD_LIMIT_NS`]:
    /// written under a clock that ran fast and has come back since.
    pub fn ahead_of(&self, now_ns: u64) -> bool {
        self.newest_ns() > now_ns.saturating_add(AHEAD_LIMIT_NS)
    }

    /// Brings every time ahead of the clock back to `now_ns`, and says how far ahead the newest
    /// was (`None` when none was). The stream goes on at the clock's time: a backend refused what
    /// was sent dated that far ahead, and will take the points now; a start time ahead of the
    /// clock starts the stream again now (a point's start cannot follow its time).
    pub fn come_back_to(&mut self, now_ns: u64) -> Option<u64> {
        if !self.ahead_of(now_ns) {
            return None;
        }
        let ahead = self.newest_ns() - now_ns;
        let limit = now_ns.saturating_add(AHEAD_LIMIT_NS);
        if self.start_ns > limit {
            self.start_ns = now_ns;
        }
        if self.published_ns > limit {
            self.published_ns = now_ns;
        }
        if self.last_time_ns > limit {
            // The next export goes a millisecond later, at the clock's time.
            self.last_time_ns = now_ns.saturating_sub(1_000_000).max(self.start_ns);
        }
        for born in self.births.values_mut() {
            if *born > limit {
                *born = now_ns;
            }
        }
        Some(ahead)
    }

    /// The time for the next export's points: now, or a millisecond past the last export if the
    /// clock says otherwise.
    pub fn next_time_ns(&self, now_ns: u64) -> u64 {
        if self.last_time_ns == 0 {
            now_ns.max(self.start_ns)
        } else {
            now_ns.max(self.last_time_ns.saturating_add(1_000_000))
        }
    }

    /// The time of a birth export's zeros: a millisecond past the last export this record knows
    /// of. A series born since had no point then, so the zero lies before its first value; and
    /// it lies before any value that exports this record does not know of (a record restored
    /// from a backup) may have sent, which all came later still.
    pub fn birth_time_ns(&self) -> u64 {
        self.last_time_ns.max(self.start_ns).saturating_add(1_000_000)
    }

    /// The newest moment this record knows of: its last export or its newest birth.
    pub fn newest_ns(&self) -> u64 {
        let births = self.births.values().copied().max().unwrap_or(0);
        self.last_time_ns
            .max(births)
            .max(self.published_ns)
            .max(self.start_ns)
    }
}

impl Record for StreamRecord {
    fn encode(&self) -> Vec<u8> {
        let births: usize = self.births.keys().map(|(_, key)| 13 + key.len()).sum();
        let mut out = frame::header(MAGIC, VERSION);
        out.reserve(96 + (self.marks.len() + self.served.len()) * 120 + self.own.len() * 48 + births);
        out.extend_from_slice(&self.start_ns.to_le_bytes());
        out.extend_from_slice(&self.last_time_ns.to_le_bytes());
        out.extend_from_slice(&self.marks.encode());
        out.extend_from_slice(&(self.own.len() as u32).to_le_bytes());
        for (name, mark) in &self.own {
            put_sized(&mut out, name.as_bytes());
            out.extend_from_slice(&mark.to_le_bytes());
        }
        out.extend_from_slice(&(self.births.len() as u32).to_le_bytes());
        for ((family, key), born_ns) in &self.births {
            out.push(family_code(*family));
            put_sized(&mut out, key);
            out.extend_from_slice(&born_ns.to_le_bytes());
        }
        out.extend_from_slice(&self.published_ns.to_le_bytes());
        out.extend_from_slice(&self.served.encode());
        put_sized(&mut out, &self.served_counts.encode());
        put_sized(&mut out, self.instance.as_deref().unwrap_or("").as_bytes());
        frame::seal(out)
    }

    fn decode(bytes: &[u8]) -> Option<StreamRecord> {
        let (version, mut r) = frame::open(bytes, MAGIC)?;
        let start_ns = r.u64()?;
        let last_time_ns = r.u64()?;
        let sums = match version {
            VERSION => Sums::read,
            2..=6 => crate::store::upgrade::sums_before_width,
            1 => crate::store::upgrade::sums_before_cost,
            _ => return None,
        };
        let marks = sums(&mut r)?;
        let mut own = BTreeMap::new();
        for _ in 0..r.u32()? {
            let name = String::from_utf8(r.sized()?.to_vec()).ok()?;
            own.insert(name, r.u64()?);
        }
        let mut births = BTreeMap::new();
        if version >= 3 {
            for _ in 0..r.u32()? {
                let family = family_of(r.u8()?)?;
                let key = r.sized()?.to_vec();
                births.insert((family, key), r.u64()?);
            }
        }
        let published_ns = if version >= 4 { r.u64()? } else { 0 };
        let (mut served, mut served_counts) = (Sums::default(), IngestCounts::default());
        if version >= 5 {
            served = sums(&mut r)?;
            served_counts = IngestCounts::decode(r.sized()?)?;
        }
        let mut instance = None;
        if version >= 6 {
            let text = String::from_utf8(r.sized()?.to_vec()).ok()?;
            instance = (!text.is_empty()).then_some(text);
        }
        r.is_empty().then_some(StreamRecord {
            start_ns,
            last_time_ns,
            marks,
            own,
            births,
            published_ns,
            served,
            served_counts,
            instance,
        })
    }
}

fn family_code(family: Family) -> u8 {
    match family {
        Family::Tokens => 0,
        Family::Cost => 1,
        Family::Unpriced => 2,
    }
}

fn family_of(code: u8) -> Option<Family> {
    Family::ALL.into_iter().find(|f| family_code(*f) == code)
}

impl StreamRecord {
    /// The series of `lifetime` that it has not published yet, born at `born_ns` (or history, on
    /// the store's first publication); `false` when there are none.
    pub fn note_births(&mut self, lifetime: &Sums, born_ns: u64) -> bool {
        let born_ns = if self.births.is_empty() { 0 } else { born_ns.max(1) };
        let mut changed = false;
        for (family, key, _) in lifetime.encoded_entries() {
            if let std::collections::btree_map::Entry::Vacant(e) = self.births.entry((family, key)) {
                e.insert(born_ns);
                changed = true;
            }
        }
        changed
    }
}

/// Where the stream record of the store under `state_dir` lives.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// Where the notes of what `/metrics` served between two durable notes go: a copy of the
/// stream record, written where a `kill -9` cannot lose it, never in place of the record itself
/// (a power cut can leave it torn: it is then ignored).
pub fn served_path_in(state_dir: &Path) -> PathBuf {
    state_dir.join(format!("{FILE}.served"))
}

/// Reads the record at `path`: `None` when there is none.
pub fn read(path: &Path) -> Result<Option<StreamRecord>, StoreError> {
    frame::read(path, || StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: "unreadable stream record".into(),
    })
}

/// Replaces the record at `path` so that it survives a power cut.
pub fn write(path: &Path, record: &StreamRecord) -> Result<(), StoreError> {
    frame::write(path, record)
}

/// Replaces the copy at `path` ([`served_path_in`]) so that it survives a crash of the process
/// (`kill -9`), not a power cut: for a note that a later durable one takes over.
pub fn write_until_the_next_note(path: &Path, record: &StreamRecord) -> Result<(), StoreError> {
    frame::write_with(path, record, crate::own_files::Durability::ProcessCrash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{AttrSet, Quantity, Totals};

    fn record() -> StreamRecord {
        let mut marks = Totals::default();
        marks.set(Quantity::Prompt, 1_234_567);
        marks.set(Quantity::Requests, 9);
        let mut record = StreamRecord::starting(1_764_500_000_123_456_789);
        record.last_time_ns = 1_764_500_060_000_000_000;
        record.marks.tokens.insert(AttrSet::folded(), marks);
        record.own.insert("reasonix_exporter.lines.read".into(), 77);
        record
            .births
            .insert((Family::Tokens, AttrSet::folded().encode()), 0);
        record
            .births
            .insert((Family::Unpriced, vec![1, 2, 3]), 1_764_500_070_000_000_000);
        record.published_ns = 1_764_500_080_000_000_000;
        record.instance = Some("alice@laptop/0123abcd".into());
        record
    }

    #[test]
    fn the_first_publication_is_history_and_later_series_are_born() {
        let mut lifetime = Sums::default();
        lifetime.tokens.insert(AttrSet::folded(), Totals::default());
        let mut record = StreamRecord::starting(1);
        assert!(record.note_births(&lifetime, 50));
        assert_eq!(record.births.values().collect::<Vec<_>>(), [&0]);
        assert!(!record.note_births(&lifetime, 60), "nothing new");
        let mut other = AttrSet::folded();
        other.model_ref = "m".into();
        lifetime.tokens.insert(other.clone(), Totals::default());
        assert!(record.note_births(&lifetime, 70));
        assert_eq!(record.births[&(Family::Tokens, other.encode())], 70);
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        assert!(matches!(read(&path), Ok(None)));
        frame::write(&path, &record()).unwrap();
        assert_eq!(read(&path).unwrap(), Some(record()));
        frame::write(&path, &StreamRecord::starting(5)).unwrap();
        assert_eq!(read(&path).unwrap(), Some(StreamRecord::starting(5)));
    }

    #[test]
    fn any_damaged_byte_makes_the_record_unreadable() {
        frame::assert_every_damage_is_refused(&record().encode(), |bytes| {
            StreamRecord::decode(bytes).is_some()
        });
    }

    #[test]
    fn a_record_written_under_a_clock_that_ran_fast_comes_back_to_the_clock() {
        const YEAR_NS: u64 = 365 * 86_400 * 1_000_000_000;
        let now = 1_796_000_000_000_000_000;
        let mut record = StreamRecord::starting(now - YEAR_NS);
        record.last_time_ns = now + AHEAD_LIMIT_NS;
        assert!(!record.ahead_of(now), "ten minutes ahead is the clock's own");
        assert_eq!(record.come_back_to(now), None);
        record.last_time_ns = now + 10 * YEAR_NS;
        record
            .births
            .insert((Family::Tokens, vec![1]), now + 10 * YEAR_NS);
        assert!(record.ahead_of(now));
        assert_eq!(record.come_back_to(now), Some(10 * YEAR_NS));
        assert_eq!(record.next_time_ns(now), now, "the clock's time again");
        assert_eq!(record.start_ns, now - YEAR_NS, "the stream goes on");
        assert_eq!(record.births[&(Family::Tokens, vec![1])], now);
        let mut started_ahead = StreamRecord::starting(now + 10 * YEAR_NS);
        started_ahead.last_time_ns = now + 10 * YEAR_NS;
        started_ahead.come_back_to(now);
        assert_eq!(
            (started_ahead.start_ns, started_ahead.next_time_ns(now)),
            (now, now + 1_000_000)
        );
    }

    #[test]
    fn export_times_move_forward_by_a_millisecond_at_least() {
        let mut record = StreamRecord::starting(1_000_000_000);
        assert_eq!(record.next_time_ns(500), 1_000_000_000, "never before the start");
        assert_eq!(record.next_time_ns(2_000_000_000), 2_000_000_000);
        record.last_time_ns = 2_000_000_000;
        assert_eq!(
            record.next_time_ns(1_500_000_000),
            2_001_000_000,
            "the clock went back"
        );
        assert_eq!(
            record.next_time_ns(2_000_400_000),
            2_001_000_000,
            "the same millisecond"
        );
        assert_eq!(record.next_time_ns(3_000_000_000), 3_000_000_000);
    }
}

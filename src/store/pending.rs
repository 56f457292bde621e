//! What the collector has: the delta export in flight ([`PendingExport`]), what is delivered per
//! series, and the cumulative stream's record.

use super::counts::IngestCounts;
use super::engine::{self, Write, keys};
use super::export_record::ExportRecord;
use super::pending_export::PendingExport;
use super::records;
use super::records::history::{FrontierFile, HistoryFrontier};
use super::stream::StreamRecord;
use super::{Store, StoreError};
use crate::series::Sums;

impl Store {
    /// The export sent but not yet confirmed, if any.
    pub fn pending_export(&self) -> Option<&PendingExport> {
        self.pending.as_ref()
    }

    /// Durably records a delta export's `pending` before it is sent (replacing an older one).
    ///
    /// This write must survive a power cut as well as a `kill -9`: were it lost after the
    /// collector took the export, the next run would send the same increments again. Everything
    /// else is safe to lose to a power cut (a lost commit is read again, a lost `finish_export`
    /// leaves the record's export pending), so only the export record beside the store pays for
    /// an `fsync` (see `export_record`); sled's copy is for the run itself and for `kill -9`.
    pub fn begin_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        let exports = self.exports + 1;
        let mut write = Write::default();
        write.insert(keys::PENDING, pending.encode());
        write.insert(keys::EXPORTS, exports.to_le_bytes());
        self.apply(write)?;
        let record = ExportRecord {
            created_ns: self.created_ns(),
            number: exports,
            pending,
        };
        records::write(&self.record, &record)?;
        self.start_writeback_unless_deferred();
        self.exports = exports;
        self.pending = Some(record.pending);
        Ok(())
    }

    /// The record is on disk: what sled left dirty (its rewrite at open) can go now, during the
    /// send, instead of queueing in front of the record's `fsync`. A `once` starts it at its
    /// close instead, so that the one flush after its send does not queue behind it.
    fn start_writeback_unless_deferred(&self) {
        if !self.defer_commit_flush {
            engine::start_writeback(&self.db.log());
        }
    }

    /// The cumulative stream as last exported.
    pub fn stream(&self) -> &StreamRecord {
        &self.stream
    }

    /// The store's identity towards backends (`settings/identity.rs`), settled for its life:
    /// kept in the stream record from its next write on (see [`StreamRecord::identity_or`]).
    pub fn identity(&mut self, fresh: impl FnOnce() -> String, legacy: &str) -> String {
        let identity = self.stream.identity_or(fresh, legacy);
        self.stream.instance = Some(identity.clone());
        identity
    }

    /// Durably records `stream` before the export it describes is sent (see `stream`).
    pub fn record_stream(&mut self, mut stream: StreamRecord) -> Result<(), StoreError> {
        if stream.instance.is_none() {
            stream.instance = self.stream.instance.clone();
        }
        // The first OTLP export: its points' time is the first send.
        if self.stream.last_time_ns == 0 && stream.last_time_ns != 0 {
            self.note_history_frontier(stream.last_time_ns)?;
        }
        records::write(&self.stream_path, &stream)?;
        self.start_writeback_unless_deferred();
        self.stream = stream;
        Ok(())
    }

    /// Notes which lines are history, and the values the stream first sends at `first_sent_ns`
    /// (`records/history.rs`), before the stream record that first sends them; once only, and
    /// only for a store that has counted something. A frontier already there stays:
    /// one left by a crash before its stream record is a little older than the first send (its
    /// history a little shorter, never longer), and one beside a stream record started again (a
    /// damaged one replaced by `--reset-state`) still says what the backend first had.
    fn note_history_frontier(&self, first_sent_ns: u64) -> Result<(), StoreError> {
        if std::fs::symlink_metadata(&self.history_path).is_ok() || self.lifetime.is_empty() {
            return Ok(());
        }
        let mut files: Vec<FrontierFile> = self
            .checkpoints()?
            .into_iter()
            .map(|(name, checkpoint)| FrontierFile {
                name: name.as_encoded_bytes().to_vec(),
                offset: checkpoint.offset,
                prefix_hash: checkpoint.prefix.hash,
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let frontier = HistoryFrontier {
            first_sent_ns,
            files,
            first_values: self.lifetime.clone(),
        };
        records::write(&self.history_path, &frontier)
    }

    /// Brings a stream record written under a clock that ran fast back to the clock `now_ns`
    /// (see `StreamRecord::come_back_to`), durably; how far ahead it was, to be said, or `None`.
    pub fn bring_stream_back(&mut self, now_ns: u64) -> Result<Option<u64>, StoreError> {
        // A clock before 1970 (0) is no clock to come back to.
        if now_ns == 0 || !self.stream.ahead_of(now_ns) {
            return Ok(None);
        }
        let mut stream = self.stream.clone();
        let ahead = stream.come_back_to(now_ns);
        self.record_stream(stream)?;
        if let Some(ahead) = ahead {
            let ahead = std::time::Duration::from_secs(ahead / 1_000_000_000);
            crate::events::store::clock_back(ahead);
        }
        Ok(ahead)
    }

    /// Notes that `/metrics` served, at `now_ns`, the series the stream record lists, with the
    /// values `served` and the line counts `counts`: written when `force`d (a clean stop) or
    /// when the last note is a minute old or more. A note lost to a crash leaves an older one:
    /// births dated earlier, never later, and values served no lower than it says.
    pub fn note_publication(
        &mut self,
        now_ns: u64,
        force: bool,
        served: &Sums,
        counts: &IngestCounts,
    ) -> Result<(), StoreError> {
        let due = self.stream.published_ns.saturating_add(60_000_000_000);
        if now_ns == 0 || (!force && now_ns < due) || now_ns <= self.stream.published_ns {
            return Ok(());
        }
        let mut stream = self.stream.clone();
        stream.published_ns = now_ns;
        stream.served.raise_to(served);
        stream.served_counts = stream.served_counts.raised_to(counts);
        self.record_stream(stream)
    }

    /// Durably notes the series of the lifetime totals never published before: history on the
    /// store's first publication, born at `born_ns` afterwards (docs/counting-rules.md, "Births").
    /// A first publication `served` on `/metrics`, at `now_ns`, is the stream's first send.
    pub fn record_births(&mut self, born_ns: u64, served: Option<u64>) -> Result<(), StoreError> {
        if let Some(now_ns) = served.filter(|_| self.stream.never_sent()) {
            self.note_history_frontier(now_ns)?;
        }
        let mut stream = self.stream.clone();
        if stream.note_births(&self.lifetime, born_ns) {
            self.record_stream(stream)?;
        }
        Ok(())
    }

    /// The collector confirmed a cumulative export of `lifetime`: that much is delivered, should
    /// the store ever export delta. Needs no flush of its own: lost, it is written again by the
    /// next export.
    pub fn confirm_delivered(&mut self, lifetime: &Sums) -> Result<(), StoreError> {
        let changed = lifetime.differing_from(&self.delivered);
        if changed.is_empty() {
            return Ok(());
        }
        let mut write = Write::default();
        write.sums(&changed, true);
        self.apply_without_flush(write)?;
        self.delivered.overwrite_with(changed);
        Ok(())
    }

    /// The collector has the pending export: its totals are delivered, in one atomic write.
    pub fn finish_export(&mut self) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        self.settle_export(pending)
    }

    /// Settles the pending export of which only the series in `taken` (with their values) were
    /// delivered: the collector refused the rest, which the next export carries again.
    pub fn finish_export_of(&mut self, taken: &Sums) -> Result<(), StoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let delivered_after = pending.delivered_after.agreeing_with(taken);
        if delivered_after.is_empty() {
            return self.abandon_export();
        }
        self.settle_export(PendingExport { delivered_after })
    }

    fn settle_export(&mut self, pending: PendingExport) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.sums(&pending.delivered_after, true);
        write.remove(keys::PENDING);
        // A count taken from the export record moves into sled here.
        write.insert(keys::EXPORTS, self.exports.to_le_bytes());
        if let Err(e) = self.apply_unless_deferred(write) {
            self.pending = Some(pending);
            return Err(e);
        }
        self.delivered.overwrite_with(pending.delivered_after);
        Ok(())
    }

    /// The pending export certainly did not reach the collector: forget it.
    pub fn abandon_export(&mut self) -> Result<(), StoreError> {
        let mut write = Write::default();
        write.remove(keys::PENDING);
        // Flushed at once even in a `once`: lost, a delta export would count as delivered.
        self.apply(write)?;
        self.pending = None;
        Ok(())
    }
}

//! The cumulative stream's record: written before the export it describes, dated back to a clock
//! that ran fast, told of new series and of what `/metrics` served; and the history frontier,
//! noted once, when the stream first goes out.

use super::Delivery;
use crate::ledger::checkpoint::Chain;
use crate::series::Sums;
use crate::store::counts::IngestCounts;
use crate::store::history::{self, FrontierChain, FrontierFile, HistoryFrontier};
use crate::store::stream::{self, StreamRecord};
use crate::store::{Store, StoreError};

impl Delivery {
    /// Durably records `stream` before the export it describes is sent (see `store::stream`).
    /// `store` is read once, by the stream's first send (its history frontier).
    pub(super) fn record_stream(
        &mut self,
        store: &Store,
        mut stream: StreamRecord,
    ) -> Result<(), StoreError> {
        if stream.instance.is_none() {
            stream.instance = self.stream.instance.clone();
        }
        // The first OTLP export: its points' time is the first send.
        if self.stream.last_time_ns == 0 && stream.last_time_ns != 0 {
            self.note_history_frontier(store, stream.last_time_ns)?;
        }
        self.write_stream(stream)
    }

    pub(super) fn write_stream(&mut self, stream: StreamRecord) -> Result<(), StoreError> {
        stream::write(&self.stream_path, &stream)?;
        self.table.start_writeback();
        self.stream = stream;
        Ok(())
    }

    /// Notes which lines are history, and the values the stream first sends at `first_sent_ns`
    /// (`store::history`), before the stream record that first sends them; once only, and
    /// only for a store that has counted something. A frontier already there stays:
    /// one left by a crash before its stream record is a little older than the first send (its
    /// history a little shorter, never longer), and one beside a stream record started again (a
    /// damaged one replaced by `--reset-state`) still says what the backend first had.
    fn note_history_frontier(&self, store: &Store, first_sent_ns: u64) -> Result<(), StoreError> {
        if std::fs::symlink_metadata(&self.history_path).is_ok() || store.lifetime().is_empty() {
            return Ok(());
        }
        let mut files: Vec<FrontierFile> = store
            .checkpoints()?
            .into_iter()
            .map(|(name, checkpoint)| FrontierFile {
                name: name.as_encoded_bytes().to_vec(),
                offset: checkpoint.offset,
                prefix_hash: checkpoint.prefix.hash,
                chain: match checkpoint.prefix.chain {
                    Chain::Streamed => FrontierChain::Streamed,
                    Chain::Blocks { .. } => FrontierChain::Blocks,
                },
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let frontier = HistoryFrontier {
            first_sent_ns,
            files,
            first_values: store.lifetime().clone(),
        };
        history::write(&self.history_path, &frontier)
    }

    /// Brings a stream record written under a clock that ran fast back to the clock `now_ns`
    /// (see `StreamRecord::come_back_to`), durably; how far ahead it was, to be said, or `None`.
    pub(super) fn bring_stream_back(&mut self, now_ns: u64) -> Result<Option<u64>, StoreError> {
        // A clock before 1970 (0) is no clock to come back to.
        if now_ns == 0 || !self.stream.ahead_of(now_ns) {
            return Ok(None);
        }
        let mut stream = self.stream.clone();
        let ahead = stream.come_back_to(now_ns);
        self.write_stream(stream)?;
        if let Some(ahead) = ahead {
            let ahead = std::time::Duration::from_secs(ahead / 1_000_000_000);
            crate::events::store::clock_back(ahead);
        }
        Ok(ahead)
    }

    /// Notes that `/metrics` served, at `now_ns`, the series the stream record lists, with the
    /// values `served` and the line counts `counts`: durably when `force`d (a clean stop) or
    /// when the last durable note is a minute old or more; in between, when `quick` (`/metrics`
    /// is served) and it serves more than noted, in the copy beside the record, which a
    /// `kill -9` cannot lose (read back at the next open). A note lost to a power cut leaves an
    /// older one: births dated earlier, never later, and values served no lower than it says.
    pub(super) fn note_publication(
        &mut self,
        now_ns: u64,
        (force, quick): (bool, bool),
        served: &Sums,
        counts: &IngestCounts,
    ) -> Result<(), StoreError> {
        let durable = force || now_ns >= self.durable_note_ns.saturating_add(60_000_000_000);
        if now_ns == 0 || now_ns <= self.stream.published_ns || !(durable || quick) {
            return Ok(());
        }
        let mut raised = self.stream.served.clone();
        raised.raise_to(served);
        let raised_counts = self.stream.served_counts.raised_to(counts);
        let higher = raised != self.stream.served || raised_counts != self.stream.served_counts;
        if !durable && !higher {
            return Ok(());
        }
        let mut stream = self.stream.clone();
        stream.published_ns = now_ns;
        stream.served = raised;
        stream.served_counts = raised_counts;
        if durable {
            self.write_stream(stream)?;
            self.durable_note_ns = now_ns;
            return Ok(());
        }
        stream::write_until_the_next_note(&self.served_path, &stream)?;
        self.stream = stream;
        Ok(())
    }

    /// Durably notes the series of `store`'s lifetime totals never published before: history on
    /// the store's first publication, born at `born_ns` afterwards (docs/counting-rules.md,
    /// "Births"). A first publication `served` on `/metrics`, at `now_ns`, is the stream's first
    /// send.
    pub(super) fn record_births(
        &mut self,
        store: &Store,
        born_ns: u64,
        served: Option<u64>,
    ) -> Result<(), StoreError> {
        if let Some(now_ns) = served.filter(|_| self.stream.never_sent()) {
            self.note_history_frontier(store, now_ns)?;
        }
        let mut stream = self.stream.clone();
        if stream.note_births(store.lifetime(), born_ns) {
            self.write_stream(stream)?;
        }
        Ok(())
    }
}

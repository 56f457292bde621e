//! Delivery: what backends have received, apart from what was counted (`store/`). Each leg talks
//! to it through its own calls: the OTLP leg begins its next export with
//! [`Delivery::next_export`] (which reads what was counted: the leg never calls the count store)
//! and settles the collector's answer with [`Delivery::settle`]; `/metrics` asks what a scrape
//! may serve with [`Delivery::serve`]. It keeps:
//!
//! - the cumulative stream's record (`store::stream`): its start, its last point's time, the
//!   marks, the births, what `/metrics` served, the identity towards backends;
//! - what each series has delivered, the delta export in flight and the export count, in the
//!   store's database (`store::DeliveredTable`), with the export record beside it;
//! - the history frontier, noted when the stream first goes out (`store::history`).
//!
//! - `export.rs`: the push leg's next export and its answer; beneath them a delta export begun,
//!   settled, or forgotten, and a cumulative one confirmed;
//! - `scrape.rs`: the pull leg's publication, with its births and the publication noted;
//! - `stream.rs`: the stream record written, dated back to a clock, told of births and scrapes;
//! - `recovery.rs`: an export record that knows of an export the database lost;
//! - `reopen.rs`: what delivery keeps across a store let go of after a fault, or opened again
//!   (compacted) under the same lock.

mod export;
mod recovery;
mod reopen;
mod scrape;
mod stream;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use crate::series::cost::{CostSeries, SeriesKey, UnpricedSeries};
use crate::series::{AttrSet, Family, Sums};
use crate::store::stream::{self as stream_record, StreamRecord};
use crate::store::{DeliveredTable, PendingExport, Store, StoreError, export_record, history};
pub use export::{Outlook, Sending, Settled};
pub use reopen::Released;
pub use scrape::{Scrapes, Served, Serving};

/// What backends have received from one store.
pub struct Delivery {
    table: DeliveredTable,
    /// Per series, what the collector has (for delta exports).
    delivered: Sums,
    pending: Option<PendingExport>,
    /// Exports ever begun.
    exports: u64,
    /// The store's creation time, which its export record names.
    store_created_ns: u64,
    /// The last delta export begun, kept outside sled (see `store::export_record`).
    record: PathBuf,
    /// The cumulative stream, kept outside sled (see `store::stream`).
    stream: StreamRecord,
    stream_path: PathBuf,
    history_path: PathBuf,
    /// When a publication was last noted durably (the notes between survive a `kill -9` only).
    durable_note_ns: u64,
    /// Where those notes go (`store::stream::served_path_in`).
    served_path: PathBuf,
}

impl Delivery {
    /// What `store`'s backends have received, as its records say. With `reset`, a stream record
    /// that is damaged is replaced (`--reset-state`); one that is sound is continued, by a new
    /// store too. The attribute sets the stream has published join `store`'s fold.
    pub fn open(store: &mut Store, reset: bool) -> Result<Delivery, StoreError> {
        let state_dir = store.state_dir();
        let stream_path = stream_record::path_in(&state_dir);
        // The stream outlives the store: a rebuilt store continues it. Only a damaged record is
        // replaced, and only when asked to.
        let mut stream = match stream_record::read(&stream_path) {
            Err(StoreError::Corrupt { .. }) if reset => {
                crate::own_files::remove_if_present(&stream_path)
                    .map_err(|e| StoreError::io(&stream_path, e))?;
                None
            }
            other => other?,
        };
        // What `/metrics` served after the last durable note, if its copy of the same stream
        // is whole (a torn one, from a power cut, is the older note's loss, not an error).
        let served_path = stream_record::served_path_in(&state_dir);
        if let (Some(stream), Ok(Some(noted))) = (stream.as_mut(), stream_record::read(&served_path))
            && noted.start_ns == stream.start_ns
        {
            stream.served.raise_to(&noted.served);
            stream.served_counts = stream.served_counts.raised_to(&noted.served_counts);
            stream.published_ns = stream.published_ns.max(noted.published_ns);
        }
        let table = store.delivered_table();
        let loaded = table.load()?;
        let mut delivery = Delivery {
            table,
            delivered: loaded.sums,
            pending: loaded.pending,
            exports: loaded.exports,
            store_created_ns: store.created_ns(),
            record: export_record::path_in(&state_dir),
            // A store without a stream record (new, or whose record was deleted) starts its
            // stream at its own creation: what `/metrics` gives as `_created`.
            stream: stream.unwrap_or_else(|| StreamRecord::starting(store.created_ns())),
            stream_path,
            history_path: history::path_in(&state_dir),
            durable_note_ns: 0,
            served_path,
        };
        delivery.durable_note_ns = delivery.stream.published_ns;
        delivery.catch_up_with_record()?;
        store.take_published(delivery.published());
        Ok(delivery)
    }

    /// The export sent but not yet confirmed, if any.
    pub fn pending_export(&self) -> Option<&PendingExport> {
        self.pending.as_ref()
    }

    /// What has been delivered to the collector, per series.
    #[cfg(test)]
    fn delivered(&self) -> &Sums {
        &self.delivered
    }

    /// The cumulative stream as last exported.
    pub fn stream(&self) -> &StreamRecord {
        &self.stream
    }

    /// Exports ever begun.
    #[cfg(test)]
    fn exports(&self) -> u64 {
        self.exports
    }

    /// The store's identity towards backends (`settings/identity.rs`), settled for its life:
    /// kept in the stream record from its next write on (see [`StreamRecord::identity_or`]).
    pub fn identity(&mut self, fresh: impl FnOnce() -> String, legacy: &str) -> String {
        let identity = self.stream.identity_or(fresh, legacy);
        self.stream.instance = Some(identity.clone());
        identity
    }

    /// Every attribute set the stream has sent or served, whichever family it was sent in (a
    /// set only the cost families hold is one of the 1,000 too).
    fn published(&self) -> Vec<AttrSet> {
        let born = self
            .stream
            .births
            .keys()
            .filter_map(|(family, key)| match family {
                Family::Tokens => AttrSet::decode(key),
                Family::Cost => CostSeries::decode(key).map(|series| series.attrs),
                Family::Unpriced => UnpricedSeries::decode(key).map(|series| series.attrs),
            });
        born.chain(self.stream.marks.attr_sets().into_iter().cloned())
            .chain(self.stream.served.attr_sets().into_iter().cloned())
            .collect()
    }
}

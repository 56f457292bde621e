//! A store let go of after a fault (a full disk, a state dir deleted or made read-only), and
//! opened again: what delivery must keep across the gap, kept here rather than by its caller;
//! and a store closed and opened again (compacted) under the same lock, with what delivery holds.

use std::path::PathBuf;

use super::Delivery;
use crate::series::Sums;
use crate::store::stream::StreamRecord;
use crate::store::{Store, StoreError};

/// A store let go of, and what the one that replaces it continues.
pub struct Released {
    state_dir: PathBuf,
    /// The cumulative stream as exported: a store rebuilt from the ledger (its folder was
    /// deleted) continues it rather than start a second one.
    stream: StreamRecord,
    /// What the collector has, for delta exports from a rebuilt store.
    delivered: Sums,
}

impl Delivery {
    /// Lets go of `store` and of this delivery's handle on it, and with them of the store's lock
    /// and sled's, so that it can be opened again.
    pub fn release(self, store: Store) -> Released {
        // The handle on the database first: the store's lock goes only once sled is closed.
        let released = self.let_go(&store);
        drop(store);
        released
    }

    /// Closes `store` and opens it again (compacted if that is due: `Store::reopen`) without
    /// letting go of the state lock, with this delivery's handle on it taken anew; what both
    /// hold is the same. On an error the store is closed, and what reopens it is returned.
    pub fn reopen(self, store: Store) -> Result<(Store, Delivery), Box<(StoreError, Released)>> {
        let released = self.let_go(&store);
        let mut store = match store.reopen() {
            Ok(store) => store,
            Err(e) => return Err(Box::new((e, released))),
        };
        match Delivery::open(&mut store, false) {
            Ok(mut delivery) => {
                // The stream as this process holds it: the instance named at start and births
                // not yet recorded are not in the record until the next publication.
                delivery.stream = released.stream;
                store.take_published(delivery.published());
                Ok((store, delivery))
            }
            Err(e) => Err(Box::new((e, released))),
        }
    }

    /// This delivery's handle on `store`'s database dropped, and what a store opened again
    /// continues.
    fn let_go(self, store: &Store) -> Released {
        let Delivery {
            table,
            stream,
            delivered,
            ..
        } = self;
        drop(table);
        Released {
            state_dir: store.state_dir(),
            stream,
            delivered,
        }
    }
}

impl Released {
    /// The store and its delivery again, continuing the stream and the deliveries they had.
    pub fn reopen(&self) -> Result<(Store, Delivery), StoreError> {
        let mut store = Store::open(&self.state_dir, false)?;
        let mut delivery = Delivery::open(&mut store, false)?;
        if delivery.stream() != &self.stream {
            delivery.record_stream(&store, self.stream.clone())?;
            // A store made anew continues the stream: the fold keeps the sets it sent.
            store.take_published(delivery.published());
        }
        if delivery.delivered.is_empty() && !self.delivered.is_empty() {
            delivery.confirm_delivered(&self.delivered)?;
        }
        Ok((store, delivery))
    }
}

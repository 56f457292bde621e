//! A store let go of after a fault (a full disk, a state dir deleted or made read-only), and
//! opened again: what delivery must keep across the gap, kept here rather than by its caller.

use std::path::PathBuf;

use super::{Delivery, state_dir_of};
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
        let state_dir = state_dir_of(&store);
        let Delivery {
            table,
            stream,
            delivered,
            ..
        } = self;
        // The handle on the database first: the store's lock goes only once sled is closed.
        drop(table);
        drop(store);
        Released {
            state_dir,
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

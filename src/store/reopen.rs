//! A store let go of after a fault (a full disk, a state dir deleted or made read-only), and
//! opened again: what it must keep across the gap, kept here rather than by its caller.

use std::path::PathBuf;

use super::stream::StreamRecord;
use super::{Store, StoreError};
use crate::series::Sums;

/// A store let go of, and what the one that replaces it continues.
pub struct Released {
    state_dir: PathBuf,
    /// The cumulative stream as exported: a store rebuilt from the ledger (its folder was
    /// deleted) continues it rather than start a second one.
    stream: StreamRecord,
    /// What the collector has, for delta exports from a rebuilt store.
    delivered: Sums,
}

impl Store {
    /// Lets go of the store, its lock and sled's with it, so that it can be opened again.
    pub fn release(self) -> Released {
        let state_dir = match self.path().parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Released {
            state_dir,
            stream: self.stream().clone(),
            delivered: self.delivered().clone(),
        }
    }
}

impl Released {
    /// The store again, continuing the stream and the deliveries it had.
    pub fn reopen(&self) -> Result<Store, StoreError> {
        let mut store = Store::open(&self.state_dir, false)?;
        if store.stream() != &self.stream {
            store.record_stream(self.stream.clone())?;
            // A store made anew continues the stream: the fold keeps the sets it sent.
            store.refresh_fold_known();
        }
        if store.delivered().is_empty() && !self.delivered.is_empty() {
            store.confirm_delivered(&self.delivered)?;
        }
        Ok(store)
    }
}

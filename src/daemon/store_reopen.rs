//! The store closed and opened again once it has grown by [`REOPEN_GROWTH`] since it was opened
//! (a backfill, or months of use): sled's page table and cache, which stay the size the writes
//! that grew the store made them, start afresh (a 1M-line backfill left 17 MB of them behind),
//! and a log that has grown far past what it holds is compacted (`store/compaction.rs`).

use std::sync::atomic::Ordering;

use super::ingest::{release_freed_memory, with_large_allocations_mapped};
use super::{Daemon, Opened};

/// Growth on disk since the store was opened that has it opened again.
const REOPEN_GROWTH: u64 = 8 << 20;

impl Daemon {
    /// Opens the store again if it has grown by [`REOPEN_GROWTH`] since it was opened, no
    /// export is in flight (its answer is settled on the delivery that sent it) and no stop
    /// was asked for (a compaction takes a second or so of a busy day's store).
    pub(super) fn reopen_grown_store(&mut self) -> anyhow::Result<()> {
        if !self.idle() || self.stopping.load(Ordering::Relaxed) {
            return Ok(());
        }
        let grown = |opened: &mut Opened| {
            opened.store.disk_size() >= opened.opened_bytes.saturating_add(REOPEN_GROWTH)
        };
        let Some(Opened { store, delivery, .. }) = self.opened.take_if(grown) else {
            return Ok(());
        };
        let reopen = || with_large_allocations_mapped(|| delivery.reopen(store));
        // As a poll: `run`'s runtime has two workers, and this blocks one of them.
        let reopened = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => reopen(),
            _ => tokio::task::block_in_place(reopen),
        };
        match reopened {
            Ok((store, delivery)) => {
                self.opened = Some(Opened::new(store, delivery));
                release_freed_memory();
                Ok(())
            }
            Err(failed) => {
                let (error, released) = *failed;
                self.pause_released(error, released)
            }
        }
    }
}

//! The store closed and opened again once it has grown by [`REOPEN_GROWTH`] since it was opened
//! (a backfill, or months of use): sled's page table and cache, which stay the size the writes
//! that grew the store made them, start afresh (a 1M-line backfill left ~11 MiB of them behind),
//! and a log that has grown far past what it holds is compacted (`store/compaction.rs`; not
//! again in a process where a compaction failed or left the store above its limit).

use std::sync::atomic::Ordering;

use super::ingest::{blocking, release_freed_memory};
use super::{Daemon, Opened};

/// Growth on disk since the store was opened that has it opened again (in unit tests a
/// quarter of it: the same trigger on a ledger a quarter the size, which the emulated targets'
/// test runs read in seconds).
#[cfg(not(test))]
pub(super) const REOPEN_GROWTH: u64 = 8 << 20;
#[cfg(test)]
pub(super) const REOPEN_GROWTH: u64 = 2 << 20;

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
        match blocking(|| with_large_allocations_mapped(|| delivery.reopen(store))) {
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

/// Runs `open` with every allocation of 128 KiB or more mapped on its own, as glibc does at
/// start. Its threshold rises past each large block freed (a backfill frees blocks of tens of
/// megabytes), after which a store opened again would take its page table (6 MiB, zeroed) from
/// the heap, where zeroing makes every page of it resident at once; mapped, a page is resident
/// once it is used. Afterwards the threshold is fixed at 32 MiB (glibc's highest, where a
/// backfill leaves it; after slow growth it may have been lower), so that a later large poll
/// takes its blocks from the heap as after a backfill, and `malloc_trim` hands them back.
fn with_large_allocations_mapped<T>(open: impl FnOnce() -> T) -> T {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt has no preconditions; M_MMAP_THRESHOLD only moves where large blocks come from.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
    let opened = open();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as above.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
    opened
}

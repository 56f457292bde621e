//! The delta export in flight: what is delivered once the collector has it. Kept in sled and in
//! the export record beside the store.

use crate::bytes::Reader;
use crate::series::Sums;

/// A delta export that was sent, or is about to be, and not yet confirmed. Kept durably so that
/// a run that dies before the collector's answer leaves it for the next run to settle: its
/// outcome is unknown, so it counts as delivered (delta may under-count, never over-count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingExport {
    /// `delivered` per series once the collector has it.
    pub delivered_after: Sums,
}

impl PendingExport {
    /// [`Sums::encode`].
    pub fn encode(&self) -> Vec<u8> {
        self.delivered_after.encode()
    }

    pub fn decode(bytes: &[u8]) -> Option<PendingExport> {
        let mut r = Reader::new(bytes);
        let delivered_after = Sums::read(&mut r)?;
        r.is_empty().then_some(PendingExport { delivered_after })
    }
}

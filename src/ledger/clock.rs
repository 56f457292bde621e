//! The clock, as the ledger side reads it.

/// The clock's time in Unix nanoseconds (0 before 1970): when a reading or a verification began.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

//! The ledger side: find the files, tail them, decode their lines. Read-only, always.

pub mod checkpoint;
pub mod decode;
pub mod discover;
mod field;
mod go_text;
mod go_values;
pub mod iso4217;
mod key;
pub mod quote;
pub mod tail;
pub mod timestamp;
pub mod watch;

/// The clock's time in Unix nanoseconds (0 before 1970): when a reading or a verification began.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

//! The ledger side: find the files, tail them, decode their lines. Read-only, always.

pub mod checkpoint;
mod clock;
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

pub use clock::now_ns;

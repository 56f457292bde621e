//! `src/ledger/mod.rs` but for finding and watching files (their dependencies are the daemon's).

#[path = "../../src/ledger/checkpoint.rs"]
pub mod checkpoint;
#[path = "../../src/ledger/clock.rs"]
mod clock;
#[path = "../../src/ledger/decode.rs"]
pub mod decode;
#[path = "../../src/ledger/field.rs"]
mod field;
#[path = "../../src/ledger/go_text.rs"]
mod go_text;
#[path = "../../src/ledger/go_values.rs"]
mod go_values;
#[path = "../../src/ledger/iso4217.rs"]
pub mod iso4217;
#[path = "../../src/ledger/key.rs"]
mod key;
#[path = "../../src/ledger/quote.rs"]
pub mod quote;
#[path = "../../src/ledger/tail.rs"]
pub mod tail;
#[path = "../../src/ledger/timestamp.rs"]
pub mod timestamp;

pub use clock::now_ns;

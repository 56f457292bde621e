//! The small files beside the store that must survive a power cut, in one frame: 8 bytes of
//! magic, a version byte, the record's fields, and an xxh3 checksum of all before it. Each is
//! replaced whole (written, synced, renamed over the old one, its folder synced), so a reader
//! finds the old record or the new one, never a mix; one damaged byte, or a cut, makes it
//! unreadable rather than wrong.
//!
//! - `frame.rs`: the frame itself, read and written;
//! - `stream.rs`: the cumulative stream's record (`stream`);
//! - `export_record.rs`: the last delta export begun (`store.export`);
//! - `history.rs`: which lines are the store's history, noted when its stream first went out
//!   (`history`).

pub mod export_record;
pub(super) mod frame;
pub mod history;
pub mod stream;

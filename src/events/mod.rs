//! Everything the exporter says in its log, in one place (docs/design.md, "Logs"). Each event is
//! one function here that owns its `event` name, its level, its fields and its sentence; the
//! sentence says every value the fields hold, so the text format shows it alone, and
//! `--log-format json` carries the fields beside it for log shippers to filter on. Nothing outside
//! this module calls `tracing` (tests/layers/), so the table in docs/design.md is checked
//! against these files. A ledger file is named by its file name, never its path, and no value
//! here comes from a ledger line.

mod episode;
mod output;

pub mod daemon;
pub mod export;
pub mod history;
pub mod ledger;
pub mod sandbox;
pub mod store;

pub use episode::Episode;
pub use output::init;

/// A ledger file's name as events show it: its name alone, on one line, at most 255 bytes.
fn file_name(name: &std::ffi::OsStr) -> String {
    crate::inert_text::one_line(&name.to_string_lossy(), 255)
}

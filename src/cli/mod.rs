//! The command line: arguments, settings, and one module per command.

pub mod args;
pub mod doctor;
pub mod generate;
pub mod once;

pub mod status;

/// Says that an export held points back (docs/counting-rules.md, "Never down").
pub fn warn_held(held: usize) {
    if held > 0 {
        tracing::warn!(
            "{held} data points held back: the store is behind what was exported before (a power cut, a store put back from a backup, or a rebuilt store whose ledger lost lines); each is sent again once the ledger brings it back up"
        );
    }
}

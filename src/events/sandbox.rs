//! The sandbox (landlock) at the start: entered, unavailable, off or not entered.

use std::path::Path;

use crate::inert_text::ShowPath;

/// How much of landlock an entered sandbox has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landlock {
    Enforced,
    /// An older kernel: some of the rules.
    PartlyEnforced,
}

/// Landlock is in force.
pub fn entered(landlock: Landlock, reads: &Path, writes: &Path) {
    let how = match landlock {
        Landlock::Enforced => "enforced",
        Landlock::PartlyEnforced => "partly enforced (older kernel)",
    };
    tracing::info!(
        event = "sandbox.entered",
        "sandbox: landlock {how}: reads limited to {}, writes to {}",
        reads.shown(),
        writes.shown()
    );
}

/// No sandbox on this system (`why`).
pub fn unavailable(why: &str) {
    tracing::info!(
        event = "sandbox.unavailable",
        "sandbox: {why}; running without it"
    );
}

/// `--sandbox off`.
pub fn off() {
    tracing::debug!(event = "sandbox.off", "sandbox: off (--sandbox off)");
}

/// The sandbox was not entered: the stats dir does not exist yet.
pub fn not_entered(stats_dir: &Path) {
    tracing::warn!(
        event = "sandbox.not_entered",
        "sandbox: not entered, because the stats dir {} does not exist yet; restart the exporter once Reasonix has created it",
        stats_dir.shown()
    );
}

//! The daemon's life (its stop and how it went), the sandbox, and `status` reading a running
//! exporter's snapshot.

use std::fmt::Display;
use std::path::Path;

/// A signal asked the daemon to stop.
pub fn stopping() {
    tracing::info!(event = "daemon.stopping", "stopping");
}

/// How a stop went: its `outcome` field.
pub enum Stopped<'a> {
    /// Everything counted is committed (no OTLP export is set).
    Committed,
    /// Everything committed was exported.
    Exported,
    /// Counting was paused when the stop came.
    Paused,
    /// The last export could not record itself in the store.
    StoreFailed(&'a dyn Display),
    /// The last export failed.
    ExportFailed(&'a dyn Display),
    /// The last export did not finish within the stop's budget.
    ExportTimedOut,
}

/// The daemon stopped, and how.
pub fn stopped(how: Stopped<'_>) {
    match how {
        Stopped::Committed => tracing::info!(
            event = "daemon.stopped",
            outcome = "committed",
            "stopped; everything is committed"
        ),
        Stopped::Exported => tracing::info!(
            event = "daemon.stopped",
            outcome = "exported",
            "stopped; everything committed was exported"
        ),
        Stopped::Paused => tracing::warn!(
            event = "daemon.stopped",
            outcome = "paused",
            "stopped while counting was paused; the next start resumes it from the ledger"
        ),
        Stopped::StoreFailed(error) => {
            tracing::warn!(event = "daemon.stopped", outcome = "store_failed", error = %error,
                "stopped; the store could not be written ({error}); the next start resumes from the ledger"
            )
        }
        Stopped::ExportFailed(error) => {
            tracing::warn!(event = "daemon.stopped", outcome = "export_failed", error = %error,
                "stopped; the last export failed ({error}); the next run sends it"
            )
        }
        Stopped::ExportTimedOut => tracing::warn!(
            event = "daemon.stopped",
            outcome = "export_timed_out",
            "stopped; the last export did not finish in time; the next run sends it"
        ),
    }
}

/// Landlock is in force (`fully`, or partly on an older kernel).
pub fn sandbox_entered(fully: bool, reads: &Path, writes: &Path) {
    let how = if fully {
        "enforced"
    } else {
        "partly enforced (older kernel)"
    };
    tracing::info!(
        event = "sandbox.entered",
        "sandbox: landlock {how}: reads limited to {}, writes to {}",
        reads.display(),
        writes.display()
    );
}

/// No sandbox on this system (`why`).
pub fn sandbox_unavailable(why: &str) {
    tracing::info!(
        event = "sandbox.unavailable",
        "sandbox: {why}; running without it"
    );
}

/// `--sandbox off`.
pub fn sandbox_off() {
    tracing::debug!(event = "sandbox.off", "sandbox: off (--sandbox off)");
}

/// The sandbox was not entered: the stats dir does not exist yet.
pub fn sandbox_not_entered(stats_dir: &Path) {
    tracing::warn!(
        event = "sandbox.not_entered",
        "sandbox: not entered, because the stats dir {} does not exist yet; restart the exporter once Reasonix has created it",
        stats_dir.display()
    );
}

/// `status` read the running exporter's (`owner`'s) snapshot instead of the store.
pub fn status_from_snapshot(owner: Option<u32>) {
    tracing::debug!(
        event = "status.from_snapshot",
        "read from the running exporter's last commit{}",
        owner.map(|p| format!(" (pid {p})")).unwrap_or_default()
    );
}

//! The daemon's life (its stop and how it went), and `status` reading what a running daemon
//! left.

use std::fmt::Display;

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

/// `status` read the running exporter's (`owner`'s) snapshot instead of the store.
pub fn status_from_snapshot(owner: Option<u32>) {
    tracing::debug!(
        event = "status.from_snapshot",
        "read from the running exporter's last commit{}",
        owner.map(|p| format!(" (pid {p})")).unwrap_or_default()
    );
}

//! The signals that stop `run`: SIGINT, SIGTERM and SIGHUP; on Windows, Ctrl-C (and Ctrl-Break).

/// SIGINT, SIGTERM and SIGHUP, registered when installed (not when first awaited). SIGHUP is a
/// stop like the others: a daemon that lost its terminal, or a reload by habit, still exports
/// its last increments.
pub(super) struct StopSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub(super) fn install() -> anyhow::Result<StopSignals> {
        #[cfg(unix)]
        {
            use anyhow::Context;
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
                hangup: signal(SignalKind::hangup()).context("cannot handle SIGHUP")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    pub(super) async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
            _ = self.hangup.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        crate::events::daemon::stopping();
    }
}

//! Counting paused on a store that cannot be written (a full disk, no descriptors left, a state
//! dir deleted or made read-only), and resumed when it can be again; and `run`'s start waiting
//! for a store it cannot open on a full disk or without descriptors.

use std::io::ErrorKind;
use std::time::Duration;

// tokio's clock, so that the retries can be tested on its paused clock.
use tokio::time::Instant;

use super::Daemon;
use super::Opened;
use super::exports::FIRST_RETRY;
use crate::delivery::Released;
use crate::descriptors::out_of_descriptors;
use crate::events;
use crate::export::backoff::Backoff;
use crate::inert_text::ShowPath;
use crate::settings::Settings;
use crate::store::StoreError;
use tokio::sync::Notify;

/// The longest wait between attempts to reopen a store that could not be written.
const MAX_STORE_RETRY: Duration = Duration::from_secs(30);

/// Counting paused on a store that could not be written, and what the next store continues.
pub(super) struct StoreFault {
    /// The state dir is gone: the store is rebuilt from the ledger.
    deleted: bool,
    since: Instant,
    retry_at: Instant,
    backoff: Backoff,
    /// The store let go of, which reopens with what it must keep.
    released: Released,
}

/// No descriptors left, in the operator's words on this platform.
#[cfg(unix)]
const OUT_OF_DESCRIPTORS: &str =
    "the process has no file descriptors left (raise its limit: `ulimit -n`, or LimitNOFILE= in its unit)";
#[cfg(windows)]
const OUT_OF_DESCRIPTORS: &str =
    "the process has no file handles left (close what holds them open, or restart it)";

impl StoreFault {
    /// Whether `cause` is one a store waits out at start rather than ends the process on: a
    /// full disk or quota, no descriptors left. (A state dir deleted or made read-only at start
    /// is a setting to fix, said in one line.)
    fn passes(cause: &std::io::Error) -> bool {
        out_of_descriptors(cause) || matches!(cause.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded)
    }

    /// The condition behind `cause`, in the operator's words.
    fn what(cause: &std::io::Error) -> &'static str {
        if out_of_descriptors(cause) {
            return OUT_OF_DESCRIPTORS;
        }
        match cause.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => "the disk is full",
            ErrorKind::NotFound => "the state dir was deleted",
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => "the state dir is not writable",
            _ => "the store cannot be written",
        }
    }
}

/// The store opened at the start of `run`. One on a full disk, or in a process with no
/// descriptors left, is said once and tried again with backoff, as a paused store is, until it
/// opens, or until `stopped` (then `None`): a temporary condition, never an exit (contract §7).
/// Anything else (a damaged store, another exporter's) ends the start.
pub(super) async fn open_at_start(settings: &Settings, stopped: &Notify) -> anyhow::Result<Option<Opened>> {
    let state_dir = &settings.state_dir.value;
    let mut waiting: Option<(Instant, Backoff)> = None;
    loop {
        let cause = match Opened::open(state_dir, settings.reset_state) {
            Ok(opened) => {
                if let Some((since, _)) = waiting {
                    events::store::resumed(since.elapsed());
                }
                return Ok(Some(opened));
            }
            Err(StoreError::Io { error, .. }) if StoreFault::passes(&error) => error,
            Err(e) => return Err(e.into()),
        };
        let news = waiting.is_none();
        let (_, backoff) = waiting.get_or_insert_with(|| {
            let first_wait = settings.poll_interval.value.max(FIRST_RETRY);
            (Instant::now(), Backoff::new(first_wait, MAX_STORE_RETRY))
        });
        let retry = backoff.next_wait(None);
        if news {
            events::store::paused(
                StoreFault::what(&cause),
                state_dir,
                &cause,
                retry,
                MAX_STORE_RETRY,
            );
        }
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            () = stopped.notified() => return Ok(None),
        }
    }
}

impl Daemon {
    /// A store that cannot be written (a full disk, no descriptors left, a state dir deleted or
    /// made read-only) pauses counting instead of ending the process: the store is let go, and
    /// reopened at the next retry. Nothing is lost: what was not committed is read again from
    /// the ledger. A damaged or foreign store still ends the process.
    pub(super) fn pause(&mut self, error: StoreError) -> anyhow::Result<()> {
        if !matches!(error, StoreError::Io { .. }) {
            return Err(error.into());
        }
        let Some(Opened { store, delivery, .. }) = self.opened.take() else {
            return Ok(());
        };
        // sled's lock and ours let one store per folder be open: this one goes first.
        self.pause_released(error, delivery.release(store))
    }

    /// [`Daemon::pause`] for a store already let go of, as `released`.
    pub(super) fn pause_released(&mut self, error: StoreError, released: Released) -> anyhow::Result<()> {
        let StoreError::Io { error: cause, .. } = &error else {
            return Err(error.into());
        };
        let first = self.settings.poll_interval.value.max(FIRST_RETRY);
        let mut backoff = Backoff::new(first, MAX_STORE_RETRY);
        let retry = backoff.next_wait(None);
        let state_dir = &self.settings.state_dir.value;
        events::store::paused(StoreFault::what(cause), state_dir, cause, retry, MAX_STORE_RETRY);
        self.fault = Some(StoreFault {
            deleted: cause.kind() == ErrorKind::NotFound,
            since: Instant::now(),
            retry_at: Instant::now() + retry,
            backoff,
            released,
        });
        Ok(())
    }

    /// Reopens the store after a fault, when its retry is due; whether there is a store to use.
    pub(super) fn resume(&mut self) -> anyhow::Result<bool> {
        let Some(fault) = self.fault.as_mut() else {
            return Ok(true);
        };
        if Instant::now() < fault.retry_at {
            return Ok(false);
        }
        match fault.released.reopen() {
            Ok((store, delivery)) => {
                events::store::resumed(fault.since.elapsed());
                // The store may be one made anew: its first poll reads every file.
                self.stats_dir.listed = None;
                self.opened = Some(Opened::new(store, delivery));
                self.fault = None;
                Ok(true)
            }
            // Landlock allows writes in the folder the process started with, not in one made anew.
            Err(StoreError::Io { error, .. })
                if fault.deleted && error.kind() == ErrorKind::PermissionDenied =>
            {
                anyhow::bail!(
                    "state dir {} was deleted under the running exporter, and its sandbox lets it write only in the folder it started with; start it again to recreate the folder (systemd's Restart= does), or run with --sandbox off to have it recreated in place",
                    self.settings.state_dir.value.shown()
                )
            }
            Err(StoreError::Io { .. }) => {
                fault.retry_at = Instant::now() + fault.backoff.next_wait(None);
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

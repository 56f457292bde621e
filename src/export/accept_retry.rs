//! How `/metrics`' accept loop goes on after an accept fails: at once when one connection was
//! lost, after a pause when the process or the kernel is short of something or the listener is
//! broken (a retry at once would spin on a core for as long as that lasts), with one warning per
//! episode of each cause.

use std::io::{Error, ErrorKind};
use std::time::Duration;

use crate::descriptors::out_of_descriptors;
use crate::events::Episode;

/// The pause when the process is out of descriptors, and the longest of any.
pub const ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// The first pause after any other failure; each failure in a row doubles it, up to
/// [`ACCEPT_PAUSE`], and an accepted connection brings it back.
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// How many lost connections in a row are retried at once: past that, the "loss" is the
/// listener's own and pauses like any other failure.
const LOSSES_IN_A_ROW: u32 = 64;

/// How long accepting must go without a failure of one cause for its episode to be over.
const EPISODE_OVER: Duration = Duration::from_secs(30);

/// Why accepting pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The process (or the system) has no descriptors left.
    Descriptors,
    /// Anything else: the kernel short of memory or buffers, a listener that broke.
    Other,
}

/// A failed accept that pauses accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub wait: Duration,
    pub cause: Cause,
    /// The first failure of an episode of this cause: say so.
    pub begins_episode: bool,
}

/// The state of accepting across failures: the next pause, and each cause's episode.
pub struct AcceptRetry {
    next: Duration,
    losses_in_a_row: u32,
    descriptors: Episode,
    other: Episode,
}

impl Default for AcceptRetry {
    fn default() -> AcceptRetry {
        AcceptRetry {
            next: FIRST_PAUSE,
            losses_in_a_row: 0,
            descriptors: Episode::default(),
            other: Episode::default(),
        }
    }
}

impl AcceptRetry {
    /// What to do after `error`: `None` to accept again at once (one connection's loss), or the
    /// pause to wait first.
    pub fn after_error(&mut self, error: &Error) -> Option<Pause> {
        if one_connections_loss(error) && self.losses_in_a_row < LOSSES_IN_A_ROW {
            self.losses_in_a_row += 1;
            return None;
        }
        if out_of_descriptors(error) {
            return Some(Pause {
                wait: ACCEPT_PAUSE,
                cause: Cause::Descriptors,
                begins_episode: self.descriptors.begins(),
            });
        }
        let wait = self.next;
        self.next = (wait * 2).min(ACCEPT_PAUSE);
        Some(Pause {
            wait,
            cause: Cause::Other,
            begins_episode: self.other.begins(),
        })
    }

    /// A connection was accepted: the next failure's pause is the first again. `true` when this
    /// ends the last episode still going (a quiet spell of [`EPISODE_OVER`] since its last
    /// failure): accepting is back, say so.
    pub fn after_accept(&mut self) -> bool {
        self.next = FIRST_PAUSE;
        self.losses_in_a_row = 0;
        let ended = [&mut self.descriptors, &mut self.other]
            .map(|episode| episode.ends_after(EPISODE_OVER).is_some());
        ended.contains(&true) && !self.descriptors.holds() && !self.other.holds()
    }
}

/// Whether a failed accept was one connection's loss, or an interrupted call: a connection reset
/// or aborted before it was accepted, and on Linux, as its `accept(2)` asks, a network error
/// pending on the connection or a firewall's refusal of it.
fn one_connections_loss(error: &Error) -> bool {
    use ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted, WouldBlock};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) {
        return true;
    }
    #[cfg(target_os = "linux")]
    if error
        .raw_os_error()
        .is_some_and(|errno| PENDING_ON_THE_CONNECTION.contains(&errno))
    {
        return true;
    }
    false
}

/// The errors Linux's `accept(2)` says to retry like `EAGAIN`: the network's, of one connection
/// taken off the queue, and `EPERM`, a firewall's refusal of it.
#[cfg(target_os = "linux")]
const PENDING_ON_THE_CONNECTION: [i32; 9] = [
    libc::ENETDOWN,
    libc::EPROTO,
    libc::ENOPROTOOPT,
    libc::EHOSTDOWN,
    libc::ENONET,
    libc::EHOSTUNREACH,
    libc::EOPNOTSUPP,
    libc::ENETUNREACH,
    libc::EPERM,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn losses() -> Vec<Error> {
        let kinds = [
            ErrorKind::ConnectionAborted,
            ErrorKind::ConnectionReset,
            ErrorKind::Interrupted,
            ErrorKind::WouldBlock,
        ];
        let errors = kinds.into_iter().map(Error::from);
        #[cfg(target_os = "linux")]
        let errors = errors.chain(PENDING_ON_THE_CONNECTION.map(Error::from_raw_os_error));
        errors.collect()
    }

    #[test]
    fn a_connection_lost_before_its_accept_costs_no_pause_and_leaves_the_next_the_first() {
        let mut retry = AcceptRetry::default();
        for error in losses() {
            assert_eq!(retry.after_error(&error), None, "{error}");
        }
        let pause = retry.after_error(&Error::other("a listener that broke")).unwrap();
        assert_eq!((pause.wait, pause.cause), (FIRST_PAUSE, Cause::Other));
    }

    #[test]
    fn losses_without_an_accept_between_them_pause_past_a_bound() {
        let mut retry = AcceptRetry::default();
        let reset = Error::from(ErrorKind::ConnectionReset);
        for _ in 0..LOSSES_IN_A_ROW {
            assert_eq!(retry.after_error(&reset), None);
        }
        assert_eq!(retry.after_error(&reset).map(|p| p.wait), Some(FIRST_PAUSE));
        retry.after_accept();
        assert_eq!(retry.after_error(&reset), None);
    }

    #[test]
    #[cfg(unix)]
    fn a_permission_refused_by_a_security_module_is_not_a_loss() {
        let mut retry = AcceptRetry::default();
        let refused = retry
            .after_error(&Error::from_raw_os_error(libc::EACCES))
            .unwrap();
        assert_eq!(refused.cause, Cause::Other);
    }

    #[test]
    #[cfg(unix)]
    fn out_of_descriptors_pauses_a_second_every_time_and_says_so_once() {
        let mut retry = AcceptRetry::default();
        let said: Vec<bool> = (0..3)
            .map(|_| {
                let pause = retry
                    .after_error(&Error::from_raw_os_error(libc::EMFILE))
                    .unwrap();
                assert_eq!((pause.wait, pause.cause), (ACCEPT_PAUSE, Cause::Descriptors));
                pause.begins_episode
            })
            .collect();
        assert_eq!(said, [true, false, false]);
    }

    #[test]
    #[cfg(unix)]
    fn each_cause_is_said_though_the_other_was_first() {
        let mut retry = AcceptRetry::default();
        let mut begins = |errno| {
            retry
                .after_error(&Error::from_raw_os_error(errno))
                .unwrap()
                .begins_episode
        };
        assert!(begins(libc::ENOBUFS));
        assert!(begins(libc::EMFILE));
        assert!(!begins(libc::ENOMEM));
        assert!(!begins(libc::EMFILE));
    }

    #[test]
    fn an_accept_within_an_episode_does_not_end_it() {
        let mut retry = AcceptRetry::default();
        retry.after_error(&Error::other("a listener that broke"));
        assert!(!retry.after_accept());
    }

    #[test]
    #[cfg(unix)]
    fn a_kernel_short_of_memory_pauses_longer_each_time_in_a_row_until_a_connection_is_accepted() {
        let mut retry = AcceptRetry::default();
        let mut pauses = || {
            [libc::ENOBUFS, libc::ENOMEM, libc::ENOBUFS].map(|errno| {
                let pause = retry.after_error(&Error::from_raw_os_error(errno)).unwrap();
                assert_eq!(pause.cause, Cause::Other);
                pause.wait.as_millis()
            })
        };
        assert_eq!(pauses(), [5, 10, 20]);
        assert_eq!(pauses(), [40, 80, 160]);
        assert_eq!(pauses(), [320, 640, 1000]);
        assert_eq!(pauses(), [1000, 1000, 1000]);
        retry.after_accept();
        let pause = retry.after_error(&Error::other("a listener that broke")).unwrap();
        assert_eq!(pause.wait, FIRST_PAUSE);
    }
}

//! How `/metrics`' accept loop goes on after an accept fails: at once when one client's
//! connection was lost, after a pause when the process or the kernel is short of something (a
//! retry at once would spin on a core for as long as the shortage lasts).

use std::io::{Error, ErrorKind};
use std::time::Duration;

use crate::descriptors::out_of_descriptors;

/// The pause when the process is out of descriptors, and the longest of any.
pub const ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// The first pause after any other failure; each failure in a row doubles it, up to
/// [`ACCEPT_PAUSE`], and an accepted connection brings it back.
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// Why accepting pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortage {
    Descriptors,
    /// Anything else: the kernel short of memory or buffers, a listener that broke.
    Other,
}

/// The pause the next failure of accepting in a row waits.
pub struct AcceptRetry {
    next: Duration,
}

impl Default for AcceptRetry {
    fn default() -> AcceptRetry {
        AcceptRetry { next: FIRST_PAUSE }
    }
}

impl AcceptRetry {
    /// What to do after `error`: `None` to accept again at once (one connection's loss), or the
    /// pause to wait first and why.
    pub fn after_error(&mut self, error: &Error) -> Option<(Duration, Shortage)> {
        if one_connections_loss(error) {
            return None;
        }
        if out_of_descriptors(error) {
            return Some((ACCEPT_PAUSE, Shortage::Descriptors));
        }
        let pause = self.next;
        self.next = (pause * 2).min(ACCEPT_PAUSE);
        Some((pause, Shortage::Other))
    }

    /// A connection was accepted: the next failure's pause is the first again.
    pub fn after_accept(&mut self) {
        self.next = FIRST_PAUSE;
    }
}

/// Whether a failed accept was one connection's loss, or an interrupted call: a connection reset
/// or aborted before it was accepted, or, as Linux's `accept(2)` asks to be treated alike, a
/// network error pending on it (unreachable, down, a protocol error) or a firewall's refusal.
fn one_connections_loss(error: &Error) -> bool {
    use ErrorKind::*;
    if matches!(
        error.kind(),
        ConnectionAborted
            | ConnectionReset
            | Interrupted
            | WouldBlock
            | HostUnreachable
            | NetworkUnreachable
            | NetworkDown
            | PermissionDenied
    ) {
        return true;
    }
    #[cfg(unix)]
    if matches!(
        error.raw_os_error(),
        Some(libc::EPROTO | libc::ENOPROTOOPT | libc::EHOSTDOWN | libc::EOPNOTSUPP)
    ) {
        return true;
    }
    #[cfg(target_os = "linux")]
    if error.raw_os_error() == Some(libc::ENONET) {
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_lost_before_its_accept_costs_no_pause() {
        let mut retry = AcceptRetry::default();
        for kind in [
            ErrorKind::ConnectionAborted,
            ErrorKind::ConnectionReset,
            ErrorKind::Interrupted,
            ErrorKind::HostUnreachable,
            ErrorKind::PermissionDenied,
        ] {
            assert_eq!(retry.after_error(&Error::from(kind)), None, "{kind:?}");
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_protocol_error_pending_on_the_connection_costs_no_pause() {
        let mut retry = AcceptRetry::default();
        assert_eq!(retry.after_error(&Error::from_raw_os_error(libc::EPROTO)), None);
    }

    #[test]
    #[cfg(unix)]
    fn out_of_descriptors_pauses_a_second_every_time() {
        let mut retry = AcceptRetry::default();
        for _ in 0..3 {
            assert_eq!(
                retry.after_error(&Error::from_raw_os_error(libc::EMFILE)),
                Some((ACCEPT_PAUSE, Shortage::Descriptors))
            );
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_kernel_short_of_memory_pauses_longer_each_time_in_a_row_until_a_connection_is_accepted() {
        let mut retry = AcceptRetry::default();
        let mut pauses = || {
            [libc::ENOBUFS, libc::ENOMEM, libc::ENOBUFS].map(|errno| {
                let (pause, shortage) = retry.after_error(&Error::from_raw_os_error(errno)).unwrap();
                assert_eq!(shortage, Shortage::Other);
                pause.as_millis()
            })
        };
        assert_eq!(pauses(), [5, 10, 20]);
        assert_eq!(pauses(), [40, 80, 160]);
        assert_eq!(pauses(), [320, 640, 1000]);
        assert_eq!(pauses(), [1000, 1000, 1000]);
        retry.after_accept();
        assert_eq!(
            retry.after_error(&Error::other("a listener that broke")),
            Some((FIRST_PAUSE, Shortage::Other))
        );
    }
}

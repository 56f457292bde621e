//! What the log has said of a condition that lasts: each episode (an outage, files that cannot be
//! read, `/metrics` out of descriptors) is said once when it begins and once when it ends, never
//! on every occurrence in between.

use std::time::{Duration, Instant};

/// One condition's current episode, if it holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Episode {
    /// When it began, and when it was last seen to hold.
    holds: Option<(Instant, Instant)>,
}

impl Episode {
    /// Notes that the condition holds: `true` when this begins an episode (say so).
    pub fn begins(&mut self) -> bool {
        let now = Instant::now();
        match &mut self.holds {
            Some((_, last)) => {
                *last = now;
                false
            }
            None => {
                self.holds = Some((now, now));
                true
            }
        }
    }

    /// Notes that the condition is over: how long the episode lasted, when one has just ended
    /// (say so).
    pub fn ends(&mut self) -> Option<Duration> {
        self.holds.take().map(|(began, _)| began.elapsed())
    }

    /// Ends the episode if the condition has not been seen for `quiet` (one that comes and goes
    /// is one episode): how long it lasted, when it has just ended.
    pub fn ends_after(&mut self, quiet: Duration) -> Option<Duration> {
        match self.holds {
            Some((_, last)) if last.elapsed() >= quiet => self.ends(),
            _ => None,
        }
    }

    pub fn holds(&self) -> bool {
        self.holds.is_some()
    }

    /// How long the episode has lasted so far, if the condition holds.
    pub fn lasted(&self) -> Option<Duration> {
        self.holds.map(|(began, _)| began.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_is_said_when_it_begins_and_when_it_ends() {
        let mut outage = Episode::default();
        assert_eq!(outage.ends(), None, "nothing to end");
        assert!(outage.begins());
        assert!(!outage.begins(), "the same episode");
        assert!(outage.holds());
        assert!(outage.lasted().is_some());
        assert_eq!(
            outage.ends_after(Duration::from_secs(3600)),
            None,
            "not quiet yet"
        );
        assert!(outage.ends().is_some());
        assert!(!outage.holds());
        assert!(outage.begins(), "a new episode");
        assert!(outage.ends_after(Duration::ZERO).is_some());
    }
}

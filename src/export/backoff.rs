//! Waits between retries: doubling from a first wait up to a cap, each one spread by up to a
//! fifth either way, so that the exporters of a whole team, failing together when their gateway
//! went down, do not all come back in the same second.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            next: first,
        }
    }

    /// The wait before the next attempt: the current step, spread, but never shorter than what
    /// the other side `asked` for (a `Retry-After`). The step after it is twice as long, up to
    /// the cap.
    pub fn next_wait(&mut self, asked: Option<Duration>) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let wait = spread(step, random_unit());
        asked.map_or(wait, |asked| asked.max(wait))
    }

    /// It worked: the next failure starts over from the first wait.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// `step` times a factor from 0.8 to 1.2, chosen by `unit` (0 to 1).
fn spread(step: Duration, unit: f64) -> Duration {
    step.mul_f64(0.8 + 0.4 * unit.clamp(0.0, 1.0))
}

/// A number from 0 to 1 that differs from process to process and call to call: the standard
/// library's randomly keyed hasher, over a counter. Not for secrets; enough to spread retries.
fn random_unit() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_each_within_a_fifth() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(10));
        for step in [1, 2, 4, 8, 10, 10] {
            let wait = backoff.next_wait(None).as_secs_f64();
            let step = step as f64;
            assert!(
                (step * 0.8..=step * 1.2).contains(&wait),
                "{wait} for a step of {step}"
            );
        }
        backoff.reset();
        assert!(backoff.next_wait(None) <= Duration::from_millis(1200));
    }

    #[test]
    fn a_retry_after_is_waited_for_whole() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let asked = Duration::from_secs(30);
        assert!(backoff.next_wait(Some(asked)) >= asked);
        assert_eq!(spread(Duration::from_secs(10), 0.0), Duration::from_secs(8));
        assert_eq!(spread(Duration::from_secs(10), 1.0), Duration::from_secs(12));
    }

    #[test]
    fn waits_are_spread_not_all_equal() {
        let waits: std::collections::BTreeSet<Duration> = (0..20)
            .map(|_| Backoff::new(Duration::from_secs(1), Duration::from_secs(1)).next_wait(None))
            .collect();
        assert!(waits.len() > 10, "{waits:?}");
    }
}

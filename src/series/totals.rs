//! The eight counted quantities of a series.

use super::MetricNames;
use crate::ledger::decode::RowKind;

/// One of the eight counted quantities, with its names in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Prompt,
    Completion,
    Reasoning,
    CacheHit,
    CacheMiss,
    Total,
    Requests,
    Turns,
}

impl Quantity {
    /// How many there are: the last one's index, plus one.
    pub const COUNT: usize = Quantity::Turns as usize + 1;

    /// Every quantity, in the order of every output.
    pub const ALL: [Quantity; Quantity::COUNT] = [
        Quantity::Prompt,
        Quantity::Completion,
        Quantity::Reasoning,
        Quantity::CacheHit,
        Quantity::CacheMiss,
        Quantity::Total,
        Quantity::Requests,
        Quantity::Turns,
    ];

    /// The key in `status --json` (and in the ledger, for the token counts).
    pub fn key(self) -> &'static str {
        match self {
            Quantity::Prompt => "prompt",
            Quantity::Completion => "completion",
            Quantity::Reasoning => "reasoning",
            Quantity::CacheHit => "cache_hit",
            Quantity::CacheMiss => "cache_miss",
            Quantity::Total => "total",
            Quantity::Requests => "requests",
            Quantity::Turns => "turns",
        }
    }

    /// The OTLP metric name (README, "Metrics").
    pub fn otlp_name(self) -> &'static str {
        match self {
            Quantity::Prompt => "reasonix.prompt.tokens",
            Quantity::Completion => "reasonix.completion.tokens",
            Quantity::Reasoning => "reasonix.reasoning.tokens",
            Quantity::CacheHit => "reasonix.cache_hit.tokens",
            Quantity::CacheMiss => "reasonix.cache_miss.tokens",
            Quantity::Total => "reasonix.tokens",
            Quantity::Requests => "reasonix.requests",
            Quantity::Turns => "reasonix.turns",
        }
    }

    /// The Prometheus name (README, "Metrics").
    pub fn prom_name(self) -> &'static str {
        match self {
            Quantity::Prompt => "reasonix_prompt_tokens_total",
            Quantity::Completion => "reasonix_completion_tokens_total",
            Quantity::Reasoning => "reasonix_reasoning_tokens_total",
            Quantity::CacheHit => "reasonix_cache_hit_tokens_total",
            Quantity::CacheMiss => "reasonix_cache_miss_tokens_total",
            Quantity::Total => "reasonix_tokens_total",
            Quantity::Requests => "reasonix_requests_total",
            Quantity::Turns => "reasonix_turns_total",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Quantity::Requests => "{request}",
            Quantity::Turns => "{turn}",
            _ => "{token}",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Quantity::Prompt => "Input tokens, cached and uncached together.",
            Quantity::Completion => "Output tokens, reasoning included.",
            Quantity::Reasoning => "Reasoning tokens, a part of completion tokens.",
            Quantity::CacheHit => "Input tokens served from the provider's prefix cache.",
            Quantity::CacheMiss => "Input tokens not served from the provider's prefix cache.",
            Quantity::Total => "Total tokens as reported by the provider.",
            Quantity::Requests => "Provider requests.",
            Quantity::Turns => "Completed agent turns.",
        }
    }

    /// Its names and unit, as the exporters write them.
    pub fn names(self) -> MetricNames {
        MetricNames {
            otlp_name: self.otlp_name(),
            prom_name: self.prom_name(),
            unit: self.unit(),
            description: self.description(),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The eight counters of one series. Sums saturate rather than wrap: a hostile ledger can pin a
/// counter at its maximum, never send it backwards.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals([u64; Quantity::COUNT]);

impl Totals {
    /// A little-endian u64 per quantity, in [`Quantity::ALL`]'s order.
    pub const ENCODED_LEN: usize = Quantity::COUNT * 8;

    /// What one row adds; `None` for rows that count nothing.
    pub fn of_row(kind: &RowKind) -> Option<Totals> {
        let mut t = Totals::default();
        match kind {
            RowKind::Compaction => return None,
            RowKind::Turn => t.set(Quantity::Turns, 1),
            RowKind::Usage(c) => {
                for (q, value) in [
                    (Quantity::Prompt, c.prompt),
                    (Quantity::Completion, c.completion),
                    (Quantity::Reasoning, c.reasoning),
                    (Quantity::CacheHit, c.cache_hit),
                    (Quantity::CacheMiss, c.cache_miss),
                    (Quantity::Total, c.total),
                    (Quantity::Requests, c.requests),
                ] {
                    t.set(q, value);
                }
            }
        }
        (!t.is_zero()).then_some(t)
    }

    pub fn get(&self, q: Quantity) -> u64 {
        self.0[q.index()]
    }

    pub fn set(&mut self, q: Quantity, value: u64) {
        self.0[q.index()] = value;
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|v| *v == 0)
    }

    pub fn add(&mut self, other: &Totals) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    /// `self - other` per quantity, never below zero.
    pub fn minus(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// `self`'s quantities that are zero in `other`, the rest zero.
    pub fn where_zero_in(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            if b != 0 {
                *a = 0;
            }
        }
        out
    }

    /// The larger of `self` and `other`, per quantity.
    pub fn max(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = (*a).max(b);
        }
        out
    }

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0; Self::ENCODED_LEN];
        crate::bytes::put_u64s(&mut out, &self.0);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Totals> {
        crate::bytes::u64s(bytes).map(Totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_and_differences_stop_at_zero() {
        let mut big = Totals::default();
        big.set(Quantity::Total, u64::MAX - 1);
        let mut five = Totals::default();
        five.set(Quantity::Total, 5);
        big.add(&five);
        assert_eq!(big.get(Quantity::Total), u64::MAX, "pinned, never wrapped");
        assert_eq!(five.minus(&big).get(Quantity::Total), 0, "never below zero");
        assert_eq!(Totals::decode(&big.encode()), Some(big));
    }
}

//! Realistic Reasonix ledgers, seeded: the row mix of docs/ledger-format.md (usage rows with and without
//! cost quotes, unpriced local models, request-only failures, turn markers, compaction
//! diagnostics, legacy rows), 6/7/9-digit timestamps, several models, providers and sources.
//! Shared by tests, benchmarks and the `gen_ledger` example.

#![allow(dead_code)]

/// A small, fast, seeded PRNG (SplitMix64): reproducible ledgers without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

pub const MODELS: &[&str] = &[
    "deepseek/deepseek-v4-flash",
    "deepseek/deepseek-v4-pro",
    "deepseek/deepseek-v4-flash",
    "openrouter/google/gemini-2.5-pro",
    "ollama/qwen3:8b",
    "deepseek-chat",
];
pub const SOURCES: &[&str] = &["desktop", "cli", "desktop", "serve", "bot", "remote"];
const OFFSETS: &[&str] = &["+08:00", "Z", "-05:00", "+01:00"];

pub struct Generator {
    rng: Rng,
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator { rng: Rng::new(seed) }
    }

    /// A `ts` on `day` (`YYYY-MM-DD`) with Go's fraction formatting: 9, 7 or 6 digits, or none.
    pub fn timestamp(&mut self, day: &str) -> String {
        let (h, m, s) = (self.rng.below(24), self.rng.below(60), self.rng.below(60));
        let fraction = match self.rng.below(4) {
            0 => format!(".{:09}", self.rng.below(1_000_000_000) | 1),
            1 => format!(".{:07}", self.rng.below(10_000_000) | 1),
            2 => format!(".{:06}", self.rng.below(1_000_000) | 1),
            _ => String::new(),
        };
        let offset = self.rng.pick(OFFSETS);
        format!("{day}T{h:02}:{m:02}:{s:02}{fraction}{offset}")
    }

    /// One line (without `\n`), of the kinds Reasonix writes, in its proportions.
    pub fn line(&mut self, day: &str) -> String {
        let ts = self.timestamp(day);
        let model = *self.rng.pick(MODELS);
        let source = *self.rng.pick(SOURCES);
        match self.rng.below(100) {
            0..=54 => self.usage(&ts, model, source, true),
            55..=69 => self.usage(&ts, model, source, false),
            70..=72 => {
                let mut line = self.usage(&ts, "ollama/qwen3:8b", source, false);
                line.pop();
                line.push_str(r#","usage_source":"executor","cost_complete":false,"display_complete":false,"display_status":"unavailable","cost_estimated":true,"incomplete_reason":"no_price"}"#);
                line
            }
            73..=75 => format!(
                r#"{{"ts":"{ts}","model":"{model}","source":"{source}","requests":{}}}"#,
                1 + self.rng.below(3)
            ),
            76..=93 => format!(r#"{{"ts":"{ts}","source":"{source}","turn":true}}"#),
            94..=96 => format!(
                r#"{{"ts":"{ts}","source":"{source}","compaction":{{"trigger":"auto","mode":"summarized","before_tokens":{},"after_tokens":{}}}}}"#,
                100_000 + self.rng.below(50_000),
                10_000 + self.rng.below(5_000)
            ),
            _ => format!(r#"{{"ts":"{ts}","total":{}}}"#, 50 + self.rng.below(5_000)),
        }
    }

    fn usage(&mut self, ts: &str, model: &str, source: &str, priced: bool) -> String {
        let prompt = 500 + self.rng.below(60_000);
        let cache_hit = self.rng.below(prompt + 1);
        let cache_miss = prompt - cache_hit;
        let completion = 20 + self.rng.below(4_000);
        let reasoning = self.rng.below(completion + 1);
        let total = prompt + completion;
        let mut line = format!(
            r#"{{"ts":"{ts}","model":"{model}","source":"{source}","prompt":{prompt},"completion":{completion},"reasoning":{reasoning},"cache_hit":{cache_hit},"cache_miss":{cache_miss},"total":{total},"requests":1"#
        );
        if priced {
            let prefix = self.rng.next_u64();
            line.push_str(&format!(
                r#","prefix_hash":"{prefix:016x}","usage_source":"provider","cost_amount":"{}","cost_currency":"{}","cost_complete":true,"display_complete":true,"display_status":"matched","billing_mode":"{}","pricing_fingerprint":"{:08x}","rate_date":"2026-08-01","valuation_cny":"0.{:06}""#,
                // A rate card per model: its currency and billing mode; one model's quotes are
                // malformed (a bad cost). Fixed per model, so that a ledger of a few hundred
                // lines has every cost series a longer one has.
                match model {
                    "deepseek-chat" => "1e-3".to_string(),
                    _ => format!("0.{:06}", self.rng.below(1_000_000)),
                },
                if model.starts_with("openrouter/") { "USD" } else { "CNY" },
                if model == "deepseek/deepseek-v4-pro" { "subscription_equivalent" } else { "payg" },
                self.rng.below(1 << 32),
                self.rng.below(1_000_000),
            ));
        }
        line.push('}');
        line
    }

    /// `lines` lines for one day file, each ending in `\n`.
    pub fn day_file(&mut self, day: &str, lines: usize) -> String {
        let mut out = String::with_capacity(lines * 360);
        for _ in 0..lines {
            out.push_str(&self.line(day));
            out.push('\n');
        }
        out
    }
}

/// `count` consecutive calendar days from 2026-08-01, as `YYYY-MM-DD`.
pub fn days(count: usize) -> Vec<String> {
    days_from((2026, 8, 1), count)
}

/// `count` consecutive calendar days from `(year, month, day)`, as `YYYY-MM-DD`.
pub fn days_from((mut year, mut month, mut day): (u32, u32, u32), count: usize) -> Vec<String> {
    let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(format!("{year:04}-{month:02}-{day:02}"));
        day += 1;
        let len = if month == 2 && year % 4 == 0 {
            29
        } else {
            lengths[month as usize - 1]
        };
        if day > len {
            day = 1;
            month += 1;
            if month > 12 {
                month = 1;
                year += 1;
            }
        }
    }
    out
}

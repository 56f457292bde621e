//! Contract §6, the conventions an exporter's users expect: a port of its own, a page for a
//! person, the health checks Prometheus' own answer, `build_info`, and the GenAI conventions'
//! view, each asked for as a user asks (the default address, a real browser, a real collector).

#[path = "../common/mod.rs"]
mod common;

mod auth_flood;
mod gen_ai;
mod page;
mod port;
mod web_config;

use common::Fixture;

/// Usage rows of two models and a turn, with a price quote on one.
fn ledger(fx: &Fixture) {
    fx.append_lines(
        "2026-12-01.jsonl",
        &[
            r#"{"ts":"2026-12-01T09:00:00.5+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":7517,"completion":260,"reasoning":120,"cache_hit":7424,"cache_miss":93,"total":7777,"requests":1,"cost_amount":"0.000123456","cost_currency":"CNY","cost_complete":true,"billing_mode":"payg"}"#,
            r#"{"ts":"2026-12-01T09:01:00+08:00","model":"openrouter/google/gemini-2.5-pro","source":"cli","prompt":1000,"completion":2000,"reasoning":1500,"cache_hit":0,"cache_miss":1000,"total":3000,"requests":2}"#,
            r#"{"ts":"2026-12-01T09:02:00+08:00","source":"cli","turn":true}"#,
        ],
    );
}

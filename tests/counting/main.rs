//! Contract §2 (what counts) and §5 (the checkpoint): one test per promise, each against the
//! real binary on real files, checked with `status --json` against an independent model.

#[path = "../common/mod.rs"]
mod common;

mod checkpoint;
mod labels;
mod rows;

use common::model::Model;
use common::{Fixture, assert_success};
use serde_json::{Value, json};

const USAGE_A: &str = r#"{"ts":"2026-08-07T00:22:43.571662+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":7517,"completion":260,"reasoning":120,"cache_hit":7424,"cache_miss":93,"total":7777,"requests":1}"#;

const USAGE_B: &str = r#"{"ts":"2026-08-07T09:01:02.1234567+08:00","model":"deepseek/deepseek-v4-pro","source":"cli","prompt":1000,"completion":50,"reasoning":10,"cache_hit":900,"cache_miss":100,"total":1050,"requests":2}"#;

const USAGE_C: &str = r#"{"ts":"2026-08-08T10:00:00.123456789Z","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":10,"completion":5,"total":15,"requests":1}"#;

const TURN: &str = r#"{"ts":"2026-08-15T12:25:02.104937261+01:00","source":"cli","turn":true}"#;

/// Sums one quantity over all series of a `status --json` document.
fn sum(status: &Value, key: &str) -> u64 {
    status["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[key].as_u64().unwrap())
        .sum()
}

fn lines(status: &Value) -> Value {
    status["lines"].clone()
}

fn expect_model(fx: &Fixture, model: &Model) {
    assert_eq!(fx.status(), model.expected.status_json());
}

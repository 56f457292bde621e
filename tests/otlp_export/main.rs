//! `once` against real OTLP receivers on real sockets, over gRPC and HTTP/protobuf: exactly the
//! model's totals are delivered, run after run, whatever happens to the ledger.

#[path = "../common/mod.rs"]
mod common;

mod delta;
mod exact_totals;
mod failures;
mod stream;

use std::collections::BTreeMap;
use std::time::Duration;

use common::files::copy_tree;
use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::{Receiver, resource_attr};
use common::{Fixture, assert_success};

/// A realistic ledger with every row kind, a torn last line, and a blank line.
fn realistic_ledger(fx: &Fixture, model: &mut Model, seed: u64) {
    let mut generator = Generator::new(seed);
    for day in days(4) {
        let mut text = generator.day_file(&day, 150);
        text.push('\n');
        text.push_str(r#"{"ts":"2026-08-01T00:00:00Z","total":12}"#);
        text.push('\n');
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
}

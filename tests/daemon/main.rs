//! `run`, the daemon, end to end: live ingestion of bursts and new day files, periodic export to
//! a real receiver, SIGTERM delivering the tail, `kill -9` and restart, a collector that is down
//! and comes back, and `/metrics`.
//!
//! These run the real process on the wall clock. Waits are polls until a condition holds, up to
//! `PATIENCE` (20 s, far beyond what any of them needs on a quiet machine); the few that assert a
//! time say their margin where they do. When something must happen at a given moment of the
//! schedule (the next poll, not one earlier), it is tested on tokio's paused clock instead, in
//! `src/daemon/tests.rs`, to the millisecond.

#[path = "../common/mod.rs"]
mod common;

mod exports;
mod running;

use std::time::{Duration, Instant};

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, scrape_totals, wait_until};

const PATIENCE: Duration = Duration::from_secs(20);

fn daemon_args(receiver: &Receiver) -> Vec<String> {
    [
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
        "--export-interval",
        "300ms",
        "--poll-interval",
        "500ms",
        "--prometheus",
        "127.0.0.1:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

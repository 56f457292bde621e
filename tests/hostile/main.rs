//! Hostile input and clumsy operation (docs/counting-rules.md): what an attacker or a hurried
//! operator does to a machine running the exporter. Each test names the fault; each ends with a
//! clear message or none needed, nothing counted twice, nothing leaked.

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod collector;
mod lines;
mod metrics_clients;
mod operation;
mod state_dir;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, contains, files_below, send_signal, the_error_line, wait_until};

fn ledger(fx: &Fixture, model: &mut Model, seed: u64, lines: usize) -> String {
    let day = days(1)[0].clone();
    let text = Generator::new(seed).day_file(&day, lines);
    fx.append(&format!("{day}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());
    text
}

/// Runs the exporter with `args` and `env`, killed if it takes longer than `limit`.
fn run_within(fx: &Fixture, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = fx.command(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let done = wait_until(limit, || child.try_wait().unwrap().is_some());
    if !done {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        done,
        "{args:?} {env:?} still running after {limit:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

//! Fault injection: what a machine does to a daemon — a full disk and a read-only file
//! system under the state dir, a stats folder or file it may not read, a stats folder behind a
//! symlink that is re-pointed, a file deleted while it is read, a 10 MB line, five thousand day
//! files, bytes that are not UTF-8, the clock set back. Each ends with a clear message (or none
//! needed), nothing lost, nothing counted twice, and memory bounded.
//!
//! Some need root (a tmpfs mount, running the daemon as `nobody`) or libfaketime; CI has both
//! (`.ci/run`), elsewhere those tests say what is missing and skip.

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod clock;
mod extreme_input;
mod state_dir;
mod stats_folder;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, scrape_totals, the_error_line, wait_until};
#[cfg(target_os = "linux")]
use common::{assert_peak_below, run_measured};

/// Three day files of realistic lines, fed to the model too.
fn ledger(fx: &Fixture, model: &mut Model, generator: &mut Generator, lines: usize) {
    for day in days(3) {
        let text = generator.day_file(&day, lines);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
}

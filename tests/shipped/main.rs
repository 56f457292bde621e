//! What ships, run as its users run it: the artifacts `cargo xtask dist` leaves in target/dist
//! (`.ci/run` makes them before the tests). The Windows `.exe` under Wine and the Linux arm64
//! binary under qemu each count `testdata/row-kinds` exactly from their platform's default
//! ledger path; the `.deb` installs, runs and removes cleanly; the image counts under podman;
//! lintian and rpmlint find no errors; the macOS binaries, which cannot run here, are checked to
//! be what macOS loads.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

#[path = "../common/mod.rs"]
mod common;

mod archives;
mod emulated;
mod packages;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::assert_success;
use common::files::copy_tree;
use common::receiver::Receiver;
use common::tools::{in_ci, installed, skip};
use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// target/dist, once `cargo xtask dist` has filled it.
fn dist() -> Option<PathBuf> {
    let dist = repo("target/dist");
    if dist.join("SHA256SUMS").is_file() {
        return Some(dist);
    }
    skip("target/dist is empty: `cargo xtask dist` makes the artifacts");
    None
}

/// The one artifact in `dist` whose name ends with `suffix`.
fn artifact(dist: &Path, suffix: &str) -> PathBuf {
    let found: Vec<_> = std::fs::read_dir(dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "target/dist: one artifact ending {suffix}, found {found:?}"
    );
    found[0].clone()
}

/// The archive's files, unpacked into `into`, and its one top folder.
fn unpack(archive: &Path, into: &Path) -> PathBuf {
    let out = if archive.extension().is_some_and(|e| e == "zip") {
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(archive)
            .arg(into)
            .output()
    } else {
        Command::new("tar")
            .arg("-xzf")
            .arg(archive)
            .arg("-C")
            .arg(into)
            .output()
    };
    assert_success(&out.unwrap());
    let top: Vec<_> = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(top.len(), 1, "{}: one top folder", archive.display());
    top[0].clone()
}

fn expected_status() -> Value {
    serde_json::from_slice(&std::fs::read(repo("testdata/row-kinds/expected-status.json")).unwrap()).unwrap()
}

fn json_of(out: &Output) -> Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

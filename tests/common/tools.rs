//! The real servers the end-to-end tests run, and what a test does when one is missing. A test
//! that needs a server, a tool, root or a kernel feature is `#[ignore]`d with what it needs, so
//! that a plain `cargo test` lists it as ignored rather than pass it having checked nothing;
//! `.ci/run` runs them with `--include-ignored`. There, in CI (`CI=true`), a missing tool fails
//! the test, naming the tool and how to get it; elsewhere it prints one
//! `SKIPPED <test>: <reason>` line and the test returns.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether this run is CI's, where every tool must be there.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `Some(path)` of a tool built by `.ci/tools` (or named by `var`); `None`, after saying so,
/// when a developer has not built it. Fails in CI.
pub fn built(test: &str, var: &str, name: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/tools")
            .join(name)
    });
    if path.is_file() {
        return Some(path);
    }
    missing(
        test,
        &format!(
            "{name} not found at {} (`bash .ci/tools` builds it, or set {var})",
            path.display()
        ),
    )
}

/// `Some(name)` of a command on the PATH that answers `--version`; `None` (after saying so)
/// when it is not installed. Fails in CI.
pub fn installed(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    if Command::new(name).arg("--version").output().is_ok() {
        return Some(PathBuf::from(name));
    }
    missing(
        test,
        &format!("{name} is not installed (apt-get install {package})"),
    )
}

fn missing(test: &str, reason: &str) -> Option<PathBuf> {
    assert!(!in_ci(), "{test}: {reason}");
    eprintln!("SKIPPED {test}: {reason}");
    None
}

/// The running test's name: libtest runs each test on a thread named after it.
pub fn test_name() -> String {
    std::thread::current().name().unwrap_or("a test").to_string()
}

/// Says that the running test cannot do what it is for here, in one `SKIPPED <test>: <reason>`
/// line; fails in CI, where everything the suite needs is installed.
pub fn skip(reason: &str) {
    let test = test_name();
    assert!(!in_ci(), "{test}: {reason}");
    eprintln!("SKIPPED {test}: {reason}");
}

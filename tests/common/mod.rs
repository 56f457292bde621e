//! Test fixtures: a Reasonix home on a real filesystem, and the real binary run against it.

#![allow(dead_code)]

pub mod generator;
pub mod model;
pub mod receiver;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_reasonix-exporter");

/// A temporary machine: a home with `.reasonix/stats`, and a state dir for the exporter.
pub struct Fixture {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub stats: PathBuf,
    pub state: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let stats = home.join(".reasonix").join("stats");
        std::fs::create_dir_all(&stats).expect("stats dir");
        let state = root.path().join("state");
        Fixture {
            root,
            home,
            stats,
            state,
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.stats.join(name)
    }

    /// Appends `bytes` to a stats file, creating it, as Reasonix's O_APPEND writes do.
    pub fn append(&self, name: &str, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(name))
            .expect("open for append");
        f.write_all(bytes).expect("append");
    }

    pub fn append_lines(&self, name: &str, lines: &[&str]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.append(name, text.as_bytes());
    }

    /// The binary with a clean environment: only this fixture's home and state.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_via(BIN, &[], args)
    }

    /// The binary run by `wrapper` (e.g. strace) with `wrapper_args`, environment as `command`.
    pub fn command_via(&self, wrapper: &str, wrapper_args: &[&str], args: &[&str]) -> Command {
        let mut cmd = Command::new(wrapper);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", self.root.path().join("xdg-state"))
            .env("XDG_CONFIG_HOME", self.root.path().join("xdg-config"))
            .args(wrapper_args);
        if wrapper != BIN {
            cmd.arg(BIN);
        }
        cmd.arg("--state-dir").arg(&self.state).args(args);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run the exporter")
    }

    /// `once --otlp off`, which must succeed.
    pub fn ingest(&self) -> Output {
        let out = self.run(&["once", "--otlp", "off"]);
        assert_success(&out);
        out
    }

    /// `status --json`, parsed.
    pub fn status(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        assert_success(&out);
        serde_json::from_slice(&out.stdout).expect("status --json is JSON")
    }
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file below `dir`, recursively.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

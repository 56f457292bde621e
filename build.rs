//! Names the commit in `--version` and `reasonix_exporter_build_info`: `$REASONIX_EXPORTER_GIT_COMMIT`
//! when set (`cargo xtask dist` sets it; so can a build from sources without `.git`), else
//! `git rev-parse`, else "unknown"; and the compiler that built it (`rustc -V`'s version).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=REASONIX_EXPORTER_GIT_COMMIT");
    // Only paths that exist: cargo treats a missing one as changed, on every build.
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let commit = std::env::var("REASONIX_EXPORTER_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=REASONIX_EXPORTER_COMMIT={}", commit.trim());
    let rustc = rustc_version().unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=REASONIX_EXPORTER_RUSTC={rustc}");
}

/// `1.96.0` of `rustc 1.96.0 (…)`, from the compiler cargo runs (`$RUSTC`).
fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC")?;
    let out = Command::new(rustc).arg("-V").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let version = text.split_whitespace().nth(1)?;
    out.status.success().then(|| version.to_string())
}

fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        .filter(|c| !c.trim().is_empty())
}

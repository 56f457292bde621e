//! What the binary says of itself: the commit it was built from, completions, its man page.

use super::*;

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let version = String::from_utf8(out.stdout).unwrap();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = head.unwrap_or_else(|| "unknown".into());
    assert_eq!(
        version.trim(),
        format!(
            "reasonix-exporter {} (commit {commit})",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn completions_and_man_page_come_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "completions {shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("otlp-endpoint"),
            "{shell}"
        );
    }
    let out = Command::new(BIN).arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH reasonix-exporter 1"), "a roff man page");
}

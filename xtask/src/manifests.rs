//! The Homebrew formula and the Scoop manifest: each names the archives of this release by URL
//! and SHA-256, and says how the service starts at login (Homebrew's `service` block is a
//! launchd agent on macOS and a systemd user unit on Linux).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

use crate::contents::{DESCRIPTION, NAME, Release, SUMMARY};
use crate::sha256_hex;
use crate::targets::{Os, Target};

type Archives<'a> = [(&'a Target, PathBuf)];

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

pub fn homebrew(archives: &Archives, release: &Release, out: &Path) -> Result<PathBuf> {
    let mut platforms = String::new();
    for (os, block) in [(Os::Mac, "on_macos"), (Os::Linux, "on_linux")] {
        let mut cpus = String::new();
        for (target, path) in archives.iter().filter(|(t, _)| t.os == os) {
            let sha = sha256_hex(&crate::read(path)?);
            let url = release.download_url(&file_name(path));
            cpus.push_str(&format!(
                "    {} do\n      url \"{url}\"\n      sha256 \"{sha}\"\n    end\n",
                target.brew_cpu
            ));
        }
        if !cpus.is_empty() {
            platforms.push_str(&format!("  {block} do\n{cpus}  end\n\n"));
        }
    }
    let formula = format!(
        r##"# Homebrew formula for {NAME} {version}, made by `cargo xtask dist`.
# Homebrew installs formulae from taps: this file goes into the project's tap, then
#   brew install reasonix-exporter/tap/{NAME}
#   brew services start {NAME}              (starts at login: a launchd agent, or a systemd user unit)
class ReasonixExporter < Formula
  desc "{SUMMARY}"
  homepage "{homepage}"
  version "{version}"
  license any_of: ["MIT", "Apache-2.0"]

{platforms}  def install
    bin.install "{NAME}"
    man1.install "man/{NAME}.1"
    bash_completion.install "completions/{NAME}.bash" => "{NAME}"
    zsh_completion.install "completions/_{NAME}"
    fish_completion.install "completions/{NAME}.fish"
  end

  service do
    run [opt_bin/"{NAME}", "run"]
    keep_alive successful_exit: false
    log_path var/"log/{NAME}.log"
    error_log_path var/"log/{NAME}.log"
  end

  test do
    assert_match version.to_s, shell_output("#{{bin}}/{NAME} --version")
  end
end
"##,
        version = release.version,
        homepage = release.repository,
    );
    let path = out.join(format!("{NAME}.rb"));
    crate::write(&path, formula)?;
    Ok(path)
}

pub fn scoop(archives: &Archives, release: &Release, out: &Path) -> Result<PathBuf> {
    let (target, path) = archives.iter().find(|(t, _)| t.os == Os::Windows).unwrap();
    let stem = file_name(path).trim_end_matches(".zip").to_owned();
    let manifest = json!({
        "version": release.version,
        "description": SUMMARY,
        "homepage": release.repository,
        "license": "MIT|Apache-2.0",
        "notes": [
            DESCRIPTION,
            "Start it at logon: see the README's Install section (a scheduled task of your own).",
        ],
        "architecture": {
            "64bit": {
                "url": release.download_url(&file_name(path)),
                "hash": sha256_hex(&crate::read(path)?),
                "extract_dir": stem,
            }
        },
        "bin": target.exe(),
    });
    let path = out.join(format!("{NAME}.json"));
    crate::write(&path, serde_json::to_string_pretty(&manifest)? + "\n")?;
    Ok(path)
}

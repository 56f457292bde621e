//! What every artifact carries besides the binary: the release's name and dates, the man page,
//! the shell completions, the licence texts and the README.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::run_checked;

pub const NAME: &str = "reasonix-exporter";
/// The one line that names the package everywhere (Debian's synopsis, RPM's summary, Homebrew).
pub const SUMMARY: &str = "Reasonix token usage as exact OpenTelemetry and Prometheus counters";
/// The longer description, one paragraph.
pub const DESCRIPTION: &str = "reasonix-exporter reads the usage ledger that Reasonix, the \
DeepSeek-first coding agent, writes into ~/.reasonix/stats, strictly read-only, and turns every \
new line into exact, monotonic counters of prompt, completion, reasoning and cache tokens, \
requests and Reasonix's own cost quotes, for an OpenTelemetry Collector and Prometheus. Every \
line is counted once, across restarts and crashes; no prompt content ever leaves the machine.";
pub const MAINTAINER: &str = "reasonix-exporter maintainers <reasonix-exporter@users.noreply.github.com>";

/// The release being built: its version, where it is published and its one timestamp.
pub struct Release {
    pub root: PathBuf,
    pub version: String,
    pub repository: String,
    pub commit: String,
    /// `SOURCE_DATE_EPOCH`, else the commit's time: every date written into an artifact.
    pub epoch: u64,
}

impl Release {
    pub fn read(root: &Path) -> Result<Release> {
        let manifest = String::from_utf8(crate::read(&root.join("Cargo.toml"))?)?;
        let manifest: toml::Table = manifest.parse().context("Cargo.toml")?;
        let package = manifest.get("package").and_then(|p| p.as_table());
        let field = |name: &str| -> Result<String> {
            package
                .and_then(|p| p.get(name))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .with_context(|| format!("Cargo.toml: [package] has no {name}"))
        };
        let git = |args: &[&str]| -> Result<String> {
            let out = run_checked(Command::new("git").current_dir(root).args(args), "git")?;
            Ok(String::from_utf8_lossy(&out).trim().to_owned())
        };
        let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
            Ok(value) => value
                .trim()
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={value:?}: not whole seconds"))?,
            Err(_) => git(&["log", "-1", "--format=%ct"])?
                .parse()
                .context("git log: no commit time")?,
        };
        Ok(Release {
            root: root.to_path_buf(),
            version: field("version")?,
            repository: field("repository")?,
            commit: git(&["rev-parse", "--short=12", "HEAD"])?,
            epoch,
        })
    }

    /// Where the release's files are downloaded from (GitHub's release URLs).
    pub fn download_url(&self, file: &str) -> String {
        format!("{}/releases/download/v{}/{file}", self.repository, self.version)
    }

    /// A text file of the source tree.
    pub fn source_file(&self, path: &str) -> Result<Vec<u8>> {
        std::fs::read(self.root.join(path)).with_context(|| format!("reading {path}"))
    }
}

/// The completion scripts' file names, as each shell looks for them.
pub const SHELLS: [(&str, &str); 4] = [
    ("bash", "reasonix-exporter.bash"),
    ("zsh", "_reasonix-exporter"),
    ("fish", "reasonix-exporter.fish"),
    ("powershell", "_reasonix-exporter.ps1"),
];

/// The man page and the completion scripts, made by the binary itself.
pub struct Docs {
    pub man: Vec<u8>,
    /// (shell, file name, script), in `SHELLS`' order.
    pub completions: Vec<(&'static str, &'static str, Vec<u8>)>,
}

impl Docs {
    pub fn generate(binary: &Path, root: &Path) -> Result<Docs> {
        let run = |args: &[&str]| -> Result<Vec<u8>> {
            let out = run_checked(
                Command::new(binary).args(args).current_dir(root),
                &format!("reasonix-exporter {}", args.join(" ")),
            )?;
            if out.is_empty() {
                bail!("reasonix-exporter {}: printed nothing", args.join(" "));
            }
            Ok(out)
        };
        let mut completions = Vec::new();
        for (shell, file) in SHELLS {
            completions.push((shell, file, run(&["completions", shell])?));
        }
        Ok(Docs {
            man: run(&["man"])?,
            completions,
        })
    }

    pub fn completion(&self, shell: &str) -> &[u8] {
        &self.completions.iter().find(|(s, _, _)| *s == shell).unwrap().2
    }
}

/// deploy/systemd's user unit as a package installs it: the binary in /usr/bin, and a header
/// that says how to start it (a package enables nothing in a user's session by itself).
pub fn packaged_user_unit(release: &Release) -> Result<String> {
    let unit = String::from_utf8(release.source_file("deploy/systemd/reasonix-exporter.service")?)?;
    let cargo_bin = "%h/.cargo/bin/reasonix-exporter";
    if !unit.contains(cargo_bin) {
        bail!("deploy/systemd/reasonix-exporter.service: ExecStart no longer names {cargo_bin}");
    }
    // The unit as it is, below the comment that says how to install it from a clone.
    let body: String = unit
        .lines()
        .skip_while(|line| line.starts_with('#') || line.trim().is_empty())
        .map(|line| format!("{line}\n"))
        .collect();
    Ok(format!(
        "# systemd user unit of reasonix-exporter: it reads your own Reasonix ledger.\n\
         #   systemctl --user enable --now reasonix-exporter\n\
         #   journalctl --user -u reasonix-exporter -f\n\n{}",
        body.replace(cargo_bin, "/usr/bin/reasonix-exporter")
    ))
}

/// `text` in lines of at most `width` characters, broken at spaces.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().unwrap();
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

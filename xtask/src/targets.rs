//! The targets reasonix-exporter ships on, and how each is built here.
//!
//! Debian's Rust (`rustc-web`, with `rust-web-src`) compiles them all, building the standard
//! library from source (`-Zbuild-std`) for every target but this machine's own; rustup cannot
//! fetch other targets here. Linking: zig for Linux against glibc 2.17 (one binary for every
//! distribution of the last decade) and for macOS against stubs of the system's frameworks
//! (`macos_sdk.rs`), Debian's mingw-w64 for Windows. `.ci/cross-toolchain` installs them once per
//! machine; the builds are kept in its folder, one for all five targets (the macros and build
//! scripts they compile for this machine are shared), so a second run rebuilds only the crate
//! itself and `third_party/sled` (a path dependency, which cargo judges by its files' times).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::contents::Release;
use crate::{macos_sdk, run_checked};

/// The machine's own target: its binary writes the man page and the completions.
pub const HOST: &str = "x86_64-unknown-linux-gnu";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Os {
    Linux,
    Mac,
    Windows,
}

#[derive(Debug)]
pub struct Target {
    pub triple: &'static str,
    pub os: Os,
    /// The C compiler and linker: a zig target, or mingw-w64 when `None` on Windows.
    zig: Option<&'static str>,
    /// Debian's, RPM's and OCI's names for the architecture, where such a package is made.
    pub deb_arch: Option<&'static str>,
    pub rpm_arch: Option<&'static str>,
    pub image_arch: Option<&'static str>,
    /// Homebrew's condition for this archive (`on_intel`, `on_arm`).
    pub brew_cpu: &'static str,
}

pub const TARGETS: [Target; 5] = [
    Target {
        triple: HOST,
        os: Os::Linux,
        zig: Some("x86_64-linux-gnu.2.17"),
        deb_arch: Some("amd64"),
        rpm_arch: Some("x86_64"),
        image_arch: Some("amd64"),
        brew_cpu: "on_intel",
    },
    Target {
        triple: "aarch64-unknown-linux-gnu",
        os: Os::Linux,
        zig: Some("aarch64-linux-gnu.2.17"),
        deb_arch: Some("arm64"),
        rpm_arch: Some("aarch64"),
        image_arch: None,
        brew_cpu: "on_arm",
    },
    Target {
        triple: "x86_64-pc-windows-gnu",
        os: Os::Windows,
        zig: None,
        deb_arch: None,
        rpm_arch: None,
        image_arch: None,
        brew_cpu: "",
    },
    Target {
        triple: "x86_64-apple-darwin",
        os: Os::Mac,
        zig: Some("x86_64-macos.11.0"),
        deb_arch: None,
        rpm_arch: None,
        image_arch: None,
        brew_cpu: "on_intel",
    },
    Target {
        triple: "aarch64-apple-darwin",
        os: Os::Mac,
        zig: Some("aarch64-macos.11.0"),
        deb_arch: None,
        rpm_arch: None,
        image_arch: None,
        brew_cpu: "on_arm",
    },
];

impl Target {
    pub fn exe(&self) -> &'static str {
        match self.os {
            Os::Windows => "reasonix-exporter.exe",
            _ => "reasonix-exporter",
        }
    }
}

/// The folder `.ci/cross-toolchain` filled: compilers, linkers and the kept builds.
pub struct Toolchain {
    cache: PathBuf,
    macos_sdk: PathBuf,
}

impl Toolchain {
    pub fn prepare(root: &Path) -> Result<Toolchain> {
        let out = run_checked(
            Command::new("bash").arg(root.join(".ci/cross-toolchain")),
            ".ci/cross-toolchain",
        )?;
        let cache = PathBuf::from(String::from_utf8_lossy(&out).trim());
        if !cache.is_dir() {
            bail!(
                ".ci/cross-toolchain named {}, which is not a folder",
                cache.display()
            );
        }
        // Builds were kept in a folder a target before: each holds as much as the shared one.
        for target in &TARGETS {
            let old = cache.join("dist").join(target.triple);
            if old.is_dir() {
                std::fs::remove_dir_all(&old).with_context(|| {
                    format!("{}: an old build, cannot be removed: remove it", old.display())
                })?;
            }
        }
        let macos_sdk = macos_sdk::write(&cache.join("macos-sdk"))?;
        Ok(Toolchain { cache, macos_sdk })
    }

    /// One for every target: the macros and build scripts each target's build compiles for this
    /// machine are compiled once for Linux and Windows and once for both macOS targets (whose
    /// profile keeps the symbol table, below). They stay shared because a target's linker is
    /// given in its flags (`-Clinker`), which cargo passes to that target's code alone: as
    /// `CARGO_TARGET_<triple>_LINKER`, this machine's own target's linker would link them too.
    fn target_dir(&self) -> PathBuf {
        self.cache.join("dist").join("targets")
    }

    /// Builds `target` with the `dist` profile and returns its binary.
    pub fn build(&self, target: &Target, release: &Release) -> Result<PathBuf> {
        let mut cargo = Command::new("/usr/bin/cargo");
        cargo
            .current_dir(&release.root)
            .args([
                "build",
                "--locked",
                "--profile",
                "dist",
                "--package",
                "reasonix-exporter",
            ])
            .args(["--bin", "reasonix-exporter", "--target", target.triple])
            .arg("--target-dir")
            .arg(self.target_dir());
        if target.triple != HOST {
            cargo.arg("-Zbuild-std=std,panic_abort");
        }
        self.environment(&mut cargo, target, release)?;
        let status = cargo
            .status()
            .context("/usr/bin/cargo (Debian's cargo-web): cannot start")?;
        if !status.success() {
            bail!("building {} failed ({status}): see above", target.triple);
        }
        let binary = self
            .target_dir()
            .join(target.triple)
            .join("dist")
            .join(target.exe());
        if !binary.is_file() {
            bail!("building {} left no {}", target.triple, binary.display());
        }
        Ok(binary)
    }

    /// Debian's toolchain alone (not rustup's, whose `cargo xtask` started this), each target's
    /// compiler and linker, and flags that keep the build machine's paths out of the binary.
    fn environment(&self, cargo: &mut Command, target: &Target, release: &Release) -> Result<()> {
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            let keep = [
                "CARGO_HOME",
                "CARGO_HTTP_",
                "CARGO_NET_",
                "CARGO_REGISTRIES_",
                "CARGO_TERM_",
            ]
            .iter()
            .any(|k| key.starts_with(k));
            let toolchain = key.starts_with("CARGO") || key.starts_with("RUST") || key == "SDKROOT";
            if toolchain && !keep {
                cargo.env_remove(&key);
            }
        }
        cargo
            .env("PATH", "/usr/bin:/bin")
            .env("RUSTC_BOOTSTRAP", "1")
            .env("REASONIX_EXPORTER_GIT_COMMIT", &release.commit);
        let env_triple = target.triple.replace('-', "_");
        let upper = env_triple.to_uppercase();
        let cargo_home = match std::env::var_os("CARGO_HOME") {
            Some(home) => PathBuf::from(home),
            None => PathBuf::from(
                std::env::var_os("HOME")
                    .context("HOME is not set: set HOME, or CARGO_HOME to cargo's folder")?,
            )
            .join(".cargo"),
        };
        let mut flags = vec![
            format!(
                "--remap-path-prefix={}=/cargo/registry/src",
                cargo_home.join("registry/src").display()
            ),
            format!("--remap-path-prefix={}=/target", self.target_dir().display()),
            "--remap-path-prefix=/usr/lib/rustlib/src/rust=/rustc/src".to_owned(),
        ];
        match target.zig {
            Some(zig) => {
                let cc = self.cache.join(format!("cc-{zig}"));
                cargo
                    .env(format!("CC_{env_triple}"), &cc)
                    .env(format!("AR_{env_triple}"), self.cache.join("ar"));
                flags.push(format!("-Clinker={}", cc.display()));
            }
            None => {
                cargo
                    .env(format!("CC_{env_triple}"), "x86_64-w64-mingw32-gcc")
                    .env(format!("AR_{env_triple}"), "x86_64-w64-mingw32-ar");
                flags.push("-Clinker=x86_64-w64-mingw32-gcc".to_owned());
                // A PE header carries the link time unless told not to.
                flags.push("-Clink-arg=-Wl,--no-insert-timestamp".to_owned());
            }
        }
        if target.os == Os::Mac {
            let sdk = &self.macos_sdk;
            cargo.env("SDKROOT", sdk);
            flags.push(format!(
                "-Clink-arg=-F{}",
                sdk.join("System/Library/Frameworks").display()
            ));
            flags.push(format!("-Clink-arg=-L{}", sdk.join("usr/lib").display()));
            // Stripping after the link would break the ad-hoc signature arm64 macOS requires:
            // the linker leaves out the debug map instead (the build's paths, in a Mach-O).
            flags.push("-Clink-arg=-Wl,-S".to_owned());
            cargo.env("CARGO_PROFILE_DIST_STRIP", "none");
        }
        cargo.env(format!("CARGO_TARGET_{upper}_RUSTFLAGS"), flags.join(" "));
        Ok(())
    }
}

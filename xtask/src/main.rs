//! `cargo xtask dist`: every release artifact of reasonix-exporter, into `target/dist/`.
//!
//! One build per target (see `targets.rs`), then packaging that depends only on those binaries
//! and the source: archives, `.deb` and `.rpm`, an OCI image, a Homebrew formula, a Scoop
//! manifest and `SHA256SUMS`. Every timestamp is `SOURCE_DATE_EPOCH` (the commit's time when it
//! is unset) and every entry is written in a fixed order with fixed owners, so the same commit
//! built with the same toolchain gives the same bytes.

mod archive;
mod civil;
mod contents;
mod deb;
mod image;
mod macos_sdk;
mod manifests;
mod rpm_package;
mod targets;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use contents::Release;
use targets::{Os, TARGETS, Target};

const USAGE: &str = "usage: cargo xtask dist [--target TRIPLE]...

Builds reasonix-exporter for every target it ships on and packages it into target/dist/.
--target limits the build to the named targets (and the packages made from them).";

fn main() {
    if let Err(error) = run() {
        eprintln!("xtask: {error:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        bail!("{USAGE}");
    };
    if command != "dist" {
        bail!("unknown command {command:?}\n{USAGE}");
    }
    let mut only = Vec::new();
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--target", Some(triple)) => only.push(triple),
            _ => bail!("unknown argument {arg:?}\n{USAGE}"),
        }
    }
    for triple in &only {
        if !TARGETS.iter().any(|t| t.triple == triple) {
            let known: Vec<_> = TARGETS.iter().map(|t| t.triple).collect();
            bail!("--target {triple}: not one of {}", known.join(", "));
        }
    }
    dist(&only)
}

fn dist(only: &[String]) -> Result<()> {
    let root = workspace_root();
    let release = Release::read(&root)?;
    let toolchain = targets::Toolchain::prepare(&root)?;
    let out = root.join("target/dist");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("emptying {}", out.display()))?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("making {}", out.display()))?;

    let chosen: Vec<_> = TARGETS
        .iter()
        .filter(|t| only.is_empty() || only.iter().any(|o| o == t.triple))
        .collect();
    let mut built = Vec::new();
    for target in &chosen {
        eprintln!("== building {}", target.triple);
        built.push((*target, toolchain.build(target, &release)?));
    }
    // The man page and completions come from the binary that runs here.
    let host = match built.iter().find(|(t, _)| t.triple == targets::HOST) {
        Some((_, binary)) => binary.clone(),
        None => toolchain.build(&TARGETS[0], &release)?,
    };
    let docs = contents::Docs::generate(&host, &root)?;

    // Each target's packages on a thread of its own: compressing them is most of the time a run
    // takes once the builds are kept.
    let packaged: Vec<Result<(PathBuf, Vec<PathBuf>)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = built
            .iter()
            .map(|(target, binary)| scope.spawn(|| package(target, binary, &docs, &release, &out)))
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("packaging panicked"))
            .collect()
    });
    let (mut written, mut archives) = (Vec::new(), Vec::new());
    for ((target, _), result) in built.iter().zip(packaged) {
        let (archive, packages) = result?;
        archives.push((*target, archive.clone()));
        written.push(archive);
        written.extend(packages);
    }
    if archives.iter().any(|(t, _)| t.os != Os::Windows) {
        written.push(manifests::homebrew(&archives, &release, &out)?);
    }
    if archives.iter().any(|(t, _)| t.os == Os::Windows) {
        written.push(manifests::scoop(&archives, &release, &out)?);
    }
    write_sums(&written, &out)?;
    for path in &written {
        eprintln!("   {}", path.strip_prefix(&root).unwrap_or(path).display());
    }
    Ok(())
}

/// One target's archive, and its packages and image where it has them.
fn package(
    target: &Target,
    binary_path: &Path,
    docs: &contents::Docs,
    release: &Release,
    out: &Path,
) -> Result<(PathBuf, Vec<PathBuf>)> {
    let binary = read(binary_path)?;
    let archive = archive::release_archive(target, &binary, docs, release, out)?;
    let mut packages = Vec::new();
    if let Some(arch) = target.deb_arch {
        packages.push(deb::package(arch, &binary, docs, release, out)?);
    }
    if let Some(arch) = target.rpm_arch {
        packages.push(rpm_package::package(arch, &binary, docs, release, out)?);
    }
    if let Some(arch) = target.image_arch {
        packages.push(image::image(arch, binary_path, release, out)?);
    }
    Ok((archive, packages))
}

/// `SHA256SUMS`, in the format `sha256sum --check` reads.
fn write_sums(files: &[PathBuf], out: &Path) -> Result<()> {
    let mut names: Vec<_> = files.iter().collect();
    names.sort();
    let mut sums = String::new();
    for path in names {
        let digest = Sha256::digest(read(path)?);
        let name = path.file_name().unwrap().to_string_lossy();
        sums.push_str(&format!("{}  {name}\n", hex(&digest)));
    }
    write(&out.join("SHA256SUMS"), sums)?;
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Reads `path`, an error naming it.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Writes `bytes` to `path`, an error naming it.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Runs `command`, failing with its name and its standard error when it fails.
pub fn run_checked(command: &mut Command, what: &str) -> Result<Vec<u8>> {
    let output = command
        .output()
        .with_context(|| format!("{what}: cannot start"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<_> = stderr.lines().rev().take(40).collect();
        let tail: Vec<_> = tail.into_iter().rev().collect();
        bail!("{what} failed ({}):\n{}", output.status, tail.join("\n"));
    }
    Ok(output.stdout)
}

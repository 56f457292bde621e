//! The release's archives: SHA256SUMS, what each carries, the manifests naming them, macOS binaries.

use super::*;

/// Where cargo keeps the crates it downloads (their paths must not reach a shipped binary).
fn cargo_home() -> String {
    std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()))
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist): .ci/run makes it"]
fn sums_name_every_artifact_and_hold() {
    let Some(dist) = dist() else { return };
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    let mut listed: Vec<&str> = sums.lines().map(|l| l.split_once("  ").unwrap().1).collect();
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "SHA256SUMS")
        .collect();
    present.sort();
    assert_eq!(listed, present, "SHA256SUMS lists exactly the artifacts");
    for wanted in [
        "x86_64-unknown-linux-gnu.tar.gz",
        "aarch64-unknown-linux-gnu.tar.gz",
        "x86_64-pc-windows-gnu.zip",
        "x86_64-apple-darwin.tar.gz",
        "aarch64-apple-darwin.tar.gz",
        "_amd64.deb",
        "_arm64.deb",
        ".x86_64.rpm",
        ".aarch64.rpm",
        "-oci-amd64.tar",
        "reasonix-exporter.rb",
        "reasonix-exporter.json",
    ] {
        artifact(&dist, wanted);
    }
    let out = Command::new("sha256sum")
        .arg("--check")
        .arg("--strict")
        .arg("SHA256SUMS")
        .current_dir(&dist)
        .output();
    assert_success(&out.unwrap());
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist): .ci/run makes it"]
fn every_archive_carries_the_binary_its_docs_and_licences() {
    let Some(dist) = dist() else { return };
    for (suffix, exe) in [
        ("x86_64-unknown-linux-gnu.tar.gz", "reasonix-exporter"),
        ("aarch64-unknown-linux-gnu.tar.gz", "reasonix-exporter"),
        ("x86_64-pc-windows-gnu.zip", "reasonix-exporter.exe"),
        ("x86_64-apple-darwin.tar.gz", "reasonix-exporter"),
        ("aarch64-apple-darwin.tar.gz", "reasonix-exporter"),
    ] {
        let work = tempfile::tempdir().unwrap();
        let top = unpack(&artifact(&dist, suffix), work.path());
        for file in [
            exe,
            "README.md",
            "LICENSE-MIT",
            "LICENSE-APACHE",
            "man/reasonix-exporter.1",
            "completions/reasonix-exporter.bash",
            "completions/_reasonix-exporter",
            "completions/reasonix-exporter.fish",
            "completions/_reasonix-exporter.ps1",
        ] {
            let path = top.join(file);
            assert!(path.metadata().is_ok_and(|m| m.len() > 0), "{suffix}: no {file}");
        }
        // No path of the machine that built it (docs/releasing.md, "The same bytes").
        let binary = std::fs::read(top.join(exe)).unwrap();
        for path in [
            env!("CARGO_MANIFEST_DIR"),
            &format!("{}/registry", cargo_home()),
            "reasonix-exporter-tools",
            "/rustlib/src",
        ] {
            assert!(
                memchr::memmem::find(&binary, path.as_bytes()).is_none(),
                "{suffix}: the binary names {path}"
            );
        }
    }
}

/// The Scoop manifest, the Homebrew formula and cargo-binstall's metadata name the archives this
/// release has, with their SHA-256 and the folder each unpacks to.
#[test]
#[ignore = "needs cargo xtask dist (target/dist): .ci/run makes it"]
fn manifests_name_the_archives_they_install() {
    let Some(dist) = dist() else { return };
    let sha256 = |path: &Path| {
        let out = Command::new("sha256sum").arg(path).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    };
    let name = |path: &Path| path.file_name().unwrap().to_string_lossy().into_owned();
    let zip = artifact(&dist, "x86_64-pc-windows-gnu.zip");
    let scoop: Value =
        serde_json::from_slice(&std::fs::read(dist.join("reasonix-exporter.json")).unwrap()).unwrap();
    let windows = &scoop["architecture"]["64bit"];
    assert_eq!(windows["hash"].as_str(), Some(sha256(&zip).as_str()));
    assert!(
        windows["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{}", name(&zip)))
    );
    let work = tempfile::tempdir().unwrap();
    let top = unpack(&zip, work.path());
    assert_eq!(windows["extract_dir"].as_str(), Some(name(&top).as_str()));
    assert!(top.join(scoop["bin"].as_str().unwrap()).is_file());

    let formula = std::fs::read_to_string(dist.join("reasonix-exporter.rb")).unwrap();
    let manifest: toml::Table = std::fs::read_to_string(repo("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let package = &manifest["package"];
    let binstall = &package["metadata"]["binstall"];
    for (target, suffix) in [
        ("x86_64-unknown-linux-gnu", ".tar.gz"),
        ("aarch64-unknown-linux-gnu", ".tar.gz"),
        ("x86_64-apple-darwin", ".tar.gz"),
        ("aarch64-apple-darwin", ".tar.gz"),
        ("x86_64-pc-windows-gnu", ".zip"),
    ] {
        let archive = artifact(&dist, &format!("{target}{suffix}"));
        if suffix == ".tar.gz" {
            let entry = format!(
                "url \"{}/releases/download/v{}/{}\"\n      sha256 \"{}\"",
                package["repository"].as_str().unwrap(),
                env!("CARGO_PKG_VERSION"),
                name(&archive),
                sha256(&archive)
            );
            assert!(formula.contains(&entry), "the formula lacks {entry}");
        }
        // cargo-binstall's templates, filled in as it fills them.
        let rules = binstall
            .get("overrides")
            .and_then(|o| o.get(target))
            .unwrap_or(binstall);
        let template = |key: &str| {
            rules
                .get(key)
                .or(binstall.get(key))
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        };
        let fill = |text: String| {
            text.replace("{ repo }", package["repository"].as_str().unwrap())
                .replace("{ name }", "reasonix-exporter")
                .replace("{ version }", env!("CARGO_PKG_VERSION"))
                .replace("{ target }", target)
                .replace("{ archive-suffix }", suffix)
                .replace("{ bin }", "reasonix-exporter")
                .replace("{ binary-ext }", if suffix == ".zip" { ".exe" } else { "" })
        };
        assert!(
            fill(template("pkg-url")).ends_with(&format!("/{}", name(&archive))),
            "binstall's URL for {target}"
        );
        let work = tempfile::tempdir().unwrap();
        unpack(&archive, work.path());
        assert!(
            work.path().join(fill(template("bin-dir"))).is_file(),
            "binstall's bin-dir for {target}"
        );
    }
}

/// What macOS needs of an executable, read from its Mach-O header: the CPU, the minimum macOS,
/// libraries only from the system, and (on Apple silicon) a code signature.
#[test]
#[ignore = "needs cargo xtask dist (target/dist): .ci/run makes it"]
fn macos_binaries_are_what_macos_loads() {
    let Some(dist) = dist() else { return };
    for (suffix, cpu, signed) in [
        ("x86_64-apple-darwin.tar.gz", 0x0100_0007u32, false),
        ("aarch64-apple-darwin.tar.gz", 0x0100_000c, true),
    ] {
        let work = tempfile::tempdir().unwrap();
        let top = unpack(&artifact(&dist, suffix), work.path());
        let binary = std::fs::read(top.join("reasonix-exporter")).unwrap();
        let macho = common::macho::read(&binary);
        assert_eq!(macho.cpu, cpu, "{suffix}: CPU type");
        assert_eq!(macho.file_type, 2, "{suffix}: an executable");
        assert_eq!(macho.platform, Some(1), "{suffix}: built for macOS");
        assert!(
            macho.min_os.is_some_and(|v| v <= 0x000b_0000),
            "{suffix}: runs on macOS 11"
        );
        assert!(!macho.libraries.is_empty());
        for library in &macho.libraries {
            assert!(
                library.starts_with("/usr/lib/") || library.starts_with("/System/Library/Frameworks/"),
                "{suffix}: links {library}, which a Mac does not have"
            );
        }
        if signed {
            assert!(macho.signed, "{suffix}: Apple silicon runs only signed code");
        }
    }
}

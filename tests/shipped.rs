//! What ships, run as its users run it: the artifacts `cargo xtask dist` leaves in target/dist
//! (`.ci/run` makes them before the tests). The Windows `.exe` under Wine and the Linux arm64
//! binary under qemu each count `testdata/row-kinds` exactly from their platform's default
//! ledger path; the `.deb` installs, runs and removes cleanly; the image counts under podman;
//! lintian and rpmlint find no errors; the macOS binaries, which cannot run here, are checked to
//! be what macOS loads.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::receiver::Receiver;
use common::tools::{in_ci, installed, skip};
use common::{assert_success, copy_tree};
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

/// Where cargo keeps the crates it downloads (their paths must not reach a shipped binary).
fn cargo_home() -> String {
    std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()))
}

fn expected_status() -> Value {
    serde_json::from_slice(&std::fs::read(repo("testdata/row-kinds/expected-status.json")).unwrap()).unwrap()
}

fn json_of(out: &Output) -> Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The tokens of `status --json`, keyed as the test receiver keys what it was sent.
fn status_totals(status: &Value) -> BTreeMap<common::model::Series, [u64; 8]> {
    let mut totals = BTreeMap::new();
    for row in status["series"].as_array().unwrap() {
        let key = |k: &str| row[k].as_str().unwrap().to_owned();
        let value = |k: &str| row[k].as_u64().unwrap();
        let quantities = common::model::QUANTITIES.map(value);
        if quantities.iter().any(|&q| q > 0) {
            totals.insert((key("model_ref"), key("provider"), key("source")), quantities);
        }
    }
    totals
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

/// A Wine prefix of its own, with the stand-in for Windows 10's bcryptprimitives.dll that
/// Debian's Wine 8 lacks (.ci/wine).
struct Wine {
    prefix: tempfile::TempDir,
    wine: PathBuf,
}

impl Wine {
    fn new() -> Option<Wine> {
        let wine = installed(&common::tools::test_name(), "/usr/lib/wine/wine64", "wine64")?;
        installed(
            &common::tools::test_name(),
            "x86_64-w64-mingw32-gcc",
            "gcc-mingw-w64-x86-64",
        )?;
        let prefix = tempfile::tempdir().unwrap();
        let wine = Wine { prefix, wine };
        assert_success(&wine.command("wineboot").arg("--init").output().unwrap());
        let system32 = wine.prefix.path().join("drive_c/windows/system32");
        let out = Command::new("x86_64-w64-mingw32-gcc")
            .args(["-O2", "-shared", "-o"])
            .arg(system32.join("bcryptprimitives.dll"))
            .arg(repo(".ci/wine/bcryptprimitives.c"))
            .arg(repo(".ci/wine/bcryptprimitives.def"))
            .arg("-ladvapi32")
            .output();
        assert_success(&out.unwrap());
        Some(wine)
    }

    /// `wine64 program`, with only what Wine needs from the environment (no REASONIX_HOME).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(&self.wine);
        command
            .env_clear()
            .env("WINEPREFIX", self.prefix.path())
            .env("WINEDEBUG", "-all")
            // No Mono or Gecko: nothing here is .NET or HTML, and Wine would offer to fetch them.
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env("HOME", self.prefix.path())
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .arg(program);
        command
    }

    /// The Windows user's own folder (C:\users\NAME).
    fn user_profile(&self) -> PathBuf {
        let users = self.prefix.path().join("drive_c/users");
        std::fs::read_dir(&users)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().is_some_and(|n| n != "Public"))
            .expect("wineboot made a user profile")
    }
}

impl Drop for Wine {
    /// The prefix's wineserver outlives the last program by a few seconds: stopped before the
    /// prefix is removed.
    fn drop(&mut self) {
        let _ = Command::new("/usr/lib/wine/wineserver")
            .arg("-k")
            .env("WINEPREFIX", self.prefix.path())
            .status();
    }
}

/// What a shipped binary run where it is for must do with `testdata/row-kinds` in its
/// platform's default ledger folder: count it exactly (`status --json`), name its default paths
/// in `doctor`, and deliver the same totals over both OTLP transports to receivers here.
fn counts_names_its_paths_and_exports(under: &str, run: &dyn Fn(&[&str]) -> Output, paths: &[&str]) {
    assert_success(&run(&["once", "--otlp", "off"]));
    assert_eq!(
        json_of(&run(&["status", "--json"])),
        expected_status(),
        "status --json under {under}"
    );
    let doctor = run(&["doctor", "--otlp", "off"]);
    assert_success(&doctor);
    let text = String::from_utf8_lossy(&doctor.stdout);
    for path in paths {
        assert!(text.contains(path), "doctor names {path}:\n{text}");
    }
    let want = status_totals(&expected_status());
    for receiver in [Receiver::grpc(), Receiver::http()] {
        let out = run(&[
            "once",
            "--otlp-endpoint",
            &receiver.endpoint,
            "--otlp-protocol",
            receiver.protocol,
        ]);
        assert_success(&out);
        assert_eq!(
            receiver.backend_totals(),
            want,
            "what {} received under {under}",
            receiver.protocol
        );
    }
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist), wine64 and mingw-w64 (.ci/run installs them)"]
fn windows_exe_counts_the_ledger_in_appdata_exactly() {
    let Some(dist) = dist() else { return };
    let Some(wine) = Wine::new() else { return };
    let work = tempfile::tempdir().unwrap();
    let top = unpack(&artifact(&dist, "x86_64-pc-windows-gnu.zip"), work.path());
    let exe = top.join("reasonix-exporter.exe");
    // %APPDATA%\reasonix\stats: where Reasonix writes on Windows, found with no setting at all.
    copy_tree(
        &repo("testdata/row-kinds/stats"),
        &wine.user_profile().join("AppData/Roaming/reasonix/stats"),
    );
    let run = |args: &[&str]| wine.command(&exe).args(args).output().unwrap();

    counts_names_its_paths_and_exports(
        "Wine",
        &run,
        &[
            r"AppData\Roaming\reasonix\stats",
            r"AppData\Local\reasonix-exporter",
        ],
    );
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist), qemu-user and libc6-arm64-cross (.ci/run installs them)"]
fn arm64_binary_counts_the_ledger_in_home_exactly() {
    let Some(dist) = dist() else { return };
    let test = common::tools::test_name();
    let Some(qemu) = installed(&test, "qemu-aarch64", "qemu-user") else {
        return;
    };
    let sysroot = Path::new("/usr/aarch64-linux-gnu");
    if !sysroot.join("lib/ld-linux-aarch64.so.1").exists() {
        assert!(
            !in_ci(),
            "{test}: no arm64 C library (apt-get install libc6-arm64-cross)"
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let top = unpack(&artifact(&dist, "aarch64-unknown-linux-gnu.tar.gz"), work.path());
    let home = work.path().join("home");
    copy_tree(&repo("testdata/row-kinds/stats"), &home.join(".reasonix/stats"));
    let run = |args: &[&str]| {
        Command::new(&qemu)
            .arg("-L")
            .arg(sysroot)
            .arg(top.join("reasonix-exporter"))
            .args(args)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    let file = Command::new("file")
        .arg(top.join("reasonix-exporter"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&file.stdout).contains("ARM aarch64"),
        "an arm64 binary"
    );
    counts_names_its_paths_and_exports(
        "qemu",
        &run,
        &[".reasonix/stats", ".local/state/reasonix-exporter"],
    );
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist), lintian and rpmlint (.ci/run installs them)"]
fn lintian_and_rpmlint_find_no_errors() {
    let Some(dist) = dist() else { return };
    let test = common::tools::test_name();
    let Some(lintian) = installed(&test, "lintian", "lintian") else {
        return;
    };
    let Some(rpmlint) = installed(&test, "rpmlint", "rpmlint") else {
        return;
    };
    for deb in ["_amd64.deb", "_arm64.deb"] {
        let out = Command::new(&lintian)
            .args(["--fail-on", "error", "--allow-root"])
            .arg(artifact(&dist, deb))
            .output()
            .unwrap();
        assert_success(&out);
    }
    for rpm in [".x86_64.rpm", ".aarch64.rpm"] {
        // The one filter: the release build does not sign; packages are signed when published.
        let out = Command::new(&rpmlint)
            .arg("--config")
            .arg(repo(".ci/rpmlint.toml"))
            .arg(artifact(&dist, rpm))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(" 0 errors"),
            "rpmlint {rpm}:\n{text}"
        );
    }
}

#[test]
#[ignore = "needs root, dpkg and cargo xtask dist: installs and removes the .deb on this machine (CI)"]
fn deb_installs_runs_and_removes_cleanly() {
    let Some(dist) = dist() else { return };
    let test = common::tools::test_name();
    let Some(analyze) = installed(&test, "systemd-analyze", "systemd") else {
        return;
    };
    let dpkg = |args: &[&str]| Command::new("dpkg").args(args).output().unwrap();
    if !dpkg(&["--version"]).status.success() || unsafe { libc::geteuid() } != 0 {
        skip("dpkg as root is needed to install the package");
        return;
    }
    assert_success(&dpkg(&["-i", artifact(&dist, "_amd64.deb").to_str().unwrap()]));
    let files: Vec<PathBuf> = String::from_utf8(dpkg(&["-L", "reasonix-exporter"]).stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect();
    assert!(files.contains(&PathBuf::from("/usr/bin/reasonix-exporter")));

    // It runs, on the ledger in a home of its own, and its user unit verifies.
    let home = tempfile::tempdir().unwrap();
    copy_tree(
        &repo("testdata/row-kinds/stats"),
        &home.path().join(".reasonix/stats"),
    );
    let run = |args: &[&str]| {
        Command::new("/usr/bin/reasonix-exporter")
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    assert_success(&run(&["once", "--otlp", "off"]));
    assert_eq!(json_of(&run(&["status", "--json"])), expected_status());
    let verify = Command::new(analyze)
        .args([
            "--user",
            "verify",
            "/usr/lib/systemd/user/reasonix-exporter.service",
        ])
        .env("XDG_RUNTIME_DIR", home.path())
        .output()
        .unwrap();
    assert_success(&verify);
    assert!(
        verify.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );

    assert_success(&dpkg(&["-r", "reasonix-exporter"]));
    for file in &files {
        assert!(!file.exists(), "dpkg -r left {}", file.display());
    }
    let status = dpkg(&["-s", "reasonix-exporter"]);
    assert!(!status.status.success(), "dpkg still knows the package after -r");
}

#[test]
#[ignore = "needs cargo xtask dist (target/dist), podman and runc (.ci/run installs them)"]
fn image_counts_the_mounted_ledger_under_podman() {
    let Some(dist) = dist() else { return };
    let test = common::tools::test_name();
    let Some(podman) = installed(&test, "podman", "podman") else {
        return;
    };
    let load = Command::new(&podman)
        .arg("load")
        .arg("-i")
        .arg(artifact(&dist, "-oci-amd64.tar"))
        .output()
        .unwrap();
    assert_success(&load);
    let loaded = String::from_utf8_lossy(&load.stdout);
    let image = loaded
        .lines()
        .find_map(|l| l.strip_prefix("Loaded image: "))
        .unwrap_or_else(|| panic!("podman load named no image: {loaded}"))
        .trim()
        .to_owned();
    // The name deploy/compose's exporter service runs (tests/deploy.rs holds the compose file to it).
    let compose_name = format!("reasonix-exporter:{}", env!("CARGO_PKG_VERSION"));
    assert!(
        image.ends_with(&format!("/{compose_name}")),
        "podman loaded {image}"
    );
    // From here on the image is asked for by the compose file's own name.
    let image = compose_name;

    let state = tempfile::tempdir().unwrap();
    // Not root: the image's user (10001) owns its state, as a volume made from the image would be.
    let inspect = Command::new(&podman)
        .args(["image", "inspect", "--format", "{{.Config.User}}", &image])
        .output()
        .unwrap();
    assert_success(&inspect);
    assert_eq!(String::from_utf8_lossy(&inspect.stdout).trim(), "10001:10001");
    assert_eq!(
        unsafe { libc::chown(c_path(state.path()).as_ptr(), 10_001, 10_001) },
        0
    );
    let run = |args: &[&str]| {
        let mut command = Command::new(&podman);
        // runc: this machine's hybrid cgroups are refused by crun; limits no higher than the
        // runtime's own, which it may not raise.
        command.args(["run", "--rm", "--runtime", "runc", "--network", "none"]);
        command.args(["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]);
        command.arg("-v").arg(format!(
            "{}:/ledger/stats:ro",
            repo("testdata/row-kinds/stats").display()
        ));
        command
            .arg("-v")
            .arg(format!("{}:/state", state.path().display()));
        command.arg(&image).args(args).output().unwrap()
    };
    assert_success(&run(&["once", "--otlp", "off"]));
    assert_eq!(
        json_of(&run(&["status", "--json"])),
        expected_status(),
        "status --json in the image"
    );
}

fn c_path(path: &Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap()
}

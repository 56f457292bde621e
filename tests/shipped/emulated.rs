//! The Windows `.exe` under Wine and the arm64 binary under qemu, each counting its default ledger.

use super::*;

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
    let want = common::model::token_totals_of_status(&expected_status());
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

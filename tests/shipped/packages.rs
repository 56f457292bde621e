//! The packages and the image: lintian and rpmlint, the `.deb` installed and removed, podman.

use super::*;

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
    // The name deploy/compose's exporter service runs (tests/deploy/ holds the compose file to it).
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

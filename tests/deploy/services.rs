//! How the exporter is run: the compose file, the systemd unit and the launchd plist.

use super::*;

#[test]
fn compose_refers_to_files_that_exist_and_the_images_ci_runs() {
    let compose = read("compose/docker-compose.yml");
    let docs = YamlLoader::load_from_str(&compose).expect("docker-compose.yml is YAML");
    let services = &docs[0]["services"];
    assert_eq!(
        keys(services),
        ["collector", "prometheus", "alertmanager", "grafana", "exporter"]
    );
    for service in keys(services) {
        for volume in names(&services[service.as_str()]["volumes"]) {
            let source = volume.split(':').next().unwrap();
            if source.starts_with("..") {
                assert!(
                    deploy("compose").join(source).exists(),
                    "compose {service} mounts {source}, which is not in the repository"
                );
            }
        }
    }
    let ports: Vec<String> = keys(services)
        .iter()
        .flat_map(|s| names(&services[s.as_str()]["ports"]))
        .collect();
    assert!(
        ports.iter().all(|p| p.starts_with("127.0.0.1:")),
        "every published port is on loopback: {ports:?}"
    );
    // The exporter's image is the one `cargo xtask dist` builds and tests/shipped/ runs, and
    // Prometheus the version the tests run (.ci/tools builds v0.3XX.Y, which is 3.XX.Y).
    let exporter = &services["exporter"];
    assert!(
        exporter["build"].is_badvalue(),
        "compose builds no image of its own"
    );
    assert_eq!(
        exporter["image"].as_str(),
        Some(format!("reasonix-exporter:{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let tools = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/tools")).unwrap();
    let module = tools
        .lines()
        .find_map(|l| l.strip_prefix("PROMETHEUS_MODULE="))
        .unwrap();
    let minor: u32 = module.split("@v0.").nth(1).unwrap()[..3].parse().unwrap();
    let patch = module.rsplit('.').next().unwrap();
    assert_eq!(
        services["prometheus"]["image"].as_str(),
        Some(format!("prom/prometheus:v3.{}.{patch}", minor - 300).as_str())
    );
}

#[test]
#[ignore = "needs systemd-analyze (.ci/run); run with --include-ignored"]
fn systemd_unit_verifies() {
    if !installed("systemd-analyze") {
        return;
    }
    let unit = read("systemd/reasonix-exporter.service");
    for required in [
        "ProtectSystem=strict",
        "ReadOnlyPaths=%h/.reasonix/stats",
        "ReadWritePaths=%S/reasonix-exporter",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "Restart=on-failure",
    ] {
        assert!(unit.contains(required), "the unit lacks {required}");
    }
    // verify checks that ExecStart's binary exists: point it at the one just built.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reasonix-exporter.service");
    std::fs::write(&path, unit.replace("%h/.cargo/bin/reasonix-exporter", BIN)).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let about_unit: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("reasonix-exporter"))
        .collect();
    assert!(
        out.status.success() && about_unit.is_empty(),
        "systemd-analyze verify:\n{stderr}"
    );
}

/// The unit's system-call filter, expanded by systemd itself, lets the exporter enter its own
/// landlock sandbox (a filtered call would kill it with SIGSYS at start).
#[test]
#[ignore = "needs systemd-analyze, a kernel with landlock (.ci/run); run with --include-ignored"]
fn systemd_unit_lets_the_exporter_sandbox_itself() {
    if !installed("systemd-analyze") {
        return;
    }
    fn expand(entry: &str, into: &mut std::collections::BTreeSet<String>) {
        if !entry.starts_with('@') {
            into.insert(entry.to_string());
            return;
        }
        let out = Command::new("systemd-analyze")
            .args(["syscall-filter", entry])
            .output()
            .unwrap();
        assert!(out.status.success(), "systemd-analyze syscall-filter {entry}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        for line in text.lines().filter(|l| l.starts_with("    ")) {
            let name = line.trim();
            if !name.starts_with('#') && !name.is_empty() {
                expand(name, into);
            }
        }
    }
    let unit = read("systemd/reasonix-exporter.service");
    let (mut allowed, mut denied) = (Default::default(), Default::default());
    for filter in unit.lines().filter_map(|l| l.strip_prefix("SystemCallFilter=")) {
        let (set, names) = match filter.strip_prefix('~') {
            Some(names) => (&mut denied, names),
            None => (&mut allowed, filter),
        };
        for name in names.split_whitespace() {
            expand(name, set);
        }
    }
    for call in [
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
        "prctl",
    ] {
        assert!(
            allowed.contains(call) && !denied.contains(call),
            "the unit's SystemCallFilter= kills the exporter at {call}"
        );
    }
}

#[test]
fn launchd_plist_is_a_valid_property_list() {
    let value =
        plist::Value::from_file(deploy("launchd/io.reasonix.exporter.plist")).expect("valid plist XML");
    let dict = value.as_dictionary().expect("a dictionary");
    assert_eq!(
        dict.get("Label").and_then(|v| v.as_string()),
        Some("io.reasonix.exporter")
    );
    let args: Vec<&str> = dict
        .get("ProgramArguments")
        .and_then(|v| v.as_array())
        .expect("ProgramArguments")
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    assert!(
        args[0].ends_with("/reasonix-exporter") && args[1] == "run",
        "{args:?}"
    );
}

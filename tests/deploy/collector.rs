//! deploy/collector: each file validated by the real collector, its components real and wired up.

use super::*;

/// The shipped collector configurations (the builder's manifest is not one).
fn collector_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(deploy("collector"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml") && n != "builder.yaml")
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    files
}

/// `otelcol validate` on every shipped collector file, with the variables it needs and test
/// certificates where it names files: the real collector knows its components and their
/// settings.
#[test]
#[ignore = "needs the collector (.ci/run); run with --include-ignored"]
fn every_collector_file_passes_otelcol_validate() {
    let test = "every_collector_file_passes_otelcol_validate";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = common::pki::Pki::new(dir.path());
    let (cert, key) = pki.write_server(dir.path());
    for file in collector_files() {
        let out = Command::new(&otelcol)
            .arg("validate")
            .arg(format!(
                "--config={}",
                deploy(&format!("collector/{file}")).display()
            ))
            .env("REASONIX_GATEWAY_TOKEN", "token")
            .env("REASONIX_GATEWAY_ENDPOINT", "localhost:4317")
            .env("REASONIX_GATEWAY_CA", &pki.ca)
            .env("GATEWAY_TLS_CERT", &cert)
            .env("GATEWAY_TLS_KEY", &key)
            .env("OTLP_BACKEND_TOKEN", "token")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "otelcol validate rejects deploy/collector/{file}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `kind type` pairs from deploy/collector/components.txt.
fn known_components() -> BTreeSet<(String, String)> {
    read("collector/components.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (kind, name) = l.split_once(' ').expect("`kind type`");
            (kind.to_string(), name.trim().to_string())
        })
        .collect()
}

/// Every `authenticator: <name>` anywhere below `yaml`.
fn authenticators(yaml: &Yaml, out: &mut Vec<String>) {
    if let Some(hash) = yaml.as_hash() {
        for (k, v) in hash {
            match (k.as_str(), v.as_str()) {
                (Some("authenticator"), Some(name)) => out.push(name.to_string()),
                _ => authenticators(v, out),
            }
        }
    }
}

#[test]
fn collector_configurations_name_only_real_components_and_wire_them_up() {
    let known = known_components();
    for file in collector_files() {
        let text = read(&format!("collector/{file}"));
        let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let config = &docs[0];
        let mut defined = BTreeSet::new();
        for (section, kind) in [
            ("receivers", "receiver"),
            ("processors", "processor"),
            ("exporters", "exporter"),
            ("extensions", "extension"),
        ] {
            for id in keys(&config[section]) {
                let component = id.split('/').next().unwrap().to_string();
                assert!(
                    known.contains(&(kind.to_string(), component.clone())),
                    "{file}: {kind} `{component}` is not in otelcol-contrib (deploy/collector/components.txt)"
                );
                defined.insert((section, id));
            }
        }
        let service = &config["service"];
        for ext in names(&service["extensions"]) {
            assert!(
                defined.contains(&("extensions", ext.clone())),
                "{file}: extension {ext} is not defined"
            );
        }
        let mut auth = Vec::new();
        authenticators(config, &mut auth);
        for name in auth {
            assert!(
                names(&service["extensions"]).contains(&name),
                "{file}: authenticator {name} is not an enabled extension"
            );
        }
        let pipelines = keys(&service["pipelines"]);
        assert_eq!(pipelines, ["metrics"], "{file}: one metrics pipeline");
        let pipeline = &service["pipelines"]["metrics"];
        for section in ["receivers", "processors", "exporters"] {
            let used = names(&pipeline[section]);
            assert!(
                !used.is_empty() || section == "processors",
                "{file}: no {section}"
            );
            for id in used {
                assert!(
                    defined.contains(&(section, id.clone())),
                    "{file}: pipeline uses {section} {id}, which is not defined"
                );
            }
        }
        // Cumulative in, cumulative out: converting here as well as exporting delta is the
        // double conversion the README warns about.
        assert!(
            !names(&pipeline["processors"])
                .iter()
                .any(|p| p.starts_with("deltatocumulative")),
            "{file}: deltatocumulative is for delta exporters only (see the file's header)"
        );
    }
}

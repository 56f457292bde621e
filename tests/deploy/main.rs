//! `deploy/` checked with the real tools where this machine has them: promtool on the Prometheus
//! configurations, the collector configurations against the components the contrib distribution
//! really has, every Grafana panel query run against a real Prometheus that scraped a running
//! exporter (the totals panels equal the model's totals), `systemd-analyze verify` on the
//! unit, and the launchd plist parsed.

#[path = "../common/mod.rs"]
mod common;

mod binary;
mod collector;
mod grafana_dashboard;
mod prometheus;
mod services;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use yaml_rust2::{Yaml, YamlLoader};

use common::dashboard::{Spend, check_panels, dashboard, first_value, queries, sums};
use common::generator::{Generator, days};
use common::model::Model;
use common::prom_server::Prometheus;
use common::{BIN, Fixture, scrape_totals, wait_until};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("deploy/{path}: {e}"))
}

fn installed(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        common::tools::skip(&format!("{tool} is not installed (.ci/run installs it)"));
    }
    found
}

fn keys(yaml: &Yaml) -> Vec<String> {
    yaml.as_hash()
        .map(|h| h.keys().filter_map(|k| k.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn names(list: &Yaml) -> Vec<String> {
    list.as_vec()
        .map(|v| v.iter().filter_map(|n| n.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

//! The landlock sandbox (Linux): `run` and `once` read only below the stats folder and write
//! only below the state dir, and still do all of their work there: ingest, export over DNS and
//! TLS, serve /metrics. On a kernel without landlock these tests say so (`SKIPPED`) and check
//! nothing; in CI they fail there.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::generator::{Generator, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success, scrape_totals, wait_until};

/// Whether this kernel has landlock; says so (`SKIPPED`) when there is nothing to check, and
/// fails in CI, whose machines have it.
fn kernel_has_landlock() -> bool {
    let abi = reasonix_exporter::sandbox::kernel_abi();
    if abi.is_none() {
        common::tools::skip("this kernel has no landlock (Linux 5.13 or later, CONFIG_SECURITY_LANDLOCK)");
    }
    abi.is_some()
}

fn counted(fx: &Fixture) -> u64 {
    fx.status()["lines"]["counted"].as_u64().unwrap()
}

#[test]
#[ignore = "needs a kernel with landlock (.ci/run); run with --include-ignored"]
fn nothing_outside_the_stats_folder_is_read_not_even_through_a_symlinked_day_file() {
    if !kernel_has_landlock() {
        return;
    }
    let fx = Fixture::new();
    let mut generator = Generator::new(3);
    let [inside, outside] = [&days(2)[0], &days(2)[1]];
    let inside_text = generator.day_file(inside, 40);
    fx.append(&format!("{inside}.jsonl"), inside_text.as_bytes());
    // A real ledger file elsewhere, linked into the stats folder.
    let elsewhere = fx.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside_text = generator.day_file(outside, 25);
    std::fs::write(elsewhere.join("ledger.jsonl"), &outside_text).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("ledger.jsonl"),
        fx.path(&format!("{outside}.jsonl")),
    )
    .unwrap();
    let mut in_folder = Model::default();
    in_folder.feed(inside_text.as_bytes());

    let out = fx.run(&["once", "--otlp", "off"]);
    assert_success(&out);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("sandbox: landlock enforced"), "{log}");
    assert!(
        log.contains(&format!("ledger file {outside}.jsonl cannot be read"))
            && log.contains("retried on the next run")
            && log.contains("--sandbox off"),
        "{log}"
    );
    assert_eq!(
        counted(&fx),
        in_folder.expected.counted,
        "only the folder's own file is read"
    );

    // The same run without the sandbox reads the linked file: the sandbox made the difference.
    let out = fx.run(&["--sandbox", "off", "once", "--otlp", "off"]);
    assert_success(&out);
    in_folder.feed(outside_text.as_bytes());
    assert_eq!(counted(&fx), in_folder.expected.counted);
}

#[test]
#[ignore = "needs a kernel with landlock (.ci/run); run with --include-ignored"]
fn in_the_sandbox_run_still_ingests_exports_by_host_name_and_serves_metrics_and_reads_nothing_outside() {
    if !kernel_has_landlock() {
        return;
    }
    let fx = Fixture::new();
    let receiver = Receiver::http();
    // By name: resolving it reads /etc/hosts and friends, inside the sandbox.
    let endpoint = receiver.endpoint.replace("127.0.0.1", "localhost");
    let mut model = Model::default();
    let mut generator = Generator::new(8);
    for day in days(2) {
        let text = generator.day_file(&day, 50);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    // Never a day file linked from elsewhere, whichever poll reads the folder.
    let elsewhere = fx.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let linked = days(4)[3].clone();
    std::fs::write(elsewhere.join("ledger.jsonl"), generator.day_file(&linked, 20)).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("ledger.jsonl"),
        fx.path(&format!("{linked}.jsonl")),
    )
    .unwrap();
    let daemon = fx.spawn(&[
        "--otlp-endpoint",
        &endpoint,
        "--export-interval",
        "200ms",
        "--poll-interval",
        "200ms",
        "--prometheus",
        "127.0.0.1:0",
    ]);
    let port = daemon.metrics_port();
    let more = generator.day_file(&days(3)[2], 30);
    fx.append(&format!("{}.jsonl", days(3)[2]), more.as_bytes());
    model.feed(more.as_bytes());
    assert!(
        wait_until(Duration::from_secs(30), || scrape_totals(port)
            == Some(model.expected.totals())
            && receiver.backend_totals() == model.expected.totals()),
        "{}",
        daemon.log_text()
    );
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert!(log.contains("sandbox: landlock enforced"), "{log}");
    // The store was written (and only there): status reads it back after the daemon is gone.
    assert_eq!(counted(&fx), model.expected.counted);
}

#[test]
fn a_stats_folder_that_does_not_exist_yet_leaves_the_sandbox_off_and_says_so() {
    let fx = Fixture::new();
    let missing = fx.root.path().join("no-reasonix-yet");
    let out = fx.run(&["--stats-dir", missing.to_str().unwrap(), "once", "--otlp", "off"]);
    assert_success(&out);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("sandbox: not entered") && log.contains("restart the exporter"),
        "{log}"
    );
    assert!(!Path::new(&missing).exists(), "the stats folder is never created");
}

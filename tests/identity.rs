//! One store, one identity (contract §4): the `service.instance.id` a store exports under names
//! the store, not a spelling of its path, and is kept with the store once sent; two stores never
//! share one, whatever `HOME`, `XDG_STATE_HOME` or the working folder.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use common::generator::Generator;
use common::model::Model;
use common::receiver::{Receiver, resource_attr};
use common::{BIN, Fixture, assert_success};

/// `once` to `receiver` from `cwd`, with the fixture's home and `state_dir` as given (or the
/// default, with `None`), and `xdg_state` for `XDG_STATE_HOME` (unset with `None`).
fn once_from(
    fx: &Fixture,
    receiver: &Receiver,
    cwd: &Path,
    state_dir: Option<&str>,
    xdg_state: Option<&str>,
) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &fx.home)
        .env("XDG_CONFIG_HOME", fx.root.path().join("xdg-config"))
        .current_dir(cwd);
    if let Some(xdg) = xdg_state {
        cmd.env("XDG_STATE_HOME", xdg);
    }
    if let Some(dir) = state_dir {
        cmd.args(["--state-dir", dir]);
    }
    cmd.args([
        "once",
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
    ]);
    cmd.output().expect("run the exporter")
}

/// Every `service.instance.id` the receiver was sent, request by request.
fn instances(receiver: &Receiver) -> Vec<String> {
    receiver
        .data_requests()
        .iter()
        .map(|r| resource_attr(r, "service.instance.id").expect("service.instance.id"))
        .collect()
}

/// A day file of `lines` fresh lines, fed to `model` too.
fn more_lines(fx: &Fixture, model: &mut Model, seed: u64, lines: usize) {
    let text = Generator::new(seed).day_file("2026-08-01", lines);
    fx.append(&format!("2026-08-01-{seed}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());
}

#[test]
fn one_store_is_one_identity_whatever_spelling_reaches_it() {
    let fx = Fixture::new();
    let root = fx.root.path();
    std::fs::create_dir_all(root.join("state/sub")).unwrap();
    std::os::unix::fs::symlink(root.join("state"), root.join("link")).unwrap();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let absolute = root.join("state").display().to_string();
    let spellings = [
        (root.to_path_buf(), absolute.clone()),
        (root.to_path_buf(), format!("{absolute}/")),
        (root.to_path_buf(), root.join("link").display().to_string()),
        (root.to_path_buf(), "state".to_string()),
        (root.join("state/sub"), "../../state/sub/..".to_string()),
    ];
    for (seed, (cwd, spelling)) in spellings.iter().enumerate() {
        // Something new each time, so that each export carries points.
        more_lines(&fx, &mut model, seed as u64 + 1, 3);
        assert_success(&once_from(&fx, &receiver, cwd, Some(spelling), None));
    }
    let seen: BTreeSet<String> = instances(&receiver).into_iter().collect();
    assert_eq!(seen.len(), 1, "one identity for five spellings: {seen:?}");
    assert_eq!(receiver.start_times().len(), 1, "one start time");
    receiver.check_one_stream().unwrap();
    // A backend adding up its series per identity holds the ledger once.
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn two_default_stores_never_share_an_identity() {
    let receiver = Receiver::http();
    let (first, second) = (Fixture::new(), Fixture::new());
    for fx in [&first, &second] {
        more_lines(fx, &mut Model::default(), 1, 3);
    }
    // Each at its default state dir: two homes, so two stores.
    assert_success(&once_from(&first, &receiver, first.root.path(), None, None));
    assert_success(&once_from(&second, &receiver, second.root.path(), None, None));
    // A relative XDG_STATE_HOME is ignored (the XDG spec), not resolved against the working
    // folder: run from two folders, it is still the home's one store, under its one identity.
    let elsewhere = first.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let relative = Some("relative-state");
    assert_success(&once_from(&first, &receiver, &elsewhere, None, relative));
    assert!(
        !elsewhere.join("relative-state").exists(),
        "a relative XDG_STATE_HOME is not used"
    );
    let ids = instances(&receiver);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_ne!(ids[0], ids[1], "two stores, two identities");
    assert_eq!(ids[0], ids[2], "the same store");
}

#[test]
fn a_store_that_exported_before_identities_were_kept_keeps_the_one_it_was_sent_under() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    more_lines(&fx, &mut model, 1, 3);
    let spelling = format!("{}/", fx.state.display());
    let root = fx.root.path();
    assert_success(&once_from(&fx, &receiver, root, Some(&spelling), None));
    let fresh = instances(&receiver).pop().unwrap();
    // Made the record an older build left: no identity in it (today's layout, its identity
    // empty, which reads as none, as version 5 without the field did).
    let path = fx.state.join("stream");
    let bytes = std::fs::read(&path).unwrap();
    let body = &bytes[..bytes.len() - 8];
    let kept = 4 + fresh.len();
    assert_eq!(
        &body[body.len() - fresh.len()..],
        fresh.as_bytes(),
        "the record keeps it"
    );
    let mut older = body[..body.len() - kept].to_vec();
    older.extend_from_slice(&0u32.to_le_bytes());
    let checksum = xxhash_rust::xxh3::xxh3_64(&older);
    older.extend_from_slice(&checksum.to_le_bytes());
    std::fs::write(&path, &older).unwrap();
    // That build named a store by the hash of its path as spelled.
    let user_at_host = fresh.split('/').next().unwrap();
    let hash = xxhash_rust::xxh3::xxh3_64(spelling.as_bytes());
    let before = format!("{user_at_host}/{:08x}", hash >> 32);
    let sent_before = receiver.data_requests().len();
    more_lines(&fx, &mut model, 2, 3);
    assert_success(&once_from(&fx, &receiver, root, Some(&spelling), None));
    // From now on it is kept: another spelling reaches the same identity.
    more_lines(&fx, &mut model, 3, 3);
    let plain = fx.state.display().to_string();
    assert_success(&once_from(&fx, &receiver, root, Some(&plain), None));
    let ids = instances(&receiver);
    let since: BTreeSet<&String> = ids[sent_before..].iter().collect();
    assert_eq!(since, BTreeSet::from([&before]), "{ids:?}");
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

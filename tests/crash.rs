//! `kill -9` at random moments, repeated, then one clean run: what the receiver saw — for each
//! run the last value, summed over runs — equals the model's totals (docs/counting-rules.md).
//! And the upgrade of a store made before cost, killed at moments all over its cost pass.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::before_cost::{self, Upgrade};
use common::files::copy_tree;
use common::generator::{Generator, Rng, days};
use common::model::Model;
use common::receiver::Receiver;
use common::{Fixture, assert_success};

fn kill_runs_then_finish(receiver: Receiver, seed: u64) {
    let fx = Fixture::new();
    let scratch = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(seed);
    let mut rng = Rng::new(seed ^ 0xDEAD_BEEF);
    let all_days = days(12);
    for day in &all_days[..8] {
        let text = generator.day_file(day, 1500);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        scratch.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    let args = [
        "once",
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
    ];

    // How long a backfill and an incremental run take here (on a copy, to a receiver of its
    // own), so that kills land all over a run's life: ingest, commit, export, shutdown.
    let scratch_receiver = if receiver.protocol == "grpc" {
        Receiver::grpc()
    } else {
        Receiver::http()
    };
    let scratch_args = [
        "once",
        "--otlp-endpoint",
        &scratch_receiver.endpoint,
        "--otlp-protocol",
        scratch_receiver.protocol,
    ];
    let timed = |f: &Fixture| {
        let started = Instant::now();
        assert_success(&f.run(&scratch_args));
        started.elapsed().as_micros() as u64 + 1
    };
    let span_full = timed(&scratch);
    scratch.append(
        "2026-08-01.jsonl",
        generator.day_file("2026-08-01", 800).as_bytes(),
    );
    let span_incremental = timed(&scratch);
    let span_idle = timed(&scratch);

    let mut killed = 0;
    for round in 0..12 {
        // Between some runs, Reasonix keeps writing: whole lines and a split write.
        if round % 3 == 1 {
            let day = &all_days[8 + round / 3];
            let text = generator.day_file(day, 800);
            let (a, b) = text.split_at(text.len() / 2 + 7);
            fx.append(&format!("{day}.jsonl"), a.as_bytes());
            fx.append(&format!("{day}.jsonl"), b.as_bytes());
            model.feed(text.as_bytes());
        }
        let mut child = fx
            .command(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The rounds that get new lines take about an incremental run; the others, a backfill
        // (what an earlier kill left) or a run with nothing new: a kill somewhere in each.
        let span = match round % 3 {
            0 => span_full,
            1 => span_incremental,
            _ => span_idle,
        };
        std::thread::sleep(Duration::from_micros(rng.below(span + span / 5)));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    assert!(
        killed >= 3,
        "only {killed} runs were killed mid-flight; the test proves little"
    );

    assert_success(&fx.run(&args));
    assert_eq!(
        receiver.check_one_stream(),
        Ok(()),
        "one stream across every kill"
    );
    let (got, want) = (receiver.backend_totals(), model.expected.totals());
    if got != want {
        let sum = |m: &std::collections::BTreeMap<_, [u64; 8]>| {
            m.values().fold([0u64; 8], |mut acc, v| {
                acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
                acc
            })
        };
        let status = fx.status();
        panic!(
            "backend {:?}\nmodel   {:?}\nstatus lines {}\nmodel lines {}",
            sum(&got),
            sum(&want),
            status["lines"],
            model.expected.status_json()["lines"]
        );
    }
    assert_eq!(fx.status()["series"], model.expected.status_json()["series"]);
}

#[test]
fn kill_9_at_random_moments_then_one_clean_run_delivers_exact_totals_grpc() {
    kill_runs_then_finish(Receiver::grpc(), 21);
}

#[test]
fn kill_9_at_random_moments_then_one_clean_run_delivers_exact_totals_http() {
    kill_runs_then_finish(Receiver::http(), 22);
}

/// `run` while Reasonix writes (split writes, a line every few milliseconds): `kill -9` at random
/// moments, SIGTERM now and then, a restart each time, and — with `flaky` — the collector
/// refusing for stretches. Once the writer stops and a last daemon has caught up, the backend's
/// sum over runs equals the model's totals.
fn daemon_killed_while_the_ledger_grows(receiver: Receiver, seed: u64, flaky: bool) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let fx = Arc::new(Fixture::new());
    let model = Arc::new(Mutex::new(Model::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (fx, model, stop) = (fx.clone(), model.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut generator = Generator::new(seed);
            let mut rng = Rng::new(seed ^ 0x5EED);
            let all_days = days(3);
            while !stop.load(Ordering::SeqCst) {
                let day = rng.pick(&all_days);
                let line = format!("{}\n", generator.line(day));
                // Reasonix's write can land in two pieces; the daemon may poll in between.
                let cut = 1 + rng.below(line.len() as u64 - 1) as usize;
                let name = format!("{day}.jsonl");
                fx.append(&name, &line.as_bytes()[..cut]);
                if rng.below(4) == 0 {
                    std::thread::sleep(Duration::from_micros(rng.below(3000)));
                }
                fx.append(&name, &line.as_bytes()[cut..]);
                model.lock().unwrap().line(line.trim_end().as_bytes());
                std::thread::sleep(Duration::from_micros(500 + rng.below(4000)));
            }
        })
    };

    let args = [
        "--otlp-endpoint",
        &receiver.endpoint,
        "--otlp-protocol",
        receiver.protocol,
        "--export-interval",
        "100ms",
        "--poll-interval",
        "300ms",
        "--prometheus",
        "off",
    ];
    let mut rng = Rng::new(seed);
    let (mut killed, mut stopped) = (0, 0);
    for round in 0..16 {
        if flaky {
            // The collector goes down for some rounds and comes back for others.
            receiver.refuse(round % 4 == 1 || round % 4 == 2);
        }
        let daemon = fx.spawn(&args);
        let graceful = rng.below(4) == 0;
        if graceful {
            // SIGTERM is a graceful stop once the process has its handlers, which it installs
            // first thing; before that (the first milliseconds of exec) it is the kernel's kill.
            assert!(common::wait_until(Duration::from_secs(20), || daemon
                .log_text()
                .contains("watching")));
        }
        std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
        if graceful {
            let (status, _, log) = daemon.terminate();
            assert!(status.success(), "SIGTERM: {log}");
            stopped += 1;
        } else {
            daemon.kill9();
            killed += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    receiver.refuse(false);

    let want = model.lock().unwrap().expected.totals();
    assert!(want.len() > 3, "the writer wrote");
    let daemon = fx.spawn(&args);
    let caught_up = common::wait_until(Duration::from_secs(30), || receiver.backend_totals() == want);
    let (status, _, log) = daemon.terminate();
    assert!(
        caught_up,
        "after {killed} kills and {stopped} stops the backend never matched; log:\n{log}"
    );
    assert!(status.success());
    assert_eq!(
        receiver.backend_totals(),
        want,
        "and nothing more after the last stop"
    );
    assert_eq!(
        receiver.check_one_stream(),
        Ok(()),
        "one stream across every kill"
    );
}

#[test]
fn daemon_killed_at_random_while_the_ledger_grows_delivers_exact_totals() {
    daemon_killed_while_the_ledger_grows(Receiver::http(), 61, false);
}

#[test]
fn daemon_killed_at_random_with_the_collector_up_and_down_delivers_exact_totals() {
    daemon_killed_while_the_ledger_grows(Receiver::grpc(), 62, true);
}

/// A store made before cost (format 3) over 300 day files and a copy of one: its upgrade
/// killed by `kill -9` at moments spread over a run's life (sled's open, the upgrade's write,
/// the cost pass's commits, the usual reading, the exit), killed again at random after Reasonix
/// wrote new lines, then one clean run. Each time the store holds the model's totals and the
/// cost of every line once.
#[test]
fn the_cost_pass_killed_at_any_moment_adds_each_cost_once() {
    let base = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(25);
    let mut rng = Rng::new(25 ^ 0xC057);
    let all_days = days(310);
    for day in &all_days[..300] {
        let text = generator.day_file(day, 120);
        base.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    }
    // A sync client's copy of a day: the same lines, their cost added once.
    let copied = std::fs::read(base.path("2026-08-03.jsonl")).unwrap();
    base.append("2026-08-03 (1).jsonl", &copied);
    model.feed(&copied);
    base.ingest();
    before_cost::downgrade(&base.state);
    assert_eq!(before_cost::upgrade_stage(&base.state), Upgrade::NotStarted);

    // The store's copy beside the same ledger (its checkpoints name these files' inodes): an
    // upgrade in place. New lines go into that ledger, so each trial's model has them all.
    let copy_of_base = || {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        copy_tree(&base.state, &state);
        Fixture {
            root,
            home: base.home.clone(),
            stats: base.stats.clone(),
            state,
        }
    };
    let once = ["once", "--otlp", "off"];
    let killed_after = |fx: &Fixture, delay: Duration| {
        let mut child = fx
            .command(&once)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        before_cost::upgrade_stage(&fx.state)
    };
    let agrees = |fx: &Fixture, model: &Model, what: &str| {
        let (got, want) = (fx.status(), model.expected.status_json());
        for part in ["series", "cost", "unpriced", "lines"] {
            assert_eq!(got[part], want[part], "{what}: {part}");
        }
    };

    // Uninterrupted, for the length of a run's life.
    let whole = copy_of_base();
    let started = Instant::now();
    whole.ingest();
    let span = started.elapsed();
    assert_eq!(before_cost::upgrade_stage(&whole.state), Upgrade::Over);
    agrees(&whole, &model, "uninterrupted");

    let mut stages = Vec::new();
    for trial in 1..=7u32 {
        let fx = copy_of_base();
        stages.push(killed_after(&fx, span * trial / 8));
        // New lines: after a region of the pass, and in a new day file.
        for day in [&all_days[5], &all_days[300 + trial as usize]] {
            let text = generator.day_file(day, 40);
            fx.append(&format!("{day}.jsonl"), text.as_bytes());
            model.feed(text.as_bytes());
        }
        let random = Duration::from_micros(rng.below(span.as_micros() as u64));
        killed_after(&fx, random);
        fx.ingest();
        assert_eq!(before_cost::upgrade_stage(&fx.state), Upgrade::Over);
        agrees(
            &fx,
            &model,
            &format!("trial {trial}, first killed at {:?}", stages.last()),
        );
    }
    assert!(
        stages.iter().any(|s| matches!(s, Upgrade::Passing { .. })),
        "no kill landed inside the cost pass ({stages:?}); the test proves little"
    );
}

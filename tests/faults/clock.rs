//! The clock set back, before 1970, or run fast (libfaketime).

use super::*;
use common::faketime::{libfaketime, with_faked_clock};

/// The wall clock set back by minutes (libfaketime, preloaded), as an NTP step does: runs that
/// start "earlier" than the ones before them still deliver exactly, `once` and `run` alike, each
/// export a millisecond after the one before, and nothing panics. (Set back by more than 10
/// minutes, the stream follows the clock: `a_clock_that_ran_fast_does_not_leave_the_stream_in_the_future`.)
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn clock_moved_backwards_still_delivers_exact_totals() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let lib = lib.display().to_string();
    let clock = |offset: &'static str| {
        [
            ("LD_PRELOAD", lib.clone()),
            ("FAKETIME", offset.to_string()),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
        ]
    };
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(9);
    let all_days = days(3);
    let mut add = |fx: &Fixture, model: &mut Model, day: &str| {
        let text = generator.day_file(day, 100);
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
    };
    add(&fx, &mut model, &all_days[0]);
    assert_success(&fx.export_to(&receiver));

    // Five minutes back.
    add(&fx, &mut model, &all_days[1]);
    let mut once = fx.command(&["once", "--otlp-endpoint", &receiver.endpoint]);
    once.envs(clock("-5m"));
    let out = once.output().unwrap();
    assert_success(&out);
    let minute = Command::new("date")
        .args(["-u", "+%FT%H:%M"])
        .output()
        .unwrap()
        .stdout;
    let minute = String::from_utf8_lossy(&minute).trim().to_string();
    let logged = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !logged.is_empty() && !logged.starts_with(&minute),
        "the clock was moved: {logged}"
    );
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // The daemon eight minutes back, with lines arriving while it runs.
    let env = clock("-8m");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let daemon = fx.spawn_with(
        &[
            "--otlp-endpoint",
            &receiver.endpoint,
            "--export-interval",
            "100ms",
            "--prometheus",
            "off",
        ],
        &env,
    );
    add(&fx, &mut model, &all_days[2]);
    assert!(wait_until(Duration::from_secs(20), || receiver.backend_totals()
        == model.expected.totals()));
    let (status, _, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    // And back to the real time: nothing more, nothing less.
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

/// Contract §4, "Time": a clock before 1970 is a one-line error naming the clock, for every
/// command that opens the store, never a panic.
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn a_clock_before_1970_is_one_line_never_a_panic() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let fx = Fixture::new();
    fx.append_lines(
        "2026-10-01.jsonl",
        &[r#"{"ts":"2026-10-01T10:00:00Z","source":"code","turn":true}"#],
    );
    for args in [
        &["once", "--otlp-endpoint", "http://127.0.0.1:9/v1/metrics"][..],
        &["run", "--prometheus", "off"],
        &["status"],
        &["doctor"],
    ] {
        let out = with_faked_clock(&mut fx.command(args), &lib, "@1969-12-31 23:59:00")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = the_error_line(&out);
        assert!(
            line.contains("the system clock is before 1970"),
            "{args:?}: {line}"
        );
    }
}

/// The time of the ledger points in the last request `receiver` took (Unix ns).
fn last_point_ns(receiver: &Receiver) -> u64 {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    receiver
        .data_requests()
        .last()
        .into_iter()
        .flat_map(|r| &r.resource_metrics)
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter_map(|m| match &m.data {
            Some(Data::Sum(sum)) => sum.data_points.iter().map(|p| p.time_unix_nano).max(),
            _ => None,
        })
        .max()
        .expect("a point")
}

/// Contract §4, "Time": a clock that ran fast and came back leaves the stream dated by the
/// clock, not in the future; `doctor` says what happened meanwhile.
#[test]
#[ignore = "needs libfaketime (.ci/run); run with --include-ignored"]
fn a_clock_that_ran_fast_does_not_leave_the_stream_in_the_future() {
    let Some(lib) = libfaketime() else {
        common::tools::skip("libfaketime is not installed (apt-get install faketime)");
        return;
    };
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(14);
    ledger(&fx, &mut model, &mut generator, 20);
    let fast = with_faked_clock(
        &mut fx.command(&["once", "--otlp-endpoint", &receiver.endpoint]),
        &lib,
        "+3650d",
    )
    .output()
    .unwrap();
    assert_success(&fast);
    let now_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    assert!(last_point_ns(&receiver) > now_ns() + 3000 * 86_400 * 1_000_000_000);
    let doctor = fx.run(&["doctor", "--otlp-endpoint", &receiver.endpoint]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains("PROBLEM  clock") && said.contains("ahead of the clock"),
        "{said}"
    );

    let text = generator.day_file("2026-10-09", 20);
    fx.append("2026-10-09.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    let right = fx.export_to(&receiver);
    assert_success(&right);
    assert!(
        String::from_utf8_lossy(&right.stderr).contains("ahead of the clock"),
        "said once"
    );
    let newest = last_point_ns(&receiver);
    let now = now_ns();
    assert!(
        newest <= now && newest + 60_000_000_000 > now,
        "dated by the clock: {newest} at {now}"
    );
    let doctor = fx.run(&["doctor", "--otlp-endpoint", &receiver.endpoint]);
    assert!(!String::from_utf8_lossy(&doctor.stdout).contains("PROBLEM  clock"));
}

//! Memory stays bounded whatever arrives (contract §7): what a backend answers `history --check`,
//! and the number of day files a ledger holds.

#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::generator::Generator;
use common::receiver::Receiver;
use common::{Fixture, assert_peak_below, assert_success, run_measured, the_error_line};

/// Answers one request with `body` as JSON, on a port of its own.
fn answer_once(body: Vec<u8>) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let header = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(header.as_bytes());
        let _ = stream.write_all(&body);
    });
    (port, server)
}

/// A legal series answer: 16 MiB of tiny objects, none of them a store's.
fn tiny_series() -> Vec<u8> {
    let mut body = br#"{"status":"success","data":["#.to_vec();
    while body.len() < 16 << 20 {
        body.extend_from_slice(br#"{"a":"b"},{},"#);
    }
    body.extend_from_slice(br#"{}]}"#);
    body
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn history_check_reads_a_16_mib_answer_of_tiny_series_in_bounded_memory() {
    let fx = Fixture::new();
    let text = Generator::new(3).day_file("2026-08-01", 50);
    fx.append("2026-08-01.jsonl", text.as_bytes());
    // The stream has gone out: the store has a history to check.
    assert_success(&fx.export_to(&Receiver::http()));
    let (port, server) = answer_once(tiny_series());
    let check = format!("http://127.0.0.1:{port}");
    let out = fx
        .command(&["history", "--format", "openmetrics", "--check", &check])
        .output()
        .unwrap();
    server.join().unwrap();
    assert!(!out.status.success(), "no live series of this history: refused");
    assert!(
        the_error_line(&out).contains("holds no live"),
        "{}",
        the_error_line(&out)
    );
    let (port, server) = answer_once(tiny_series());
    let check = format!("http://127.0.0.1:{port}");
    let (_, peak_mib) = run_measured(&fx, &["history", "--format", "openmetrics", "--check", &check]);
    server.join().unwrap();
    assert_peak_below(peak_mib, 128.0, "for a 16 MiB answer of tiny series");
}

/// `n` day files of a few lines each, all of the same three days (copies, a synced folder of
/// many machines): the shape that made memory grow by kilobytes a file.
fn many_files_of_the_same_days(fx: &Fixture, n: usize) {
    for f in 0..n {
        let day = 1 + f % 3;
        let lines: String = (0..3)
            .map(|i| {
                format!(
                    "{{\"ts\":\"2026-08-0{day}T10:{i:02}:{:02}.{f:06}+08:00\",\"model\":\"deepseek/deepseek-v4-flash\",\"source\":\"desktop\",\"prompt\":{},\"completion\":12,\"total\":{},\"requests\":1}}\n",
                    f % 60,
                    100 + i,
                    112 + i
                )
            })
            .collect();
        std::fs::write(fx.path(&format!("2026-08-0{day} ({f}).jsonl")), lines).unwrap();
    }
}

#[test]
#[ignore = "needs GNU time (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn the_first_once_over_20000_day_files_of_the_same_days_stays_under_64_mb() {
    let empty = Fixture::new();
    let (_, base_mib) = run_measured(&empty, &["once", "--otlp", "off"]);
    let fx = Fixture::new();
    many_files_of_the_same_days(&fx, 20_000);
    let (status, peak_mib) = run_measured(&fx, &["once", "--otlp", "off"]);
    assert!(status.success());
    assert_eq!(fx.status()["lines"]["counted"], 60_000);
    let grown = peak_mib.zip(base_mib).map(|(peak, base)| peak - base);
    assert_peak_below(
        grown,
        64.0 - RELEASE_AT_REST_MIB,
        "more than on an empty ledger, for 20,000 day files",
    );
}

/// What the release build holds with nothing to read (the test's debug build holds more, the
/// same whatever the ledger): the limits of the contract are the release build's, so a test
/// measures what the ledger adds and allows the limit less this.
const RELEASE_AT_REST_MIB: f64 = 9.0;

/// The CPU time (user and system, in clock ticks) and resident size (KiB) of process `pid`.
#[cfg(target_os = "linux")]
fn cpu_and_rss(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    (ticks, rss)
}

#[test]
#[cfg(target_os = "linux")]
fn an_idle_run_over_50000_counted_day_files_is_small_and_quiet() {
    let empty = Fixture::new();
    let (at_rest, _) = empty.spawn_serving(&[]);
    let (_, base_kib) = idle(&at_rest);
    drop(at_rest);
    let fx = Fixture::new();
    many_files_of_the_same_days(&fx, 50_000);
    assert_success(&fx.run(&["once", "--otlp", "off"]));
    let (daemon, port) = fx.spawn_serving(&[]);
    // Idle from the end of its first reading (a stat of every file) on.
    assert!(common::wait_ready(port), "{}", daemon.log_text());
    let (share, rss_kib) = idle(&daemon);
    assert!(share <= 0.005, "idle, it used {:.2} % of a core", share * 100.0);
    let grown_mib = rss_kib.saturating_sub(base_kib) as f64 / 1024.0;
    assert!(
        grown_mib <= 32.0 - RELEASE_AT_REST_MIB,
        "idle, it holds {grown_mib:.1} MiB more than over an empty ledger"
    );
}

/// Once `daemon` has settled after its first poll: the share of a core it uses over 20 s of
/// quick polls, and its resident size (KiB).
#[cfg(target_os = "linux")]
fn idle(daemon: &common::Daemon) -> (f64, u64) {
    let pid = daemon.child.id();
    // Its first poll lists and checks every file: wait until it has settled.
    let mut last = cpu_and_rss(pid).0;
    let settled = common::wait_until(Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu_and_rss(pid).0;
        let quiet = now - last <= 1;
        last = now;
        quiet
    });
    assert!(settled, "the daemon never went idle: {}", daemon.log_text());
    let (before, _) = cpu_and_rss(pid);
    let window = Duration::from_secs(20);
    std::thread::sleep(window);
    let (after, rss_kib) = cpu_and_rss(pid);
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let share = (after - before) as f64 / ticks_per_s / window.as_secs_f64();
    (share, rss_kib)
}

/// `run` starts again, as the same process, with glibc's allocator tuned for staying resident
/// (`src/daemon/allocator.rs`), unless the operator set `GLIBC_TUNABLES` (their choice stands)
/// or it was started through the dynamic loader.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn run_starts_with_the_allocator_tuned_unless_the_operator_tuned_it_or_a_loader_started_it() {
    // The variable as the running process holds it, if at all.
    let tunables = |daemon: &common::Daemon| {
        let environ = std::fs::read(format!("/proc/{}/environ", daemon.child.id())).unwrap();
        let found = environ
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(b"GLIBC_TUNABLES="));
        found.map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let fx = Fixture::new();
    // Serving: the process the test started is past its second start.
    let (daemon, _) = fx.spawn_serving(&[]);
    let tuned = reasonix_exporter::daemon::allocator::TUNABLES;
    assert_eq!(tunables(&daemon).as_deref(), Some(tuned), "{}", daemon.log_text());
    // The same command line: what ps and a service manager show.
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", daemon.child.id())).unwrap();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).filter(|a| !a.is_empty()).collect();
    assert_eq!(args[0], common::BIN.as_bytes());
    let given: [&[u8]; 5] = [b"run", b"--otlp", b"off", b"--prometheus", b"127.0.0.1:0"];
    assert!(
        args[1..].ends_with(&given),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
    drop(daemon);

    let own = "glibc.malloc.trim_threshold=131072";
    let daemon = fx.spawn_with(
        &["--otlp", "off", "--prometheus", "127.0.0.1:0"],
        &[("GLIBC_TUNABLES", own)],
    );
    daemon.metrics_port();
    assert_eq!(tunables(&daemon).as_deref(), Some(own), "{}", daemon.log_text());
    drop(daemon);

    // Started through the dynamic loader, the same arguments would not start it again: it is not.
    #[cfg(target_arch = "x86_64")]
    {
        let loader = "/lib64/ld-linux-x86-64.so.2";
        let daemon = fx.spawn_via(loader, &[], &["--otlp", "off", "--prometheus", "127.0.0.1:0"]);
        daemon.metrics_port();
        assert_eq!(tunables(&daemon), None, "{}", daemon.log_text());
    }
}

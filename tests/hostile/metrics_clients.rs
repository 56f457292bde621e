//! `/metrics` clients that hold on: idle, slow and oversized requests, and a descriptor limit.

use super::*;

/// The most memory the process `pid` has held (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/<pid>/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `run` under a hard descriptor limit of `nofile` (which it cannot raise), exporting to
/// `receiver` every second and serving `/metrics` on a port of its own; with that port.
fn run_with_descriptor_limit(fx: &Fixture, receiver: &Receiver, nofile: u32) -> (common::Daemon, u16) {
    let limit = format!("--nofile={nofile}:{nofile}");
    let daemon = fx.spawn_via(
        "prlimit",
        &[&limit, "--"],
        &[
            "--otlp-endpoint",
            &receiver.endpoint,
            "--prometheus",
            "127.0.0.1:0",
            "--export-interval",
            "1s",
        ],
    );
    let port = daemon.metrics_port();
    (daemon, port)
}

#[test]
fn idle_metrics_clients_beyond_the_descriptor_limit_stop_nothing() {
    let fx = Fixture::new();
    let mut model = Model::default();
    ledger(&fx, &mut model, 21, 50);
    let receiver = Receiver::http();
    // systemd's default soft limit, as a hard limit the exporter cannot raise.
    let (mut daemon, port) = run_with_descriptor_limit(&fx, &receiver, 1024);
    assert!(
        wait_until(Duration::from_secs(20), || common::scrape_totals(port).is_some()),
        "never served /metrics: {}",
        daemon.log_text()
    );
    // Any local user can open connections and send nothing.
    let idle: Vec<std::net::TcpStream> = (0..1100)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    let more = Generator::new(22).day_file("2026-08-02", 40);
    fx.append("2026-08-02.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    let expected = model.expected.totals();
    assert!(
        wait_until(Duration::from_secs(30), || receiver.backend_totals() == expected),
        "ingestion and exports stopped while /metrics had 1,100 idle clients: {}",
        daemon.log_text()
    );
    assert!(daemon.is_running(), "{}", daemon.log_text());
    drop(idle);
    assert!(
        wait_until(Duration::from_secs(30), || common::scrape_totals(port)
            .is_some_and(|t| t == expected)),
        "/metrics never served again once the idle clients left: {}",
        daemon.log_text()
    );
    let log = daemon.log_text();
    assert!(
        !log.contains("Too many open files") && !log.contains("state dir"),
        "{log}"
    );
    assert!(daemon.is_running(), "{log}");
}

#[test]
fn slow_and_oversized_metrics_requests_are_cut_off_in_bounded_memory() {
    use std::io::{ErrorKind, Read, Write};
    let fx = Fixture::new();
    let mut model = Model::default();
    ledger(&fx, &mut model, 23, 50);
    let (mut daemon, port) = fx.spawn_serving(&[]);
    let baseline = peak_rss_kib(daemon.child.id());

    // One header byte a second, forever: the pace is the attack, so the sleep is the test. It
    // is connected and under way before the flood below starts, so that it is not queued behind
    // 600 others (its time counts from its first byte).
    let (under_way, first_byte_sent) = std::sync::mpsc::channel();
    let slow = std::thread::spawn(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let started = Instant::now();
        let head = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
        for byte in head.iter().chain(std::iter::repeat(&b'a')) {
            if stream.write_all(&[*byte]).is_err() || started.elapsed() > Duration::from_secs(40) {
                break;
            }
            let _ = under_way.send(());
            std::thread::sleep(Duration::from_secs(1));
        }
        started.elapsed()
    });
    first_byte_sent.recv().unwrap();

    // 600 clients each sending 400 KB of a request head that never ends.
    let head = format!(
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: {}",
        "a".repeat(400_000)
    );
    let mut clients: Vec<(std::net::TcpStream, usize, bool)> = (0..600)
        .map(|_| {
            let stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
            stream.set_nonblocking(true).unwrap();
            (stream, 0, false)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline && clients.iter().any(|c| !c.2) {
        let mut progress = false;
        for (stream, sent, closed) in clients.iter_mut().filter(|c| !c.2) {
            if *sent < head.len() {
                match stream.write(&head.as_bytes()[*sent..]) {
                    Ok(n) => {
                        *sent += n;
                        progress = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => *closed = true,
                }
            }
            // The server's answer (431) or its close ends the client.
            match stream.read(&mut [0u8; 512]) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                _ => {
                    *closed = true;
                    progress = true;
                }
            }
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let open = clients.iter().filter(|c| !c.2).count();
    assert_eq!(
        open, 0,
        "{open} of 600 oversized request heads were never cut off"
    );
    let peak = peak_rss_kib(daemon.child.id());
    assert!(
        peak <= 64 * 1024,
        "peak RSS {peak} KiB (from {baseline} KiB) with 600 oversized request heads"
    );
    let held = slow.join().unwrap();
    assert!(
        held < Duration::from_secs(15),
        "a client sending a header byte a second was held {held:?}"
    );
    assert!(daemon.is_running(), "{}", daemon.log_text());
    let expected = model.expected.totals();
    assert!(
        wait_until(Duration::from_secs(30), || common::scrape_totals(port)
            == Some(expected.clone())),
        "{}",
        daemon.log_text()
    );
}

#[test]
fn running_out_of_descriptors_is_reported_and_passes() {
    let fx = Fixture::new();
    let mut model = Model::default();
    ledger(&fx, &mut model, 24, 50);
    let receiver = Receiver::http();
    // A limit the daemon's own descriptors (about 20, a few more while its first poll reads and
    // its first export connects) and the 64 connections it serves exceed.
    let (mut daemon, port) = run_with_descriptor_limit(&fx, &receiver, 48);
    let expected = model.expected.totals();
    assert!(
        wait_until(Duration::from_secs(30), || receiver.backend_totals() == expected),
        "{}",
        daemon.log_text()
    );
    let idle: Vec<std::net::TcpStream> = (0..64)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    assert!(
        wait_until(Duration::from_secs(20), || daemon
            .log_text()
            .contains("out of file descriptors")),
        "{}",
        daemon.log_text()
    );
    let more = Generator::new(25).day_file("2026-08-02", 40);
    fx.append("2026-08-02.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    drop(idle);
    let expected = model.expected.totals();
    assert!(
        wait_until(Duration::from_secs(60), || receiver.backend_totals() == expected),
        "counting and exports go on once descriptors are free: {}",
        daemon.log_text()
    );
    assert!(daemon.is_running(), "{}", daemon.log_text());
    let log = daemon.log_text();
    assert!(
        !log.contains("state dir is writable"),
        "never blames the state dir: {log}"
    );
    assert!(
        wait_until(Duration::from_secs(30), || common::scrape_totals(port)
            .is_some_and(|t| t == expected)),
        "{}",
        daemon.log_text()
    );
}

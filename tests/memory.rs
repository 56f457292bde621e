//! Memory stays bounded whatever arrives (contract §7): what a backend answers `history --check`,
//! and the number of day files a ledger holds.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;

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

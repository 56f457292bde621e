//! Basic auth under a flood of wrong passwords (contract §7: `/metrics` clients cannot exhaust
//! memory; §6: `run` stops cleanly on signals).

use std::io::{Read, Write};
use std::time::Duration;

use base64::Engine as _;

use super::common::{Fixture, free_port, http_get, wait_until};
use super::web_config::{PASSWORD, USER};

/// A flood of wrong passwords from clients that send a request and leave at once: bcrypt runs
/// one check at a time and only while its client waits, so the threads stay few, the password
/// already checked is answered at once all along (from the cache, never behind the flood), and
/// a stop is not held up by checks nobody waits for (contract §7: `/metrics` clients cannot
/// exhaust memory; §6: stop cleanly on signals).
#[test]
fn a_flood_of_wrong_passwords_holds_up_neither_the_right_one_nor_a_stop() {
    let fx = Fixture::new();
    super::ledger(&fx);
    let path = fx.root.path().join("web-config.yml");
    // The toolkit's cost: each wrong password costs a real bcrypt.
    let hash = bcrypt::hash(PASSWORD, 10).unwrap();
    std::fs::write(&path, format!("basic_auth_users:\n  {USER}: {hash}\n")).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let daemon = fx.spawn(&[
        "--otlp",
        "off",
        "--prometheus",
        &addr,
        "--web-config",
        path.to_str().unwrap(),
    ]);
    assert!(wait_until(Duration::from_secs(20), || http_get(
        port,
        "/-/healthy",
        None
    )
    .is_some()));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let with_password = || -> Option<String> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(
            stream,
            "GET /-/healthy HTTP/1.0\r\nAuthorization: Basic {token}\r\n\r\n"
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        Some(response)
    };
    // Checked once: cached from now on.
    assert!(with_password().is_some_and(|r| r.contains(" 200 ")));
    let threads = || {
        std::fs::read_to_string(format!("/proc/{}/status", daemon.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("Threads:")
                    .map(|n| n.trim().parse::<usize>().unwrap())
            })
            .unwrap()
    };
    let before = threads();
    for i in 0..1500 {
        let wrong = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:wrong{i}"));
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(
                stream,
                "GET /-/healthy HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {wrong}\r\n\r\n"
            );
        }
    }
    let started = std::time::Instant::now();
    let answer = with_password();
    assert!(
        answer.as_deref().is_some_and(|r| r.contains(" 200 ")),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the checked password waited {:?} behind the flood",
        started.elapsed()
    );
    assert!(
        threads() <= before + 8,
        "threads: {before} before the flood, {} after",
        threads()
    );
    let (status, took, log) = daemon.terminate();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
}

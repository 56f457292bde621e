//! `--web-config` with the exporter-toolkit's format, scraped by real Prometheus 2.42 and 3 over
//! TLS with basic auth and client certificates; every refusal refuses; a certificate replaced on
//! disk is served without a restart.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::common::collector::Collector;
use super::common::pki::Pki;
use super::common::prom_server::Prometheus;
use super::common::{self, Daemon, Fixture, free_port, http_get, wait_until};

pub(super) const USER: &str = "prometheus";
pub(super) const PASSWORD: &str = "scrape-secret";

/// A client's view of one request: the status and body, or why there was none.
fn https_get(
    port: u16,
    path: &str,
    ca: &Path,
    client: Option<(&Path, &Path)>,
    auth: Option<(&str, &str)>,
) -> Result<(u16, String), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_file(cert).unwrap()],
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let socket = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, socket);
    let auth = auth
        .map(|(user, password)| {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            format!("Authorization: Basic {token}\r\n")
        })
        .unwrap_or_default();
    write!(tls, "GET {path} HTTP/1.0\r\nHost: localhost\r\n{auth}\r\n").map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    if let Err(e) = tls.read_to_end(&mut response)
        && response.is_empty()
    {
        return Err(e.to_string());
    }
    let response = String::from_utf8_lossy(&response).into_owned();
    let code = response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line: {response}"))?;
    Ok((code, response))
}

/// A web configuration in the toolkit's format, its paths relative to its folder, as an
/// operator's node_exporter file would be.
fn web_config(dir: &Path, pki: &Pki) -> PathBuf {
    let (cert, _) = pki.write_server(dir);
    assert_eq!(cert.parent(), Some(dir));
    std::fs::copy(&pki.ca, dir.join("clients-ca.pem")).unwrap();
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let path = dir.join("web-config.yml");
    std::fs::write(
        &path,
        format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients-ca.pem\n  min_version: TLS12\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  {USER}: {hash}\n"
        ),
    )
    .unwrap();
    path
}

/// A Prometheus scrape job for the exporter with the client's TLS files and password.
fn scrape_config(port: u16, pki: &Pki) -> String {
    format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: reasonix\n    scheme: https\n    tls_config:\n      ca_file: {}\n      cert_file: {}\n      key_file: {}\n      server_name: localhost\n    basic_auth:\n      username: {USER}\n      password: {PASSWORD}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n",
        pki.ca.display(),
        pki.client_cert.display(),
        pki.client_key.display()
    )
}

/// `run` under the web configuration at `path`, on `port`, once it serves.
fn serving(fx: &Fixture, path: &Path, port: u16) -> Daemon {
    let addr = format!("127.0.0.1:{port}");
    let web = path.to_str().unwrap();
    let daemon = fx.spawn(&["--otlp", "off", "--prometheus", &addr, "--web-config", web]);
    let says = format!("serving Prometheus metrics on https://{addr}/metrics");
    assert!(
        wait_until(Duration::from_secs(20), || daemon.log_text().contains(&says)),
        "{}",
        daemon.log_text()
    );
    daemon
}

/// `run` on the test ledger under a web configuration with TLS, client certificates and a
/// password ([`web_config`]), once it has read the ledger (`/-/ready`); fields drop in order, the daemon first.
struct UnderTls {
    daemon: Daemon,
    port: u16,
    path: PathBuf,
    dir: PathBuf,
    pki: Pki,
    fx: Fixture,
}

fn under_tls() -> UnderTls {
    let fx = Fixture::new();
    super::ledger(&fx);
    let dir = folder(fx.root.path(), "web");
    let pki = Pki::new(&dir);
    let path = web_config(&dir, &pki);
    let port = free_port();
    let daemon = serving(&fx, &path, port);
    // Served is not yet read: `status` and a scrape agree once the first poll has ended.
    let client = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let ready = || https_get(port, "/-/ready", &pki.ca, client, Some((USER, PASSWORD)));
    assert!(
        wait_until(Duration::from_secs(20), || ready()
            .is_ok_and(|(code, _)| code == 200)),
        "{}",
        daemon.log_text()
    );
    UnderTls {
        daemon,
        port,
        path,
        dir,
        pki,
        fx,
    }
}

/// The prompt tokens `status --json` counts, all series together.
fn prompt_of(fx: &Fixture) -> u64 {
    let prompt = common::model::token_totals_of_status(&fx.status())
        .values()
        .map(|totals| totals[0])
        .sum();
    assert!(prompt > 0, "status has not counted the ledger yet");
    prompt
}

/// The sum of `reasonix_prompt_tokens_total` Prometheus has from its scrapes, once it has it.
fn scraped_prompt(prometheus: &Prometheus, expected: f64) -> Option<f64> {
    let mut last = None;
    wait_until(Duration::from_secs(30), || {
        last = prometheus.scalar("sum(reasonix_prompt_tokens_total{job=\"reasonix\"})");
        last == Some(expected)
    });
    last
}

#[test]
#[ignore = "needs Prometheus 2 and 3 (.ci/run); run with --include-ignored"]
fn prometheus_2_and_3_scrape_through_tls_basic_auth_and_client_certificates() {
    let test = "prometheus_2_and_3_scrape_through_tls_basic_auth_and_client_certificates";
    let Some(prometheus2) = common::tools::installed(test, "prometheus", "prometheus") else {
        return;
    };
    let Some(prometheus3) = common::tools::built(test, "REASONIX_PROMETHEUS3", "prometheus3") else {
        return;
    };
    let UnderTls {
        daemon,
        port,
        path: _,
        dir,
        pki,
        fx,
    } = under_tls();
    let expected = prompt_of(&fx);
    let config = scrape_config(port, &pki);
    for (binary, name) in [(&prometheus2, "Prometheus 2.42"), (&prometheus3, "Prometheus 3")] {
        let prometheus = Prometheus::start_binary(binary, &fx.root.path().join(name), &config, &[], None);
        let scraped = scraped_prompt(&prometheus, expected as f64);
        let up = prometheus.scalar("up{job=\"reasonix\"}");
        assert_eq!(scraped, Some(expected as f64), "{name}: up={up:?}");
        prometheus.stop();
    }

    let client = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let auth = Some((USER, PASSWORD));
    let (code, response) = https_get(port, "/metrics", &pki.ca, client, auth).unwrap();
    assert_eq!(code, 200, "{response}");
    assert!(response.contains("x-frame-options: deny"), "{response}");
    // Plain HTTP on the TLS port gets no HTTP answer at all.
    assert_eq!(http_get(port, "/metrics", None), None);
    // A wrong password, or none: a bare 401.
    let (code, response) = https_get(port, "/metrics", &pki.ca, client, Some((USER, "wrong"))).unwrap();
    assert_eq!(code, 401, "{response}");
    assert!(response.ends_with("\r\n\r\nUnauthorized\n"), "{response}");
    assert!(response.contains("www-authenticate: Basic"), "{response}");
    assert_eq!(https_get(port, "/", &pki.ca, client, None).map(|r| r.0), Ok(401));
    // No client certificate, or one of a CA it does not know: no connection.
    assert!(https_get(port, "/metrics", &pki.ca, None, auth).is_err());
    let stranger = Pki::new(&folder(fx.root.path(), "stranger"));
    let theirs = Some((stranger.client_cert.as_path(), stranger.client_key.as_path()));
    assert!(https_get(port, "/metrics", &pki.ca, theirs, auth).is_err());

    // The server's certificate replaced on disk (a rotation, by another CA): the next
    // connection is served with it, no restart.
    let rotated_dir = folder(fx.root.path(), "rotated");
    let rotated = Pki::new(&rotated_dir);
    let (cert, key) = rotated.write_server(&rotated_dir);
    std::fs::copy(&key, dir.join("server.key")).unwrap();
    std::fs::copy(&cert, dir.join("server.pem")).unwrap();
    let (code, _) = https_get(port, "/metrics", &rotated.ca, client, auth).unwrap();
    assert_eq!(code, 200);
    assert!(https_get(port, "/metrics", &pki.ca, client, auth).is_err());
    drop(daemon);
}

/// A new folder `name` below `root`.
fn folder(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_bad_web_config_is_one_line_naming_the_field() {
    let fx = Fixture::new();
    let path = fx.root.path().join("web-config.yml");
    let cases = [
        (
            "tls_server_config:\n  cert_filse: server.pem\n",
            "tls_server_config.cert_filse",
        ),
        (
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  min_version: TLS10\n",
            "tls_server_config.min_version",
        ),
        (
            "basic_auth_users:\n  alice: not-a-hash\n",
            "basic_auth_users.alice",
        ),
        (
            "tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n",
            "tls_server_config.cert_file",
        ),
    ];
    for (text, field) in cases {
        std::fs::write(&path, text).unwrap();
        let out = fx
            .command(&[
                "run",
                "--otlp",
                "off",
                "--prometheus",
                "127.0.0.1:0",
                "--web-config",
                path.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{text}");
        let line = common::the_error_line(&out);
        assert!(line.contains(field), "{field} missing from: {line}");
    }
}

#[test]
fn basic_auth_without_tls_asks_for_the_password() {
    let fx = Fixture::new();
    super::ledger(&fx);
    let path = fx.root.path().join("web-config.yml");
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
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
    assert_eq!(
        http_get(port, "/metrics", None).as_deref(),
        Some("Unauthorized\n")
    );
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let with_password = || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.0\r\nAuthorization: Basic {token}\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let response = with_password();
    assert!(
        response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
        "{response}"
    );
    // The counters themselves once the ledger is read, not only their headers.
    assert!(
        wait_until(Duration::from_secs(20), || with_password()
            .contains("reasonix_prompt_tokens_total{")),
        "{}",
        with_password()
    );

    // The file broken while it runs: every request is a 500 and the log says it once; mended,
    // the password works again, no restart.
    std::fs::write(&path, "basic_auth_users: [\n").unwrap();
    assert_eq!(
        http_get(port, "/metrics", None).as_deref(),
        Some("Internal Server Error\n")
    );
    assert_eq!(
        http_get(port, "/", None).as_deref(),
        Some("Internal Server Error\n")
    );
    std::fs::write(&path, format!("basic_auth_users:\n  {USER}: {hash}\n")).unwrap();
    assert_eq!(
        http_get(port, "/metrics", None).as_deref(),
        Some("Unauthorized\n")
    );
    let log = daemon.log_text();
    assert_eq!(log.matches("refused until it is fixed").count(), 1, "{log}");
    assert!(log.contains("web-config.yml"), "{log}");
    drop(daemon);
}

#[test]
fn a_tls_web_config_emptied_while_it_runs_never_serves_plain_http() {
    // `fx` bound, so that the folders stay while the test runs.
    let UnderTls {
        daemon,
        port,
        path,
        pki,
        fx: _fx,
        ..
    } = under_tls();
    // Half written, then with TLS gone.
    std::fs::write(&path, "").unwrap();
    assert_eq!(http_get(port, "/metrics", None), None);
    std::fs::write(&path, "{}\n").unwrap();
    assert_eq!(http_get(port, "/metrics", None), None);
    let client = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    assert!(https_get(port, "/metrics", &pki.ca, client, Some((USER, PASSWORD))).is_err());
    let log = daemon.log_text();
    assert!(log.contains("is empty (being written?)"), "{log}");
    assert!(log.contains("TLS was on at start and is off now"), "{log}");
}

#[test]
#[ignore = "needs the collector and Prometheus 2 (.ci/run); run with --include-ignored"]
fn the_collectors_prometheus_receiver_scrapes_through_tls_basic_auth_and_client_certificates() {
    let test = "the_collectors_prometheus_receiver_scrapes_through_tls_basic_auth_and_client_certificates";
    let Some(otelcol) = common::tools::built(test, "REASONIX_OTELCOL", "otelcol-reasonix") else {
        return;
    };
    if common::tools::installed(test, "prometheus", "prometheus").is_none() {
        return;
    }
    let UnderTls {
        daemon,
        port,
        pki,
        fx,
        ..
    } = under_tls();
    let expected = prompt_of(&fx);
    let prometheus = Prometheus::start_binary(
        Path::new("prometheus"),
        &fx.root.path().join("prometheus"),
        "global:\n  scrape_interval: 15s\n",
        &["--web.enable-remote-write-receiver"],
        None,
    );
    let overrides = format!(
        "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{{grpc}}\n      http:\n        endpoint: 127.0.0.1:{{http}}\n  prometheus:\n    config:\n      scrape_configs:\n        - job_name: reasonix\n          scrape_interval: 1s\n          scheme: https\n          tls_config:\n            ca_file: {}\n            cert_file: {}\n            key_file: {}\n            server_name: localhost\n          basic_auth:\n            username: {USER}\n            password: {PASSWORD}\n          static_configs:\n            - targets: ['127.0.0.1:{port}']\nprocessors:\n  batch:\n    timeout: 1s\npipelines:\n  metrics:\n    receivers: [prometheus]\n    processors: [batch]\n    exporters: [prometheusremotewrite]\n",
        pki.ca.display(),
        pki.client_cert.display(),
        pki.client_key.display()
    );
    let url = format!("http://127.0.0.1:{}/api/v1/write", prometheus.port);
    let collector = Collector::start(
        &otelcol,
        &fx.root.path().join("collector"),
        "single-machine.yaml",
        &overrides,
        &[("PROMETHEUS_REMOTE_WRITE_URL", &url)],
    );
    let scraped = scraped_prompt(&prometheus, expected as f64);
    assert_eq!(scraped, Some(expected as f64), "{}", collector.log_text());
    drop((collector, daemon));
}

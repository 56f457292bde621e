//! A real Alertmanager (Debian's `prometheus-alertmanager`, installed by .ci/run) on a free
//! port, delivering every notification to a webhook receiver in the test.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{free_port, http_get, wait_until};

pub struct Alertmanager {
    child: Child,
    pub port: u16,
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Alertmanager {
    /// Starts `binary` sending every alert to `webhook`: one group per alert and threshold, sent
    /// at once, resolved ones too, and never repeated within the test.
    pub fn start(binary: &Path, dir: &Path, webhook: &Webhook) -> Alertmanager {
        std::fs::create_dir_all(dir).unwrap();
        let config = format!(
            "route:\n  receiver: test\n  group_by: [alertname, budget, threshold, instance]\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 24h\nreceivers:\n  - name: test\n    webhook_configs:\n      - url: http://127.0.0.1:{}/\n        send_resolved: true\n",
            webhook.port
        );
        let config_path = dir.join("alertmanager.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.join("log.txt")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // One Alertmanager, no cluster (it would listen on 0.0.0.0:9094).
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let am = Alertmanager { child, port };
        assert!(
            wait_until(std::time::Duration::from_secs(30), || http_get(
                port, "/-/ready", None
            )
            .is_some()),
            "Alertmanager never became ready: {}",
            std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default()
        );
        am
    }
}

/// One alert as a notification carried it.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub status: String,
    pub labels: Value,
    pub annotations: Value,
}

/// An HTTP server taking Alertmanager's webhook posts, keeping each alert of each.
pub struct Webhook {
    pub port: u16,
    pub received: Arc<Mutex<Vec<Delivered>>>,
}

impl Webhook {
    pub fn start() -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keep = Arc::clone(&keep);
                std::thread::spawn(move || serve(stream, &keep));
            }
        });
        Webhook { port, received }
    }

    pub fn alerts(&self) -> Vec<Delivered> {
        self.received.lock().unwrap().clone()
    }
}

/// Reads posts from one connection (kept alive) until it closes, answering each with 200.
fn serve(stream: std::net::TcpStream, keep: &Mutex<Vec<Delivered>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if let Ok(notification) = serde_json::from_slice::<Value>(&body) {
            let mut kept = keep.lock().unwrap();
            for alert in notification["alerts"].as_array().into_iter().flatten() {
                kept.push(Delivered {
                    status: alert["status"].as_str().unwrap_or_default().to_string(),
                    labels: alert["labels"].clone(),
                    annotations: alert["annotations"].clone(),
                });
            }
        }
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

//! `/` in a real browser, `/-/healthy` and `/-/ready` as Prometheus answers them, and
//! `reasonix_exporter_build_info`.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::{self, Fixture, http_get, wait_until};

/// The status code and body of a GET of `path`.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split(' ').nth(1)?.parse().ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some((code, body.to_string()))
}

#[test]
fn healthy_and_ready_answer_as_prometheus_does_and_build_info_is_served() {
    let fx = Fixture::new();
    super::ledger(&fx);
    let (daemon, port) = fx.spawn_serving(&[]);
    assert_eq!(
        get(port, "/-/healthy"),
        Some((200, "reasonix-exporter is Healthy.\n".into()))
    );
    let ready = wait_until(Duration::from_secs(20), || {
        get(port, "/-/ready") == Some((200, "reasonix-exporter is Ready.\n".into()))
    });
    assert!(ready, "never ready: {:?}", get(port, "/-/ready"));
    let metrics = http_get(port, "/metrics", None).unwrap();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("reasonix_exporter_build_info{"))
        .unwrap_or_else(|| panic!("no build_info: {metrics}"));
    let expected = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(line.contains(&expected), "{line}");
    assert!(
        line.contains("revision=\"") && line.contains("rustc=\""),
        "{line}"
    );
    assert!(line.ends_with(" 1"), "{line}");
    assert!(metrics.contains("# TYPE reasonix_exporter_build_info gauge"));
    drop(daemon);
}

/// The text of each cell of each body row of the table `id` in `html`, entities left as they are.
fn rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<table id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no table {id}: {html}"));
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap() + 7..table.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()];
                    text.to_string()
                })
                .collect()
        })
        .collect()
}

/// Headless Chromium's DOM of `url`, after the page loaded.
fn rendered(chromium: &std::path::Path, profile: &std::path::Path, url: &str) -> String {
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("chromium did not render {url} within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut dom = String::new();
    child.stdout.take().unwrap().read_to_string(&mut dom).unwrap();
    dom
}

#[test]
#[ignore = "needs chromium (.ci/run); run with --include-ignored"]
fn the_page_renders_in_chromium_with_the_numbers_of_status() {
    let test = "the_page_renders_in_chromium_with_the_numbers_of_status";
    let Some(chromium) = common::tools::installed(test, "chromium", "chromium") else {
        return;
    };
    let fx = Fixture::new();
    super::ledger(&fx);
    let (daemon, port) = fx.spawn_serving(&[]);
    assert!(wait_until(Duration::from_secs(20), || get(port, "/-/ready")
        .is_some_and(|(code, _)| code == 200)));
    let status: Value = fx.status();
    let dom = rendered(
        &chromium,
        &fx.root.path().join("chromium"),
        &format!("http://127.0.0.1:{port}/"),
    );
    assert!(dom.contains("<h1>reasonix-exporter</h1>"), "{dom}");
    assert!(
        dom.contains(&format!("version {}", env!("CARGO_PKG_VERSION"))),
        "{dom}"
    );
    assert!(dom.contains("href=\"metrics\""), "{dom}");

    let keys = common::model::QUANTITIES;
    let series = status["series"].as_array().unwrap();
    let shown = rows(&dom, "series");
    assert_eq!(shown.len(), series.len(), "{dom}");
    for s in series {
        let labels = [&s["model_ref"], &s["provider"], &s["source"]].map(|v| v.as_str().unwrap());
        let row = shown
            .iter()
            .find(|r| r[..3] == labels)
            .unwrap_or_else(|| panic!("no row for {labels:?}: {dom}"));
        for (i, key) in keys.iter().enumerate() {
            let number: u64 = row[3 + i].replace(',', "").parse().unwrap();
            assert_eq!(number, s[key].as_u64().unwrap(), "{key} of {labels:?}");
        }
    }
    let cost = status["cost"].as_array().unwrap();
    let shown = rows(&dom, "cost");
    assert_eq!(shown.len(), cost.len(), "{dom}");
    for c in cost {
        assert!(
            shown.iter().any(|r| r[0] == c["model_ref"].as_str().unwrap()
                && r[4] == c["currency"].as_str().unwrap()
                && r[5] == c["amount"].as_str().unwrap()),
            "no row for {c}: {dom}"
        );
    }
    let lines = rows(&dom, "lines");
    let read: u64 = lines[0][0].replace(',', "").parse().unwrap();
    assert_eq!(read, status["lines"]["read"].as_u64().unwrap());
    drop(daemon);
}

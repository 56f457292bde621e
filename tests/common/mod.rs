//! Test fixtures: a Reasonix home on a real filesystem, and the real binary run against it.

#![allow(dead_code)]

pub mod alertmanager;
pub mod before_cost;
pub mod collector;
pub mod dashboard;
pub mod faketime;
pub mod files;
pub mod generator;
pub mod grafana;
pub mod macho;
pub mod model;
pub mod pki;
pub mod prom_server;
pub mod receiver;
pub mod tools;
pub mod victoria;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_reasonix-exporter");

/// A temporary machine: a home with `.reasonix/stats`, and a state dir for the exporter.
pub struct Fixture {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub stats: PathBuf,
    pub state: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let stats = home.join(".reasonix").join("stats");
        std::fs::create_dir_all(&stats).expect("stats dir");
        let state = root.path().join("state");
        Fixture {
            root,
            home,
            stats,
            state,
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.stats.join(name)
    }

    /// Appends `bytes` to a stats file, creating it, as Reasonix's O_APPEND writes do.
    pub fn append(&self, name: &str, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(name))
            .expect("open for append");
        f.write_all(bytes).expect("append");
    }

    pub fn append_lines(&self, name: &str, lines: &[&str]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.append(name, text.as_bytes());
    }

    /// The binary with a clean environment: only this fixture's home and state.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_via(BIN, &[], args)
    }

    /// The binary run by `wrapper` (e.g. strace) with `wrapper_args`, environment as `command`.
    pub fn command_via(&self, wrapper: &str, wrapper_args: &[&str], args: &[&str]) -> Command {
        let mut cmd = Command::new(wrapper);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", self.root.path().join("xdg-state"))
            .env("XDG_CONFIG_HOME", self.root.path().join("xdg-config"))
            .args(wrapper_args);
        if wrapper != BIN {
            cmd.arg(BIN);
        }
        cmd.arg("--state-dir").arg(&self.state).args(args);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run the exporter")
    }

    /// `once` to `receiver`, killed after `limit` with a failure that says what each of its
    /// threads was waiting in: a hang inside the store fails in seconds, readably, not at CI's
    /// time limit.
    pub fn export_to_within(&self, receiver: &receiver::Receiver, limit: std::time::Duration) -> Output {
        use std::process::Stdio;
        let mut child = self
            .once_to(receiver)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the exporter");
        let exited = wait_until(limit, || child.try_wait().expect("poll the exporter").is_some());
        if !exited {
            let threads = thread_states(child.id());
            let _ = child.kill();
            let _ = child.wait();
            panic!("`once` still running after {limit:?}; its threads (name: waiting in):\n{threads}");
        }
        child.wait_with_output().expect("the exporter's output")
    }

    /// The command for `once` exporting to `receiver` with its protocol, to add to.
    pub fn once_to(&self, receiver: &receiver::Receiver) -> Command {
        self.command(&[
            "once",
            "--otlp-endpoint",
            &receiver.endpoint,
            "--otlp-protocol",
            receiver.protocol,
        ])
    }

    /// `once`, exporting to `receiver` with its protocol.
    pub fn export_to(&self, receiver: &receiver::Receiver) -> Output {
        self.once_to(receiver).output().expect("run the exporter")
    }

    /// The exporter with `args` under `strace -f -qq -yy -e trace=<syscalls>` (file descriptors
    /// shown with their paths), which must succeed; returns the trace.
    pub fn traced(&self, syscalls: &str, args: &[&str]) -> String {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let trace = self.root.path().join(format!("trace-{n}.txt"));
        let filter = format!("trace={syscalls}");
        let out = self
            .command_via(
                "strace",
                &[
                    "-f",
                    "-qq",
                    "-yy",
                    "-e",
                    &filter,
                    "-o",
                    &trace.to_string_lossy(),
                    "--",
                ],
                args,
            )
            .output()
            .expect("run the exporter under strace");
        assert_success(&out);
        std::fs::read_to_string(&trace).expect("the trace")
    }

    /// `once --otlp off`, which must succeed.
    pub fn ingest(&self) -> Output {
        let out = self.run(&["once", "--otlp", "off"]);
        assert_success(&out);
        out
    }

    /// `status --json`, parsed.
    pub fn status(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        assert_success(&out);
        serde_json::from_slice(&out.stdout).expect("status --json is JSON")
    }
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The one error line a failed run prints (`reasonix-exporter: …`); fails unless there is
/// exactly one.
pub fn the_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("reasonix-exporter:"))
        .collect();
    assert_eq!(errors.len(), 1, "exactly one error line: {stderr}");
    errors[0].to_string()
}

/// Every file below `dir`, recursively.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A `run` daemon started by a test, its stderr captured in a file.
pub struct Daemon {
    pub child: std::process::Child,
    pub log: PathBuf,
}

impl Fixture {
    /// Starts `run` with `args`; its stderr goes to a fresh log file.
    pub fn spawn(&self, args: &[&str]) -> Daemon {
        self.spawn_with(args, &[])
    }

    pub fn spawn_with(&self, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        let mut cmd = self.command(&all);
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.start(cmd)
    }

    /// `run` started by `wrapper` (e.g. setpriv, to run as another user).
    pub fn spawn_via(&self, wrapper: &str, wrapper_args: &[&str], args: &[&str]) -> Daemon {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        self.start(self.command_via(wrapper, wrapper_args, &all))
    }

    fn start(&self, mut cmd: Command) -> Daemon {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = self.root.path().join(format!("daemon-{n}.log"));
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start run");
        Daemon { child, log }
    }
}

impl Fixture {
    /// Starts `run` without OTLP, serving `/metrics` on a free port, plus `extra` options, and
    /// waits until it serves. Returns the daemon and the port.
    pub fn spawn_serving(&self, extra: &[&str]) -> (Daemon, u16) {
        let mut args = vec!["--otlp", "off", "--prometheus", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let daemon = self.spawn(&args);
        let port = daemon.metrics_port();
        assert!(
            wait_until(std::time::Duration::from_secs(20), || scrape_totals(port)
                .is_some()),
            "the daemon never served /metrics: {}",
            daemon.log_text()
        );
        (daemon, port)
    }
}

/// Waits until the `run` serving on `port` has ended its first reading of the ledger
/// (`/-/ready`): from then on `status` and a scrape hold what the ledger held at its start.
pub fn wait_ready(port: u16) -> bool {
    wait_until(std::time::Duration::from_secs(30), || {
        http_get(port, "/-/ready", None).as_deref() == Some("reasonix-exporter is Ready.\n")
    })
}

impl Daemon {
    /// Whether the process has not exited.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The port `run` serves `/metrics` on, as its log says once it has bound it: start it with
    /// `--prometheus 127.0.0.1:0` and no two tests can want the same port.
    pub fn metrics_port(&self) -> u16 {
        const SAYS: &str = "serving Prometheus metrics on http://127.0.0.1:";
        let mut port = None;
        let found = wait_until(std::time::Duration::from_secs(20), || {
            let log = self.log_text();
            port = log.find(SAYS).and_then(|at| {
                let rest = &log[at + SAYS.len()..];
                rest[..rest.find('/')?].parse().ok()
            });
            port.is_some()
        });
        assert!(
            found,
            "run never said where it serves /metrics: {}",
            self.log_text()
        );
        port.unwrap()
    }

    /// SIGTERM, then wait; returns how long the exit took.
    pub fn terminate(mut self) -> (std::process::ExitStatus, std::time::Duration, String) {
        let started = std::time::Instant::now();
        send_signal(self.child.id(), "TERM");
        let status = self.child.wait().unwrap();
        (status, started.elapsed(), self.log_text())
    }

    /// SIGKILL, then wait.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal with the `kill` command (no libc in tests).
pub fn send_signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success(), "kill -{signal} {pid}");
}

/// A loopback port nobody listens on right now, for the servers the tests start that cannot
/// bind port 0 and say so (a collector, Prometheus): another test may take it before they bind,
/// which fails that test loudly rather than quietly. The exporter binds port 0 instead (see
/// [`Daemon::metrics_port`]).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether strace is there for a system-call audit (`.ci/run` installs it); a developer machine
/// without it skips the audit and says so; in CI its absence fails the test.
pub fn strace_installed() -> bool {
    let installed = Command::new("strace").arg("-V").output().is_ok();
    if !installed {
        tools::skip("strace is not installed (apt-get install strace)");
    }
    installed
}

/// Each thread of `pid` with the kernel function it is waiting in (`/proc/<pid>/task/*/wchan`).
fn thread_states(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "(no /proc here)".into();
    };
    let read = |task: &Path, file: &str| {
        std::fs::read_to_string(task.join(file)).map_or_else(|_| "?".into(), |t| t.trim().to_string())
    };
    let mut lines: Vec<String> = tasks
        .flatten()
        .map(|task| {
            format!(
                "  {}: {}",
                read(&task.path(), "comm"),
                read(&task.path(), "wchan")
            )
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

/// Calls `check` until it returns true or `timeout` passes; returns whether it did.
pub fn wait_until(timeout: std::time::Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `GET path` over plain HTTP/1.0; `None` if nothing answers.
pub fn http_get(port: u16, path: &str, accept: Option<&str>) -> Option<String> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n{accept}\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// The Prometheus names of the eight ledger counters, in the model's order.
pub const PROM_NAMES: [&str; 8] = [
    "reasonix_prompt_tokens_total",
    "reasonix_completion_tokens_total",
    "reasonix_reasoning_tokens_total",
    "reasonix_cache_hit_tokens_total",
    "reasonix_cache_miss_tokens_total",
    "reasonix_tokens_total",
    "reasonix_requests_total",
    "reasonix_turns_total",
];

/// The eight ledger counters per series from a Prometheus text exposition.
pub fn scrape_totals(port: u16) -> Option<std::collections::BTreeMap<model::Series, [u64; 8]>> {
    let body = http_get(port, "/metrics", None)?;
    let names = PROM_NAMES;
    let mut out = std::collections::BTreeMap::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        let Some(q) = names.iter().position(|n| *n == name) else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ")?;
        let get = |key: &str| {
            let start = labels.find(&format!("{key}=\""))? + key.len() + 2;
            let end = labels[start..].find('"')? + start;
            Some(labels[start..end].to_string())
        };
        let series = (get("model_ref")?, get("provider")?, get("source")?);
        out.entry(series).or_insert([0u64; 8])[q] = value.trim().parse().ok()?;
    }
    Some(out)
}

/// Runs the binary and returns its exit status and, measured by GNU time, its peak resident
/// memory in MiB. Without GNU time (never in CI) the run still happens, unmeasured, so that the
/// test's other checks still run.
///
/// Not `wait4` on our own child: a child spawned from this (large) test process carries the
/// test process's peak into its own across `exec`. GNU time's child starts from time's small one.
#[cfg(target_os = "linux")]
pub fn run_measured(fx: &Fixture, args: &[&str]) -> (std::process::ExitStatus, Option<f64>) {
    if !Path::new("/usr/bin/time").exists() {
        tools::skip("GNU time is not installed (apt-get install time): memory not measured");
        let status = fx
            .command(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        return (status, None);
    }
    let report = fx.root.path().join("time.txt");
    let report_arg = report.display().to_string();
    let status = fx
        .command_via("/usr/bin/time", &["-f", "%M", "-o", &report_arg], args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    // GNU time says "Command exited with non-zero status N" first when it did.
    let report = std::fs::read_to_string(&report).unwrap();
    let kib: f64 = report.lines().last().unwrap_or("").trim().parse().unwrap();
    (status, Some(kib / 1024.0))
}

/// Asserts a peak measured by [`run_measured`] is below `limit` MiB.
#[cfg(target_os = "linux")]
pub fn assert_peak_below(peak_mib: Option<f64>, limit: f64, what: &str) {
    if let Some(peak) = peak_mib {
        assert!(peak < limit, "peak RSS {peak:.1} MiB {what}");
    }
}

//! Defence in depth on Linux: a landlock sandbox around `run` and `once`. Once entered, the
//! process can read only the stats folder (and a few system files that hold no user data: name
//! resolution, the TLS trust store, shared libraries) and write only its state dir. Nothing else
//! in the home folder, Reasonix's sessions and prompts included, can be opened, whatever a bug
//! or a crafted ledger might try.
//!
//! It is entered before any thread exists: landlock restricts the calling thread and the threads
//! it starts later, not those already running. The config file and TLS files are read before.
//! Where the kernel has no landlock (before 5.13, or disabled), the exporter runs as before and
//! says so once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::events::sandbox::{self as events, Landlock};
use crate::inert_text::ShowPath;

static ENFORCED: AtomicBool = AtomicBool::new(false);

/// Why there is no sandbox where landlock is missing, for the log and for `doctor`.
#[cfg(target_os = "linux")]
pub const UNAVAILABLE: &str =
    "landlock is not available here (an older kernel, or a container that filters it)";
/// Why there is no sandbox: landlock is Linux's.
#[cfg(not(target_os = "linux"))]
pub const UNAVAILABLE: &str = "landlock is a Linux kernel feature, not available on this system";

/// The kernel's landlock ABI version, or `None` where there is none (or a seccomp filter hides
/// it). For `doctor`: entering the sandbox asks the same question through the landlock crate.
#[cfg(target_os = "linux")]
pub fn kernel_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the version flag, the call only reports the
    // ABI version; it reads no memory of ours and changes nothing.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (version >= 1).then_some(version)
}

#[cfg(not(target_os = "linux"))]
pub fn kernel_abi() -> Option<i64> {
    None
}

/// What became of the sandbox, for the start-up log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every requested restriction holds.
    Enforced,
    /// The kernel's landlock is older than ours: some restrictions hold (it always covers reads
    /// and writes of files and folders).
    PartlyEnforced,
    /// This kernel or platform has no landlock.
    Unsupported,
    /// `--sandbox off`.
    Off,
    /// The stats folder does not exist yet, so there is nothing to allow reads from.
    NoStatsDir,
}

/// Whether reads are limited to the stats folder as it was at start.
pub fn enforced() -> bool {
    ENFORCED.load(Ordering::Relaxed)
}

/// For a "permission denied" message: what the sandbox has to do with it, if anything.
pub fn permission_hint() -> &'static str {
    if enforced() {
        " (the sandbox allows reads only below the stats folder as it resolved at start: if it was re-pointed, or a day file links outside it, restart the exporter, or run with --sandbox off)"
    } else {
        ""
    }
}

/// Why the sandbox could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot create the state dir {}: {error}; fix its permissions (or make room on its disk), or choose another with --state-dir", path.shown())]
    StateDir { path: PathBuf, error: std::io::Error },
    #[error("cannot set the sandbox up: {0}; run with --sandbox off, and report it")]
    Landlock(String),
}

/// Enters the sandbox: reads below `stats_dir` and `reads` (the web configuration's folders),
/// reads and writes below `state_dir` (created if missing). Must be called before any thread is
/// started.
pub fn enter(
    on: bool,
    stats_dir: &Path,
    state_dir: &Path,
    reads: &[PathBuf],
) -> Result<Outcome, SandboxError> {
    if !on {
        return Ok(Outcome::Off);
    }
    if !stats_dir.is_dir() {
        return Ok(Outcome::NoStatsDir);
    }
    std::fs::create_dir_all(state_dir).map_err(|error| SandboxError::StateDir {
        path: state_dir.to_path_buf(),
        error,
    })?;
    let outcome = restrict(stats_dir, state_dir, reads)?;
    if matches!(outcome, Outcome::Enforced | Outcome::PartlyEnforced) {
        ENFORCED.store(true, Ordering::Relaxed);
    }
    Ok(outcome)
}

/// System paths the process may read: none holds user data. Missing ones are skipped.
#[cfg(target_os = "linux")]
fn system_reads() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        // Name resolution (getaddrinfo).
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/nsswitch.conf",
        "/etc/host.conf",
        "/etc/gai.conf",
        // The TLS trust store, where the common distributions keep it.
        "/etc/ssl",
        "/etc/pki",
        "/etc/ca-certificates",
        "/usr/share/ca-certificates",
        "/usr/local/share/ca-certificates",
        "/usr/lib/ssl",
        // Shared libraries glibc loads at run time (NSS modules).
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    for var in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
        if let Some(value) = std::env::var_os(var) {
            paths.extend(std::env::split_paths(&value));
        }
    }
    paths
}

#[cfg(target_os = "linux")]
fn restrict(stats_dir: &Path, state_dir: &Path, reads: &[PathBuf]) -> Result<Outcome, SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
    };

    let abi = ABI::V5;
    let all = AccessFs::from_all(abi);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let write = all & !AccessFs::Execute;
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules([stats_dir], read)))
        .and_then(|r| r.add_rules(path_beneath_rules([state_dir], write)))
        .and_then(|r| r.add_rules(path_beneath_rules(system_reads(), read)))
        .and_then(|r| r.add_rules(path_beneath_rules(reads, read)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| SandboxError::Landlock(e.to_string()))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Outcome::Enforced,
        RulesetStatus::PartiallyEnforced => Outcome::PartlyEnforced,
        RulesetStatus::NotEnforced => Outcome::Unsupported,
    })
}

#[cfg(not(target_os = "linux"))]
fn restrict(_stats_dir: &Path, _state_dir: &Path, _reads: &[PathBuf]) -> Result<Outcome, SandboxError> {
    Ok(Outcome::Unsupported)
}

/// The start-up line that says what the sandbox does.
pub fn log(outcome: &Outcome, stats_dir: &Path, state_dir: &Path) {
    match outcome {
        Outcome::Enforced => events::entered(Landlock::Enforced, stats_dir, state_dir),
        Outcome::PartlyEnforced => events::entered(Landlock::PartlyEnforced, stats_dir, state_dir),
        Outcome::Unsupported => events::unavailable(UNAVAILABLE),
        Outcome::Off => events::off(),
        Outcome::NoStatsDir => events::not_entered(stats_dir),
    }
}

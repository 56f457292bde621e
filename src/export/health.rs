//! How the daemon's exports have gone since they last worked: said in the log when it matters
//! (a collector that drops points of accepted requests, a refusal that repeats) and left in the
//! state dir for `doctor`, which cannot see the running daemon's log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::events::{self, Episode};
use crate::export::transport::SendError;

/// Refusals in a row after which they are reported as one condition, not as an outage.
const REPEATED: u64 = 3;

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportHealth {
    /// Unix seconds of the first failure since exports last worked.
    pub failing_since: Option<u64>,
    /// Failed exports since then.
    pub failures: u64,
    /// Of those, refusals in a row: the collector answered, and said no.
    pub refusals: u64,
    /// The last failure, as logged (no secrets: endpoints are shown redacted).
    pub last_error: String,
    /// The collector's partial-success warning, while its answers carry one.
    pub partial: Option<String>,
    /// The outage, for the log: said when it begins and when it ends.
    #[serde(skip)]
    outage: Episode,
    #[serde(skip)]
    unsaved: bool,
}

impl ExportHealth {
    /// How long the outage has lasted so far, if there is one.
    pub fn outage_lasted(&self) -> Option<Duration> {
        self.outage.lasted()
    }

    /// An export was accepted, with `partial` when the collector rejected some of its points;
    /// it ends any outage.
    pub fn accepted(&mut self, partial: Option<String>) {
        if partial != self.partial {
            match &partial {
                Some(warning) => events::export::partial(warning),
                None => events::export::partial_over(),
            }
        }
        let changed = self.failing_since.is_some() || partial != self.partial;
        *self = ExportHealth {
            partial,
            unsaved: self.unsaved || changed,
            ..ExportHealth::default()
        };
    }

    /// An export failed with `error`, logged as `text`: whether this begins an outage.
    pub fn failed(&mut self, error: &SendError, text: &str) -> bool {
        self.failures += 1;
        self.failing_since.get_or_insert_with(unix_now);
        if matches!(error, SendError::Refused { .. }) {
            self.refusals += 1;
            if self.refusals == REPEATED {
                events::export::refused_repeatedly(REPEATED, text);
            }
        } else {
            self.refusals = 0;
        }
        self.last_error = text.to_string();
        self.unsaved = true;
        self.outage.begins()
    }

    /// An export failed before it could be sent: whether this begins an outage.
    pub fn not_sent(&mut self) -> bool {
        self.outage.begins()
    }

    /// What is wrong, in one line, or `None` when exports work.
    pub fn problem(&self) -> Option<String> {
        if self.refusals >= REPEATED {
            return Some(format!(
                "the running exporter's last {} exports were refused: {}",
                self.refusals, self.last_error
            ));
        }
        if self.failures > 0 {
            return Some(format!(
                "the running exporter's exports have failed {} times since {}: {}",
                self.failures,
                humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH
                        + std::time::Duration::from_secs(self.failing_since.unwrap_or_default())
                ),
                self.last_error
            ));
        }
        self.partial.clone()
    }

    /// Leaves the state where `doctor` reads it, when it changed: the file is there only while
    /// something is wrong.
    pub fn save(&mut self, state_dir: &Path) -> std::io::Result<()> {
        if !self.unsaved {
            return Ok(());
        }
        let path = path_in(state_dir);
        match self.problem() {
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
            Some(_) => {
                crate::own_files::replace_json(&path, self, crate::own_files::Durability::ProcessCrash)?
            }
        }
        self.unsaved = false;
        Ok(())
    }

    /// What a running daemon left, if anything is wrong.
    pub fn load(state_dir: &Path) -> Option<ExportHealth> {
        let text = crate::own_files::read_own(&path_in(state_dir), crate::own_files::MAX_OWN_BYTES).ok()?;
        serde_json::from_slice(&text).ok()
    }
}

fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join("export-health.json")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> SendError {
        SendError::Refused {
            detail: "the collector answered HTTP 413 Payload Too Large".into(),
            retry_after: None,
            too_large: true,
            bad_data: false,
        }
    }

    #[test]
    fn repeated_refusals_are_a_problem_until_an_export_works() {
        let dir = tempfile::tempdir().unwrap();
        let mut health = ExportHealth::default();
        for _ in 0..REPEATED {
            health.failed(&refused(), "export failed: HTTP 413");
        }
        health.save(dir.path()).unwrap();
        let left = ExportHealth::load(dir.path()).unwrap();
        assert!(
            left.problem().unwrap().contains("last 3 exports were refused"),
            "{left:?}"
        );

        health.accepted(None);
        health.save(dir.path()).unwrap();
        assert_eq!(ExportHealth::load(dir.path()), None);
    }

    #[test]
    fn an_unreachable_collector_resets_the_refusal_count() {
        let mut health = ExportHealth::default();
        health.failed(&refused(), "refused");
        health.failed(&SendError::NotSent("down".into()), "down");
        assert_eq!(health.refusals, 0);
        assert!(health.problem().unwrap().contains("failed 2 times"));
    }
}

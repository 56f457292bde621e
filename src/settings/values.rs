//! The value types settings are written in: on/off, durations, milliseconds.

use std::time::Duration;

use anyhow::{anyhow, bail};

/// The longest export or poll interval: a day. Longer is a typo, and would overflow timers.
pub const MAX_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest export timeout: ten minutes, far beyond any collector's own limits.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);

pub fn parse_on_off(value: &str) -> Option<bool> {
    match value.trim() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// A duration as people write it (`500ms`, `2s`, `1m`), up to [`MAX_INTERVAL`].
pub fn parse_duration(raw: &str, what: &str) -> anyhow::Result<Duration> {
    let value = humantime::parse_duration(raw.trim())
        .map_err(|_| anyhow!("{what} '{raw}' is not a duration: write e.g. 500ms, 2s or 1m"))?;
    within(value, what, MAX_INTERVAL)
}

/// A whole number of milliseconds, as the OpenTelemetry variables write durations.
pub fn parse_millis(raw: &str, what: &str, max: Duration) -> anyhow::Result<Duration> {
    let ms: u64 = raw
        .trim()
        .parse()
        .map_err(|_| anyhow!("{what} '{raw}' is not a whole number of milliseconds"))?;
    within(Duration::from_millis(ms), what, max)
}

fn within(value: Duration, what: &str, max: Duration) -> anyhow::Result<Duration> {
    if value.is_zero() {
        bail!("{what} must be longer than zero");
    }
    if value > max {
        bail!(
            "{what} {} is longer than the {} allowed; choose a shorter one",
            humantime::format_duration(value),
            humantime::format_duration(max)
        );
    }
    Ok(value)
}

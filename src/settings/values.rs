//! The value types settings are written in: on/off, durations, milliseconds.

use std::time::Duration;

use super::SettingsError;

/// The longest export or poll interval: a day. Longer is a typo, and would overflow timers.
pub const MAX_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest interval or timeout: below a millisecond a poll or a retry would spin.
pub const MIN_DURATION: Duration = Duration::from_millis(1);
/// The longest export timeout: ten minutes, far beyond any collector's own limits.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);

pub fn parse_on_off(value: &str) -> Option<bool> {
    match value.trim() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// A duration as people write it (`500ms`, `2s`, `1m`), from [`MIN_DURATION`] up to
/// [`MAX_INTERVAL`].
pub fn parse_duration(raw: &str, from: &str) -> Result<Duration, SettingsError> {
    let value = humantime::parse_duration(raw.trim()).map_err(|_| SettingsError::NotADuration {
        from: from.to_owned(),
        value: raw.to_owned(),
    })?;
    within(value, from, MAX_INTERVAL)
}

/// A whole number of milliseconds, as the OpenTelemetry variables write durations.
pub fn parse_millis(raw: &str, from: &str, max: Duration) -> Result<Duration, SettingsError> {
    let ms: u64 = raw.trim().parse().map_err(|_| SettingsError::NotMilliseconds {
        from: from.to_owned(),
        value: raw.to_owned(),
    })?;
    within(Duration::from_millis(ms), from, max)
}

fn within(value: Duration, from: &str, max: Duration) -> Result<Duration, SettingsError> {
    if value < MIN_DURATION {
        return Err(SettingsError::TooShort {
            from: from.to_owned(),
            value: humantime::format_duration(value).to_string(),
        });
    }
    if value > max {
        return Err(SettingsError::TooLong {
            from: from.to_owned(),
            value: humantime::format_duration(value).to_string(),
            max: humantime::format_duration(max).to_string(),
        });
    }
    Ok(value)
}

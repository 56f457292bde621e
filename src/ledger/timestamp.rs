//! RFC 3339 validation of `ts`, the calendar day that partitions the seen set, and the instant
//! a line's history is placed at.

use std::fmt;

/// A calendar day as written at the start of a row's `ts` (`YYYY-MM-DD`, the writer's local
/// date). Derived from the line's own bytes, so copies of a line always land on the same day.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Day([u8; 10]);

impl Day {
    pub fn as_bytes(&self) -> &[u8; 10] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only ever built from validated ASCII digits and dashes.
        std::str::from_utf8(&self.0).unwrap_or("0000-00-00")
    }
}

impl fmt::Debug for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The day of an RFC 3339 timestamp, or `None` when `ts` is not one.
///
/// Accepts what Go's `time.Time` JSON decoding accepts from Reasonix:
/// `YYYY-MM-DDTHH:MM:SS[(.|,)fraction](Z|±HH:MM)`, with real calendar dates and in-range fields,
/// and Go's own leniencies: an hour of one digit, an offset up to `24:60`.
pub fn day_of_rfc3339(ts: &str) -> Option<Day> {
    parse(ts.as_bytes()).map(|parts| parts.day)
}

/// The instant of a timestamp [`day_of_rfc3339`] accepted, in Unix milliseconds (the fraction
/// cut, not rounded: a line is placed in the millisecond it was written in); `None` for any
/// other text.
pub fn unix_ms_of_rfc3339(ts: &str) -> Option<i64> {
    unix_ms_of_valid(ts)
}

/// [`day_of_rfc3339`] and [`unix_ms_of_rfc3339`] of `ts` in one reading.
pub(super) fn day_and_unix_ms(ts: &str) -> Option<(Day, i64)> {
    let p = parse(ts.as_bytes())?;
    Some((p.day, unix_ms_of(&p)?))
}

fn unix_ms_of_valid(ts: &str) -> Option<i64> {
    unix_ms_of(&parse(ts.as_bytes())?)
}

fn unix_ms_of(p: &Parts) -> Option<i64> {
    let b = p.day.as_bytes();
    let year = i64::from(two(b, 0)?) * 100 + i64::from(two(b, 2)?);
    let (month, day) = (i64::from(two(b, 5)?), i64::from(two(b, 8)?));
    let local = days_from_civil(year, month, day) * 86_400 + p.seconds_of_day;
    Some((local - p.offset_seconds) * 1000 + p.millis)
}

/// A timestamp's parts, as Go's `time.Parse` reads RFC 3339.
struct Parts {
    day: Day,
    seconds_of_day: i64,
    millis: i64,
    /// East of UTC.
    offset_seconds: i64,
}

fn parse(b: &[u8]) -> Option<Parts> {
    if b.len() < 19 || !valid_date(&b[..10]) || b[10] != b'T' {
        return None;
    }
    // Go reads the hour of its layout ("15") with one digit or two.
    let hour_digits = if b[12] == b':' { 1 } else { 2 };
    let hour = match hour_digits {
        1 => b[11].is_ascii_digit().then(|| b[11] - b'0')?,
        _ => two(b, 11)?,
    };
    let at = 11 + hour_digits;
    let (minute, second) = (two(b, at + 1)?, two(b, at + 4)?);
    if b[at] != b':' || b.get(at + 3) != Some(&b':') || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &b[at + 6..];
    let mut millis = 0;
    // Go takes a comma for the point too.
    if let [b'.' | b',', fraction @ ..] = rest {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        millis = fraction[..digits.min(3)]
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(3)
            .fold(0, |n, c| n * 10 + i64::from(c - b'0'));
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        [b'Z'] => 0,
        // Go's own bounds on an offset: up to 24 hours and 60 minutes.
        [sign @ (b'+' | b'-'), ..] if rest.len() == 6 && rest[3] == b':' => {
            match (two(rest, 1), two(rest, 4)) {
                (Some(h), Some(m)) if h <= 24 && m <= 60 => {
                    let east = i64::from(h) * 3600 + i64::from(m) * 60;
                    if *sign == b'+' { east } else { -east }
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(Parts {
        day: Day(b[..10].try_into().expect("ten bytes")),
        seconds_of_day: i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second),
        millis,
        offset_seconds,
    })
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn valid_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let year = match (two(b, 0), two(b, 2)) {
        (Some(century), Some(rest)) => century as u32 * 100 + rest as u32,
        _ => return false,
    };
    let (Some(month), Some(day)) = (two(b, 5), two(b, 8)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
}

/// Two ASCII digits at `at`, as a number.
fn two(b: &[u8], at: usize) -> Option<u8> {
    match b.get(at..at + 2)? {
        [tens @ b'0'..=b'9', ones @ b'0'..=b'9'] => Some((tens - b'0') * 10 + (ones - b'0')),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_timestamps_reasonix_writes() {
        for ts in [
            "2026-08-07T00:22:43.571662+08:00",
            "2026-08-15T12:25:02.104937261+01:00",
            "2026-08-15T12:25:02.1049372-05:30",
            "2026-08-02T10:00:00+08:00",
            "2026-08-02T10:00:00Z",
            "2024-02-29T23:59:59.5Z",
        ] {
            assert!(day_of_rfc3339(ts).is_some(), "{ts}");
        }
        assert_eq!(
            day_of_rfc3339("2026-08-07T00:22:43Z").unwrap().as_str(),
            "2026-08-07"
        );
    }

    #[test]
    fn the_instant_is_the_timestamps_own_in_any_offset() {
        let cases = [
            ("1970-01-01T00:00:00Z", 0),
            ("2026-08-07T00:22:43.571662+08:00", 1_786_033_363_571),
            ("2026-08-06T16:22:43.5719Z", 1_786_033_363_571),
            ("2026-08-06T10:52:43.571-05:30", 1_786_033_363_571),
            ("2024-02-29T23:59:59.5Z", 1_709_251_199_500),
            ("2000-03-01T00:00:00.999999999Z", 951_868_800_999),
            ("1969-12-31T23:59:59.9Z", -100),
        ];
        for (ts, ms) in cases {
            assert_eq!(unix_ms_of_rfc3339(ts), Some(ms), "{ts}");
        }
        assert_eq!(unix_ms_of_rfc3339("2026-02-29T00:00:00Z"), None);
    }

    #[test]
    fn an_hour_of_one_digit_is_read_as_go_reads_it() {
        assert_eq!(
            day_of_rfc3339("2026-08-07T1:02:03Z")
                .map(|d| d.as_str().to_owned())
                .as_deref(),
            Some("2026-08-07")
        );
        assert_eq!(unix_ms_of_rfc3339("1970-01-01T1:00:00.5Z"), Some(3_600_500));
        for ts in [
            "2026-08-07T01:2:03Z",
            "2026-08-07T01:02:3Z",
            "2026-8-07T01:02:03Z",
            "2026-08-07T:02:03Z",
            "2026-08-07T1:02:03",
        ] {
            assert!(day_of_rfc3339(ts).is_none(), "{ts}");
        }
    }

    #[test]
    fn accepts_what_gos_time_accepts_at_its_edges() {
        // Go bounds an offset at 24 hours and 60 minutes, and takes a comma for the point.
        for ts in [
            "2026-08-07T00:00:00+24:00",
            "2026-08-07T00:00:00-05:60",
            "2026-08-07T00:00:00,5Z",
        ] {
            assert_eq!(
                day_of_rfc3339(ts).map(|d| d.as_str().to_owned()).as_deref(),
                Some("2026-08-07"),
                "{ts}"
            );
        }
        assert_eq!(
            unix_ms_of_rfc3339("1970-01-01T00:00:00,25-00:60"),
            Some(3_600_000 + 250)
        );
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for ts in [
            "",
            "2026-08-07",
            "2026-08-07 00:22:43Z",
            "2026-08-07T00:22:43",
            "2026-08-07T24:00:00Z",
            "2026-08-07T00:60:00Z",
            "2026-08-07T00:00:60Z",
            "2026-13-07T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-08-07T00:00:00.Z",
            "2026-08-07T00:00:00+0800",
            "2026-08-07T00:00:00+25:00",
            "2026-08-07T00:00:00-05:61",
            "2026-08-07T00:00:00,Z",
            "2026-08-07T00:00:00z",
            "1754000000",
            "2026-08-07T00:00:00Zjunk",
        ] {
            assert!(day_of_rfc3339(ts).is_none(), "{ts}");
        }
    }
}

//! The time zone of the budgets' days and months, as PromQL can use it. PromQL knows only UTC,
//! so the rules shift `time()` by the zone's offset: a number for a fixed offset, and for a zone
//! with summer time an expression that adds each change of offset from the moment it happens,
//! taken from the time zone database for a fixed span of years (`SPAN`).

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// The years whose changes of offset the rules carry: 2026-01-01 to 2036-01-01 UTC. Past its end
/// the offset stays the last one; `reasonix-exporter rules` of a later version moves the span.
pub const SPAN: (i64, i64) = (1_767_225_600, 2_082_758_400);

/// A time zone: its name as written and its offset over [`SPAN`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    pub name: String,
    /// The offset (seconds east of UTC) before the span, and each change in it: from that Unix
    /// second on, the offset is the new one.
    pub offset: i32,
    pub changes: Vec<(i64, i32)>,
}

impl Zone {
    /// `UTC`, a fixed offset (`+08:00`, `-05:30`), or a name of the time zone database
    /// (`Asia/Shanghai`, `Europe/Berlin`).
    pub fn parse(text: &str) -> Result<Zone, String> {
        if let Some(offset) = fixed_offset(text) {
            return Ok(Zone {
                name: text.into(),
                offset,
                changes: Vec::new(),
            });
        }
        let tz = TimeZone::get(text).map_err(|_| {
            format!("time_zone = `{text}`: a name such as \"Asia/Shanghai\", \"UTC\" or an offset such as \"+08:00\"")
        })?;
        let start = Timestamp::from_second(SPAN.0).expect("within jiff's range");
        let offset = tz.to_offset(start).seconds();
        let changes = tz
            .following(start)
            .take_while(|t| t.timestamp().as_second() < SPAN.1)
            .map(|t| (t.timestamp().as_second(), t.offset().seconds()))
            .collect();
        Ok(Zone {
            name: text.into(),
            offset,
            changes,
        })
    }

    /// The zone's offset in seconds at PromQL's `time()`, as a scalar expression.
    pub fn offset_expr(&self) -> String {
        let mut expr = self.offset.to_string();
        let mut before = self.offset;
        for (at, offset) in &self.changes {
            let step = offset - before;
            let sign = if step < 0 { '-' } else { '+' };
            expr.push_str(&format!(" {sign} {} * (time() >= bool {at})", step.abs()));
            before = *offset;
        }
        if self.changes.is_empty() {
            expr
        } else {
            format!("({expr})")
        }
    }
}

/// `UTC`, `Z`, or `±HH:MM` (a whole number of minutes, below a day).
fn fixed_offset(text: &str) -> Option<i32> {
    if text == "UTC" || text == "Z" {
        return Some(0);
    }
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = text[1..].split_once(':')?;
    let number =
        |s: &str| (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<i32>().ok())?;
    let (hours, minutes) = (number(hours)?, number(minutes)?);
    (hours < 24 && minutes < 60).then_some(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_offset_is_a_number() {
        assert_eq!(Zone::parse("+08:00").unwrap().offset_expr(), "28800");
        assert_eq!(Zone::parse("-05:37").unwrap().offset_expr(), "-20220");
        assert_eq!(Zone::parse("UTC").unwrap().offset_expr(), "0");
        assert_eq!(Zone::parse("Asia/Shanghai").unwrap().offset_expr(), "28800");
        for wrong in ["+8", "+24:00", "08:00", "Mars/Olympus", ""] {
            assert!(Zone::parse(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn summer_time_is_each_change_from_its_moment() {
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        assert_eq!(berlin.offset, 3600);
        assert_eq!(berlin.changes.len(), 20);
        // 2026-03-29 01:00 UTC: clocks go forward; 2026-10-25 01:00 UTC: back.
        assert_eq!(berlin.changes[0], (1_774_746_000, 7200));
        assert_eq!(berlin.changes[1], (1_792_890_000, 3600));
        let expr = berlin.offset_expr();
        assert!(
            expr.starts_with(
                "(3600 + 3600 * (time() >= bool 1774746000) - 3600 * (time() >= bool 1792890000)"
            ),
            "{expr}"
        );
    }
}

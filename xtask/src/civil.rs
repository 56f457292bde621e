//! Calendar dates from `SOURCE_DATE_EPOCH`, for the formats that want them (zip entries, Debian's
//! changelog, the image's `created`), without a time zone: everything here is UTC.

/// Year, month, day, hour, minute and second of `epoch` seconds, in UTC.
pub fn utc(epoch: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (epoch / 86_400) as i64;
    let secs = (epoch % 86_400) as u32;
    // Days to a proleptic Gregorian date, counting in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, secs / 3_600, secs / 60 % 60, secs % 60)
}

/// RFC 3339, as OCI's `created` wants it: `2026-12-04T16:00:00Z`.
pub fn rfc3339(epoch: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(epoch);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// RFC 2822, as Debian's changelog wants it: `Fri, 04 Dec 2026 16:00:00 +0000`.
pub fn rfc2822(epoch: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s) = utc(epoch);
    let weekday = DAYS[(epoch / 86_400 % 7) as usize];
    let month = MONTHS[mo as usize - 1];
    format!("{weekday}, {d:02} {month} {y} {h:02}:{mi:02}:{s:02} +0000")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_agree_with_date_1() {
        // `date -u -d @1796400000 -R`
        assert_eq!(rfc2822(1_796_400_000), "Fri, 04 Dec 2026 16:00:00 +0000");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc2822(4_133_980_799), "Fri, 31 Dec 2100 23:59:59 +0000");
    }
}

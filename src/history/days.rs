//! The days (blocks) a line can fall on, found without decoding it: the first reading only has
//! to learn which days each file holds, and any superset of them is safe (a day is then held a
//! little longer); only a day missed would not be.
//!
//! A line's block is its `ts`'s (the last top-level one, as the decoder takes it), or the last
//! day of history when it has none: that day is every file's anyway, being the last. So the days
//! of every `"ts"` key's valid RFC 3339 value are a superset, however the keys nest or repeat.
//! A line with a backslash could spell its key with an escape: it is decoded instead.

use memchr::memmem;

use super::Grid;
use crate::ledger::decode::{Decoded, decode};
use crate::ledger::timestamp::unix_ms_of_rfc3339;

const KEY: &[u8] = b"\"ts\"";

/// Calls `day` with every block `line`'s row can fall on, besides the last day of history.
pub fn days_of(line: &[u8], grid: &Grid, mut day: impl FnMut(i64)) {
    let mut at = |ms: Option<i64>| day(Grid::block_of(grid.point_of(ms)));
    if memchr::memchr(b'\\', line).is_some() {
        if let Decoded::Row(row) = decode(line) {
            at(row.at_ms);
        }
        return;
    }
    for found in memmem::find_iter(line, KEY) {
        let rest = skip_space(&line[found + KEY.len()..]);
        let Some(rest) = rest.strip_prefix(b":") else {
            continue; // A value "ts", not a key.
        };
        let Some(value) = skip_space(rest).strip_prefix(b"\"") else {
            continue; // `null` (the last day's) or not a string (not a row's).
        };
        let end = memchr::memchr(b'"', value).unwrap_or(value.len());
        let ms = std::str::from_utf8(&value[..end])
            .ok()
            .and_then(unix_ms_of_rfc3339);
        if ms.is_some() {
            at(ms);
        }
    }
}

/// `bytes` after JSON's white space.
fn skip_space(bytes: &[u8]) -> &[u8] {
    let n = bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    &bytes[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: i64 = 86_400_000;

    #[test]
    fn every_day_the_decoder_would_place_a_line_on_is_found() {
        let grid = Grid::new(60_000, 30_000 * DAY_MS as u64 * 1_000_000);
        let last = Grid::block_of(grid.point_of(None));
        let lines: [&[u8]; 9] = [
            br#"{"ts":"2026-08-07T00:22:43.571662+08:00","model":"m","total":5}"#,
            br#"{ "ts" : "2026-08-07T23:59:59.999-05:00" ,"total":5}"#,
            br#"{"ts":"2026-08-01T10:00:00Z","ts":"2026-09-01T10:00:00Z","total":5}"#,
            br#"{"nested":{"ts":"2026-01-01T00:00:00Z"},"ts":"2026-08-02T10:00:00Z","total":5}"#,
            br#"{"t\u0073":"2026-08-03T10:00:00Z","total":5}"#,
            br#"{"source":"ts","ts":"2026-08-04T10:00:00+05:45","total":5}"#,
            br#"{"ts":null,"total":5}"#,
            br#"{"total":5}"#,
            b"{\"ts\":\"2026-08-05T10:00:00Z\",\"model\":\"\xff\",\"total\":5}",
        ];
        for line in lines {
            let mut found = vec![last];
            days_of(line, &grid, |d| found.push(d));
            let Decoded::Row(row) = decode(line) else {
                panic!("a row: {}", String::from_utf8_lossy(line));
            };
            let placed = Grid::block_of(grid.point_of(row.at_ms));
            assert!(
                found.contains(&placed),
                "{} falls on {placed}, found {found:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

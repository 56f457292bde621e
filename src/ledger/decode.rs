//! One ledger line in, one [`Decoded`] out: the allow-list decoder of docs/counting-rules.md.
//!
//! Only `ts, model, source`, the counts the catalog names (`catalog.rs`: `prompt, completion,
//! reasoning, cache_hit, cache_miss, total, requests`), `turn`, the five fields of the price quote (`cost_amount, cost_currency, cost_complete,
//! billing_mode, incomplete_reason`; see `quote.rs`) and the presence of `compaction` are looked
//! at. The other fields of Reasonix's record are checked against their Go types and dropped
//! (`key.rs`, [`GoType`](super::key::GoType)): a value of the wrong type there makes Go refuse
//! the line. Every other key is skipped by serde's `IgnoredAny`. Nothing but the allow-listed
//! fields is kept, so nothing a future Reasonix writes (or a prompt that leaked into a field) can
//! reach the store, a label or a log line.
//!
//! The decoder follows Go's `encoding/json`, which is what Reasonix reads its own ledger with:
//! invalid UTF-8 becomes U+FFFD byte by byte, a key matches its field case-insensitively when no
//! field has its exact name, a repeated key's last value wins but `null` leaves the one before,
//! a value of the wrong type anywhere rejects the line, `-0` is 0.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::field::Field;
use super::go_text::{go_lossy_utf8, go_surrogates, go_trim_space};
use super::go_values::{
    CountsFrom, GO_MAX_DEPTH, Stamp, Text, nested_deeper_than, next_compaction, next_count, next_fits,
    next_scalar, timestamp,
};
use super::key::{Key, key_of};
use super::quote::{Amount, Currency, Quote, QuoteFields};
use super::timestamp::Day;
use crate::catalog::Quantity;

/// The counts a usage row carries, one per quantity the catalog reads from a ledger field;
/// absent counts are zero. `requests` is already normalised: as written, or 1 for a legacy row
/// (absent or 0, `total > 0`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts([u64; Quantity::COUNT]);

impl Counts {
    pub fn get(&self, q: Quantity) -> u64 {
        self.0[q.index()]
    }

    pub fn set(&mut self, q: Quantity, value: u64) {
        self.0[q.index()] = value;
    }

    /// The counts of `values`, each set once; the rest zero.
    pub fn of(values: &[(Quantity, u64)]) -> Counts {
        let mut counts = Counts::default();
        for &(q, value) in values {
            counts.set(q, value);
        }
        counts
    }
}

/// What a well-formed row means for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Token and request counts to add.
    Usage(Counts),
    /// A turn-completed marker: `turns += 1`, nothing else.
    Turn,
    /// Context-compaction diagnostics: counts nothing.
    Compaction,
}

/// A well-formed ledger row, reduced to the allow-listed fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    pub kind: RowKind,
    pub model: Option<Cow<'a, str>>,
    pub source: Option<Cow<'a, str>>,
    /// The calendar day of `ts` as written (its local date), when the row has one.
    pub day: Option<Day>,
    /// The instant of `ts` (Unix ms), when the row has one: where its history is placed.
    pub at_ms: Option<i64>,
    /// The row's price quote; it counts only on a usage row.
    pub quote: Quote<'a>,
}

/// Why a line counts nothing. Tallied in a self-metric; the line itself is never kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rejection {
    /// Not JSON, even after Go-style replacement of invalid UTF-8 (a torn fragment, say).
    InvalidJson,
    /// Valid JSON, but not an object.
    NotObject,
    /// A count that is not a non-negative integer below 2^63.
    BadCount,
    /// `ts` present but not an RFC 3339 string.
    BadTimestamp,
    /// `model` or `source` present but not a string.
    BadLabel,
    /// `turn` present but not a boolean.
    BadTurn,
    /// Longer than `tail::MAX_LINE` (64 MiB): rejected without being held.
    TooLong,
    /// `compaction` present but neither an object nor `null`.
    BadCompaction,
}

impl Rejection {
    pub const ALL: [Rejection; 8] = [
        Rejection::InvalidJson,
        Rejection::NotObject,
        Rejection::BadCount,
        Rejection::BadTimestamp,
        Rejection::BadLabel,
        Rejection::BadTurn,
        Rejection::TooLong,
        Rejection::BadCompaction,
    ];

    /// The value of the `reason` attribute on the rejected-lines self-metric.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::InvalidJson => "invalid_json",
            Rejection::NotObject => "not_object",
            Rejection::BadCount => "bad_count",
            Rejection::BadTimestamp => "bad_ts",
            Rejection::BadLabel => "bad_label",
            Rejection::BadTurn => "bad_turn",
            Rejection::TooLong => "too_long",
            Rejection::BadCompaction => "bad_compaction",
        }
    }
}

/// The decoder's verdict on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// Empty or white space only: ignored, neither counted nor rejected.
    Blank,
    Row(Row<'a>),
    Rejected(Rejection),
}

/// Decodes one line (without its `\n`).
pub fn decode(line: &[u8]) -> Decoded<'_> {
    // Reasonix trims a line with Go's `strings.TrimSpace` before it decodes it, and skips it
    // when nothing is left. (The line's identity is its bytes as written.)
    let line = go_trim_space(line);
    if line.is_empty() {
        return Decoded::Blank;
    }
    if line.len() > 2 * GO_MAX_DEPTH && nested_deeper_than(line, GO_MAX_DEPTH) {
        return Decoded::Rejected(Rejection::InvalidJson);
    }
    // One UTF-8 check of the whole line, then a parse that trusts it. (Letting serde_json check
    // string by string instead measured 5x the cost: every key is a separate small check.)
    let text = go_lossy_utf8(line);
    let decoded = match &text {
        Cow::Borrowed(text) => decode_text(text),
        Cow::Owned(text) => decode_owned(text),
    };
    match decoded {
        // Go's decoder reads a lone surrogate as U+FFFD, where serde_json refuses the line.
        Decoded::Rejected(Rejection::InvalidJson) => match go_surrogates(&text) {
            Some(fixed) => decode_owned(&fixed),
            None => decoded,
        },
        decoded => decoded,
    }
}

/// Decodes a repaired text: the row would borrow from it, and such lines are rare, so their
/// labels are owned.
fn decode_owned(text: &str) -> Decoded<'static> {
    match decode_text(text) {
        Decoded::Row(row) => Decoded::Row(row.into_owned()),
        Decoded::Blank => Decoded::Blank,
        Decoded::Rejected(why) => Decoded::Rejected(why),
    }
}

fn decode_text(text: &str) -> Decoded<'_> {
    // The fields are filled in place (a seed, not a returned value): they are a few hundred
    // bytes, and moving them out through serde showed in the backfill profile.
    let mut fields = Fields::default();
    let mut parsed = parse_into(text, &mut fields, CountsFrom::Fast);
    // serde_json hands `-0`, `-0.0` and `-0e0` over as the same float: only the text tells the
    // one Go takes for 0 from the others; and it refuses a number past a float's range (`1e400`)
    // that Go reads as a count of the wrong type. Rare, so read again from the numbers' text.
    if fields.ambiguous || parsed.is_err() {
        fields = Fields::default();
        parsed = parse_into(text, &mut fields, CountsFrom::FromText);
    }
    match parsed {
        Err(_) => Decoded::Rejected(Rejection::InvalidJson),
        Ok(false) => Decoded::Rejected(Rejection::NotObject),
        Ok(true) => match fields.into_row() {
            Ok(row) => Decoded::Row(row),
            Err(why) => Decoded::Rejected(why),
        },
    }
}

/// Parses `text` into `fields`: whether it was an object, or an error for what is no JSON.
fn parse_into<'a>(text: &'a str, fields: &mut Fields<'a>, counts: CountsFrom) -> serde_json::Result<bool> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    de::DeserializeSeed::deserialize(TopLevel(fields, counts), &mut deserializer)
        .and_then(|object| deserializer.end().map(|()| object))
}

impl Row<'_> {
    fn into_owned(self) -> Row<'static> {
        Row {
            kind: self.kind,
            model: self.model.map(|m| Cow::Owned(m.into_owned())),
            source: self.source.map(|s| Cow::Owned(s.into_owned())),
            day: self.day,
            at_ms: self.at_ms,
            quote: self.quote.into_owned(),
        }
    }
}

#[derive(Debug, Default)]
struct Fields<'a> {
    ts: Field<Stamp>,
    model: Field<Cow<'a, str>>,
    source: Field<Cow<'a, str>>,
    /// By [`Quantity`]; those read from no field stay absent.
    counts: [Field<i64>; Quantity::COUNT],
    turn: Field<bool>,
    quote: QuoteFields<'a>,
    compaction: Field<()>,
    /// A count was a negative zero float, which only its text tells apart (see `decode_text`).
    ambiguous: bool,
    /// A field of Reasonix's record that is not kept held a value of the wrong type for it:
    /// Go refuses the line.
    wrong_type: bool,
}

impl<'a> Fields<'a> {
    fn into_row(self) -> Result<Row<'a>, Rejection> {
        let (day, at_ms) = match self.ts {
            Field::Absent => (None, None),
            Field::Value(ts) => (Some(ts.day), Some(ts.at_ms)),
            Field::Bad => return Err(Rejection::BadTimestamp),
        };
        let label = |field: Field<Cow<'a, str>>| match field {
            Field::Absent => Ok(None),
            Field::Value(text) => Ok(Some(text)),
            Field::Bad => Err(Rejection::BadLabel),
        };
        let model = label(self.model)?;
        let source = label(self.source)?;
        let turn = match self.turn {
            Field::Absent => false,
            Field::Value(turn) => turn,
            Field::Bad => return Err(Rejection::BadTurn),
        };
        // Go takes a negative count (its field is an `int`); the contract refuses the line, by
        // the value that stands after every repeat of the key.
        let mut counts = Counts::default();
        for (q, field) in Quantity::ALL.into_iter().zip(self.counts) {
            let count = match field {
                Field::Absent => 0,
                Field::Value(n) => u64::try_from(n).map_err(|_| Rejection::BadCount)?,
                Field::Bad => return Err(Rejection::BadCount),
            };
            counts.set(q, count);
        }
        // Rows older than the `requests` field stand for one request each.
        if counts.get(Quantity::Requests) == 0 && counts.get(Quantity::Total) > 0 {
            counts.set(Quantity::Requests, 1);
        }
        if self.compaction.is_bad() {
            return Err(Rejection::BadCompaction);
        }
        // Reasonix cannot read the line: to it, one that is no JSON.
        if self.wrong_type {
            return Err(Rejection::InvalidJson);
        }
        let kind = if turn {
            RowKind::Turn
        } else if self.compaction.value().is_some() {
            RowKind::Compaction
        } else {
            RowKind::Usage(counts)
        };
        let quote = self.quote.into_quote();
        Ok(Row {
            kind,
            model,
            source,
            day,
            at_ms,
            quote,
        })
    }
}

/// The top level of a line: fills the fields of an object, and says whether it was one.
struct TopLevel<'f, 'a>(&'f mut Fields<'a>, CountsFrom);

impl<'de> de::DeserializeSeed<'de> for TopLevel<'_, 'de> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, 'de> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (fields, counts) = (self.0, self.1);
        while let Some(key) = map.next_key::<Text<'de>>()? {
            // A repeated key is taken as Go takes it (`Field::take`).
            match key_of(&key.0) {
                Key::Ts => fields
                    .ts
                    .take(timestamp(next_scalar(&mut map, counts)?.into_text())),
                Key::Model => fields.model.take(next_scalar(&mut map, counts)?.into_text()),
                Key::Source => fields.source.take(next_scalar(&mut map, counts)?.into_text()),
                Key::Count(q) => {
                    let count = next_count(&mut map, counts, &mut fields.ambiguous)?;
                    fields.counts[q.index()].take(count)
                }
                Key::Turn => fields.turn.take(next_scalar(&mut map, counts)?.into_bool()),
                Key::CostAmount => fields.quote.amount.take(
                    next_scalar(&mut map, counts)?
                        .into_text()
                        .map(|t| Amount::parse(&t)),
                ),
                Key::CostCurrency => fields.quote.currency.take(
                    next_scalar(&mut map, counts)?
                        .into_text()
                        .map(|t| Currency::parse(&t)),
                ),
                // `*bool` in Reasonix's record: a later `null` clears it.
                Key::CostComplete => fields
                    .quote
                    .complete
                    .take_pointer(next_scalar(&mut map, counts)?.into_bool()),
                Key::BillingMode => fields
                    .quote
                    .billing_mode
                    .take(next_scalar(&mut map, counts)?.into_text()),
                Key::IncompleteReason => fields
                    .quote
                    .incomplete_reason
                    .take(next_scalar(&mut map, counts)?.into_text()),
                // A pointer to a struct in Reasonix's record: `null` clears it, an object sets it,
                // anything else is an error for the line.
                Key::Compaction => {
                    let found = next_compaction(&mut map, counts, &mut fields.ambiguous)?;
                    fields.compaction.take_pointer(found);
                }
                Key::Checked(ty) => {
                    if !next_fits(&mut map, ty, counts, &mut fields.ambiguous)? {
                        fields.wrong_type = true;
                    }
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(line: &str) -> Row<'_> {
        match decode(line.as_bytes()) {
            Decoded::Row(row) => row,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn rejected(line: &[u8]) -> Rejection {
        match decode(line) {
            Decoded::Rejected(why) => why,
            other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    fn usage(line: &str) -> Counts {
        match row(line).kind {
            RowKind::Usage(counts) => counts,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn usage_row_keeps_every_count() {
        let line = r#"{"ts":"2026-08-07T00:22:43.571662+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop","prompt":7517,"completion":260,"reasoning":120,"cache_hit":7424,"cache_miss":93,"total":7777,"requests":1}"#;
        let r = row(line);
        assert_eq!(r.model.as_deref(), Some("deepseek/deepseek-v4-flash"));
        assert_eq!(r.source.as_deref(), Some("desktop"));
        assert_eq!(r.day.unwrap().as_str(), "2026-08-07");
        assert_eq!(
            r.kind,
            RowKind::Usage(Counts::of(&[
                (Quantity::Prompt, 7517),
                (Quantity::Completion, 260),
                (Quantity::Reasoning, 120),
                (Quantity::CacheHit, 7424),
                (Quantity::CacheMiss, 93),
                (Quantity::Total, 7777),
                (Quantity::Requests, 1)
            ]))
        );
    }

    #[test]
    fn legacy_row_counts_one_request() {
        assert_eq!(
            usage(r#"{"ts":"2026-08-02T10:00:00+08:00","total":100}"#).get(Quantity::Requests),
            1
        );
        assert_eq!(usage(r#"{"total":100,"requests":0}"#).get(Quantity::Requests), 1);
        assert_eq!(usage(r#"{"total":0}"#).get(Quantity::Requests), 0);
        assert_eq!(usage(r#"{"model":"m","requests":3}"#).get(Quantity::Requests), 3);
    }

    #[test]
    fn turn_and_compaction_rows() {
        assert_eq!(
            row(r#"{"ts":"2026-08-15T12:25:02Z","source":"cli","turn":true}"#).kind,
            RowKind::Turn
        );
        // A turn marker counts a turn and nothing else, whatever else it carries.
        assert_eq!(row(r#"{"turn":true,"total":5}"#).kind, RowKind::Turn);
        assert_eq!(
            row(r#"{"source":"desktop","compaction":{"trigger":"auto"}}"#).kind,
            RowKind::Compaction
        );
        assert!(matches!(
            row(r#"{"compaction":null,"total":1}"#).kind,
            RowKind::Usage(_)
        ));
        assert!(matches!(
            row(r#"{"turn":false,"total":1}"#).kind,
            RowKind::Usage(_)
        ));
    }

    #[test]
    fn blank_lines_are_ignored() {
        assert_eq!(decode(b""), Decoded::Blank);
        assert_eq!(decode(b"  \t\r"), Decoded::Blank);
        // What Go's `strings.TrimSpace` leaves nothing of: Reasonix skips it as blank.
        assert_eq!(decode(b"\x0b\x0c \xc2\xa0\xe3\x80\x80"), Decoded::Blank);
    }

    /// Reasonix trims a line with Go's `strings.TrimSpace` before it decodes it: a row with
    /// Unicode white space around it counts, one with an invalid byte there does not.
    #[test]
    fn white_space_around_a_line_is_cut_as_go_cuts_it() {
        for line in [
            "\u{a0}{\"total\":5}",
            "{\"total\":5}\x0c",
            "\x0b{\"total\":5}\u{85}",
            "\u{3000}{\"total\":5}\u{2028}\u{2029}\u{202f}",
        ] {
            assert!(matches!(decode(line.as_bytes()), Decoded::Row(_)), "{line:?}");
        }
        // A zero-width space is not white space to Go, nor is a lone byte of a wide space.
        for line in [
            &b"\xe2\x80\x8b{\"total\":5}"[..],
            b"\xa0{\"total\":5}",
            b"{\"total\":5}\xc2",
        ] {
            assert_eq!(rejected(line), Rejection::InvalidJson, "{line:?}");
        }
    }

    #[test]
    fn rejections_by_reason() {
        assert_eq!(rejected(br#"{"ts":"2026-08-07T00:22"#), Rejection::InvalidJson);
        assert_eq!(rejected(b"not json"), Rejection::InvalidJson);
        assert_eq!(rejected(br#"{"total":1} {"total":2}"#), Rejection::InvalidJson);
        assert_eq!(rejected(b"[1,2]"), Rejection::NotObject);
        assert_eq!(rejected(b"42"), Rejection::NotObject);
        assert_eq!(rejected(b"null"), Rejection::NotObject);
        for bad in [
            r#""5""#,
            "1.5",
            "1.0",
            "1e3",
            "-1",
            "true",
            "[]",
            "{}",
            "9223372036854775808",
        ] {
            assert_eq!(
                rejected(format!(r#"{{"total":{bad}}}"#).as_bytes()),
                Rejection::BadCount,
                "{bad}"
            );
        }
        assert_eq!(rejected(br#"{"ts":"yesterday"}"#), Rejection::BadTimestamp);
        assert_eq!(rejected(br#"{"ts":1754000000}"#), Rejection::BadTimestamp);
        assert_eq!(rejected(br#"{"model":5}"#), Rejection::BadLabel);
        assert_eq!(rejected(br#"{"source":["cli"]}"#), Rejection::BadLabel);
        assert_eq!(rejected(br#"{"turn":"true"}"#), Rejection::BadTurn);
        assert_eq!(rejected(br#"{"turn":1}"#), Rejection::BadTurn);
    }

    #[test]
    fn null_counts_as_absent() {
        let r = row(r#"{"ts":null,"model":null,"source":null,"total":null,"prompt":3,"turn":null}"#);
        assert_eq!(r.day, None);
        assert_eq!(r.model, None);
        assert_eq!(usage(r#"{"total":null,"prompt":3}"#).get(Quantity::Prompt), 3);
    }

    #[test]
    fn largest_count_is_accepted() {
        assert_eq!(
            usage(r#"{"total":9223372036854775807}"#).get(Quantity::Total),
            i64::MAX as u64
        );
    }

    #[test]
    fn a_repeated_key_is_taken_as_go_takes_it() {
        assert_eq!(usage(r#"{"total":1,"total":7}"#).get(Quantity::Total), 7);
        // `null` leaves the value before it; a wrong type anywhere is an error for the line.
        assert_eq!(usage(r#"{"total":5,"total":null}"#).get(Quantity::Total), 5);
        assert_eq!(row(r#"{"model":"a","model":null}"#).model.as_deref(), Some("a"));
        assert_eq!(row(r#"{"turn":true,"turn":null}"#).kind, RowKind::Turn);
        assert_eq!(rejected(br#"{"total":1,"total":"x"}"#), Rejection::BadCount);
        assert_eq!(rejected(br#"{"total":"x","total":5}"#), Rejection::BadCount);
        assert_eq!(
            rejected(br#"{"prompt":[],"prompt":3,"total":3}"#),
            Rejection::BadCount
        );
        assert_eq!(rejected(br#"{"turn":1,"turn":true}"#), Rejection::BadTurn);
        assert_eq!(rejected(br#"{"source":5,"source":"cli"}"#), Rejection::BadLabel);
        assert_eq!(
            rejected(br#"{"ts":"bad","ts":"2026-08-07T00:22:43Z"}"#),
            Rejection::BadTimestamp
        );
        // A pointer in Reasonix's record: `null` after an object clears it.
        assert!(matches!(
            row(r#"{"compaction":{},"compaction":null,"total":1}"#).kind,
            RowKind::Usage(_)
        ));
    }

    /// Reasonix's record has fields the exporter does not keep: Go still refuses a line where
    /// one of them holds a value of the wrong type, and so the line counts nothing.
    #[test]
    fn a_field_not_kept_still_has_its_go_type() {
        for bad in [
            r#"{"source":"s01","total":5,"prefix_changed":"x"}"#,
            r#"{"total":5,"prefix_reasons":[1]}"#,
            r#"{"total":5,"prefix_reasons":"a"}"#,
            r#"{"total":5,"Selected_Cost":"x"}"#,
            r#"{"total":5,"selected_cost":1e400}"#,
            r#"{"total":5,"display_complete":"x"}"#,
            r#"{"turn":true,"usage_source":7}"#,
        ] {
            assert_eq!(rejected(bad.as_bytes()), Rejection::InvalidJson, "{bad}");
        }
        for bad in [
            r#"{"compaction":{"src":"x"}}"#,
            r#"{"compaction":{"SRC":1.0}}"#,
            r#"{"compaction":{"tpc":1e400}}"#,
            r#"{"compaction":{"mode":[1]}}"#,
            r#"{"compaction":{"in":9223372036854775808}}"#,
        ] {
            assert_eq!(rejected(bad.as_bytes()), Rejection::BadCompaction, "{bad}");
        }
        for good in [
            r#"{"total":5,"prefix_reasons":["a",null],"selected_cost":1e-400,"display_complete":null}"#,
            r#"{"total":5,"selected_cost":-0,"cost_estimated":true,"rate_date":null,"unknown":1e400}"#,
        ] {
            assert!(matches!(decode(good.as_bytes()), Decoded::Row(_)), "{good}");
        }
        for good in [
            r#"{"compaction":{"src":-5,"tpc":5,"x":1e400}}"#,
            r#"{"compaction":{"src":-0}}"#,
        ] {
            assert_eq!(row(good).kind, RowKind::Compaction, "{good}");
        }
    }

    #[test]
    fn minus_zero_is_zero_and_other_spellings_of_zero_are_not_integers() {
        assert_eq!(
            usage(r#"{"total":-0,"prompt":-0,"requests":2}"#).get(Quantity::Total),
            0
        );
        assert_eq!(usage(r#"{"total": -0 ,"requests":2}"#).get(Quantity::Requests), 2);
        // Past a float's range: a count of the wrong type to Go, no reason to call the line no JSON.
        assert_eq!(rejected(br#"{"total":1e400}"#), Rejection::BadCount);
        // ... and in a field that takes no number: a value of the wrong type there. A quote of
        // the wrong type is `bad_cost` and the row's tokens still count (§8).
        for quote in [
            r#"{"total":5,"requests":1,"cost_complete":true,"cost_amount":1e400,"cost_currency":"USD"}"#,
            r#"{"total":5,"requests":1,"cost_complete":true,"cost_amount":"1","cost_currency":"USD","billing_mode":-1e999}"#,
        ] {
            let row = row(quote);
            assert_eq!(row.quote, Quote::Bad, "{quote}");
            assert!(
                matches!(row.kind, RowKind::Usage(c) if c.get(Quantity::Total) == 5),
                "{quote}"
            );
        }
        assert_eq!(rejected(br#"{"model":1e400,"total":1}"#), Rejection::BadLabel);
        assert_eq!(rejected(br#"{"turn":1e400}"#), Rejection::BadTurn);
        for bad in ["-0.0", "-0e0", "0.0", "0e0", "-1", "-9223372036854775808"] {
            let line = format!(r#"{{"total":{bad}}}"#);
            assert_eq!(rejected(line.as_bytes()), Rejection::BadCount, "{bad}");
        }
    }

    #[test]
    fn a_key_matches_its_field_in_any_letter_case_as_in_go() {
        let counts = usage(
            r#"{"TOTAL":9,"Prompt":5,"cOMPLETION":4,"Reasoning":1,"CACHE_HIT":3,"Cache_Miss":2,"REQUESTS":2}"#,
        );
        assert_eq!(
            counts,
            Counts::of(&[
                (Quantity::Prompt, 5),
                (Quantity::Completion, 4),
                (Quantity::Reasoning, 1),
                (Quantity::CacheHit, 3),
                (Quantity::CacheMiss, 2),
                (Quantity::Total, 9),
                (Quantity::Requests, 2)
            ])
        );
        let r = row(r#"{"Ts":"2026-08-07T00:22:43Z","MODEL":"m","Source":"cli","total":1}"#);
        assert_eq!(
            (r.model.as_deref(), r.source.as_deref()),
            (Some("m"), Some("cli"))
        );
        assert_eq!(r.day.unwrap().as_str(), "2026-08-07");
        assert_eq!(row(r#"{"Turn":true}"#).kind, RowKind::Turn);
        assert_eq!(row(r#"{"COMPACTION":{}}"#).kind, RowKind::Compaction);
        // Go's Unicode folding: the long s is an s; no other letter reaches these names.
        assert_eq!(
            usage("{\"reque\u{17F}ts\":4,\"total\":1}").get(Quantity::Requests),
            4
        );
        assert_eq!(row("{\"\u{17F}OURCE\":\"cli\"}").source.as_deref(), Some("cli"));
        assert_eq!(
            usage(r#"{"reque\u017fts":4,"total":1}"#).get(Quantity::Requests),
            4
        );
        for other in [
            "reasonıng",
            "REASONİNG",
            "reasoning\u{200b}",
            "tota",
            "totals",
            "to_tal",
        ] {
            let line = format!("{{{}:5,\"total\":1}}", serde_json::to_string(other).unwrap());
            let counts = usage(&line);
            assert_eq!(
                (counts.get(Quantity::Reasoning), counts.get(Quantity::Total)),
                (0, 1),
                "{line}"
            );
        }
        // The later key stands, whatever its case; a wrong type in any case is an error.
        assert_eq!(usage(r#"{"total":3,"TOTAL":5}"#).get(Quantity::Total), 5);
        assert_eq!(usage(r#"{"TOTAL":5,"total":3}"#).get(Quantity::Total), 3);
        assert_eq!(rejected(br#"{"Total":"5"}"#), Rejection::BadCount);
        assert_eq!(
            rejected(br#"{"TS":"yesterday","total":1}"#),
            Rejection::BadTimestamp
        );
    }

    #[test]
    fn unknown_fields_are_skipped_whatever_their_shape() {
        let line = r#"{"ts":"2026-08-07T00:22:43Z","prompt_text":"SECRET","total":5,"nested":{"a":[1,{"b":"SECRET"}]},"selected_amount":"0.01","future":1.5}"#;
        assert_eq!(usage(line).get(Quantity::Total), 5);
    }

    #[test]
    fn a_lone_surrogate_is_u_fffd_like_go_and_a_pair_is_its_character() {
        let r = row(r#"{"model":"a\ud800b\udc00","source":"\ud83d\ude00","total":1}"#);
        assert_eq!(r.model.as_deref(), Some("a\u{FFFD}b\u{FFFD}"));
        assert_eq!(r.source.as_deref(), Some("\u{1F600}"));
        let r = row(r#"{"model":"\\ud800 \ud800\ud800","total":1}"#);
        assert_eq!(r.model.as_deref(), Some("\\ud800 \u{FFFD}\u{FFFD}"));
        assert_eq!(
            rejected(br#"{"model":"\ud800","total":1"#),
            Rejection::InvalidJson
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_byte_by_byte_like_go() {
        assert_eq!(go_lossy_utf8(b"a\xffb"), "a\u{FFFD}b");
        // A truncated 4-byte sequence: Go gives one U+FFFD per byte, Rust's lossy gives one.
        assert_eq!(go_lossy_utf8(b"\xf0\x9f\x98a"), "\u{FFFD}\u{FFFD}\u{FFFD}a");
        assert_eq!(go_lossy_utf8(b"end\xe2\x82"), "end\u{FFFD}\u{FFFD}");
        let r = row(r#"{"model":"m\u0000","total":1}"#);
        assert_eq!(r.model.as_deref(), Some("m\u{0}"));
        assert_eq!(
            rejected(b"{\"model\":\"m\x00\",\"total\":1}"),
            Rejection::InvalidJson
        );
        let line = b"{\"model\":\"deep\xffseek/x\",\"total\":1}";
        match decode(line) {
            Decoded::Row(r) => assert_eq!(r.model.as_deref(), Some("deep\u{FFFD}seek/x")),
            other => panic!("{other:?}"),
        }
        // Invalid UTF-8 outside a string is still invalid JSON.
        assert_eq!(rejected(b"{\"total\":1}\xff"), Rejection::InvalidJson);
    }

    #[test]
    fn the_price_quote_is_decoded_and_null_is_absent() {
        let line = r#"{"model":"deepseek/deepseek-v4-flash","total":9,"requests":1,"cost_amount":"0.00123456","cost_currency":"CNY","selected_amount":"9.99","cost_complete":true,"incomplete_reason":null,"billing_mode":"payg","valuation_usd":"1"}"#;
        assert_eq!(
            row(line).quote,
            Quote::Priced {
                amount: Amount::from_units(1_234_560),
                currency: Currency::parse("CNY").unwrap(),
                billing_mode: Some("payg".into())
            }
        );
        let unpriced = r#"{"total":5,"cost_complete":false,"incomplete_reason":"no_price"}"#;
        assert_eq!(
            row(unpriced).quote,
            Quote::Incomplete {
                reason: Some("no_price".into())
            }
        );
        assert_eq!(row(r#"{"total":5,"cost_complete":null}"#).quote, Quote::Missing);
        // A pointer in Reasonix's record: a later `null` sets it back to nil.
        let cleared = r#"{"total":5,"cost_complete":true,"cost_amount":"1","cost_currency":"USD","cost_complete":null}"#;
        assert_eq!(row(cleared).quote, Quote::Missing);
        // A quote of the wrong type is a bad cost; the row's tokens still count.
        for bad in [
            r#"{"total":5,"cost_complete":"true"}"#,
            r#"{"total":5,"cost_complete":true,"cost_amount":0.5,"cost_currency":"USD"}"#,
            r#"{"total":5,"cost_complete":true,"cost_amount":"0.5","cost_currency":["USD"]}"#,
            r#"{"total":5,"billing_mode":1}"#,
            r#"{"total":5,"cost_complete":false,"incomplete_reason":{}}"#,
        ] {
            assert_eq!(row(bad).quote, Quote::Bad, "{bad}");
            assert_eq!(usage(bad).get(Quantity::Total), 5, "{bad}");
        }
    }

    #[test]
    fn escaped_keys_and_values_are_decoded() {
        let r = row(r#"{"\u0074otal":3,"model":"a\u002fb","source":"\u003ccli\u003e"}"#);
        assert_eq!(r.model.as_deref(), Some("a/b"));
        assert_eq!(r.source.as_deref(), Some("<cli>"));
        assert!(matches!(r.kind, RowKind::Usage(c) if c.get(Quantity::Total) == 3));
    }
}

//! Values as Go's `encoding/json` reads them into Reasonix's record (docs/counting-rules.md, "A
//! line is read as Reasonix reads it"): a count into an `int`, `ts` into a `time.Time`, any other
//! value reduced to what an allow-listed field can use, the fields it does not keep checked
//! against their Go types, and Go's limit on nesting.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::field::Field;
use super::key::{GoType, compaction_key};
use super::timestamp::{Day, day_and_unix_ms};

/// Go's decoder refuses a value nested deeper than this (serde_json, skipping a value, has no
/// limit).
pub(super) const GO_MAX_DEPTH: usize = 10_000;

/// Whether arrays and objects in `line` nest deeper than `limit`, strings skipped. Only a line
/// of more than `2 * limit` bytes can.
pub(super) fn nested_deeper_than(line: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in line {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// How counts are read: from serde_json's numbers (fast), or from their text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CountsFrom {
    Fast,
    FromText,
}

/// The next value as a count: from serde_json's number, or from its text where that was
/// ambiguous (a negative zero, `-0` being 0 and `-0.0` no integer to Go).
#[inline(always)]
pub(super) fn next_count<'de, A: MapAccess<'de>>(
    map: &mut A,
    counts: CountsFrom,
    ambiguous: &mut bool,
) -> Result<Field<i64>, A::Error> {
    if counts == CountsFrom::FromText {
        return Ok(count_of(map.next_value()?));
    }
    Ok(match map.next_value::<Scalar<'de>>()? {
        Scalar::Null => Field::Absent,
        Scalar::Unsigned(n) => i64::try_from(n).map_or(Field::Bad, Field::Value),
        Scalar::Negative(n) => Field::Value(n),
        Scalar::NegativeZero => {
            *ambiguous = true;
            Field::Bad
        }
        _ => Field::Bad,
    })
}

/// The next value as a [`Scalar`], for a field that takes no number: in the second reading
/// ([`CountsFrom::FromText`]) a number is told by its text alone, so that one past a float's
/// range (`1e400`), which serde_json refuses, is a value of the wrong type for its field, as Go
/// reads it, not a line that is no JSON.
#[inline(always)]
pub(super) fn next_scalar<'de, A: MapAccess<'de>>(
    map: &mut A,
    counts: CountsFrom,
) -> Result<Scalar<'de>, A::Error> {
    if counts == CountsFrom::Fast {
        return map.next_value::<Scalar<'de>>();
    }
    let raw: &'de RawValue = map.next_value()?;
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => Ok(Scalar::Number),
        _ => serde_json::from_str::<Scalar<'de>>(text).map_err(de::Error::custom),
    }
}

/// Whether the next value fits a field of Reasonix's record of Go type `ty` that is checked and
/// not kept (Go refuses the whole line otherwise). A negative zero for an `int` is decided from
/// its text, as a count's is (`ambiguous`).
pub(super) fn next_fits<'de, A: MapAccess<'de>>(
    map: &mut A,
    ty: GoType,
    counts: CountsFrom,
    ambiguous: &mut bool,
) -> Result<bool, A::Error> {
    Ok(match (ty, counts) {
        (GoType::Text, _) => matches!(next_scalar(map, counts)?, Scalar::Null | Scalar::Str(_)),
        (GoType::Bool, _) => matches!(next_scalar(map, counts)?, Scalar::Null | Scalar::Bool(_)),
        // An element that is no string is an error for the line, whatever else it holds.
        (GoType::Texts, _) => map.next_value::<TextsFit>()?.0,
        // serde_json refuses a number past a float's range, as Go does; the second reading
        // tells it by its text.
        (GoType::Float, CountsFrom::Fast) => matches!(
            map.next_value::<Scalar<'de>>()?,
            Scalar::Null | Scalar::Unsigned(_) | Scalar::Negative(_) | Scalar::NegativeZero | Scalar::Number
        ),
        (GoType::Float, CountsFrom::FromText) => {
            let raw: &RawValue = map.next_value()?;
            match raw.get().as_bytes().first() {
                Some(b'-' | b'0'..=b'9') => raw.get().parse::<f64>().is_ok_and(f64::is_finite),
                _ => raw.get() == "null",
            }
        }
        (GoType::Int, CountsFrom::Fast) => match map.next_value::<Scalar<'de>>()? {
            Scalar::Null | Scalar::Negative(_) => true,
            Scalar::Unsigned(n) => i64::try_from(n).is_ok(),
            Scalar::NegativeZero => {
                *ambiguous = true;
                true
            }
            _ => false,
        },
        (GoType::Int, CountsFrom::FromText) => !matches!(count_of(map.next_value()?), Field::Bad),
    })
}

/// `compaction` as Reasonix's record takes it (a pointer to its `CompactionRecord`): `null` is
/// absent, an object whose known fields have their Go types is one, anything else an error for
/// the line.
pub(super) fn next_compaction<'de, A: MapAccess<'de>>(
    map: &mut A,
    counts: CountsFrom,
    ambiguous: &mut bool,
) -> Result<Field<()>, A::Error> {
    if counts == CountsFrom::Fast {
        return map.next_value_seed(CompactionFit { counts, ambiguous });
    }
    let raw: &'de RawValue = map.next_value()?;
    if matches!(raw.get().as_bytes().first(), Some(b'-' | b'0'..=b'9')) {
        return Ok(Field::Bad);
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    de::DeserializeSeed::deserialize(CompactionFit { counts, ambiguous }, &mut deserializer)
        .map_err(de::Error::custom)
}

/// Whether a value fits Go's `[]string`.
struct TextsFit(bool);

impl<'de> de::Deserialize<'de> for TextsFit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextsFitVisitor)
    }
}

struct TextsFitVisitor;

impl<'de> Visitor<'de> for TextsFitVisitor {
    type Value = TextsFit;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<TextsFit, E> {
        Ok(TextsFit(true))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextsFit, A::Error> {
        let mut fits = true;
        while let Some(element) = seq.next_element::<Scalar<'de>>()? {
            fits &= matches!(element, Scalar::Null | Scalar::Str(_));
        }
        Ok(TextsFit(fits))
    }
    fn visit_bool<E>(self, _: bool) -> Result<TextsFit, E> {
        Ok(TextsFit(false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<TextsFit, E> {
        Ok(TextsFit(false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<TextsFit, E> {
        Ok(TextsFit(false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<TextsFit, E> {
        Ok(TextsFit(false))
    }
    fn visit_str<E>(self, _: &str) -> Result<TextsFit, E> {
        Ok(TextsFit(false))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextsFit, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(TextsFit(false))
    }
}

/// Reads `compaction`, checking its known fields' types (see [`next_compaction`]).
struct CompactionFit<'b> {
    counts: CountsFrom,
    ambiguous: &'b mut bool,
}

impl<'de> de::DeserializeSeed<'de> for CompactionFit<'_> {
    type Value = Field<()>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Field<()>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CompactionFit<'_> {
    type Value = Field<()>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Field<()>, E> {
        Ok(Field::Absent)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<()>, A::Error> {
        let mut fits = true;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match compaction_key(&key.0) {
                Some(ty) => fits &= next_fits(&mut map, ty, self.counts, self.ambiguous)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if fits { Field::Value(()) } else { Field::Bad })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field<()>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Bad)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Field<()>, E> {
        Ok(Field::Bad)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Field<()>, E> {
        Ok(Field::Bad)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Field<()>, E> {
        Ok(Field::Bad)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Field<()>, E> {
        Ok(Field::Bad)
    }
    fn visit_str<E>(self, _: &str) -> Result<Field<()>, E> {
        Ok(Field::Bad)
    }
}

/// A count as Go reads it into an `int`: from the number's own text, so that `-0` is 0 (Go
/// parses the digits) while `-0.0`, `1e2` or `5.0` are not integers (Go refuses them; serde_json
/// would hand all of them over as the same floating-point value). `null` is absent; a number
/// outside the 64-bit range or a value of another type is [`Field::Bad`].
#[inline]
pub(super) fn count_of(raw: &RawValue) -> Field<i64> {
    let text = raw.get();
    match text.as_bytes() {
        b"null" => Field::Absent,
        [b'-' | b'0'..=b'9', rest @ ..] if rest.iter().all(u8::is_ascii_digit) => {
            text.parse::<i64>().map_or(Field::Bad, Field::Value)
        }
        _ => Field::Bad,
    }
}

/// `ts` as Go reads it into a `time.Time`: RFC 3339, or an error for the line. Go parses the
/// string's raw bytes without unescaping them, so a `ts` written with an escape is no time.
#[inline]
pub(super) fn timestamp(field: Field<Cow<'_, str>>) -> Field<Stamp> {
    match field {
        Field::Value(Cow::Borrowed(text)) => match day_and_unix_ms(text) {
            Some((day, at_ms)) => Field::Value(Stamp { day, at_ms }),
            None => Field::Bad,
        },
        Field::Value(Cow::Owned(_)) | Field::Bad => Field::Bad,
        Field::Absent => Field::Absent,
    }
}

/// A valid `ts`: its calendar day, and its instant (Unix ms).
#[derive(Debug)]
pub(super) struct Stamp {
    pub day: Day,
    pub at_ms: i64,
}

/// A JSON string, borrowed from the line when it has no escapes.
pub(super) struct Text<'a>(pub Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Scalar::deserialize(deserializer)? {
            Scalar::Str(text) => Ok(Text(text)),
            _ => Err(de::Error::custom("expected a string")),
        }
    }
}

/// Any JSON value, reduced to what an allow-listed field can use. Containers and floats are
/// consumed without being kept.
pub(super) enum Scalar<'a> {
    Null,
    Bool(bool),
    /// A non-negative integer.
    Unsigned(u64),
    /// A negative integer.
    Negative(i64),
    /// A float that is negative zero: `-0`, or `-0.0`, `-0e0` (see [`next_count`]).
    NegativeZero,
    /// Any other number.
    Number,
    Str(Cow<'a, str>),
    /// An object.
    Object,
    /// An array.
    Other,
}

impl<'de> Scalar<'de> {
    pub(super) fn into_bool(self) -> Field<bool> {
        match self {
            Scalar::Null => Field::Absent,
            Scalar::Bool(b) => Field::Value(b),
            _ => Field::Bad,
        }
    }

    pub(super) fn into_text(self) -> Field<Cow<'de, str>> {
        match self {
            Scalar::Null => Field::Absent,
            Scalar::Str(text) => Field::Value(text),
            _ => Field::Bad,
        }
    }
}

impl<'de> de::Deserialize<'de> for Scalar<'de> {
    // Inlined into the map visitor: a call per field showed in the backfill profile.
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Unsigned(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(if n < 0 {
            Scalar::Negative(n)
        } else {
            Scalar::Unsigned(n as u64)
        })
    }
    fn visit_f64<E>(self, f: f64) -> Result<Self::Value, E> {
        Ok(if f == 0.0 && f.is_sign_negative() {
            Scalar::NegativeZero
        } else {
            Scalar::Number
        })
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

//! Text as Go's JSON decoder reads it, where serde_json would refuse it: Reasonix's own readers
//! are Go, and a line counts here exactly when it counts there (`docs/ledger-format.md`, "Lines").

use std::borrow::Cow;

/// Replaces invalid UTF-8 the way Go's decoder does: one U+FFFD for every byte that does not
/// start a valid sequence. (Rust's `from_utf8_lossy` folds a truncated sequence into one U+FFFD,
/// which would give a different label value than Reasonix shows.)
pub fn go_lossy_utf8(bytes: &[u8]) -> Cow<'_, str> {
    let first_error = match std::str::from_utf8(bytes) {
        Ok(text) => return Cow::Borrowed(text),
        Err(error) => error,
    };
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut rest = bytes;
    let mut error = first_error;
    loop {
        let (valid, after) = rest.split_at(error.valid_up_to());
        out.push_str(std::str::from_utf8(valid).unwrap_or_default());
        let bad = error.error_len().unwrap_or(after.len());
        out.extend(std::iter::repeat_n(char::REPLACEMENT_CHARACTER, bad));
        rest = &after[bad..];
        match std::str::from_utf8(rest) {
            Ok(tail) => {
                out.push_str(tail);
                return Cow::Owned(out);
            }
            Err(next) => error = next,
        }
    }
}

/// `line` without the white space around it, as Go's `strings.TrimSpace` cuts it before
/// Reasonix decodes a line: the Unicode white space of Go's `unicode.IsSpace` (ASCII's, and NEL,
/// no-break spaces and the other separators), whole characters only.
pub fn go_trim_space(line: &[u8]) -> &[u8] {
    let mut rest = go_trim_start(line);
    while let Some(len) = trailing_space(rest) {
        rest = &rest[..rest.len() - len];
    }
    rest
}

/// `bytes` without the white space it starts with, as [`go_trim_space`] cuts it.
pub fn go_trim_start(bytes: &[u8]) -> &[u8] {
    let mut rest = bytes;
    while let Some(len) = leading_space(rest) {
        rest = &rest[len..];
    }
    rest
}

/// Go's white space past ASCII, as UTF-8.
const WIDE_SPACES: [&[u8]; 19] = [
    "\u{85}".as_bytes(),
    "\u{a0}".as_bytes(),
    "\u{1680}".as_bytes(),
    "\u{2000}".as_bytes(),
    "\u{2001}".as_bytes(),
    "\u{2002}".as_bytes(),
    "\u{2003}".as_bytes(),
    "\u{2004}".as_bytes(),
    "\u{2005}".as_bytes(),
    "\u{2006}".as_bytes(),
    "\u{2007}".as_bytes(),
    "\u{2008}".as_bytes(),
    "\u{2009}".as_bytes(),
    "\u{200a}".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{2029}".as_bytes(),
    "\u{202f}".as_bytes(),
    "\u{205f}".as_bytes(),
    "\u{3000}".as_bytes(),
];

fn is_ascii_go_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The length of the white space character `bytes` starts with.
fn leading_space(bytes: &[u8]) -> Option<usize> {
    match bytes.first()? {
        &b if b.is_ascii() => is_ascii_go_space(b).then_some(1),
        _ => WIDE_SPACES.iter().find(|s| bytes.starts_with(s)).map(|s| s.len()),
    }
}

/// The length of the white space character `bytes` ends with.
fn trailing_space(bytes: &[u8]) -> Option<usize> {
    match bytes.last()? {
        &b if b.is_ascii() => is_ascii_go_space(b).then_some(1),
        _ => WIDE_SPACES.iter().find(|s| bytes.ends_with(s)).map(|s| s.len()),
    }
}

/// `text` with every `\u` escape of a lone UTF-16 surrogate made `\ufffd`, as Go's decoder reads
/// it; `None` when there is none.
pub fn go_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = text.get(at..at + 4)?;
        hex.bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then(|| u16::from_str_radix(hex, 16).ok())?
    };
    let (mut out, mut copied, mut i) = (String::new(), 0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        // An escape: `\uXXXX` is six bytes, any other two.
        let Some(u) = unit(i + 2).filter(|_| bytes.get(i + 1) == Some(&b'u')) else {
            i += 2;
            continue;
        };
        let low = unit(i + 8).filter(|_| bytes.get(i + 6..i + 8) == Some(b"\\u"));
        if (0xD800..0xDC00).contains(&u) && low.is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
            i += 12;
            continue;
        }
        if (0xD800..0xE000).contains(&u) {
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    (copied > 0).then(|| out + &text[copied..])
}

//! Text from outside (a collector's answer, a file name) as it may be shown: on one line, with
//! nothing a terminal would act on. A control character (a newline that would start a forged log
//! line, an escape sequence) or a bidirectional control is written as its `\u{…}` escape.

/// `text` cut to `max_chars` characters, each control or bidirectional control escaped.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars));
    for c in text.chars().take(max_chars) {
        if c.is_control() || is_bidi_control(c) || is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// A path as it may be shown (a log line, an error, `doctor`): its characters that would break
/// the line or act on a terminal escaped, as in [`one_line`], never cut. Bytes that are not
/// UTF-8 show as U+FFFD, as `Path::display` shows them.
pub struct ShownPath<'a>(&'a std::path::Path);

impl std::fmt::Display for ShownPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        for c in self.0.to_string_lossy().chars() {
            if c.is_control() || is_bidi_control(c) || is_invisible(c) {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// `.shown()`: a path's [`ShownPath`], where `.display()` would pass its characters on as they
/// are.
pub trait ShowPath {
    fn shown(&self) -> ShownPath<'_>;
}

impl ShowPath for std::path::Path {
    fn shown(&self) -> ShownPath<'_> {
        ShownPath(self)
    }
}

/// Characters that show as nothing or break a line: every format character (Unicode's
/// General_Category Cf, as of Unicode 16: zero-width ones, the soft hyphen, the byte-order mark,
/// bidirectional and tag characters, prepended number signs, annotation and hieroglyph format
/// controls), and the line and paragraph separators.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// The Unicode bidirectional formatting characters (embeddings, overrides, isolates and marks),
/// which reorder text on screen.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_line_and_an_escape_sequence_stay_on_one_inert_line() {
        let shown = one_line(
            "busy\n2026-12-02T10:00:00Z  INFO exported 9 data points\x1b[2J\u{202E}",
            200,
        );
        assert_eq!(
            shown,
            "busy\\u{a}2026-12-02T10:00:00Z  INFO exported 9 data points\\u{1b}[2J\\u{202e}"
        );
        assert_eq!(one_line("abcdef", 3), "abc");
    }

    #[test]
    fn a_path_is_shown_on_one_inert_line() {
        let path = std::path::Path::new("/tmp/ev\nFORGED\x1b[31m\u{202E}/stats");
        assert_eq!(
            path.shown().to_string(),
            "/tmp/ev\\u{a}FORGED\\u{1b}[31m\\u{202e}/stats"
        );
        assert_eq!(std::path::Path::new("/plain/é").shown().to_string(), "/plain/é");
    }

    /// Every format character is invisible, tag characters and the rarer ones included; letters,
    /// marks and ordinary spaces are not.
    #[test]
    fn every_format_character_is_invisible() {
        for c in [
            '\u{AD}',
            '\u{600}',
            '\u{6DD}',
            '\u{180E}',
            '\u{200B}',
            '\u{2063}',
            '\u{206A}',
            '\u{FFFB}',
            '\u{110CD}',
            '\u{1343F}',
            '\u{1BCA3}',
            '\u{1D17A}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
        ] {
            assert!(is_invisible(c), "{:?}", c.escape_unicode().to_string());
        }
        for c in [
            'a',
            'é',
            ' ',
            '\u{2065}',
            '\u{E0000}',
            '\u{E0080}',
            '\u{301}',
            '中',
        ] {
            assert!(!is_invisible(c), "{:?}", c.escape_unicode().to_string());
        }
    }
}

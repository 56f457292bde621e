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

/// Characters that show as nothing or break a line: zero-width ones, the soft hyphen, the
/// byte-order mark, and the line and paragraph separators.
pub fn is_invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200D}' | '\u{2028}' | '\u{2029}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
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
}

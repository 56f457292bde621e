//! Which allow-listed field a line's key fills, matched as Go's `encoding/json` matches a key to
//! a struct field: the exact name first, else case-insensitively (docs/counting-rules.md, "A
//! line is read as Reasonix reads it").

/// An allow-listed key, or any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Ts,
    Model,
    Source,
    Prompt,
    Completion,
    Reasoning,
    CacheHit,
    CacheMiss,
    Total,
    Requests,
    Turn,
    CostAmount,
    CostCurrency,
    CostComplete,
    BillingMode,
    IncompleteReason,
    Compaction,
    Other,
}

/// Which field `key` fills, as Go's decoder finds it: the field of that exact name, else one whose
/// name matches it case-insensitively (see [`folded_key`]).
#[inline(always)]
pub fn key_of(key: &str) -> Key {
    match exact_key(key) {
        Key::Other => folded_key(key),
        known => known,
    }
}

/// The longest allow-listed name, `incomplete_reason`.
const LONGEST_KEY: usize = 17;

/// A key matched case-insensitively, as Go's `encoding/json` matches a key no field has exactly:
/// ASCII letters in either case, and the only two other letters that Go's Unicode folding makes
/// one of the allow-listed names' letters (`ſ`, U+017F, folds to `s`; the Kelvin sign, U+212A, to
/// `k`). Reasonix writes its keys in lower case, so this is only reached for an odd key.
fn folded_key(key: &str) -> Key {
    // An ASCII key folds to a name of its own length: most keys Reasonix writes and no field
    // reads end here, after a length or a look at their letters.
    let bytes = key.as_bytes();
    if bytes.is_ascii()
        && (!matches!(bytes.len(), 2 | 4 | 5 | 6 | 8 | 9 | 10 | 11 | 12 | 13 | 17)
            || !bytes.iter().any(u8::is_ascii_uppercase))
    {
        return Key::Other;
    }
    let mut folded = [0u8; LONGEST_KEY];
    let mut len = 0;
    for c in key.chars() {
        let lower = match c {
            '\u{17F}' => b's',
            '\u{212A}' => b'k',
            c if c.is_ascii() => c.to_ascii_lowercase() as u8,
            _ => return Key::Other,
        };
        if len == LONGEST_KEY {
            return Key::Other;
        }
        folded[len] = lower;
        len += 1;
    }
    std::str::from_utf8(&folded[..len]).map_or(Key::Other, exact_key)
}

/// The allow-listed key named exactly `key`: by its length first, so that the many keys the
/// decoder skips cost one comparison or two, not one per allow-listed key.
#[inline(always)]
fn exact_key(key: &str) -> Key {
    match (key.len(), key) {
        (2, "ts") => Key::Ts,
        (4, "turn") => Key::Turn,
        (5, "model") => Key::Model,
        (5, "total") => Key::Total,
        (6, "source") => Key::Source,
        (6, "prompt") => Key::Prompt,
        (8, "requests") => Key::Requests,
        (9, "reasoning") => Key::Reasoning,
        (9, "cache_hit") => Key::CacheHit,
        (10, "completion") => Key::Completion,
        (10, "cache_miss") => Key::CacheMiss,
        (10, "compaction") => Key::Compaction,
        (11, "cost_amount") => Key::CostAmount,
        (12, "billing_mode") => Key::BillingMode,
        (13, "cost_currency") => Key::CostCurrency,
        (13, "cost_complete") => Key::CostComplete,
        (17, "incomplete_reason") => Key::IncompleteReason,
        _ => Key::Other,
    }
}

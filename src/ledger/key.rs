//! Which allow-listed field a line's key fills, matched as Go's `encoding/json` matches a key to
//! a struct field: the exact name first, else case-insensitively (docs/counting-rules.md, "A
//! line is read as Reasonix reads it"). The counts are the catalog's (`catalog.rs`): a quantity
//! read from a new field is read once it is described there.

use crate::catalog::Quantity;

/// An allow-listed key, or any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Ts,
    Model,
    Source,
    /// The count of a quantity of the catalog ([`Quantity::ledger_field`]).
    Count(Quantity),
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

/// Every allow-listed name but the counts, which the catalog names.
const OTHER_KEYS: [&str; 10] = [
    "ts",
    "turn",
    "model",
    "source",
    "compaction",
    "cost_amount",
    "billing_mode",
    "cost_currency",
    "cost_complete",
    "incomplete_reason",
];

/// Bit `n` is set when some allow-listed name is `n` bytes long.
const KEY_LENGTHS: u64 = {
    let mut lengths = 0u64;
    let mut i = 0;
    while i < OTHER_KEYS.len() {
        lengths |= 1 << OTHER_KEYS[i].len();
        i += 1;
    }
    let mut q = 0;
    while q < Quantity::COUNT {
        if let Some(field) = Quantity::ALL[q].ledger_field() {
            lengths |= 1 << field.len();
        }
        q += 1;
    }
    lengths
};

/// The longest allow-listed name.
const LONGEST_KEY: usize = 63 - KEY_LENGTHS.leading_zeros() as usize;

/// A key matched case-insensitively, as Go's `encoding/json` matches a key no field has exactly:
/// ASCII letters in either case, and the only two other letters that Go's Unicode folding makes
/// one of the allow-listed names' letters (`ſ`, U+017F, folds to `s`; the Kelvin sign, U+212A, to
/// `k`). Reasonix writes its keys in lower case, so this is only reached for an odd key.
fn folded_key(key: &str) -> Key {
    // An ASCII key folds to a name of its own length: most keys Reasonix writes and no field
    // reads end here, after a length or a look at their letters.
    let bytes = key.as_bytes();
    if bytes.is_ascii()
        && (bytes.len() > LONGEST_KEY
            || KEY_LENGTHS & (1 << bytes.len()) == 0
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
/// decoder skips cost a comparison of lengths or two, not one of text per allow-listed key.
#[inline(always)]
fn exact_key(key: &str) -> Key {
    match (key.len(), key) {
        (2, "ts") => Key::Ts,
        (4, "turn") => Key::Turn,
        (5, "model") => Key::Model,
        (6, "source") => Key::Source,
        (10, "compaction") => Key::Compaction,
        (11, "cost_amount") => Key::CostAmount,
        (12, "billing_mode") => Key::BillingMode,
        (13, "cost_currency") => Key::CostCurrency,
        (13, "cost_complete") => Key::CostComplete,
        (17, "incomplete_reason") => Key::IncompleteReason,
        _ => count_key(key),
    }
}

/// The count named exactly `key`, from the catalog.
#[inline(always)]
fn count_key(key: &str) -> Key {
    for q in Quantity::ALL {
        if q.ledger_field() == Some(key) {
            return Key::Count(q);
        }
    }
    Key::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allow_listed_name_is_its_key_in_any_letter_case() {
        let counts = Quantity::ALL
            .into_iter()
            .filter_map(|q| Some((q.ledger_field()?, Key::Count(q))));
        for (name, key) in counts {
            assert_eq!(key_of(name), key);
            assert_eq!(key_of(&name.to_ascii_uppercase()), key);
        }
        for name in OTHER_KEYS {
            assert_ne!(key_of(name), Key::Other, "{name}");
            assert_eq!(key_of(&name.to_ascii_uppercase()), key_of(name), "{name}");
        }
        assert_eq!(LONGEST_KEY, "incomplete_reason".len());
        assert_eq!(key_of("PROMPT_TEXT"), Key::Other);
    }
}

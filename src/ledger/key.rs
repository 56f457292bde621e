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
    /// A field of Reasonix's record the exporter does not keep: its value is checked against
    /// the field's Go type (a value of the wrong type makes Go refuse the line), never kept.
    Checked(GoType),
    Other,
}

/// The Go type of a field of Reasonix's record that is only checked (see [`Key::Checked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoType {
    /// `string`: a string or `null`.
    Text,
    /// `bool` or `*bool`: a boolean or `null`.
    Bool,
    /// `[]string`: an array of strings (or `null`s), or `null`.
    Texts,
    /// `float64`: a number in a float's range, or `null`.
    Float,
    /// `int` (in `compaction`): an integer in 64 bits, or `null`.
    Int,
}

/// Reasonix's record's fields that are checked and not kept, with their Go types
/// (`internal/stats/record.go`).
const CHECKED_KEYS: [(&str, GoType); 19] = [
    ("rated_at", GoType::Text),
    ("rate_date", GoType::Text),
    ("rate_band", GoType::Text),
    ("prefix_hash", GoType::Text),
    ("usage_source", GoType::Text),
    ("valuation_cny", GoType::Text),
    ("valuation_usd", GoType::Text),
    ("selected_cost", GoType::Float),
    ("prefix_changed", GoType::Bool),
    ("prefix_reasons", GoType::Texts),
    ("display_status", GoType::Text),
    ("aggregate_mode", GoType::Text),
    ("cost_estimated", GoType::Bool),
    ("selected_amount", GoType::Text),
    ("original_totals", GoType::Texts),
    ("legacy_estimate", GoType::Bool),
    ("display_complete", GoType::Bool),
    ("selected_currency", GoType::Text),
    ("pricing_fingerprint", GoType::Text),
];

/// The fields of Reasonix's `CompactionRecord`, with their Go types.
const COMPACTION_KEYS: [(&str, GoType); 32] = [
    ("trigger", GoType::Text),
    ("mode", GoType::Text),
    ("cache", GoType::Text),
    ("src", GoType::Int),
    ("fold", GoType::Int),
    ("spans", GoType::Int),
    ("proj", GoType::Int),
    ("in", GoType::Int),
    ("out", GoType::Int),
    ("hit", GoType::Int),
    ("miss", GoType::Int),
    ("write", GoType::Int),
    ("reqs", GoType::Int),
    ("user_kept", GoType::Int),
    ("user_dropped", GoType::Int),
    ("results", GoType::Int),
    ("saved_chars", GoType::Int),
    ("status", GoType::Text),
    ("reason", GoType::Text),
    ("tpc", GoType::Float),
    ("provider_request_id", GoType::Text),
    ("err_type", GoType::Text),
    ("summary_input", GoType::Text),
    ("view_fp", GoType::Text),
    ("wire_fp", GoType::Text),
    ("tools_count", GoType::Int),
    ("tools_fp", GoType::Text),
    ("tools_source", GoType::Text),
    ("pref_hash", GoType::Text),
    ("pref_len", GoType::Int),
    ("wire_len", GoType::Int),
    ("wire_diff", GoType::Text),
];

/// The Go type of the field of Reasonix's `CompactionRecord` that `key` fills, matched as Go
/// matches it (exact, else case-insensitively); `None` for a key no field has. Compaction rows
/// are rare: a plain search.
pub fn compaction_key(key: &str) -> Option<GoType> {
    COMPACTION_KEYS
        .iter()
        .find(|(name, _)| *name == key)
        .or_else(|| COMPACTION_KEYS.iter().find(|(name, _)| go_fold_eq(key, name)))
        .map(|&(_, ty)| ty)
}

/// Whether `key` matches the lower-case ASCII `name` under Go's case folding.
fn go_fold_eq(key: &str, name: &str) -> bool {
    let mut name = name.bytes();
    for c in key.chars() {
        let lower = match c {
            '\u{17F}' => b's',
            '\u{212A}' => b'k',
            c if c.is_ascii() => c.to_ascii_lowercase() as u8,
            _ => return false,
        };
        if name.next() != Some(lower) {
            return false;
        }
    }
    name.next().is_none()
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

/// Bit `n` is set when some allow-listed or checked name is `n` bytes long.
const KEY_LENGTHS: u64 = {
    let mut lengths = 0u64;
    let mut i = 0;
    while i < OTHER_KEYS.len() {
        lengths |= 1 << OTHER_KEYS[i].len();
        i += 1;
    }
    let mut i = 0;
    while i < CHECKED_KEYS.len() {
        lengths |= 1 << CHECKED_KEYS[i].0.len();
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

/// The longest allow-listed or checked name.
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

/// The count named exactly `key`, from the catalog, else the checked field of that name.
#[inline(always)]
fn count_key(key: &str) -> Key {
    for q in Quantity::ALL {
        if q.ledger_field() == Some(key) {
            return Key::Count(q);
        }
    }
    checked_key(key)
}

/// The checked field named exactly `key`: by its length first, as [`exact_key`] does.
#[inline(always)]
fn checked_key(key: &str) -> Key {
    CHECKED_KEYS
        .iter()
        .find(|(name, _)| name.len() == key.len() && *name == key)
        .map_or(Key::Other, |&(_, ty)| Key::Checked(ty))
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
        assert_eq!(LONGEST_KEY, "pricing_fingerprint".len());
        assert_eq!(key_of("PROMPT_TEXT"), Key::Other);
    }

    #[test]
    fn every_checked_name_is_its_go_type_in_any_letter_case() {
        for (name, ty) in CHECKED_KEYS {
            assert_eq!(key_of(name), Key::Checked(ty), "{name}");
            assert_eq!(key_of(&name.to_ascii_uppercase()), Key::Checked(ty), "{name}");
        }
        assert_eq!(key_of("Co\u{17F}t_e\u{17F}timated"), Key::Checked(GoType::Bool));
        for (name, ty) in COMPACTION_KEYS {
            assert_eq!(compaction_key(name), Some(ty), "{name}");
            assert_eq!(compaction_key(&name.to_ascii_uppercase()), Some(ty), "{name}");
        }
        assert_eq!(compaction_key("\u{17F}rc"), Some(GoType::Int));
        assert_eq!(compaction_key("sources"), None);
        assert_eq!(compaction_key("sr"), None);
    }
}

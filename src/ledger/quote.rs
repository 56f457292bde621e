//! Reasonix's own price quote on a usage row (docs/counting-rules.md, "Cost"): priced, unpriced
//! with a reason, or `bad_cost`. The exporter never prices a row itself and never converts a
//! currency; it only passes on, exactly, what Reasonix wrote.

use std::borrow::Cow;
use std::fmt;

use super::field::Field;

/// An exact amount of money in 10^-9 units of its currency. Sums saturate: a hostile ledger can
/// pin a sum at its maximum, never send it backwards. Kept as two u64 halves, so that a decoded
/// row holding one needs no 16-byte alignment (every row is moved a few times).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Amount {
    low: u64,
    high: u64,
}

impl PartialOrd for Amount {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Amount {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.units().cmp(&other.units())
    }
}

/// The most digits before the point an amount may have.
const MAX_WHOLE_DIGITS: usize = 18;
/// The most digits after it: the sums' unit is 10^-9.
const MAX_FRACTION_DIGITS: usize = 9;
const UNITS_PER_WHOLE: u128 = 1_000_000_000;

impl Amount {
    pub const ENCODED_LEN: usize = 16;

    pub const fn from_units(units: u128) -> Amount {
        Amount {
            low: units as u64,
            high: (units >> 64) as u64,
        }
    }

    /// The amount in 10^-9 units of its currency.
    pub const fn units(self) -> u128 {
        ((self.high as u128) << 64) | self.low as u128
    }

    /// A plain decimal, `^(0|[1-9][0-9]{0,17})(\.[0-9]{1,9})?$`: no sign, exponent, spaces or
    /// leading zeros. Anything else is `None`.
    pub fn parse(text: &str) -> Option<Amount> {
        let (whole, fraction) = match text.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (text, None),
        };
        if whole.len() > MAX_WHOLE_DIGITS || (whole.len() > 1 && whole.starts_with('0')) {
            return None;
        }
        // At most 18 digits: the whole part fits a u64, and so does the fraction's 9.
        let mut units = u128::from(digits(whole)?) * UNITS_PER_WHOLE;
        if let Some(fraction) = fraction {
            if fraction.len() > MAX_FRACTION_DIGITS {
                return None;
            }
            let scale = 10u64.pow((MAX_FRACTION_DIGITS - fraction.len()) as u32);
            units += u128::from(digits(fraction)? * scale);
        }
        Some(Amount::from_units(units))
    }

    pub fn is_zero(self) -> bool {
        self.units() == 0
    }

    pub fn saturating_add(self, other: Amount) -> Amount {
        Amount::from_units(self.units().saturating_add(other.units()))
    }

    pub fn saturating_sub(self, other: Amount) -> Amount {
        Amount::from_units(self.units().saturating_sub(other.units()))
    }

    /// The double nearest to the exact amount (what OTLP carries): the decimal text parsed once,
    /// which rounds correctly, unlike a division of the units.
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(f64::MAX)
    }

    pub fn encode(self) -> [u8; Self::ENCODED_LEN] {
        self.units().to_le_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Option<Amount> {
        Some(Amount::from_units(u128::from_le_bytes(bytes.try_into().ok()?)))
    }
}

/// The value of one to 18 ASCII digits; `None` for anything else.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.bytes().try_fold(0u64, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

/// An ISO 4217 code as Reasonix normalises them, `^[A-Z]{3}$`, kept inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

impl Currency {
    pub fn parse(text: &str) -> Option<Currency> {
        let bytes: [u8; 3] = text.as_bytes().try_into().ok()?;
        bytes
            .iter()
            .all(u8::is_ascii_uppercase)
            .then_some(Currency(bytes))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII letters")
    }
}

/// The exact decimal: no exponent, no trailing zeros after the point, at most nine decimals.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.units() / UNITS_PER_WHOLE;
        let fraction = self.units() % UNITS_PER_WHOLE;
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{fraction:09}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// What a usage row says about its price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quote<'a> {
    /// No `cost_complete`: the row carries no quote (`no_quote`).
    Missing,
    /// A complete quote: the amount, its ISO currency code, and `billing_mode` as written.
    Priced {
        amount: Amount,
        currency: Currency,
        billing_mode: Option<Cow<'a, str>>,
    },
    /// `cost_complete: false`, with `incomplete_reason` as written.
    Incomplete { reason: Option<Cow<'a, str>> },
    /// A quote that says it is complete but whose amount or currency is not valid, or a quote
    /// field of the wrong JSON type (`bad_cost`).
    Bad,
    /// A complete quote in a well-formed code that is not an ISO 4217 currency
    /// (`unknown_currency`).
    UnknownCurrency,
}

/// The five quote fields of a row as the decoder found them. The amount and the currency are
/// parsed as they are read: `Value(None)` is a string that is not a valid amount (or currency).
#[derive(Debug, Default)]
pub struct QuoteFields<'a> {
    pub amount: Field<Option<Amount>>,
    pub currency: Field<Option<Currency>>,
    pub complete: Field<bool>,
    pub billing_mode: Field<Cow<'a, str>>,
    pub incomplete_reason: Field<Cow<'a, str>>,
}

impl<'a> QuoteFields<'a> {
    /// The rules of docs/counting-rules.md, "Cost".
    #[inline]
    pub fn into_quote(self) -> Quote<'a> {
        let wrong_type = self.amount.is_bad()
            || self.currency.is_bad()
            || self.complete.is_bad()
            || self.billing_mode.is_bad()
            || self.incomplete_reason.is_bad();
        if wrong_type {
            return Quote::Bad;
        }
        match self.complete {
            Field::Absent | Field::Bad => Quote::Missing,
            Field::Value(false) => Quote::Incomplete {
                reason: self.incomplete_reason.value(),
            },
            Field::Value(true) => match (self.amount, self.currency) {
                (Field::Value(Some(_)), Field::Value(Some(currency)))
                    if !super::iso4217::is_currency(currency.as_str()) =>
                {
                    Quote::UnknownCurrency
                }
                (Field::Value(Some(amount)), Field::Value(Some(currency))) => Quote::Priced {
                    amount,
                    currency,
                    billing_mode: self.billing_mode.value(),
                },
                _ => Quote::Bad,
            },
        }
    }
}

impl Quote<'_> {
    pub fn into_owned(self) -> Quote<'static> {
        let own = |text: Cow<'_, str>| Cow::Owned(text.into_owned());
        match self {
            Quote::Missing => Quote::Missing,
            Quote::Bad => Quote::Bad,
            Quote::UnknownCurrency => Quote::UnknownCurrency,
            Quote::Incomplete { reason } => Quote::Incomplete {
                reason: reason.map(own),
            },
            Quote::Priced {
                amount,
                currency,
                billing_mode,
            } => Quote::Priced {
                amount,
                currency,
                billing_mode: billing_mode.map(own),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_parse_exactly() {
        for (text, units) in [
            ("0", 0),
            ("3.75", 3_750_000_000),
            ("0.00123456", 1_234_560),
            ("0.000000001", 1),
            ("1.000000000", 1_000_000_000),
            (
                "999999999999999999.999999999",
                999_999_999_999_999_999_999_999_999,
            ),
        ] {
            assert_eq!(Amount::parse(text), Some(Amount::from_units(units)), "{text}");
        }
        for bad in [
            "",
            ".",
            "1.",
            ".5",
            "01",
            "00",
            "-1",
            "+1",
            "1e3",
            " 1",
            "1 ",
            "0.0000000001",
            "1,5",
            "1234567890123456789",
            "０",
            "NaN",
            "1.2.3",
        ] {
            assert_eq!(Amount::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn amounts_print_as_exact_decimals() {
        for text in [
            "0",
            "3.75",
            "0.00123456",
            "0.000000001",
            "999999999999999999.999999999",
        ] {
            assert_eq!(Amount::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Amount::from_units(1_500_000_000).to_string(), "1.5");
        assert_eq!(
            Amount::from_units(u128::MAX).saturating_add(Amount::from_units(1)),
            Amount::from_units(u128::MAX)
        );
        assert_eq!(Amount::parse("0.1").unwrap().to_f64(), 0.1);
        assert_eq!(
            Amount::decode(&Amount::from_units(7).encode()),
            Some(Amount::from_units(7))
        );
    }

    fn quote(fields: QuoteFields<'static>) -> Quote<'static> {
        fields.into_quote()
    }

    fn text(s: &'static str) -> Field<Cow<'static, str>> {
        Field::Value(Cow::Borrowed(s))
    }

    fn amount(s: &str) -> Field<Option<Amount>> {
        Field::Value(Amount::parse(s))
    }

    fn currency(s: &str) -> Field<Option<Currency>> {
        Field::Value(Currency::parse(s))
    }

    #[test]
    fn rows_are_priced_unpriced_or_bad() {
        let priced = QuoteFields {
            amount: amount("0.25"),
            currency: currency("CNY"),
            complete: Field::Value(true),
            billing_mode: text("payg"),
            incomplete_reason: Field::Absent,
        };
        assert_eq!(
            quote(priced),
            Quote::Priced {
                amount: Amount::from_units(250_000_000),
                currency: Currency::parse("CNY").unwrap(),
                billing_mode: Some("payg".into())
            }
        );
        assert_eq!(quote(QuoteFields::default()), Quote::Missing);
        let incomplete = QuoteFields {
            complete: Field::Value(false),
            incomplete_reason: text("no_price"),
            ..QuoteFields::default()
        };
        assert_eq!(
            quote(incomplete),
            Quote::Incomplete {
                reason: Some("no_price".into())
            }
        );
        for (a, c) in [("1.5", "cny"), ("1.5", "CNYX"), ("1,5", "CNY"), ("", "USD")] {
            let fields = QuoteFields {
                amount: amount(a),
                currency: currency(c),
                complete: Field::Value(true),
                ..QuoteFields::default()
            };
            assert_eq!(quote(fields), Quote::Bad, "{a} {c}");
        }
        let no_amount = QuoteFields {
            currency: currency("USD"),
            complete: Field::Value(true),
            ..QuoteFields::default()
        };
        assert_eq!(quote(no_amount), Quote::Bad);
        // A field of the wrong type spoils even a row without `cost_complete`.
        let wrong_type = QuoteFields {
            billing_mode: Field::Bad,
            ..QuoteFields::default()
        };
        assert_eq!(quote(wrong_type), Quote::Bad);
    }
}

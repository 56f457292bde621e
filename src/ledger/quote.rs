//! Reasonix's own price quote on a usage row (docs/counting-rules.md, "Cost"): priced, unpriced
//! with a reason, or `bad_cost`. The exporter never prices a row itself and never converts a
//! currency; it only passes on, exactly, what Reasonix wrote.

use std::borrow::Cow;
use std::fmt;

/// An exact amount of money in 10^-9 units of its currency. Sums saturate: a hostile ledger can
/// pin a sum at its maximum, never send it backwards.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(pub u128);

/// The most digits before the point an amount may have.
const MAX_WHOLE_DIGITS: usize = 18;
/// The most digits after it: the sums' unit is 10^-9.
const MAX_FRACTION_DIGITS: usize = 9;
const UNITS_PER_WHOLE: u128 = 1_000_000_000;

impl Amount {
    pub const ENCODED_LEN: usize = 16;

    /// A plain decimal, `^(0|[1-9][0-9]{0,17})(\.[0-9]{1,9})?$`: no sign, exponent, spaces or
    /// leading zeros. Anything else is `None`.
    pub fn parse(text: &str) -> Option<Amount> {
        let (whole, fraction) = match text.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (text, None),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || whole.len() > MAX_WHOLE_DIGITS || (whole.len() > 1 && whole.starts_with('0')) {
            return None;
        }
        let mut units = whole.parse::<u128>().ok()? * UNITS_PER_WHOLE;
        if let Some(fraction) = fraction {
            if !digits(fraction) || fraction.len() > MAX_FRACTION_DIGITS {
                return None;
            }
            let scale = 10u128.pow((MAX_FRACTION_DIGITS - fraction.len()) as u32);
            units += fraction.parse::<u128>().ok()? * scale;
        }
        Some(Amount(units))
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub fn saturating_add(self, other: Amount) -> Amount {
        Amount(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: Amount) -> Amount {
        Amount(self.0.saturating_sub(other.0))
    }

    /// The double nearest to the exact amount (what OTLP carries): the decimal text parsed once,
    /// which rounds correctly, unlike a division of the units.
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(f64::MAX)
    }

    pub fn encode(self) -> [u8; Self::ENCODED_LEN] {
        self.0.to_le_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Option<Amount> {
        Some(Amount(u128::from_le_bytes(bytes.try_into().ok()?)))
    }
}

/// The exact decimal: no exponent, no trailing zeros after the point, at most nine decimals.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / UNITS_PER_WHOLE;
        let fraction = self.0 % UNITS_PER_WHOLE;
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
        currency: Cow<'a, str>,
        billing_mode: Option<Cow<'a, str>>,
    },
    /// `cost_complete: false`, with `incomplete_reason` as written.
    Incomplete { reason: Option<Cow<'a, str>> },
    /// A quote that says it is complete but whose amount or currency is not valid, or a quote
    /// field of the wrong JSON type (`bad_cost`).
    Bad,
}

/// The five quote fields of a row as the decoder found them: `None` when absent or `null`,
/// `Err(())` when of the wrong JSON type.
#[derive(Debug, Default)]
pub struct QuoteFields<'a> {
    pub amount: Option<Result<Cow<'a, str>, ()>>,
    pub currency: Option<Result<Cow<'a, str>, ()>>,
    pub complete: Option<Result<bool, ()>>,
    pub billing_mode: Option<Result<Cow<'a, str>, ()>>,
    pub incomplete_reason: Option<Result<Cow<'a, str>, ()>>,
}

impl<'a> QuoteFields<'a> {
    /// The rules of docs/counting-rules.md, "Cost".
    pub fn into_quote(self) -> Quote<'a> {
        let wrong_type = self.amount.as_ref().is_some_and(Result::is_err)
            || self.currency.as_ref().is_some_and(Result::is_err)
            || self.complete.as_ref().is_some_and(Result::is_err)
            || self.billing_mode.as_ref().is_some_and(Result::is_err)
            || self.incomplete_reason.as_ref().is_some_and(Result::is_err);
        if wrong_type {
            return Quote::Bad;
        }
        match self.complete {
            None => Quote::Missing,
            Some(Ok(false)) => Quote::Incomplete {
                reason: self.incomplete_reason.and_then(Result::ok),
            },
            Some(_) => {
                let amount = self.amount.and_then(Result::ok);
                let amount = amount.as_deref().and_then(Amount::parse);
                let currency = self.currency.and_then(Result::ok).filter(|c| is_currency_code(c));
                match (amount, currency) {
                    (Some(amount), Some(currency)) => Quote::Priced {
                        amount,
                        currency,
                        billing_mode: self.billing_mode.and_then(Result::ok),
                    },
                    _ => Quote::Bad,
                }
            }
        }
    }
}

/// `^[A-Z]{3}$`: an ISO 4217 code as Reasonix normalises them.
fn is_currency_code(text: &str) -> bool {
    text.len() == 3 && text.bytes().all(|b| b.is_ascii_uppercase())
}

impl Quote<'_> {
    pub fn into_owned(self) -> Quote<'static> {
        let own = |text: Cow<'_, str>| Cow::Owned(text.into_owned());
        match self {
            Quote::Missing => Quote::Missing,
            Quote::Bad => Quote::Bad,
            Quote::Incomplete { reason } => Quote::Incomplete {
                reason: reason.map(own),
            },
            Quote::Priced {
                amount,
                currency,
                billing_mode,
            } => Quote::Priced {
                amount,
                currency: own(currency),
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
            assert_eq!(Amount::parse(text), Some(Amount(units)), "{text}");
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
        assert_eq!(Amount(1_500_000_000).to_string(), "1.5");
        assert_eq!(Amount(u128::MAX).saturating_add(Amount(1)), Amount(u128::MAX));
        assert_eq!(Amount::parse("0.1").unwrap().to_f64(), 0.1);
        assert_eq!(Amount::decode(&Amount(7).encode()), Some(Amount(7)));
    }

    fn quote(fields: QuoteFields<'static>) -> Quote<'static> {
        fields.into_quote()
    }

    fn text(s: &'static str) -> Option<Result<Cow<'static, str>, ()>> {
        Some(Ok(Cow::Borrowed(s)))
    }

    #[test]
    fn rows_are_priced_unpriced_or_bad() {
        let priced = QuoteFields {
            amount: text("0.25"),
            currency: text("CNY"),
            complete: Some(Ok(true)),
            billing_mode: text("payg"),
            incomplete_reason: None,
        };
        assert_eq!(
            quote(priced),
            Quote::Priced {
                amount: Amount(250_000_000),
                currency: "CNY".into(),
                billing_mode: Some("payg".into())
            }
        );
        assert_eq!(quote(QuoteFields::default()), Quote::Missing);
        let incomplete = QuoteFields {
            complete: Some(Ok(false)),
            incomplete_reason: text("no_price"),
            ..QuoteFields::default()
        };
        assert_eq!(
            quote(incomplete),
            Quote::Incomplete {
                reason: Some("no_price".into())
            }
        );
        for (amount, currency) in [("1.5", "cny"), ("1.5", "CNYX"), ("1,5", "CNY"), ("", "USD")] {
            let fields = QuoteFields {
                amount: text(amount),
                currency: text(currency),
                complete: Some(Ok(true)),
                ..QuoteFields::default()
            };
            assert_eq!(quote(fields), Quote::Bad, "{amount} {currency}");
        }
        let no_amount = QuoteFields {
            currency: text("USD"),
            complete: Some(Ok(true)),
            ..QuoteFields::default()
        };
        assert_eq!(quote(no_amount), Quote::Bad);
        // A field of the wrong type spoils even a row without `cost_complete`.
        let wrong_type = QuoteFields {
            billing_mode: Some(Err(())),
            ..QuoteFields::default()
        };
        assert_eq!(quote(wrong_type), Quote::Bad);
    }
}

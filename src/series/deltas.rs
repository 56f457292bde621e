//! What a batch of rows adds, by series.

use std::collections::{BTreeMap, HashMap};

use super::cost::{BAD_COST, CostSeries, NO_QUOTE, UNKNOWN_CURRENCY, UnpricedSeries, ValueCap, value_label};
use super::{AttrSet, MAX_SERIES, Quantity, QuickHash, Sums, Totals};
use crate::ledger::decode::{Row, RowKind};
use crate::ledger::quote::{Amount, Currency, Quote};

/// Deltas by series for a batch of rows, with the two things that make that fast and bounded:
/// a cache from a row's raw labels to its series (one lookup a line, not three allocations),
/// and the cardinality fold past [`MAX_SERIES`].
#[derive(Debug, Default)]
pub struct SeriesDeltas {
    /// The raw `(model, source)` of each row seen → its slot in `series`.
    labels: HashMap<Box<[u8]>, usize, QuickHash>,
    /// Each attribute set added to → its slot in `series`.
    slots: HashMap<AttrSet, usize>,
    series: Vec<Slot>,
    /// Scratch for building a raw label key.
    key: Vec<u8>,
}

#[derive(Debug)]
struct Slot {
    attrs: AttrSet,
    delta: Totals,
    /// Spend by raw `(currency, billing_mode)`, in the order first seen.
    costs: Vec<(Currency, Option<Box<str>>, Amount)>,
    /// Unpriced requests by raw reason, in the order first seen.
    unpriced: Vec<(Reason, u64)>,
    /// Increments here were folded by the cardinality limit.
    folded: bool,
}

/// Why a row's requests are unpriced, before the label rules.
#[derive(Debug, PartialEq, Eq)]
enum Reason {
    NoQuote,
    BadCost,
    UnknownCurrency,
    Incomplete(Option<Box<str>>),
}

impl Reason {
    fn is(&self, quote: &Quote<'_>) -> bool {
        match (self, quote) {
            (Reason::NoQuote, Quote::Missing)
            | (Reason::BadCost, Quote::Bad)
            | (Reason::UnknownCurrency, Quote::UnknownCurrency) => true,
            (Reason::Incomplete(mine), Quote::Incomplete { reason }) => mine.as_deref() == reason.as_deref(),
            _ => false,
        }
    }

    fn of(quote: &Quote<'_>) -> Reason {
        match quote {
            Quote::Bad => Reason::BadCost,
            Quote::UnknownCurrency => Reason::UnknownCurrency,
            Quote::Incomplete { reason } => Reason::Incomplete(reason.as_deref().map(Into::into)),
            // A priced quote adds its amount, never comes here.
            Quote::Missing | Quote::Priced { .. } => Reason::NoQuote,
        }
    }

    fn label(&self) -> String {
        match self {
            Reason::NoQuote => NO_QUOTE.to_owned(),
            Reason::BadCost => BAD_COST.to_owned(),
            Reason::UnknownCurrency => UNKNOWN_CURRENCY.to_owned(),
            Reason::Incomplete(reason) => value_label(reason.as_deref()),
        }
    }
}

/// Which of a row's counts to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Everything: tokens, requests, turns and the quote.
    Whole,
    /// Only the quote (cost or unpriced requests): for a line whose tokens were counted before
    /// the store kept cost.
    QuoteOnly,
}

impl SeriesDeltas {
    /// Adds what `row` counts (its `part`) to its series; `known` holds the series that exist
    /// already. A new attribute set past [`MAX_SERIES`] goes to [`AttrSet::folded`]; returns
    /// whether it did.
    pub fn add(&mut self, known: &BTreeMap<AttrSet, Totals>, row: &Row<'_>, part: Part) -> bool {
        let tokens = match part {
            Part::Whole => Totals::of_row(&row.kind),
            Part::QuoteOnly => None,
        };
        let quoted = match (&row.kind, &row.quote) {
            (RowKind::Usage(_), Quote::Priced { amount, .. }) if amount.is_zero() => None,
            (RowKind::Usage(_), Quote::Priced { .. }) => Some(0),
            (RowKind::Usage(counts), _) if counts.get(Quantity::Requests) > 0 => {
                Some(counts.get(Quantity::Requests))
            }
            _ => None,
        };
        if tokens.is_none() && quoted.is_none() {
            return false;
        }
        let slot = self.slot_of(known, row);
        let slot = &mut self.series[slot];
        if let Some(tokens) = tokens {
            slot.delta.add(&tokens);
        }
        if let Some(requests) = quoted {
            slot.add_quote(&row.quote, requests);
        }
        slot.folded
    }

    fn slot_of(&mut self, known: &BTreeMap<AttrSet, Totals>, row: &Row<'_>) -> usize {
        self.key.clear();
        for label in [&row.model, &row.source] {
            // Tagged and length-prefixed, so that no label text can mimic the boundary between
            // the two: 0 for absent; 1, the byte length (u64) and the text otherwise.
            match label {
                None => self.key.push(0),
                Some(text) => {
                    self.key.push(1);
                    self.key.extend_from_slice(&(text.len() as u64).to_le_bytes());
                    self.key.extend_from_slice(text.as_bytes());
                }
            }
        }
        match self.labels.get(self.key.as_slice()) {
            Some(slot) => *slot,
            None => {
                let slot = self.slot_for(known, AttrSet::of_row(row));
                self.labels.insert(self.key.as_slice().into(), slot);
                slot
            }
        }
    }

    fn slot_for<V>(&mut self, known: &BTreeMap<AttrSet, V>, attrs: AttrSet) -> usize {
        let exists = known.contains_key(&attrs) || self.slots.contains_key(&attrs);
        let new_series = self.slots.keys().filter(|a| !known.contains_key(*a)).count();
        let (attrs, folded) = if exists || known.len() + new_series < MAX_SERIES {
            (attrs, false)
        } else {
            (AttrSet::folded(), true)
        };
        // `(other, other, other)` never comes from a row (a model_ref of `other` has provider
        // `default`), so a slot's set tells whether it is the fold.
        if let Some(slot) = self.slots.get(&attrs) {
            return *slot;
        }
        self.series.push(Slot {
            attrs: attrs.clone(),
            delta: Totals::default(),
            costs: Vec::new(),
            unpriced: Vec::new(),
            folded,
        });
        self.slots.insert(attrs, self.series.len() - 1);
        self.series.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The deltas by series (slots of the same set added together), zeros left out. The values
    /// of the cost families' own attributes are capped against those `known` has.
    pub fn by_series(&self, known: &Sums) -> Sums {
        let mut out = Sums::default();
        // Built when first needed: most deltas have no cost attribute to cap.
        let (mut modes, mut reasons) = (None, None);
        for slot in &self.series {
            if !slot.delta.is_zero() {
                out.tokens.entry(slot.attrs.clone()).or_default().add(&slot.delta);
            }
            for (currency, billing_mode, amount) in &slot.costs {
                let key = CostSeries {
                    attrs: slot.attrs.clone(),
                    currency: currency.as_str().to_owned(),
                    billing_mode: modes
                        .get_or_insert_with(|| {
                            ValueCap::of(known.cost.keys().map(|k| k.billing_mode.as_str()))
                        })
                        .admit(value_label(billing_mode.as_deref())),
                };
                let sum = out.cost.entry(key).or_default();
                *sum = sum.saturating_add(*amount);
            }
            for (reason, requests) in &slot.unpriced {
                let key = UnpricedSeries {
                    attrs: slot.attrs.clone(),
                    reason: reasons
                        .get_or_insert_with(|| ValueCap::of(known.unpriced.keys().map(|k| k.reason.as_str())))
                        .admit(reason.label()),
                };
                let sum = out.unpriced.entry(key).or_default();
                *sum = sum.saturating_add(*requests);
            }
        }
        out
    }
}

impl Slot {
    /// Adds a usage row's quote: its amount when priced, else its `requests` as unpriced.
    fn add_quote(&mut self, quote: &Quote<'_>, requests: u64) {
        if let Quote::Priced {
            amount,
            currency,
            billing_mode,
        } = quote
        {
            let found = self
                .costs
                .iter_mut()
                .find(|(c, b, _)| c == currency && b.as_deref() == billing_mode.as_deref());
            match found {
                Some((_, _, sum)) => *sum = sum.saturating_add(*amount),
                None => self
                    .costs
                    .push((*currency, billing_mode.as_deref().map(Into::into), *amount)),
            }
            return;
        }
        match self.unpriced.iter_mut().find(|(reason, _)| reason.is(quote)) {
            Some((_, sum)) => *sum = sum.saturating_add(requests),
            None => self.unpriced.push((Reason::of(quote), requests)),
        }
    }
}

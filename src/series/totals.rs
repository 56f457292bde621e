//! The counters of one series, one per quantity of the catalog (`catalog.rs`).

use crate::bytes::Reader;
pub use crate::catalog::Quantity;
use crate::ledger::decode::RowKind;

/// The counters of one series, one per [`Quantity`]. Sums saturate rather than wrap: a hostile ledger can pin a
/// counter at its maximum, never send it backwards.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals([u64; Quantity::COUNT]);

impl Totals {
    /// The widest layout: its width, then a u64 per quantity.
    pub const MAX_ENCODED_LEN: usize = 1 + Quantity::COUNT * 8;

    /// What one row adds; `None` for rows that count nothing.
    pub fn of_row(kind: &RowKind) -> Option<Totals> {
        let mut t = Totals::default();
        match kind {
            RowKind::Compaction => return None,
            RowKind::Turn => t.set(Quantity::Turns, 1),
            RowKind::Usage(counts) => {
                for q in Quantity::ALL {
                    t.set(q, counts.get(q));
                }
            }
        }
        (!t.is_zero()).then_some(t)
    }

    pub fn get(&self, q: Quantity) -> u64 {
        self.0[q.index()]
    }

    pub fn set(&mut self, q: Quantity, value: u64) {
        self.0[q.index()] = value;
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|v| *v == 0)
    }

    pub fn add(&mut self, other: &Totals) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    /// `self - other` per quantity, never below zero.
    pub fn minus(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// `self`'s quantities that are zero in `other`, the rest zero.
    pub fn where_zero_in(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            if b != 0 {
                *a = 0;
            }
        }
        out
    }

    /// The larger of `self` and `other`, per quantity.
    pub fn max(&self, other: &Totals) -> Totals {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = (*a).max(b);
        }
        out
    }

    /// Its width (a byte: how many quantities follow), then a little-endian u64 per quantity in
    /// [`Quantity::ALL`]'s order, up to the last that is not zero. A layout written before a
    /// quantity was added reads with that quantity at zero, and a quantity added (last) leaves
    /// the bytes of every value without it as they were; one wider than this build knows is
    /// refused (a newer build wrote it).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let width = self.0.iter().rposition(|v| *v != 0).map_or(0, |last| last + 1);
        out.push(width as u8);
        for value in &self.0[..width] {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::MAX_ENCODED_LEN);
        self.encode_into(&mut out);
        out
    }

    /// Reads what [`Totals::encode_into`] wrote off the front of `bytes`.
    pub fn read(bytes: &mut Reader) -> Option<Totals> {
        let width = usize::from(bytes.u8()?);
        if width > Quantity::COUNT {
            return None;
        }
        let mut totals = Totals::default();
        for value in &mut totals.0[..width] {
            *value = bytes.u64()?;
        }
        Some(totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_and_differences_stop_at_zero() {
        let mut big = Totals::default();
        big.set(Quantity::Total, u64::MAX - 1);
        let mut five = Totals::default();
        five.set(Quantity::Total, 5);
        big.add(&five);
        assert_eq!(big.get(Quantity::Total), u64::MAX, "pinned, never wrapped");
        assert_eq!(five.minus(&big).get(Quantity::Total), 0, "never below zero");
        let bytes = big.encode();
        assert_eq!(Totals::read(&mut Reader::new(&bytes)), Some(big));
    }

    #[test]
    fn a_narrower_layout_reads_with_the_rest_zero_and_a_wider_one_is_refused() {
        let mut narrow = vec![2];
        narrow.extend_from_slice(&7u64.to_le_bytes());
        narrow.extend_from_slice(&9u64.to_le_bytes());
        let totals = Totals::read(&mut Reader::new(&narrow)).unwrap();
        assert_eq!(
            (totals.get(Quantity::Prompt), totals.get(Quantity::Completion)),
            (7, 9)
        );
        assert!(Quantity::ALL[2..].iter().all(|q| totals.get(*q) == 0));
        let mut prompt = Totals::default();
        prompt.set(Quantity::Prompt, 7);
        assert_eq!(
            prompt.encode(),
            [&[1][..], &7u64.to_le_bytes()].concat(),
            "zeros at the end left out"
        );
        assert_eq!(Totals::default().encode(), [0]);
        let mut wide = vec![Quantity::COUNT as u8 + 1];
        wide.extend_from_slice(&[0; (Quantity::COUNT + 1) * 8]);
        assert_eq!(Totals::read(&mut Reader::new(&wide)), None);
    }
}

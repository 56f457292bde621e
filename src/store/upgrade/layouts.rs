//! The layouts of older formats that this build still reads, each where it is loaded: the
//! records beside the store and the store's own values while they are upgraded.

use std::collections::BTreeMap;

use crate::bytes::Reader;
use crate::series::{AttrSet, Family, Quantity, Sums, Totals};
use crate::store::pending_export::PendingExport;

/// How many quantities the layouts before widths held, at a u64 each.
pub(super) const WIDTH_BEFORE_WIDTH: usize = 8;

/// Sums as layouts before cost wrote them (stream record 1): the token section alone.
pub fn sums_before_cost(bytes: &mut Reader) -> Option<Sums> {
    Sums::read_families(bytes, &[Family::Tokens], totals_before_width)
}

/// Sums as layouts before widths wrote them (stream record 2 to 6, export record 3, history
/// frontier 1, format 4 and 5's pending export).
pub fn sums_before_width(bytes: &mut Reader) -> Option<Sums> {
    Sums::read_families(bytes, &Family::ALL, totals_before_width)
}

/// [`Totals`] as layouts before widths wrote them: the first eight quantities, a u64 each.
pub(super) fn totals_before_width(bytes: &mut Reader) -> Option<Totals> {
    let mut totals = Totals::default();
    for q in &Quantity::ALL[..WIDTH_BEFORE_WIDTH] {
        totals.set(*q, bytes.u64()?);
    }
    Some(totals)
}

/// The pending export of stores of format 4 and 5 (export record 3): [`Sums`] before widths.
pub fn pending_before_width(bytes: &[u8]) -> Option<PendingExport> {
    let mut r = Reader::new(bytes);
    let delivered_after = sums_before_width(&mut r)?;
    r.is_empty().then_some(PendingExport { delivered_after })
}

/// The pending export of stores before cost (format 3, export record 2): per token series, the
/// series key's length (u32), the key, the [`Totals`], up to the end.
pub fn pending_before_cost(bytes: &[u8]) -> Option<PendingExport> {
    let mut r = Reader::new(bytes);
    let mut tokens = BTreeMap::new();
    while !r.is_empty() {
        let attrs = AttrSet::decode(r.sized()?)?;
        let totals = totals_before_width(&mut r)?;
        tokens.insert(attrs, totals);
    }
    Some(PendingExport {
        delivered_after: Sums {
            tokens,
            ..Sums::default()
        },
    })
}

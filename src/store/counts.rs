//! Lifetime ingestion counts: what was read, counted, skipped as a duplicate or rejected.

use crate::ledger::decode::Rejection;

/// Every complete, non-blank line read is exactly one of counted, duplicate or rejected.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IngestCounts {
    /// New lines accepted (usage, turn and compaction rows).
    pub counted: u64,
    /// Lines whose bytes had been seen before, anywhere.
    pub duplicate: u64,
    /// New lines that count nothing, by [`Rejection`] in the order of `Rejection::ALL`.
    pub rejected: [u64; Rejection::ALL.len()],
    /// Increments whose attribute set was folded into `other` (docs/counting-rules.md, "Attributes").
    pub folded: u64,
    /// Ledger bytes read, re-reads included.
    pub bytes: u64,
}

const FIELDS: usize = 4 + Rejection::ALL.len();

impl IngestCounts {
    pub fn read(&self) -> u64 {
        self.counted + self.duplicate + self.rejected_total()
    }

    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().sum()
    }

    pub fn reject(&mut self, why: Rejection) {
        let i = Rejection::ALL.iter().position(|r| *r == why).expect("listed");
        self.rejected[i] += 1;
    }

    pub fn add(&mut self, other: &IngestCounts) {
        self.counted += other.counted;
        self.duplicate += other.duplicate;
        for (a, b) in self.rejected.iter_mut().zip(other.rejected) {
            *a += b;
        }
        self.folded += other.folded;
        self.bytes += other.bytes;
    }

    /// Each count the larger of this one's and `other`'s.
    pub fn raised_to(&self, other: &IngestCounts) -> IngestCounts {
        let mut rejected = self.rejected;
        for (a, b) in rejected.iter_mut().zip(other.rejected) {
            *a = (*a).max(b);
        }
        IngestCounts {
            counted: self.counted.max(other.counted),
            duplicate: self.duplicate.max(other.duplicate),
            rejected,
            folded: self.folded.max(other.folded),
            bytes: self.bytes.max(other.bytes),
        }
    }

    /// What was added since `earlier`.
    pub fn since(&self, earlier: &IngestCounts) -> IngestCounts {
        let mut rejected = self.rejected;
        for (a, b) in rejected.iter_mut().zip(earlier.rejected) {
            *a -= b;
        }
        IngestCounts {
            counted: self.counted - earlier.counted,
            duplicate: self.duplicate - earlier.duplicate,
            rejected,
            folded: self.folded - earlier.folded,
            bytes: self.bytes - earlier.bytes,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut fields = vec![self.counted, self.duplicate, self.folded, self.bytes];
        fields.extend_from_slice(&self.rejected);
        fields.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// Reads counts written with fewer rejection reasons too (a reason added later starts at 0).
    pub fn decode(bytes: &[u8]) -> Option<IngestCounts> {
        // Six reasons before `too_long`, eight since `bad_compaction`.
        if !bytes.len().is_multiple_of(8) || bytes.len() > FIELDS * 8 || bytes.len() < (4 + 6) * 8 {
            return None;
        }
        let mut r = crate::bytes::Reader::new(bytes);
        let f: Vec<u64> = std::iter::from_fn(|| r.u64()).collect();
        Some(IngestCounts {
            counted: f[0],
            duplicate: f[1],
            folded: f[2],
            bytes: f[3],
            rejected: {
                let mut rejected = [0; Rejection::ALL.len()];
                rejected[..f.len() - 4].copy_from_slice(&f[4..]);
                rejected
            },
        })
    }
}

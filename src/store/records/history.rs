//! The history frontier: which lines are the store's history, and the values its history may
//! reach, taken the moment its stream first went out (`history`).
//!
//! The lines a store counted before its first export or publication are its history: they
//! arrived as the counters' first value, so a backend holds nothing of them at their own time.
//! `reasonix-exporter history` writes them at their own time, and needs to know exactly which
//! they were (a line that arrived later, however old its `ts`, was counted by the live stream,
//! and must not be counted twice) and the first value the live stream sent of each series (the
//! history of a series ends at or below it, so that nothing goes down across the join). Both
//! are noted here once, at the stream's first send (its first OTLP export, or its first
//! publication on a served `/metrics`), and never again: like the
//! stream record, this file outlives `--reset-state`. A state dir deleted whole starts a new
//! stream and a new frontier: the backend may hold part of that history already (the old
//! stream's), and it is not loaded again (deploy/README.md, "Bring your history").

use std::path::{Path, PathBuf};

use super::frame::{self, Record};
use crate::bytes::put_sized;
use crate::series::Sums;
use crate::store::error::StoreError;

const FILE: &str = "history";
const MAGIC: &[u8; 8] = b"rxhistor";
/// 3 says how each file's prefix hash was made ([`FrontierChain`]); 2 stores totals with their
/// width (`Totals::encode_into`); 1 did not. Before 3, every hash was made in one stream.
const VERSION: u8 = 3;
const BEFORE_CHAIN: u8 = 2;

/// Where one ledger file's history ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierFile {
    /// The file's name in the stats dir, as the platform encodes it.
    pub name: Vec<u8>,
    /// Just past the last line of history.
    pub offset: u64,
    /// The fingerprint of every byte before `offset`, as its checkpoint had it: the file still
    /// holds the same history.
    pub prefix_hash: u64,
    pub chain: FrontierChain,
}

/// How a frontier file's `prefix_hash` was made, as the checkpoint it was noted from made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontierChain {
    /// xxh3-64 in one stream (a checkpoint taken before blocks).
    Streamed,
    /// By 64 KiB blocks (`ledger::checkpoint::BlockChain`).
    Blocks,
}

/// The store's history, as it stood when its stream first went out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFrontier {
    /// When the stream first went out (Unix ns): every point of history is older.
    pub first_sent_ns: u64,
    /// Per ledger file, where its history ends; files absent had none.
    pub files: Vec<FrontierFile>,
    /// The lifetime totals the stream first sent: no point of history is higher.
    pub first_values: Sums,
}

impl Record for HistoryFrontier {
    fn encode(&self) -> Vec<u8> {
        let mut out = frame::header(MAGIC, VERSION);
        out.extend_from_slice(&self.first_sent_ns.to_le_bytes());
        out.extend_from_slice(&(self.files.len() as u32).to_le_bytes());
        for file in &self.files {
            put_sized(&mut out, &file.name);
            out.extend_from_slice(&file.offset.to_le_bytes());
            out.extend_from_slice(&file.prefix_hash.to_le_bytes());
            out.push(match file.chain {
                FrontierChain::Streamed => 0,
                FrontierChain::Blocks => 1,
            });
        }
        out.extend_from_slice(&self.first_values.encode());
        frame::seal(out)
    }

    fn decode(bytes: &[u8]) -> Option<HistoryFrontier> {
        let (version, mut r) = frame::open(bytes, MAGIC)?;
        let sums = match version {
            VERSION | BEFORE_CHAIN => Sums::read,
            1 => crate::store::upgrade::sums_before_width,
            _ => return None,
        };
        let first_sent_ns = r.u64()?;
        let mut files = Vec::new();
        for _ in 0..r.u32()? {
            let (name, offset, prefix_hash) = (r.sized()?.to_vec(), r.u64()?, r.u64()?);
            let chain = match version {
                VERSION => match r.u8()? {
                    0 => FrontierChain::Streamed,
                    1 => FrontierChain::Blocks,
                    _ => return None,
                },
                _ => FrontierChain::Streamed,
            };
            files.push(FrontierFile {
                name,
                offset,
                prefix_hash,
                chain,
            });
        }
        let first_values = sums(&mut r)?;
        r.is_empty().then_some(HistoryFrontier {
            first_sent_ns,
            files,
            first_values,
        })
    }
}

/// Where the history frontier of the store under `state_dir` lives.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// Reads the frontier at `path`: `None` when there is none.
pub fn read(path: &Path) -> Result<Option<HistoryFrontier>, StoreError> {
    frame::read(path, || StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: "unreadable history frontier".into(),
    })
}

/// Replaces the frontier at `path` so that it survives a power cut.
pub fn write(path: &Path, frontier: &HistoryFrontier) -> Result<(), StoreError> {
    frame::write(path, frontier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{AttrSet, Quantity, Totals};

    fn frontier() -> HistoryFrontier {
        HistoryFrontier {
            first_sent_ns: 1_796_000_000_123_456_789,
            files: vec![
                FrontierFile {
                    name: b"2026-12-01.jsonl".to_vec(),
                    offset: 4_096,
                    prefix_hash: 0xdead_beef,
                    chain: FrontierChain::Blocks,
                },
                FrontierFile {
                    name: b"2026-12-02.jsonl".to_vec(),
                    offset: 17,
                    prefix_hash: 3,
                    chain: FrontierChain::Streamed,
                },
            ],
            first_values: {
                let mut totals = Totals::default();
                totals.set(Quantity::Total, 1_234_567);
                let mut sums = Sums::default();
                sums.tokens.insert(AttrSet::folded(), totals);
                sums
            },
        }
    }

    #[test]
    fn a_frontier_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        assert!(matches!(read(&path), Ok(None)));
        frame::write(&path, &frontier()).unwrap();
        assert_eq!(read(&path).unwrap(), Some(frontier()));
    }

    #[test]
    fn any_damaged_byte_makes_the_frontier_unreadable() {
        frame::assert_every_damage_is_refused(&frontier().encode(), |bytes| {
            HistoryFrontier::decode(bytes).is_some()
        });
    }
}

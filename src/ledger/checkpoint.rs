//! Where reading a file stopped, and when that position can be trusted (docs/counting-rules.md, "Reading positions").
//!
//! A checkpoint is a read position, never an identity: losing one costs a re-read, which the
//! seen set makes harmless. It is trusted only on pure growth of the same file: the same inode,
//! larger, its times not put back, and the bytes just before the position unchanged. Those are
//! checked on every poll, at a cost that does not grow with the file: the prefix fingerprint is
//! a chain of 64 KiB blocks ([`BlockChain`]), and the last, partial one is read again and hashed
//! with the chain before it. Every byte before the position is read again once the last full
//! verification is more than an hour old ([`VERIFY_EVERY_NS`]): by `once` before it trusts the
//! checkpoint, by `run` in the background (`ingest/verify.rs`), so that a rewrite in the middle
//! followed by an append is found within the hour. Everything else starts over.

use std::fs::{File, Metadata};
use std::io;

use xxhash_rust::xxh3::{Xxh3, xxh3_64_with_seed};

/// The prefix fingerprint's block: the most a poll reads again of what it read before.
pub const BLOCK: u64 = 64 << 10;

/// How old a full verification of a checkpoint's prefix may grow before the next one.
pub const VERIFY_EVERY_NS: u64 = 3600 * 1_000_000_000;

/// What `stat` says about a file: enough to tell growth from replacement or rewrite.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    /// The inode's change time: a user can put a modification time back (`touch -d`), never
    /// this one, which every write, and every such `touch`, moves. 0: not known (a checkpoint
    /// taken before it was kept), so a same-size file is read again once.
    pub ctime_ns: i64,
}

impl FileStat {
    pub fn of(meta: &Metadata) -> FileStat {
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64);
        #[cfg(unix)]
        let ctime_ns = {
            use std::os::unix::fs::MetadataExt;
            meta.ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec())
        };
        // Windows keeps no change time that std reads: the modification time stands for it.
        #[cfg(not(unix))]
        let ctime_ns = mtime_ns;
        FileStat {
            dev,
            ino,
            size: meta.len(),
            mtime_ns,
            ctime_ns,
        }
    }

    pub fn same_file(&self, other: &FileStat) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// The fingerprint of a file's first `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub len: u64,
    /// Every byte before `len`: the last block's xxh3-64 seeded with `chain` ([`BlockChain`]), or
    /// for a [`Chain::Streamed`] checkpoint, xxh3-64 of the bytes in one stream.
    pub hash: u64,
    pub chain: Chain,
}

/// How a fingerprint's hash was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// In one stream (a checkpoint taken before blocks): it cannot be carried on without
    /// reading every byte again, so growth is read after a full verification.
    Streamed,
    /// By blocks: `before` is the chain of the whole blocks before the last one, the seed of
    /// `hash`.
    Blocks { before: u64 },
}

/// The persisted read position of one ledger file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The file as it was when the position was taken; `size` counts every byte read, including
    /// a torn tail after `offset` that is not a line yet.
    pub stat: FileStat,
    /// Just past the last `\n` consumed.
    pub offset: u64,
    pub prefix: Fingerprint,
    /// The last full verification: when it began (Unix ns; 0, never), and how many bytes it
    /// found as they were consumed (a reading from the start counts as one).
    pub verified: Verified,
}

/// When the bytes before `len` were last all read and found as consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verified {
    pub at_ns: u64,
    pub len: u64,
}

impl Verified {
    /// Whether another full verification is due at `now_ns`: the last is over an hour old, or
    /// dated after now (by a clock that ran fast and came back, which would otherwise put the
    /// next one off by as long).
    pub fn due(&self, now_ns: u64) -> bool {
        now_ns < self.at_ns || now_ns - self.at_ns > VERIFY_EVERY_NS
    }
}

/// What the next poll does with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Nothing changed since the checkpoint: not even opened.
    Idle,
    /// The file grew: read from `offset`, if the fingerprint still matches.
    Resume { offset: u64 },
    /// No checkpoint, or one that cannot be trusted: read everything again.
    FromStart,
}

/// A checkpoint found to hold on an open file: the fingerprint to carry on from `offset`.
pub struct Resumed {
    pub prefix: BlockChain,
    pub verified: Verified,
}

impl Checkpoint {
    /// The layout with blocks and a verification time (a version word, then three more);
    /// [`Checkpoint::LEN_STREAMED`] is the one before.
    pub const ENCODED_LEN: usize = 8 * 12;
    pub const LEN_STREAMED: usize = 8 * 10;
    const VERSION_BLOCKS: u64 = 2;

    /// Decides from `stat` alone; `Resume` still needs [`Checkpoint::resume`] on the open file.
    pub fn plan(checkpoint: Option<&Checkpoint>, now: &FileStat) -> Plan {
        let Some(cp) = checkpoint else {
            return Plan::FromStart;
        };
        // One whose fingerprint covers less than its offset cannot be trusted (see `decode`).
        if !cp.stat.same_file(now) || now.size < cp.stat.size || cp.prefix.len != cp.offset {
            return Plan::FromStart;
        }
        if now.size == cp.stat.size {
            // Same size: untouched, or rewritten in place (which appends never do), perhaps with
            // its modification time put back; the change time tells.
            let untouched =
                now.mtime_ns == cp.stat.mtime_ns && cp.stat.ctime_ns != 0 && now.ctime_ns == cp.stat.ctime_ns;
            return if untouched { Plan::Idle } else { Plan::FromStart };
        }
        // Appends move both times forward; a time put back is a file written over.
        if now.mtime_ns < cp.stat.mtime_ns || now.ctime_ns < cp.stat.ctime_ns {
            return Plan::FromStart;
        }
        Plan::Resume { offset: cp.offset }
    }

    /// Whether the bytes before the offset are still the ones consumed, read from `file`; if
    /// so, the fingerprint to go on with. Reads the last block again, or every byte when a full
    /// verification is due at `now_ns` (`None`: not here, `run` verifies in the background) or
    /// the fingerprint was taken in one stream.
    pub fn resume(&self, file: &File, now_ns: Option<u64>) -> io::Result<Option<Resumed>> {
        if self.prefix.len != self.offset {
            return Ok(None);
        }
        let began = now_ns.unwrap_or_else(crate::ledger::now_ns);
        let full = |prefix: Option<BlockChain>| {
            prefix.map(|prefix| Resumed {
                prefix,
                verified: Verified {
                    at_ns: began,
                    len: self.offset,
                },
            })
        };
        let before = match self.prefix.chain {
            Chain::Streamed => return Ok(full(self.verify_streamed(file)?)),
            Chain::Blocks { .. } if now_ns.is_some_and(|now| self.verified.due(now)) => {
                return Ok(full(self.verify(file, &mut |_| {})?));
            }
            Chain::Blocks { before } => before,
        };
        let start = block_start(self.offset);
        let mut last = vec![0; (self.offset - start) as usize];
        if read_at(file, &mut last, start)? < last.len()
            || xxh3_64_with_seed(&last, before) != self.prefix.hash
        {
            return Ok(None);
        }
        Ok(Some(Resumed {
            prefix: BlockChain::resume(before, start, &last),
            verified: self.verified,
        }))
    }

    /// Reads every byte before the offset again (calling `pace` with the bytes each read
    /// took, for a caller that shares the machine), and whether they are the ones consumed; if
    /// so, their fingerprint. For a [`Chain::Blocks`] checkpoint.
    pub fn verify(&self, file: &File, pace: &mut dyn FnMut(usize)) -> io::Result<Option<BlockChain>> {
        let Chain::Blocks { before } = self.prefix.chain else {
            return Ok(None);
        };
        if self.prefix.len != self.offset {
            return Ok(None);
        }
        let mut prefix = BlockChain::default();
        let whole = read_through(file, self.offset, |bytes| {
            prefix.update(bytes);
            pace(bytes.len());
        })?;
        Ok((whole && prefix.before() == before && prefix.digest() == self.prefix.hash).then_some(prefix))
    }

    /// [`Checkpoint::verify`] for a checkpoint taken in one stream: its fingerprint checked, and
    /// the blocks' one made on the way.
    fn verify_streamed(&self, file: &File) -> io::Result<Option<BlockChain>> {
        let (mut stream, mut prefix) = (Xxh3::new(), BlockChain::default());
        let whole = read_through(file, self.offset, |bytes| {
            stream.update(bytes);
            prefix.update(bytes);
        })?;
        Ok((whole && stream.digest() == self.prefix.hash).then_some(prefix))
    }

    /// The checkpoint for having consumed `offset` bytes whose fingerprint is `prefix`, having
    /// read `size_read`.
    pub fn take(
        stat: FileStat,
        offset: u64,
        prefix: &BlockChain,
        size_read: u64,
        verified: Verified,
    ) -> Checkpoint {
        Checkpoint {
            stat: FileStat {
                size: size_read,
                ..stat
            },
            offset,
            prefix: Fingerprint {
                len: offset,
                hash: prefix.digest(),
                chain: Chain::Blocks {
                    before: prefix.before(),
                },
            },
            verified,
        }
    }

    /// This checkpoint, found not to hold: one at the file's start, from which it is read again.
    pub fn distrusted(self) -> Checkpoint {
        let stat = FileStat { size: 0, ..self.stat };
        Checkpoint::take(stat, 0, &BlockChain::default(), 0, Verified::default())
    }

    /// Whether a full verification is due at `now_ns` though the file may not have changed
    /// since this checkpoint: it grew since the last one (the growth was trusted from its last
    /// block), and that is more than an hour old. A file unchanged since its last full
    /// verification is watched by its times.
    pub fn verification_due(&self, now_ns: u64) -> bool {
        self.prefix.len == self.offset
            && matches!(self.prefix.chain, Chain::Blocks { .. })
            && self.offset > self.verified.len
            && self.verified.due(now_ns)
    }

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let before = match self.prefix.chain {
            Chain::Blocks { before } => before,
            // Never written: a streamed checkpoint is only ever read, then replaced.
            Chain::Streamed => 0,
        };
        let fields = [
            self.stat.dev,
            self.stat.ino,
            self.stat.size,
            self.stat.mtime_ns as u64,
            self.offset,
            self.prefix.len,
            self.prefix.hash,
            self.stat.ctime_ns as u64,
            Self::VERSION_BLOCKS,
            before,
            self.verified.at_ns,
            self.verified.len,
        ];
        let mut out = [0; Self::ENCODED_LEN];
        crate::bytes::put_u64s(&mut out, &fields);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Checkpoint> {
        let (f, chain, verified) = match bytes.len() {
            Self::ENCODED_LEN => {
                let f: [u64; Self::ENCODED_LEN / 8] = crate::bytes::u64s(bytes)?;
                if f[8] != Self::VERSION_BLOCKS {
                    return None;
                }
                let verified = Verified {
                    at_ns: f[10],
                    len: f[11],
                };
                (f, Chain::Blocks { before: f[9] }, verified)
            }
            // Taken before blocks: verified in full the next time its file grows.
            Self::LEN_STREAMED => {
                let f10: [u64; Self::LEN_STREAMED / 8] = crate::bytes::u64s(bytes)?;
                let mut f = [0; Self::ENCODED_LEN / 8];
                f[..10].copy_from_slice(&f10);
                (f, Chain::Streamed, Verified::default())
            }
            _ => return None,
        };
        let cp = Checkpoint {
            stat: FileStat {
                dev: f[0],
                ino: f[1],
                size: f[2],
                mtime_ns: f[3] as i64,
                // 0 in a checkpoint taken before the change time was kept.
                ctime_ns: f[7] as i64,
            },
            offset: f[4],
            prefix: Fingerprint {
                len: f[5],
                hash: f[6],
                chain,
            },
            verified,
        };
        // A checkpoint whose fingerprint covers less than its offset is read and never trusted
        // (see `plan`): its file is read again from the start, once.
        (cp.offset <= cp.stat.size && cp.prefix.len <= cp.offset && cp.verified.len <= cp.offset)
            .then_some(cp)
    }
}

/// Where the last block of a prefix of `len` bytes starts: the one a poll reads again. A
/// prefix that ends on a block's end keeps that whole block as its last.
pub fn block_start(len: u64) -> u64 {
    len.saturating_sub(1) / BLOCK * BLOCK
}

/// The fingerprint of a file's prefix, carried on as bytes are consumed: each whole 64 KiB
/// block's xxh3-64, seeded with the chain of the blocks before it, is the chain's next link;
/// the last block (partial, or whole until a byte follows it) hashed the same way is the
/// fingerprint. Any change to any byte changes it; carrying it on after a restart needs only
/// the last block's bytes and the chain before it.
#[derive(Clone)]
pub struct BlockChain {
    /// The chain of the whole blocks before the last one.
    before: u64,
    /// The last block so far, seeded with `before`.
    last: Xxh3,
    /// Bytes in it.
    in_last: u64,
}

impl Default for BlockChain {
    fn default() -> BlockChain {
        BlockChain {
            before: 0,
            last: Xxh3::with_seed(0),
            in_last: 0,
        }
    }
}

impl BlockChain {
    /// The fingerprint of a prefix whose last block `[start, start + last.len())` (see
    /// [`block_start`]) follows whole blocks chained to `before`.
    fn resume(before: u64, start: u64, last: &[u8]) -> BlockChain {
        debug_assert_eq!(start % BLOCK, 0);
        let mut hasher = Xxh3::with_seed(before);
        hasher.update(last);
        BlockChain {
            before,
            last: hasher,
            in_last: last.len() as u64,
        }
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.in_last == BLOCK {
                self.before = self.last.digest();
                self.last = Xxh3::with_seed(self.before);
                self.in_last = 0;
            }
            let take = ((BLOCK - self.in_last) as usize).min(bytes.len());
            self.last.update(&bytes[..take]);
            self.in_last += take as u64;
            bytes = &bytes[take..];
        }
    }

    /// The chain before the last block: the checkpoint's seed for it.
    pub fn before(&self) -> u64 {
        self.before
    }

    /// The fingerprint of every byte so far.
    pub fn digest(&self) -> u64 {
        self.last.digest()
    }
}

/// Reads `file`'s first `len` bytes in chunks, calling `each` with every one; whether there
/// were `len` to read.
fn read_through(file: &File, len: u64, mut each: impl FnMut(&[u8])) -> io::Result<bool> {
    let mut buf = vec![0; VERIFY_CHUNK.min(len as usize)];
    let mut at = 0;
    while at < len {
        let want = buf.len().min((len - at) as usize);
        let read = read_at(file, &mut buf[..want], at)?;
        if read < want {
            // It shrank under us.
            return Ok(false);
        }
        each(&buf[..read]);
        at += read as u64;
    }
    Ok(true)
}

/// How much of the file is read at a time to verify a checkpoint.
const VERIFY_CHUNK: usize = 64 << 10;

/// Reads as much of `buf` as the file has at `at`, without moving any shared cursor.
pub fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, &mut buf[filled..], at + filled as u64);
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(file, &mut buf[filled..], at + filled as u64);
        match n {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(ino: u64, size: u64, mtime_ns: i64) -> FileStat {
        FileStat {
            dev: 1,
            ino,
            size,
            mtime_ns,
            ctime_ns: mtime_ns + 1,
        }
    }

    fn cp(stat: FileStat, offset: u64) -> Checkpoint {
        Checkpoint::take(
            stat,
            offset,
            &BlockChain::default(),
            stat.size,
            Verified::default(),
        )
    }

    #[test]
    fn plan_trusts_only_growth_of_the_same_file() {
        let old = cp(stat(5, 100, 1), 0);
        assert_eq!(Checkpoint::plan(None, &stat(5, 100, 1)), Plan::FromStart);
        assert_eq!(Checkpoint::plan(Some(&old), &stat(5, 100, 1)), Plan::Idle);
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(5, 150, 2)),
            Plan::Resume { offset: 0 }
        );
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(5, 99, 2)),
            Plan::FromStart,
            "shrink"
        );
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(5, 100, 2)),
            Plan::FromStart,
            "same size"
        );
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(6, 150, 2)),
            Plan::FromStart,
            "new inode"
        );
        let touched_back = FileStat {
            ctime_ns: 9,
            ..stat(5, 100, 1)
        };
        assert_eq!(
            Checkpoint::plan(Some(&old), &touched_back),
            Plan::FromStart,
            "same size, the modification time put back: the change time moved"
        );
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(5, 150, 0)),
            Plan::FromStart,
            "grown, its modification time put back: written over"
        );
        let before_ctime = cp(
            FileStat {
                ctime_ns: 0,
                ..stat(5, 100, 1)
            },
            0,
        );
        assert_eq!(
            Checkpoint::plan(Some(&before_ctime), &stat(5, 100, 1)),
            Plan::FromStart,
            "a checkpoint without a change time is not trusted at the same size"
        );
        assert_eq!(
            Checkpoint::plan(Some(&cp(stat(5, 100, 1), 90).distrusted()), &stat(5, 100, 1)),
            Plan::Resume { offset: 0 },
            "one a verification found rewritten, though its times say nothing: from the start"
        );
    }

    #[test]
    fn encoding_round_trips() {
        let c = cp(stat(5, 100, -3), 0);
        assert_eq!(Checkpoint::decode(&c.encode()), Some(c));
        assert_eq!(Checkpoint::decode(&[0; 3]), None);
        let mut other_version = c.encode();
        other_version[64] = 3;
        assert_eq!(Checkpoint::decode(&other_version), None);
    }

    /// The fingerprint by its definition: whole blocks chained, each seeding the next.
    fn by_definition(bytes: &[u8]) -> (u64, u64) {
        let start = block_start(bytes.len() as u64) as usize;
        let before = bytes[..start]
            .chunks(BLOCK as usize)
            .fold(0, |chain, block| xxh3_64_with_seed(block, chain));
        (before, xxh3_64_with_seed(&bytes[start..], before))
    }

    #[test]
    fn the_block_chain_does_not_depend_on_how_the_bytes_came() {
        let bytes: Vec<u8> = (0..3 * BLOCK as usize + 777)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        for len in [
            0,
            1,
            4096,
            BLOCK as usize - 1,
            BLOCK as usize,
            BLOCK as usize + 1,
            2 * BLOCK as usize,
            bytes.len(),
        ] {
            for piece in [1_000, 4096, BLOCK as usize, 100_000] {
                let mut chain = BlockChain::default();
                bytes[..len].chunks(piece).for_each(|p| chain.update(p));
                assert_eq!(
                    (chain.before(), chain.digest()),
                    by_definition(&bytes[..len]),
                    "{len} in {piece}s"
                );
            }
        }
    }

    fn written(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    fn taken(path: &std::path::Path, offset: u64, verified_at_ns: u64) -> Checkpoint {
        let bytes = std::fs::read(path).unwrap();
        let s = FileStat::of(&std::fs::metadata(path).unwrap());
        let mut prefix = BlockChain::default();
        prefix.update(&bytes[..offset as usize]);
        let verified = Verified {
            at_ns: verified_at_ns,
            len: offset,
        };
        Checkpoint::take(s, offset, &prefix, s.size, verified)
    }

    const HOUR_NS: u64 = 3600 * 1_000_000_000;

    #[test]
    fn growth_reads_the_last_block_again_and_every_byte_once_an_hour() {
        let lines: String = (0..20_000).map(|i| format!("{{\"n\":{i:05}}}\n")).collect();
        let (_dir, path) = written(&lines);
        let offset = lines.len() as u64;
        let now = 10 * HOUR_NS;
        let c = taken(&path, offset, now - HOUR_NS / 2);
        let grown = format!("{lines}{{\"n\":99999}}\n");
        std::fs::write(&path, &grown).unwrap();
        let open = || File::open(&path).unwrap();
        let resumed = c.resume(&open(), Some(now)).unwrap().expect("pure growth");
        assert_eq!(
            resumed.verified, c.verified,
            "no full verification within the hour"
        );
        let mut carried = resumed.prefix;
        carried.update(&grown.as_bytes()[offset as usize..]);
        assert_eq!(
            (carried.before(), carried.digest()),
            by_definition(grown.as_bytes())
        );

        // One byte in the middle, far from the last block, rewritten at the same length: a
        // poll does not see it; the full verification does, and `once` makes it when due.
        let rewritten = grown.replacen("{\"n\":01000}", "{\"n\":01001}", 1);
        std::fs::write(&path, &rewritten).unwrap();
        assert!(c.resume(&open(), None).unwrap().is_some());
        assert!(c.resume(&open(), Some(now)).unwrap().is_some());
        assert!(c.verify(&open(), &mut |_| {}).unwrap().is_none());
        assert!(c.resume(&open(), Some(now + HOUR_NS)).unwrap().is_none());

        // In the last block: found at once.
        let near_end = grown.replacen("{\"n\":19990}", "{\"n\":19991}", 1);
        std::fs::write(&path, &near_end).unwrap();
        assert!(c.resume(&open(), None).unwrap().is_none());

        std::fs::write(&path, &lines[..100]).unwrap();
        assert!(
            c.resume(&open(), Some(now + HOUR_NS)).unwrap().is_none(),
            "shrunk"
        );
    }

    #[test]
    fn a_checkpoint_taken_in_one_stream_is_verified_in_full_and_carried_on_in_blocks() {
        let lines: String = (0..10_000).map(|i| format!("{{\"n\":{i:05}}}\n")).collect();
        let (_dir, path) = written(&lines);
        let offset = lines.len() as u64;
        let s = FileStat::of(&std::fs::metadata(&path).unwrap());
        let streamed = |hash| Checkpoint {
            stat: s,
            offset,
            prefix: Fingerprint {
                len: offset,
                hash,
                chain: Chain::Streamed,
            },
            verified: Verified::default(),
        };
        let file = File::open(&path).unwrap();
        let good = streamed(xxhash_rust::xxh3::xxh3_64(lines.as_bytes()));
        let resumed = good.resume(&file, None).unwrap().expect("the same bytes");
        assert_eq!(
            (resumed.prefix.before(), resumed.prefix.digest()),
            by_definition(lines.as_bytes())
        );
        assert_eq!(resumed.verified.len, offset);
        assert!(streamed(7).resume(&file, None).unwrap().is_none());
    }

    #[test]
    fn a_checkpoint_that_covers_less_than_its_offset_is_never_trusted() {
        let (_dir, path) = written(&"x".repeat(10_000));
        let mut c = taken(&path, 8192, 0);
        c.prefix.len = 4096;
        assert_eq!(Checkpoint::decode(&c.encode()), Some(c));
        assert!(c.resume(&File::open(&path).unwrap(), None).unwrap().is_none());
    }

    #[test]
    fn the_background_verifies_what_grew_since_its_last_full_verification_an_hour_on() {
        let (_dir, path) = written(&"x".repeat(10_000));
        let c = taken(&path, 8192, HOUR_NS);
        assert!(!c.verification_due(3 * HOUR_NS), "nothing grew since");
        let grown = Checkpoint {
            verified: Verified {
                len: 4096,
                ..c.verified
            },
            ..c
        };
        assert!(!grown.verification_due(HOUR_NS + HOUR_NS / 2));
        assert!(grown.verification_due(2 * HOUR_NS + 1));
        assert!(
            !grown.distrusted().verification_due(3 * HOUR_NS),
            "nothing to verify"
        );
        // Dated after now by a clock that ran fast and came back: not put off by as long.
        assert!(grown.verification_due(HOUR_NS / 2));
    }
}

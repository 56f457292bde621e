//! Where reading a file stopped, and when that position can be trusted (docs/counting-rules.md, "Reading positions").
//!
//! A checkpoint is a read position, never an identity: losing one costs a re-read, which the
//! seen set makes harmless. It is trusted only on pure growth of the same file: the same inode,
//! larger, and every byte before the position unchanged (checked by a hash over all of them, so
//! a rewrite in the middle followed by an append is not growth). Everything else starts over.

use std::fs::{File, Metadata};
use std::io;

use xxhash_rust::xxh3::Xxh3;

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

    fn same_file(&self, other: &FileStat) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// A hash of the first `len` bytes of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub len: u64,
    pub hash: u64,
}

/// The persisted read position of one ledger file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The file as it was when the position was taken; `size` counts every byte read, including
    /// a torn tail after `offset` that is not a line yet.
    pub stat: FileStat,
    /// Just past the last `\n` consumed.
    pub offset: u64,
    /// Every byte before `offset`: xxh3-64, as [`Xxh3`] computes it while the bytes are read.
    pub prefix: Fingerprint,
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

impl Checkpoint {
    pub const ENCODED_LEN: usize = 8 * 10;

    /// Decides from `stat` alone; `Resume` still needs [`Checkpoint::verify`] on the open file.
    pub fn plan(checkpoint: Option<&Checkpoint>, now: &FileStat) -> Plan {
        let Some(cp) = checkpoint else {
            return Plan::FromStart;
        };
        if !cp.stat.same_file(now) || now.size < cp.stat.size {
            return Plan::FromStart;
        }
        if now.size == cp.stat.size {
            // Same size: untouched, or rewritten in place (which appends never do), perhaps with
            // its modification time put back; the change time tells.
            let untouched =
                now.mtime_ns == cp.stat.mtime_ns && cp.stat.ctime_ns != 0 && now.ctime_ns == cp.stat.ctime_ns;
            return if untouched { Plan::Idle } else { Plan::FromStart };
        }
        Plan::Resume { offset: cp.offset }
    }

    /// Whether the bytes before the offset are still the ones consumed, read from `file`; if
    /// so, the hasher that has seen them, to go on with.
    pub fn verify(&self, file: &File) -> io::Result<Option<Xxh3>> {
        if self.prefix.len != self.offset {
            return Ok(None);
        }
        let mut hasher = Xxh3::new();
        let mut buf = vec![0; VERIFY_CHUNK.min(self.offset as usize)];
        let mut at = 0;
        while at < self.offset {
            let want = buf.len().min((self.offset - at) as usize);
            let read = read_at(file, &mut buf[..want], at)?;
            if read < want {
                // It shrank under us.
                return Ok(None);
            }
            hasher.update(&buf[..read]);
            at += read as u64;
        }
        Ok((hasher.digest() == self.prefix.hash).then_some(hasher))
    }

    /// The checkpoint for having consumed `offset` bytes hashing to `prefix_hash`, having read
    /// `size_read`.
    pub fn take(stat: FileStat, offset: u64, prefix_hash: u64, size_read: u64) -> Checkpoint {
        Checkpoint {
            stat: FileStat {
                size: size_read,
                ..stat
            },
            offset,
            prefix: Fingerprint {
                len: offset,
                hash: prefix_hash,
            },
        }
    }

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let fields = [
            self.stat.dev,
            self.stat.ino,
            self.stat.size,
            self.stat.mtime_ns as u64,
            self.offset,
            self.prefix.len,
            self.prefix.hash,
            self.stat.ctime_ns as u64,
            0, // reserved
            0,
        ];
        let mut out = [0; Self::ENCODED_LEN];
        crate::bytes::put_u64s(&mut out, &fields);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Checkpoint> {
        let f: [u64; Self::ENCODED_LEN / 8] = crate::bytes::u64s(bytes)?;
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
            },
        };
        // A checkpoint whose fingerprint covers less than its offset is read and never trusted
        // (see `verify`): its file is read again from the start, once.
        (cp.offset <= cp.stat.size && cp.prefix.len <= cp.offset).then_some(cp)
    }
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
        Checkpoint::take(stat, offset, 7, stat.size)
    }

    #[test]
    fn plan_trusts_only_growth_of_the_same_file() {
        let old = cp(stat(5, 100, 1), 90);
        assert_eq!(Checkpoint::plan(None, &stat(5, 100, 1)), Plan::FromStart);
        assert_eq!(Checkpoint::plan(Some(&old), &stat(5, 100, 1)), Plan::Idle);
        assert_eq!(
            Checkpoint::plan(Some(&old), &stat(5, 150, 2)),
            Plan::Resume { offset: 90 }
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
        let before_ctime = cp(
            FileStat {
                ctime_ns: 0,
                ..stat(5, 100, 1)
            },
            90,
        );
        assert_eq!(
            Checkpoint::plan(Some(&before_ctime), &stat(5, 100, 1)),
            Plan::FromStart,
            "a checkpoint without a change time is not trusted at the same size"
        );
    }

    #[test]
    fn encoding_round_trips() {
        let c = cp(stat(5, 100, -3), 90);
        assert_eq!(Checkpoint::decode(&c.encode()), Some(c));
        assert_eq!(Checkpoint::decode(&[0; 3]), None);
    }

    fn taken(path: &std::path::Path, offset: u64) -> Checkpoint {
        let bytes = std::fs::read(path).unwrap();
        let file = File::open(path).unwrap();
        let s = FileStat::of(&file.metadata().unwrap());
        Checkpoint::take(
            s,
            offset,
            xxhash_rust::xxh3::xxh3_64(&bytes[..offset as usize]),
            s.size,
        )
    }

    #[test]
    fn every_byte_before_the_offset_is_verified() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let lines: String = (0..2000).map(|i| format!("{{\"n\":{i:05}}}\n")).collect();
        std::fs::write(&path, &lines).unwrap();
        let offset = lines.len() as u64;
        let c = taken(&path, offset);
        let grown = format!("{lines}{{\"n\":99999}}\n");
        std::fs::write(&path, &grown).unwrap();
        assert!(
            c.verify(&File::open(&path).unwrap()).unwrap().is_some(),
            "pure growth"
        );

        // One byte in the middle, far from both ends, rewritten at the same length.
        let rewritten = grown.replacen("{\"n\":01000}", "{\"n\":01001}", 1);
        std::fs::write(&path, &rewritten).unwrap();
        assert!(c.verify(&File::open(&path).unwrap()).unwrap().is_none());

        std::fs::write(&path, &lines[..100]).unwrap();
        assert!(c.verify(&File::open(&path).unwrap()).unwrap().is_none(), "shrunk");
    }

    #[test]
    fn a_checkpoint_that_covers_less_than_its_offset_is_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, "x".repeat(10_000)).unwrap();
        let mut c = taken(&path, 8192);
        c.prefix.len = 4096;
        assert_eq!(Checkpoint::decode(&c.encode()), Some(c));
        assert!(c.verify(&File::open(&path).unwrap()).unwrap().is_none());
    }
}

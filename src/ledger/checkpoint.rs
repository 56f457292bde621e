//! Where reading a file stopped, and when that position can be trusted (contract §5).
//!
//! A checkpoint is a read position, never an identity: losing one costs a re-read, which the
//! seen set makes harmless. It is trusted only on pure growth of the same file; everything else
//! (a shrink, a same-size rewrite, a new inode, changed bytes around the position) starts over.

use std::fs::{File, Metadata};
use std::io;

use xxhash_rust::xxh3::xxh3_64;

/// How many bytes at the head of the file, and just before the offset, the fingerprint covers.
/// 4 KiB spans several whole ledger lines, so a rewritten last line (whose `ts` comes first) is
/// always inside the window.
pub const FINGERPRINT_WINDOW: u64 = 4096;

/// What `stat` says about a file: enough to tell growth from replacement or rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
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
        FileStat {
            dev,
            ino,
            size: meta.len(),
            mtime_ns,
        }
    }

    fn same_file(&self, other: &FileStat) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// A hash of a byte range of the file, with the range's length.
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
    /// The first bytes of the file.
    pub head: Fingerprint,
    /// The bytes just before `offset`.
    pub window: Fingerprint,
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

    /// Decides from `stat` alone; `Resume` still needs [`Checkpoint::matches`] on the open file.
    pub fn plan(checkpoint: Option<&Checkpoint>, now: &FileStat) -> Plan {
        let Some(cp) = checkpoint else {
            return Plan::FromStart;
        };
        if !cp.stat.same_file(now) || now.size < cp.stat.size {
            return Plan::FromStart;
        }
        if now.size == cp.stat.size {
            // Same size: untouched, or rewritten in place (which appends never do).
            return if now.mtime_ns == cp.stat.mtime_ns {
                Plan::Idle
            } else {
                Plan::FromStart
            };
        }
        Plan::Resume { offset: cp.offset }
    }

    /// Whether the bytes the fingerprint covers are still the same in `file`.
    pub fn matches(&self, file: &File) -> io::Result<bool> {
        Ok(fingerprint(file, 0, self.head.len)? == self.head
            && fingerprint(file, self.offset - self.window.len, self.window.len)? == self.window)
    }

    /// The checkpoint for having consumed `file` up to `offset`, having read `size_read` bytes.
    pub fn take(file: &File, stat: FileStat, offset: u64, size_read: u64) -> io::Result<Checkpoint> {
        let head_len = offset.min(FINGERPRINT_WINDOW);
        let window_len = offset.min(FINGERPRINT_WINDOW);
        Ok(Checkpoint {
            stat: FileStat {
                size: size_read,
                ..stat
            },
            offset,
            head: fingerprint(file, 0, head_len)?,
            window: fingerprint(file, offset - window_len, window_len)?,
        })
    }

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let fields = [
            self.stat.dev,
            self.stat.ino,
            self.stat.size,
            self.stat.mtime_ns as u64,
            self.offset,
            self.head.len,
            self.head.hash,
            self.window.len,
            self.window.hash,
            0, // reserved
        ];
        let mut out = [0; Self::ENCODED_LEN];
        for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Checkpoint> {
        if bytes.len() != Self::ENCODED_LEN {
            return None;
        }
        let f: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let cp = Checkpoint {
            stat: FileStat {
                dev: f[0],
                ino: f[1],
                size: f[2],
                mtime_ns: f[3] as i64,
            },
            offset: f[4],
            head: Fingerprint {
                len: f[5],
                hash: f[6],
            },
            window: Fingerprint {
                len: f[7],
                hash: f[8],
            },
        };
        (cp.offset <= cp.stat.size && cp.window.len <= cp.offset).then_some(cp)
    }
}

fn fingerprint(file: &File, at: u64, len: u64) -> io::Result<Fingerprint> {
    let mut buf = vec![0; len as usize];
    let read = read_at(file, &mut buf, at)?;
    // A file that shrank under us gives a short read, hence a different fingerprint.
    Ok(Fingerprint {
        len,
        hash: xxh3_64(&buf[..read]) ^ (read as u64).wrapping_sub(len),
    })
}

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
        }
    }

    fn cp(stat: FileStat, offset: u64) -> Checkpoint {
        let fp = Fingerprint {
            len: offset.min(10),
            hash: 7,
        };
        Checkpoint {
            stat,
            offset,
            head: fp,
            window: fp,
        }
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
    }

    #[test]
    fn encoding_round_trips() {
        let c = cp(stat(5, 100, -3), 90);
        assert_eq!(Checkpoint::decode(&c.encode()), Some(c));
        assert_eq!(Checkpoint::decode(&[0; 3]), None);
    }

    #[test]
    fn fingerprint_sees_changed_bytes_before_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let file = File::open(&path).unwrap();
        let s = FileStat::of(&file.metadata().unwrap());
        let c = Checkpoint::take(&file, s, 16, 16).unwrap();
        assert!(c.matches(&file).unwrap());
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":3}\n{\"c\":4}\n").unwrap();
        assert!(!c.matches(&File::open(&path).unwrap()).unwrap());
    }
}

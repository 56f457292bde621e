//! One file: read from its checkpoint to the last `\n`, and say where that left us.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::checkpoint::{Checkpoint, FileStat, Plan};

/// How much is read per system call: large enough that syscalls vanish from the profile of a
/// backfill, small enough to keep memory flat. Callers lend a buffer of this size.
pub const CHUNK: usize = 1 << 20;

/// An open ledger file positioned after what was already consumed.
pub struct Tail {
    file: File,
    stat: FileStat,
    /// Just past the last `\n` handed out: the checkpoint's offset.
    consumed: u64,
    /// Bytes read from the file so far, including the unfinished line held in `pending`.
    read: u64,
    /// The bytes after the last `\n`, waiting for theirs.
    pending: Vec<u8>,
}

/// Opens `path` for reading new lines, or `None` when, by its checkpoint, nothing changed.
///
/// The file is opened read-only (and, where the kernel allows it, without updating its access
/// time): the ledger is Reasonix's, we only look.
pub fn open(path: &Path, stat: &FileStat, checkpoint: Option<&Checkpoint>) -> io::Result<Option<Tail>> {
    if Checkpoint::plan(checkpoint, stat) == Plan::Idle {
        return Ok(None);
    }
    let mut file = open_read_only(path)?;
    // The open file is the truth: the path may have been replaced since the directory scan.
    let stat = FileStat::of(&file.metadata()?);
    let start = match (Checkpoint::plan(checkpoint, &stat), checkpoint) {
        (Plan::Idle, _) => return Ok(None),
        (Plan::Resume { offset }, Some(cp)) if cp.matches(&file)? => offset,
        _ => 0,
    };
    file.seek(SeekFrom::Start(start))?;
    Ok(Some(Tail {
        file,
        stat,
        consumed: start,
        read: start,
        pending: Vec::new(),
    }))
}

impl Tail {
    /// Reads the next chunk into `buf` and calls `on_lines` once with every line it completes
    /// (without the `\n`), in file order. Returns the number of bytes read; 0 means the end of
    /// the file for now.
    pub fn next_chunk(&mut self, buf: &mut [u8], on_lines: impl FnOnce(&[&[u8]])) -> io::Result<usize> {
        let n = loop {
            match self.file.read(buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.read += n as u64;
        split_lines(&mut self.pending, &buf[..n], on_lines);
        self.consumed = self.read - self.pending.len() as u64;
        Ok(n)
    }

    /// Bytes consumed so far in this file's life: where its checkpoint points.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The checkpoint for what was consumed so far.
    pub fn checkpoint(&self) -> io::Result<Checkpoint> {
        // mtime from after the reads: a write that raced them shows up as growth next time.
        let now = FileStat::of(&self.file.metadata()?);
        let stat = FileStat {
            mtime_ns: now.mtime_ns,
            ..self.stat
        };
        Checkpoint::take(&self.file, stat, self.consumed, self.read)
    }
}

/// Splits a freshly read chunk into the lines it completes and calls `on_lines` once with them
/// (without their `\n`), in order, when there is at least one. The first line starts with
/// `pending`, the bytes after the last `\n` of earlier chunks; what follows this chunk's last
/// `\n` is left in `pending` for the next one.
pub fn split_lines(pending: &mut Vec<u8>, fresh: &[u8], on_lines: impl FnOnce(&[&[u8]])) {
    let Some(last_newline) = memchr::memrchr(b'\n', fresh) else {
        pending.extend_from_slice(fresh);
        return;
    };
    let mut ends = memchr::memchr_iter(b'\n', &fresh[..=last_newline]);
    // The first line may have started in an earlier chunk: complete it in `pending`.
    let first_end = ends.next().unwrap_or(last_newline);
    pending.extend_from_slice(&fresh[..first_end]);
    let mut lines: Vec<&[u8]> = Vec::with_capacity(fresh.len() / 256 + 1);
    lines.push(pending.as_slice());
    let mut start = first_end + 1;
    for end in ends {
        lines.push(&fresh[start..end]);
        start = end + 1;
    }
    on_lines(&lines);
    drop(lines);
    pending.clear();
    pending.extend_from_slice(&fresh[last_newline + 1..]);
}

fn open_read_only(path: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOATIME is refused (EPERM) on files we do not own; then open normally.
        match File::options()
            .read(true)
            .custom_flags(libc::O_NOATIME)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            other => return other,
        }
    }
    File::options().read(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines_of(tail: &mut Tail) -> Vec<String> {
        let mut buf = vec![0; CHUNK];
        let mut out = Vec::new();
        while tail
            .next_chunk(&mut buf, |lines| {
                out.extend(lines.iter().map(|l| String::from_utf8(l.to_vec()).unwrap()))
            })
            .unwrap()
            > 0
        {}
        out
    }

    fn stat_of(path: &Path) -> FileStat {
        FileStat::of(&std::fs::metadata(path).unwrap())
    }

    #[test]
    fn consumes_only_through_the_last_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, b"a\nb\ntor").unwrap();
        let mut tail = open(&path, &stat_of(&path), None).unwrap().unwrap();
        assert_eq!(lines_of(&mut tail), ["a", "b"]);
        let cp = tail.checkpoint().unwrap();
        assert_eq!(cp.offset, 4);

        // Unchanged: not even opened.
        assert!(open(&path, &stat_of(&path), Some(&cp)).unwrap().is_none());

        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"n\nc\n")
            .unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp)).unwrap().unwrap();
        assert_eq!(lines_of(&mut tail), ["torn", "c"]);
    }

    #[test]
    fn lines_longer_than_a_chunk_arrive_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let long = "x".repeat(CHUNK * 2 + 17);
        std::fs::write(&path, format!("a\n{long}\nb\n")).unwrap();
        let mut tail = open(&path, &stat_of(&path), None).unwrap().unwrap();
        let lines = lines_of(&mut tail);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1], long);
        assert_eq!(tail.consumed(), (long.len() + 5) as u64);
    }

    #[test]
    fn a_rewrite_before_the_offset_reads_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, b"a\nb\n").unwrap();
        let mut tail = open(&path, &stat_of(&path), None).unwrap().unwrap();
        lines_of(&mut tail);
        let cp = tail.checkpoint().unwrap();
        // Same inode, grown, but the consumed bytes changed.
        std::fs::write(&path, b"a\nB\nc\n").unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp)).unwrap().unwrap();
        assert_eq!(lines_of(&mut tail), ["a", "B", "c"]);
    }
}

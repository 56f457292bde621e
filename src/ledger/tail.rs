//! One file: read from its checkpoint to the last `\n`, and say where that left us.
//!
//! Memory stays bounded whatever the file holds: the bytes of an unfinished line are held only
//! up to [`MAX_LINE`], and a line that cannot be JSON only up to [`EARLY_VERDICT`]. Past that the
//! line is skipped as it streams by (its identity still hashed) and rejected when its `\n`
//! comes: a gigabyte of NUL bytes left by a power cut costs a megabyte, not a gigabyte.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use super::checkpoint::{BlockChain, Checkpoint, FileStat, Plan, Verified};
use super::decode::Rejection;

/// How much is read per system call: large enough that syscalls vanish from the profile of a
/// backfill, small enough to keep memory flat. Callers lend a buffer of this size.
pub const CHUNK: usize = 1 << 20;

/// The longest line held: a longer one is rejected as too long (docs/counting-rules.md).
pub const MAX_LINE: usize = 64 << 20;

/// An unfinished line this long whose first byte cannot start a JSON value is not held any
/// longer: it is invalid JSON whatever follows.
pub const EARLY_VERDICT: usize = 1 << 20;

/// An open ledger file positioned after what was already consumed.
pub struct Tail {
    file: File,
    stat: FileStat,
    /// Just past the last `\n` handed out: the checkpoint's offset.
    consumed: u64,
    /// Bytes read from the file so far, including the unfinished line.
    read: u64,
    /// Where reading stops: the end of the file, or of a region read again ([`open_region`]).
    end: u64,
    /// The bytes after the last `\n`, waiting for theirs.
    pending: Vec<u8>,
    /// Every byte consumed, from the start of the file: the checkpoint's fingerprint.
    prefix: Prefix,
    /// The last full verification of what is consumed: carried on from the checkpoint, or now
    /// for a reading from the start (`len` then follows what it consumes).
    verified: Verified,
    from_start: bool,
    /// A line too long to hold, streaming by.
    skipping: Option<Skipping>,
    /// Skipped lines whose `\n` came, for the caller to count: the xxh3-128 of each (without
    /// one `\r` before its `\n`, as a line's identity is everywhere) and why it is rejected.
    skipped: Vec<(u128, Rejection)>,
}

/// A line being skipped: its identity so far and why it is rejected.
struct Skipping {
    why: Rejection,
    identity: Xxh3,
    /// Its bytes so far.
    len: u64,
    /// The last byte fed was a `\r`, held back: one before the `\n` is not part of the identity.
    held_cr: bool,
    /// `Tail::prefix` at the line's start: the fingerprint while the line is not consumed.
    prefix_at_start: Prefix,
}

impl Skipping {
    fn feed(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.held_cr {
            self.identity.update(b"\r");
        }
        self.held_cr = bytes.ends_with(b"\r");
        let kept = if self.held_cr {
            &bytes[..bytes.len() - 1]
        } else {
            bytes
        };
        self.identity.update(kept);
        self.len += bytes.len() as u64;
    }
}

/// How a growing file's checkpoint is trusted: verified in full here once that is due, as
/// `once` does, or with the full verification left to the background, as `run` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullCheck {
    WhenDue,
    InBackground,
}

/// Opens `path` for reading new lines, or `None` when, by its checkpoint, nothing changed.
///
/// The file is opened read-only (and, where the kernel allows it, without updating its access
/// time): the ledger is Reasonix's, we only look.
pub fn open(
    path: &Path,
    stat: &FileStat,
    checkpoint: Option<&Checkpoint>,
    full_check: FullCheck,
) -> io::Result<Option<Tail>> {
    let now_ns = super::now_ns();
    // Unchanged since it was read, but grown since its last full verification, which is more
    // than an hour old: `once` verifies it now (a rewrite in the middle, then an append, that
    // an earlier poll took for growth).
    let due = |cp: &Checkpoint| full_check == FullCheck::WhenDue && cp.verification_due(now_ns);
    if Checkpoint::plan(checkpoint, stat) == Plan::Idle && !checkpoint.is_some_and(due) {
        return Ok(None);
    }
    let mut file = open_read_only(path)?;
    // The open file is the truth: the path may have been replaced since the directory scan.
    let stat = FileStat::of(&file.metadata()?);
    let plan = match (Checkpoint::plan(checkpoint, &stat), checkpoint) {
        (Plan::Idle, Some(cp)) if due(cp) => Plan::Resume { offset: cp.offset },
        (plan, _) => plan,
    };
    let resumed = match (plan, checkpoint) {
        (Plan::Idle, _) => return Ok(None),
        (Plan::Resume { .. }, Some(cp)) => {
            let now = (full_check == FullCheck::WhenDue).then_some(now_ns);
            cp.resume(&file, now)?.map(|resumed| (cp.offset, resumed))
        }
        _ => None,
    };
    // From the start (a checkpoint put back there too): every byte it consumes is read now.
    let (start, prefix, verified) = match resumed {
        Some((offset, resumed)) if offset > 0 => (offset, resumed.prefix, resumed.verified),
        _ => (
            0,
            BlockChain::default(),
            Verified {
                at_ns: now_ns,
                len: 0,
            },
        ),
    };
    file.seek(SeekFrom::Start(start))?;
    let prefix = Prefix {
        blocks: prefix,
        streamed: None,
    };
    let mut tail = Tail::at(file, stat, start, u64::MAX, prefix);
    tail.from_start = start == 0;
    tail.verified = verified;
    Ok(Some(tail))
}

/// Opens `path` to read again its bytes `[from, to)`, consumed once already (an upgrade reading
/// what an older store had read, `history` what its frontier holds): no checkpoint to trust and
/// nothing read past `to`. The fingerprint is also made in one stream, as checkpoints were
/// before blocks ([`Tail::streamed_hash`]).
pub fn open_region(path: &Path, from: u64, to: u64) -> io::Result<Tail> {
    let mut file = open_read_only(path)?;
    let stat = FileStat::of(&file.metadata()?);
    file.seek(SeekFrom::Start(from))?;
    let prefix = Prefix {
        blocks: BlockChain::default(),
        streamed: Some(Xxh3::new()),
    };
    Ok(Tail::at(file, stat, from, to, prefix))
}

/// The fingerprint of what is consumed, by blocks, and in one stream where asked.
#[derive(Clone)]
struct Prefix {
    blocks: BlockChain,
    streamed: Option<Xxh3>,
}

impl Prefix {
    fn update(&mut self, bytes: &[u8]) {
        self.blocks.update(bytes);
        if let Some(streamed) = &mut self.streamed {
            streamed.update(bytes);
        }
    }
}

impl Tail {
    fn at(file: File, stat: FileStat, start: u64, end: u64, prefix: Prefix) -> Tail {
        Tail {
            file,
            stat,
            consumed: start,
            read: start,
            end,
            pending: Vec::new(),
            prefix,
            verified: Verified::default(),
            from_start: false,
            skipping: None,
            skipped: Vec::new(),
        }
    }
}

impl Tail {
    /// Reads the next chunk into `buf` and calls `on_lines` once with every line it completes
    /// (without the `\n`), in file order, and the update of the file's fingerprint over them (for
    /// the caller to apply on whichever thread has time; it is applied when dropped otherwise).
    /// Returns the number of bytes read; 0 means the end of the file for now. A skipped line that
    /// ends in this chunk is left for [`Tail::take_skipped`].
    pub fn next_chunk(
        &mut self,
        buf: &mut [u8],
        on_lines: impl FnOnce(&[&[u8]], PrefixUpdate<'_>),
    ) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.read)).unwrap_or(usize::MAX);
        let len = left.min(buf.len());
        let buf = &mut buf[..len];
        let n = loop {
            match self.file.read(buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.read += n as u64;
        let mut fresh = &buf[..n];
        if let Some(skipping) = &mut self.skipping {
            let Some(end) = memchr::memchr(b'\n', fresh) else {
                skipping.feed(fresh);
                self.prefix.update(fresh);
                return Ok(n);
            };
            skipping.feed(&fresh[..end]);
            self.prefix.update(&fresh[..=end]);
            self.skipped.push((skipping.identity.digest128(), skipping.why));
            self.skipping = None;
            fresh = &fresh[end + 1..];
        }
        let prefix = &mut self.prefix;
        split_lines(&mut self.pending, fresh, |lines, rest| {
            let head = lines[0];
            on_lines(lines, PrefixUpdate::new(prefix, head, rest));
        });
        if let Some(why) = too_long_to_hold(&self.pending) {
            self.skip_pending(why);
        }
        self.consumed = self.read - self.pending.len() as u64 - self.skipping.as_ref().map_or(0, |s| s.len);
        Ok(n)
    }

    /// Streams the unfinished line past instead of holding it.
    fn skip_pending(&mut self, why: Rejection) {
        let mut skipping = Skipping {
            why,
            identity: Xxh3::new(),
            len: 0,
            held_cr: false,
            prefix_at_start: self.prefix.clone(),
        };
        skipping.feed(&self.pending);
        self.prefix.update(&self.pending);
        // Given back, not just cleared: this is the memory the bound is about.
        self.pending = Vec::new();
        self.skipping = Some(skipping);
    }

    /// The lines skipped as too long to hold whose end was read, with why they are rejected.
    pub fn take_skipped(&mut self) -> Vec<(u128, Rejection)> {
        std::mem::take(&mut self.skipped)
    }

    /// Bytes consumed so far in this file's life: where its checkpoint points.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Whether every byte up to where reading stops has been read.
    pub fn at_end(&self) -> bool {
        self.read >= self.end
    }

    /// The checkpoint for what was consumed so far.
    pub fn checkpoint(&self) -> io::Result<Checkpoint> {
        // mtime from after the reads: a write that raced them shows up as growth next time.
        let now = FileStat::of(&self.file.metadata()?);
        let stat = FileStat {
            mtime_ns: now.mtime_ns,
            ctime_ns: now.ctime_ns,
            ..self.stat
        };
        let prefix = self.consumed_prefix();
        let verified = if self.from_start {
            Verified {
                len: self.consumed,
                ..self.verified
            }
        } else {
            self.verified
        };
        Ok(Checkpoint::take(
            stat,
            self.consumed,
            &prefix.blocks,
            self.read,
            verified,
        ))
    }

    /// The fingerprint of the bytes consumed (a line being skipped is not, yet).
    fn consumed_prefix(&self) -> &Prefix {
        match &self.skipping {
            Some(skipping) => &skipping.prefix_at_start,
            None => &self.prefix,
        }
    }

    /// xxh3-64 of the bytes consumed, in one stream, for a region opened at the file's start
    /// ([`open_region`]): a history frontier noted before blocks holds it.
    pub fn streamed_hash(&self) -> Option<u64> {
        self.consumed_prefix().streamed.as_ref().map(Xxh3::digest)
    }
}

/// Why an unfinished line is not held any longer, if it is not.
fn too_long_to_hold(pending: &[u8]) -> Option<Rejection> {
    if pending.len() > MAX_LINE {
        return Some(Rejection::TooLong);
    }
    if pending.len() > EARLY_VERDICT {
        // After the white space the decoder cuts (Go's, Unicode's included); a character cut
        // at the end of what is held yet may still be some.
        let rest = super::go_text::go_trim_start(pending);
        let first = rest.first()?;
        if !first.is_ascii() && rest.len() < 4 {
            return None;
        }
        let can_start_json = matches!(
            first,
            b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
        );
        if !can_start_json {
            return Some(Rejection::InvalidJson);
        }
    }
    None
}

/// The bytes of a chunk's complete lines, `\n`s included, still to be added to the file's
/// prefix fingerprint: the first line, then the rest of the chunk through its last `\n`.
/// Applied by [`PrefixUpdate::apply`], or when dropped.
pub struct PrefixUpdate<'a> {
    prefix: Option<&'a mut Prefix>,
    head: &'a [u8],
    rest: &'a [u8],
}

impl<'a> PrefixUpdate<'a> {
    fn new(prefix: &'a mut Prefix, head: &'a [u8], rest: &'a [u8]) -> PrefixUpdate<'a> {
        PrefixUpdate {
            prefix: Some(prefix),
            head,
            rest,
        }
    }

    /// An update that updates nothing, for tests of what takes one.
    #[cfg(test)]
    pub(crate) fn none() -> PrefixUpdate<'static> {
        PrefixUpdate {
            prefix: None,
            head: b"",
            rest: b"",
        }
    }

    pub fn apply(mut self) {
        self.run();
    }

    fn run(&mut self) {
        if let Some(prefix) = self.prefix.take() {
            prefix.update(self.head);
            prefix.update(self.rest);
        }
    }
}

impl Drop for PrefixUpdate<'_> {
    fn drop(&mut self) {
        self.run();
    }
}

/// Splits a freshly read chunk into the lines it completes and calls `on_lines` once with them
/// (without their `\n`), in order, when there is at least one; with them, the chunk's bytes
/// after the first line's part, through its last `\n` (the first line, then those, are every
/// byte the lines were cut from). The first line starts with `pending`, the bytes after the last
/// `\n` of earlier chunks; what follows this chunk's last `\n` is left in `pending` for the next
/// one.
pub fn split_lines(pending: &mut Vec<u8>, fresh: &[u8], on_lines: impl FnOnce(&[&[u8]], &[u8])) {
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
    on_lines(&lines, &fresh[first_end..=last_newline]);
    drop(lines);
    pending.clear();
    pending.extend_from_slice(&fresh[last_newline + 1..]);
}

/// Opens a ledger file read-only (without touching its access time where allowed), and checks
/// that what it opened is a regular file: a FIFO or a device swapped in since the listing is an
/// error at once, never a read that blocks or never ends (a FIFO is opened without waiting for
/// a writer).
pub fn open_read_only(path: &Path) -> io::Result<File> {
    let file = open_without_waiting(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    #[cfg(unix)]
    {
        // Reads block as usual again (a network filesystem may otherwise answer "try again").
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor this function owns, with flags read from it.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

fn open_without_waiting(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK changes nothing for a regular file's reads; it only keeps open() from
        // waiting on a FIFO. O_NOATIME is refused (EPERM) on files we do not own.
        #[cfg(target_os = "linux")]
        match File::options()
            .read(true)
            .custom_flags(libc::O_NOATIME | libc::O_NONBLOCK)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            other => return other,
        }
        File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
    }
    #[cfg(not(unix))]
    File::options().read(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_refused_at_once_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("2026-10-01.jsonl");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other precondition.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let (done, opened) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let results = [fifo.as_path(), Path::new("/dev/zero")].map(|p| open_read_only(p).map(|_| ()));
            let _ = done.send(results.map(|r| r.map_err(|e| e.kind())));
        });
        let results = opened
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("opening a FIFO never waits for a writer");
        assert_eq!(results, [Err(io::ErrorKind::InvalidInput); 2]);
    }

    fn lines_of(tail: &mut Tail) -> Vec<String> {
        let mut buf = vec![0; CHUNK];
        let mut out = Vec::new();
        while tail
            .next_chunk(&mut buf, |lines, _| {
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
        let mut tail = open(&path, &stat_of(&path), None, FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        assert_eq!(lines_of(&mut tail), ["a", "b"]);
        let cp = tail.checkpoint().unwrap();
        assert_eq!(cp.offset, 4);

        // Unchanged: not even opened.
        assert!(
            open(&path, &stat_of(&path), Some(&cp), FullCheck::WhenDue)
                .unwrap()
                .is_none()
        );

        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"n\nc\n")
            .unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp), FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        assert_eq!(lines_of(&mut tail), ["torn", "c"]);
    }

    #[test]
    fn lines_longer_than_a_chunk_arrive_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let long = format!("{{\"x\":\"{}\"}}", "x".repeat(CHUNK * 2 + 17));
        std::fs::write(&path, format!("a\n{long}\nb\n")).unwrap();
        let mut tail = open(&path, &stat_of(&path), None, FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        let lines = lines_of(&mut tail);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1], long);
        assert_eq!(tail.consumed(), (long.len() + 5) as u64);
    }

    #[test]
    fn a_line_too_long_to_hold_is_skipped_whole_with_its_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let nul = vec![0u8; EARLY_VERDICT * 3 + 5];
        let mut bytes = b"a\n".to_vec();
        bytes.extend_from_slice(&nul);
        bytes.extend_from_slice(b"\r\nb\n");
        std::fs::write(&path, &bytes).unwrap();
        let mut tail = open(&path, &stat_of(&path), None, FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        let mut buf = vec![0; CHUNK];
        let mut lines = Vec::new();
        let mut skipped = Vec::new();
        while tail
            .next_chunk(&mut buf, |l, _| lines.extend(l.iter().map(|l| l.to_vec())))
            .unwrap()
            > 0
        {
            assert!(
                tail.pending.capacity() <= EARLY_VERDICT * 2 + CHUNK,
                "held {}",
                tail.pending.capacity()
            );
            skipped.extend(tail.take_skipped());
        }
        assert_eq!(lines, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(
            skipped,
            [(xxhash_rust::xxh3::xxh3_128(&nul), Rejection::InvalidJson)]
        );
        assert_eq!(tail.consumed(), bytes.len() as u64);
        // The checkpoint is good for pure growth after it.
        let cp = tail.checkpoint().unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"c\n")
            .unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp), FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        assert_eq!(lines_of(&mut tail), ["c"]);
    }

    #[test]
    fn a_rewrite_in_the_middle_then_an_append_reads_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let lines: String = (0..3000).map(|i| format!("line {i:05}\n")).collect();
        std::fs::write(&path, &lines).unwrap();
        let mut tail = open(&path, &stat_of(&path), None, FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        lines_of(&mut tail);
        let cp = tail.checkpoint().unwrap();
        // rsync --inplace: same length in the middle, then the new tail.
        let rewritten = lines.replacen("line 01500", "line 0150X", 1);
        std::fs::write(&path, format!("{rewritten}line 03000\n")).unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp), FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        assert_eq!(lines_of(&mut tail).len(), 3001);
    }

    #[test]
    fn a_rewrite_before_the_offset_reads_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, b"a\nb\n").unwrap();
        let mut tail = open(&path, &stat_of(&path), None, FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        lines_of(&mut tail);
        let cp = tail.checkpoint().unwrap();
        // Same inode, grown, but the consumed bytes changed.
        std::fs::write(&path, b"a\nB\nc\n").unwrap();
        let mut tail = open(&path, &stat_of(&path), Some(&cp), FullCheck::WhenDue)
            .unwrap()
            .unwrap();
        assert_eq!(lines_of(&mut tail), ["a", "B", "c"]);
    }
}

//! Compaction: the store copied into a new database when sled's log has grown far past what it
//! holds, and swapped in for it.
//!
//! sled 0.34 reclaims a segment of its log only once half of it or less is live (a constant of
//! its own), and at every open rewrites each free segment whole. A day of millions of lines,
//! whose every commit rewrites all its partitions, so leaves a log of several times what it holds
//! (a 2M-line day: 110 MB for 32 MB of hashes; 228 MB with sled as published), which each open
//! pays for again. A copy written in key order, a MiB a write and each write flushed, holds the
//! same entries in 1.16 times their size (37 MB).
//!
//! The copy is made beside the store, in `store.next`, and synced; then `store` becomes
//! `store.old`, `store.next` becomes `store`, and `store.old` is removed, the state dir synced
//! after each rename. An open under the state lock finishes a swap a crash cut short
//! ([`finish_interrupted`]): `store` is only renamed away once the copy is whole and synced, so
//! a state dir with `store.old` and `store.next` and no `store` takes `store.next` (or
//! `store.old` back, should the copy not move); whatever else a swap left is removed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::engine::{Engine, Write};
use super::error::StoreError;
use crate::own_files;

/// The copy, while it is being made.
pub(super) const NEXT: &str = "store.next";
/// The store before the copy, while the copy takes its place.
pub(super) const OLD: &str = "store.old";

/// Every line counted or rejected has its 16-byte hash in the seen set.
const BYTES_PER_LINE: u64 = 16;

/// Room for what is not the seen set (checkpoints, sums, counts) and for sled's own slack: no
/// store smaller than this is ever compacted.
const SLACK: u64 = 32 << 20;

/// One write of the copy. sled applies a write leaf by leaf, its new keys first
/// (`third_party/sled/PATCHES.md`), so each value is logged once; what a write leaves in the log
/// beyond its values is the leaf it shares with the write before, split and written again. The
/// 2M-line day's copy, with sled's index nodes of 64: 50.3 MB with 64 KiB writes, 41.9 MB with
/// 256 KiB, 36.7 MB with 1 MiB, 34.6 MB with 4 MiB (the larger, the more of it in sled's buffers
/// at once); 37.2 MB with 1 MiB as built. Each write flushed
/// lets sled's cleaner keep up with the copy: the segments it frees late are rewritten whole by
/// every open until commits fill them (with a MiB a write, one new line on that day's store takes
/// 1.03 times one on a 1k-line day's, `bench/one_line_day_sizes.py`).
const COPY_WRITE_BYTES: usize = 1 << 20;

/// Whether a store of `lines` hashes that takes `disk` bytes is worth compacting: its log is more
/// than one and a half times the seen set, with [`SLACK`] to spare. A store of the usual shape
/// stays under it (1M lines in 365 day files: 19.1 MB, 28 MB with sled as published; the limit
/// 57.6 MB); a busy day's passes it (2M lines of one day: 110 MB after its backfill, 228 MB with
/// sled as published; the limit 81.6 MB) and is left at 37 MB.
pub(super) fn is_due(disk: u64, lines: u64) -> bool {
    let seen = lines.saturating_mul(BYTES_PER_LINE);
    disk > seen.saturating_add(seen / 2).saturating_add(SLACK)
}

/// A compaction of this process failed, or left the store still due.
static GIVEN_UP: AtomicBool = AtomicBool::new(false);

/// Whether a due store may be compacted: not again in a process where one failed or left the
/// store above the limit (what the limit does not count, such as the cost pass's set of an
/// upgraded store; a full disk; a folder Windows will not rename), so that such a store costs
/// one copy a start rather than one an open. A compaction that worked leaves the next one free:
/// a `run` of months compacts its busy days again.
pub(super) fn allowed() -> bool {
    !GIVEN_UP.load(Ordering::Relaxed)
}

/// A compaction failed, or left the store due: none again in this process.
pub(super) fn give_up() {
    GIVEN_UP.store(true, Ordering::Relaxed);
}

/// Copies every entry of `db` into a new database in `state_dir`'s [`NEXT`], synced to disk. A
/// store left over from an earlier swap goes first: a copy is only ever swapped in with no other.
pub(super) fn copy(db: &Engine, state_dir: &Path) -> Result<(), StoreError> {
    let (next, old) = (state_dir.join(NEXT), state_dir.join(OLD));
    for leftover in [&next, &old] {
        own_files::remove_if_present(leftover).map_err(|e| StoreError::io(leftover, e))?;
    }
    let copy = Engine::open(&next)?;
    let mut write = Write::default();
    let mut bytes = 0;
    for entry in db.scan(&[]) {
        let (key, value) = entry?;
        bytes += key.len() + value.len();
        write.insert(&*key, &*value);
        if bytes >= COPY_WRITE_BYTES {
            copy.apply(std::mem::take(&mut write))?;
            copy.flush()?;
            bytes = 0;
        }
    }
    copy.apply(write)?;
    copy.flush()?;
    let log = copy.log();
    drop(copy);
    super::engine::wait_for_sled_release(&log);
    sync_database(&next).map_err(|e| StoreError::io(&next, e))
}

/// Makes every file of the database in `folder` (its log, its configuration, the blobs sled
/// keeps in a folder of their own), and every folder's entries, durable.
fn sync_database(folder: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            sync_database(&entry.path())?;
        } else if kind.is_file() {
            own_files::sync_file(&entry.path())?;
        }
    }
    own_files::sync_folder(folder)
}

/// Puts the copy made by [`copy`] in the place of the store, which is closed. On an error the
/// state dir holds the store or its copy under `store`, or is left for [`finish_interrupted`].
pub(super) fn swap(state_dir: &Path) -> Result<(), StoreError> {
    let (store, next, old) = (state_dir.join("store"), state_dir.join(NEXT), state_dir.join(OLD));
    super::engine::wait_for_sled_release(&store.join(super::engine::SLED_LOG));
    rename(&store, &old).map_err(|e| StoreError::io(&store, e))?;
    own_files::sync_folder(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
    rename(&next, &store).map_err(|e| StoreError::io(&next, e))?;
    own_files::sync_folder(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
    // The copy is in place: the old store is a leftover, which the next open removes if this
    // cannot.
    let _ = own_files::remove_if_present(&old);
    Ok(())
}

/// Finishes a swap a crash cut short, and removes what is left of one. A state dir without
/// `store` but with `store.old` and `store.next` was cut between the two renames, so the copy
/// is whole and synced: it takes its place (or, if it cannot be moved, the old store goes back).
/// Anything else left is removed: a copy never swapped in, the store it replaced, or a
/// `store.old` alone (a removal that failed, then the store deleted to be rebuilt). Only real
/// folders count: a link in their place is never moved into the store's. Called under the
/// state lock, before the store is opened.
pub(super) fn finish_interrupted(state_dir: &Path) -> Result<(), StoreError> {
    let (store, next, old) = (state_dir.join("store"), state_dir.join(NEXT), state_dir.join(OLD));
    let folder = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !folder(&store) && folder(&old) && folder(&next) {
        if let Err(error) = rename(&next, &store) {
            rename(&old, &store).map_err(|_| StoreError::io(&next, error))?;
        }
        own_files::sync_folder(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
    }
    for leftover in [&next, &old] {
        // Best effort: a copy still held by sled's closing thread (Windows) goes at the next
        // open, and a new copy removes it first in any case.
        let _ = own_files::remove_if_present(leftover);
    }
    Ok(())
}

/// Renames a folder. Windows refuses while any file in it is open, as a virus scanner or an
/// indexer may hold a file just written for a moment: it is tried again for up to 2 s there.
fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(windows)]
    {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            match std::fs::rename(from, to) {
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                done => return done,
            }
        }
    }
    #[cfg(not(windows))]
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    const MB: u64 = 1_000_000;

    #[test]
    fn a_busy_days_log_is_due_and_the_usual_shape_and_a_compacted_one_are_not() {
        // Measured: 1M lines of 365 days, 19.1 MB (28 MB with sled as published); 2M lines of
        // one day, 110 MB then 37 MB (228 MB then 57 MB).
        assert!(!is_due(28 * MB, 1_000_000));
        assert!(is_due(110 * MB, 2_000_000));
        assert!(is_due(228 * MB, 2_000_000));
        assert!(!is_due(57 * MB, 2_000_000));
        assert!(!is_due(80 * MB, 3_000_000));
        // A small store is never worth it, whatever its ratio.
        assert!(!is_due(30 * MB, 0));
        assert!(is_due(40 * MB, 0));
        assert!(!is_due(u64::MAX, u64::MAX));
    }

    /// A state dir whose `names` are folders, each holding a file that says which it is.
    fn state_dir(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("was"), name).unwrap();
        }
        dir
    }

    /// What is left in the state dir: its folders, and what `store` was.
    fn left(dir: &Path) -> (Vec<String>, String) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        (
            names,
            std::fs::read_to_string(dir.join("store").join("was")).unwrap_or_default(),
        )
    }

    #[test]
    fn a_swap_cut_short_is_finished_and_what_is_left_of_one_removed() {
        let store = vec!["store".to_string()];
        // The copy was being made: the store stays.
        let dir = state_dir(&["store", NEXT]);
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (store.clone(), "store".into()));
        // The store was renamed away, so the copy was whole: the copy takes its place.
        let dir = state_dir(&[OLD, NEXT]);
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (store.clone(), NEXT.into()));
        // The copy is in place; the old store was not removed yet.
        let dir = state_dir(&["store", OLD]);
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (store.clone(), "store".into()));
        // A lone old store is a leftover (a swap never leaves one without its copy): it goes,
        // and the store is rebuilt from the ledger rather than brought back from before.
        let dir = state_dir(&[OLD]);
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (vec![], String::new()));
        // A link where a folder belongs is never moved into the store's place.
        let dir = state_dir(&[OLD]);
        let elsewhere = state_dir(&["store"]);
        #[cfg(unix)]
        std::os::unix::fs::symlink(elsewhere.path().join("store"), dir.path().join(NEXT)).unwrap();
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (vec![], String::new()));
        assert_eq!(left(elsewhere.path()), (store, "store".into()));
        // No store at all is a deleted one, rebuilt from the ledger: a lone copy goes.
        let dir = state_dir(&[NEXT]);
        finish_interrupted(dir.path()).unwrap();
        assert_eq!(left(dir.path()), (vec![], String::new()));
    }

    /// Every key and value of `store`.
    fn contents(store: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
        let entries = store.db.scan(&[]).map(|entry| entry.unwrap());
        entries
            .map(|(key, value)| (key.to_vec(), value.to_vec()))
            .collect()
    }

    #[test]
    fn a_compacted_store_holds_every_entry_it_held_in_less_room_and_keeps_its_lock() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), false).unwrap();
        let mut write = Write::default();
        for entry in 0..500u32 {
            write.insert(format!("~entry{entry:04}"), entry.to_le_bytes().repeat(25));
        }
        store.apply(write).unwrap();
        // 40 MiB of values written and taken back: sled's log keeps room for them.
        let junk = |write: &mut Write, key: u32, value: Option<&[u8]>| match value {
            Some(value) => write.insert([b"~junk".as_slice(), &key.to_be_bytes()].concat(), value),
            None => write.remove([b"~junk".as_slice(), &key.to_be_bytes()].concat()),
        };
        for round in 0..4u8 {
            let mut write = Write::default();
            (0..160).for_each(|key| junk(&mut write, key, Some(&[round; 64 << 10])));
            store.apply(write).unwrap();
        }
        let mut write = Write::default();
        (0..160).for_each(|key| junk(&mut write, key, None));
        store.apply(write).unwrap();
        let (held, before) = (contents(&store), store.disk_size());
        assert!(store.compaction_due(), "{before} bytes on disk");

        let store = store.compacted().unwrap();
        assert_eq!(contents(&store), held);
        assert!(
            store.disk_size() < before / 4,
            "{} bytes, {before} before",
            store.disk_size()
        );
        assert!(!store.compaction_due());
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["lock", "store", "store.created"]);
        assert!(matches!(
            Store::open(dir.path(), false),
            Err(StoreError::Locked { .. })
        ));

        // Opened again (and again the same), then by another process's way in.
        let store = store.reopen().unwrap();
        assert_eq!(contents(&store), held);
        drop(store);
        assert_eq!(contents(&Store::open(dir.path(), false).unwrap()), held);
    }

    /// A store of 500 small entries and 40 MiB of values written and taken back, due.
    fn bloated(dir: &Path) -> Store {
        let store = Store::open(dir, false).unwrap();
        let mut write = Write::default();
        for entry in 0..500u32 {
            write.insert(format!("~entry{entry:04}"), entry.to_le_bytes().repeat(25));
        }
        store.apply(write).unwrap();
        let junk = |key: u32| [b"~junk".as_slice(), &key.to_be_bytes()].concat();
        for round in 0..4u8 {
            let mut write = Write::default();
            (0..160).for_each(|key| write.insert(junk(key), [round; 64 << 10]));
            store.apply(write).unwrap();
        }
        let mut write = Write::default();
        (0..160).for_each(|key| write.remove(junk(key)));
        store.apply(write).unwrap();
        assert!(store.compaction_due(), "{} bytes on disk", store.disk_size());
        store
    }

    #[test]
    fn a_store_whose_swap_was_cut_between_its_renames_opens_as_its_copy() {
        let dir = tempfile::tempdir().unwrap();
        let store = bloated(dir.path());
        let held = contents(&store);
        copy(&store.db, dir.path()).unwrap();
        drop(store);
        super::super::engine::wait_for_sled_release(&dir.path().join("store").join("db"));
        std::fs::rename(dir.path().join("store"), dir.path().join(OLD)).unwrap();

        let store = Store::open(dir.path(), false).unwrap();
        assert_eq!(contents(&store), held);
        assert!(!store.compaction_due(), "the copy is in place");
        assert!(!dir.path().join(OLD).exists() && !dir.path().join(NEXT).exists());
    }

    /// Tests whose compactions may stop further ones in this process ([`give_up`]), or that
    /// need them allowed, take turns.
    static TAKING_TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TAKING_TURNS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Turns compactions back on when dropped: a test that had one fail leaves the next test
    /// its turn as it found it, even if the test failed.
    #[cfg(target_os = "linux")]
    struct AllowedAgain;

    #[cfg(target_os = "linux")]
    impl Drop for AllowedAgain {
        fn drop(&mut self) {
            GIVEN_UP.store(false, Ordering::Relaxed);
        }
    }

    /// A compaction on a disk with no room for its copy fails, says so, and leaves the store
    /// as it was: no copy left behind, no other compaction tried in this process (also when,
    /// as here, the store cannot be opened again until there is room), and every entry there
    /// once there is room. Nothing hangs.
    #[test]
    #[cfg(target_os = "linux")]
    #[ignore = "needs root, for a tmpfs (.ci/run); run with --include-ignored"]
    fn a_compaction_that_finds_the_disk_full_leaves_the_store_as_it_was() {
        let (_turn, _allowed_again) = (turn(), AllowedAgain);
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=96m,mode=0700", "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            // CI runs as root (.ci/run), where a test that cannot run fails.
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "cannot mount a tmpfs");
            eprintln!("SKIPPED: cannot mount a tmpfs here (not root); CI runs as root");
            return;
        }
        struct Unmount<'a>(&'a Path);
        impl Drop for Unmount<'_> {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(self.0)
                    .status();
            }
        }
        let _unmount = Unmount(&dir);

        let store = bloated(&dir);
        let held = contents(&store);
        store.flush().unwrap();
        // Every byte left taken by a file of our own, down to the last page.
        let filler = dir.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        for block in [64 << 10, 4 << 10, 1] {
            while std::io::Write::write_all(&mut file, &vec![0u8; block]).is_ok() {}
        }
        drop(file);

        let started = std::time::Instant::now();
        let compacted = store.compacted();
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        assert!(!allowed(), "a failed compaction stops the next ones");
        // sled writes as it opens: with no room, the store cannot be opened again either.
        let error = compacted.err().expect("no room to open the store again");
        assert!(error.to_string().contains("No space left"), "{error}");
        std::fs::remove_file(&filler).unwrap();
        assert!(!dir.join(NEXT).exists() && !dir.join(OLD).exists());
        let store = Store::open(&dir, false).unwrap();
        assert_eq!(contents(&store), held);
    }

    #[test]
    #[cfg(unix)]
    fn once_closing_a_due_store_compacts_it_with_the_commits_it_deferred() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let mut store = bloated(dir.path());
        store.defer_commit_flush();
        // A commit that stays in sled's buffers until the close.
        let mut write = Write::default();
        write.insert("~deferred", "yes");
        store.apply_without_flush(write).unwrap();
        let held = contents(&store);
        let before = store.disk_size();
        store.close_without_fsync().unwrap();

        // The closed store keeps this process's locks until it ends: read a copy of its folder.
        let reread = tempfile::tempdir().unwrap();
        for name in ["store", "store.created"] {
            let status = std::process::Command::new("cp")
                .args([
                    "-R",
                    &dir.path().join(name).to_string_lossy(),
                    &reread.path().to_string_lossy(),
                ])
                .status()
                .unwrap();
            assert!(status.success());
        }
        assert!(!dir.path().join(OLD).exists() && !dir.path().join(NEXT).exists());
        let store = Store::open(reread.path(), false).unwrap();
        assert_eq!(contents(&store), held);
        assert!(
            store.disk_size() < before / 4,
            "{} bytes, {before} before",
            store.disk_size()
        );
    }
}

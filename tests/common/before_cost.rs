//! A store as a build from before cost (format 3) leaves it, made from one of today's: for
//! upgrade tests over ledgers larger than the committed `testdata/store-format-3`.
//!
//! Formats 3 and 4 differ only in what cost added: the `$`, `$d`, `u` and `ud` families, the
//! version, and the layouts of the pending export, the export record and the stream record
//! (`testdata/formats/*-before-cost.hex`); format 5 and 6 in how token totals are stored (eight
//! u64s, or a width and as many: `testdata/formats/totals*.hex`). A store counted with `--otlp
//! off` has none of the records, so taking away the cost families, writing its token totals
//! eight wide and version 3 is the whole difference.

use std::path::Path;

/// The families cost added (src/store/engine/keys.rs).
const COST_FAMILIES: [&[u8]; 4] = [b"$/", b"$d/", b"u/", b"ud/"];
const BEFORE_COST: u32 = 3;
/// The token families, lifetime and delivered (src/store/engine/keys.rs).
const TOKEN_FAMILIES: [&[u8]; 2] = [b"t/", b"d/"];

/// Turns the store under `state_dir`, counted by `once --otlp off` and not running, into the
/// store a build before cost would have left for the same lines.
pub fn downgrade(state_dir: &Path) {
    for left_by_an_export in ["stream", "store.export"] {
        assert!(
            !state_dir.join(left_by_an_export).exists(),
            "{left_by_an_export}: downgrade only stores counted with --otlp off"
        );
    }
    let db = open(state_dir);
    assert!(db.get(b"pending.delta").unwrap().is_none(), "no pending export");
    let mut write = sled::Batch::default();
    for prefix in COST_FAMILIES {
        for key in db.scan_prefix(prefix).keys() {
            write.remove(key.unwrap());
        }
    }
    for prefix in TOKEN_FAMILIES {
        for entry in db.scan_prefix(prefix) {
            // Today's: a width, then that many quantities (zeros at the end left out); then:
            // eight, always.
            let (key, value) = entry.unwrap();
            assert!(value[0] <= 8, "at most eight quantities, as before widths");
            let mut eight = value[1..].to_vec();
            eight.resize(64, 0);
            write.insert(key, eight);
        }
    }
    write.insert(b"version".as_slice(), &BEFORE_COST.to_le_bytes());
    db.apply_batch(write).unwrap();
    db.flush().unwrap();
}

/// How far the upgrade of a store made before cost has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upgrade {
    /// Still format 3.
    NotStarted,
    /// Upgraded; the cost pass has regions of `files` files still to read.
    Passing { files: usize },
    /// Upgraded and the pass over.
    Over,
}

/// The stage of the upgrade of the store under `state_dir` (not running).
pub fn upgrade_stage(state_dir: &Path) -> Upgrade {
    let db = open(state_dir);
    let version = db.get(b"version").unwrap().expect("a format version");
    if version.as_ref() == BEFORE_COST.to_le_bytes() {
        return Upgrade::NotStarted;
    }
    match db.scan_prefix(b"q/").count() {
        0 => Upgrade::Over,
        files => Upgrade::Passing { files },
    }
}

/// The store's sled database. sled lets go of its lock on the log from a thread of its own a
/// moment after the last handle is dropped, so an open right after another in this process is
/// tried again until that has happened.
fn open(state_dir: &Path) -> sled::Db {
    let config = sled::Config::new()
        .path(state_dir.join("store"))
        .segment_size(512 << 10);
    let mut opened = config.open();
    super::wait_until(std::time::Duration::from_secs(5), || {
        if opened.is_err() {
            opened = config.open();
        }
        opened.is_ok()
    });
    opened.unwrap_or_else(|e| panic!("open the store with sled: {e}"))
}

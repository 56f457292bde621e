//! Opening a store that is there: a new one is initialised, a damaged or foreign one refused.
//! (One that lost writes its export record has is `delivery/recovery.rs`'s.)
//!
//! sled opens a store whose log it cannot read as *empty*. The marker beside it
//! (`store.created`, the store's creation time in nanoseconds and a newline) tells "never
//! created" from "lost its contents": an empty store where the marker says one was created is
//! refused, never silently started from zero.

use std::ffi::OsString;
use std::path::Path;
use std::time::SystemTime;

use super::count_store::Store;
use super::counts::IngestCounts;
use super::engine::Write;
use super::engine::keys::{self, FORMAT_VERSION};
use super::error::StoreError;
use crate::inert_text::ShowPath;
use crate::own_files::Durability;
use crate::series::{AttrSet, Family};

impl Store {
    /// Loads the store's state; a new store is initialised. `existed` says whether the store's
    /// folder was there before sled opened it.
    pub(super) fn load(&mut self, marker: &Path, existed: bool) -> Result<(), StoreError> {
        let recorded = read_marker(marker, existed, self.path())?;
        match self.get(keys::VERSION)? {
            None if self.db.is_empty() => return self.initialise(marker, recorded),
            None => return Err(self.corrupt("format version")),
            Some(v) => self.upgrade_from(&v)?,
        }
        let created_ns = self
            .read_u64(keys::CREATED, "creation time")?
            .ok_or_else(|| self.corrupt("creation time"))?;
        self.created = SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(created_ns);
        match recorded {
            Some(recorded) if recorded != created_ns => {
                return Err(StoreError::Corrupt {
                    path: self.path().to_path_buf(),
                    detail: format!("it is not the store {} says was created here", marker.shown()),
                });
            }
            // A crash right after the store was made, before its marker.
            None => write_marker(marker, created_ns)?,
            Some(_) => {}
        }
        if let Some(bytes) = self.get(keys::COUNTS)? {
            self.counts = IngestCounts::decode(&bytes).ok_or_else(|| self.corrupt("ingestion counts"))?;
        }
        self.load_series()?;
        let sets: Vec<AttrSet> = self.lifetime.attr_sets().into_iter().cloned().collect();
        self.fold_in(sets);
        self.load_cost_pass()
    }

    /// A new store: its version and creation time, synced once, then its marker.
    fn initialise(&mut self, marker: &Path, recorded: Option<u64>) -> Result<(), StoreError> {
        if recorded.is_some() {
            return Err(StoreError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!(
                    "it opens empty, but {} says a store was created here",
                    marker.shown()
                ),
            });
        }
        let created_ns = self.created_ns();
        let mut init = Write::default();
        init.insert(keys::VERSION, FORMAT_VERSION.to_le_bytes());
        init.insert(keys::CREATED, created_ns.to_le_bytes());
        self.apply(init)?;
        // Once per store: sled's `flush` leaves the new log's length and folder entries to the
        // kernel, and a marker that outlived its store would refuse the next run.
        let log = self.db.log();
        crate::own_files::sync_file(&log).map_err(|e| StoreError::io(&log, e))?;
        crate::own_files::sync_folder(self.path()).map_err(|e| StoreError::io(self.path(), e))?;
        // An export record left by a store that was deleted is not this one's.
        crate::own_files::remove_if_present(&self.record).map_err(|e| StoreError::io(&self.record, e))?;
        write_marker(marker, created_ns)
    }

    fn load_series(&mut self) -> Result<(), StoreError> {
        for family in Family::ALL {
            for entry in self.db.scan(keys::family_prefix(family, false)) {
                let (key, value) = entry?;
                self.lifetime
                    .insert_encoded(family, &key, &value)
                    .ok_or_else(|| self.corrupt("series sums"))?;
            }
        }
        Ok(())
    }

    /// Every value under `prefix`, whose keys are file names, decoded with `decode`.
    pub(super) fn load_by_file<T, C: FromIterator<(OsString, T)>>(
        &self,
        prefix: &[u8],
        decode: impl Fn(&[u8]) -> Option<T>,
        what: &str,
    ) -> Result<C, StoreError> {
        self.db
            .scan(prefix)
            .map(|entry| {
                let (name, value) = entry?;
                let value = decode(&value).ok_or_else(|| self.corrupt(what))?;
                Ok((crate::paths::os_string_of(name.to_vec()), value))
            })
            .collect()
    }

    fn read_u64(&self, key: &[u8], what: &str) -> Result<Option<u64>, StoreError> {
        match self.get(key)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(u64::from_le_bytes(
                (*bytes).try_into().map_err(|_| self.corrupt(what))?,
            ))),
        }
    }

    pub(super) fn corrupt(&self, what: &str) -> StoreError {
        StoreError::unreadable(self.path(), what)
    }
}

/// The creation time the marker records, if there is a marker and a store folder it speaks of.
/// Read as bytes: a marker damaged into invalid UTF-8 is a damaged marker, not an I/O error.
fn read_marker(marker: &Path, existed: bool, store: &Path) -> Result<Option<u64>, StoreError> {
    match crate::own_files::read_own(marker, crate::own_files::MAX_OWN_BYTES) {
        Ok(_) if !existed => Ok(None),
        Ok(bytes) => parse_marker(&bytes).map(Some).ok_or_else(|| StoreError::Corrupt {
            path: store.to_path_buf(),
            detail: format!("unreadable marker {}", marker.shown()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(marker, e)),
    }
}

/// `<created_ns>\n`, nothing else.
pub(super) fn parse_marker(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.strip_suffix('\n')?.parse().ok()
}

/// Replaces the marker atomically (written, synced, renamed over the old one).
fn write_marker(marker: &Path, created_ns: u64) -> Result<(), StoreError> {
    crate::own_files::replace(marker, format!("{created_ns}\n").as_bytes(), Durability::PowerCut)
        .map_err(|e| StoreError::io(marker, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_a_creation_time_and_a_newline() {
        assert_eq!(parse_marker(b"1764500000123456789\n"), Some(1764500000123456789));
        for bad in [&b""[..], b"x\n", b"17", b"17 42\n", b"17\n\n", b"\xff\n"] {
            assert_eq!(parse_marker(bad), None, "{bad:?}");
        }
    }
}

//! The store's identity towards backends (`service.instance.id`), before the store keeps its own.
//!
//! A backend keeps one series per label set: a store exported under two identities is added up
//! twice, and two stores under one are one series that goes down and up. So an identity names
//! the store itself, not a spelling of its path: it is made from the state dir as the file system
//! resolves it (symlinks, `..`, a trailing slash and a relative path all come to one folder),
//! and once the stream has been recorded, the stream record keeps it for the store's whole life
//! (`Delivery::identity`).
//!
//! `user@host` names the store in the account's own default folder (found from the account, not
//! from `HOME` or `XDG_STATE_HOME`, which two stores can share); any other folder adds 8 hex
//! digits of its resolved path's hash. Two stores are two folders, so never one identity.

use std::path::{Component, Path, PathBuf};

use crate::paths::Env;
use crate::store::{StoreError, stream};

/// How the store under a state dir is named, before the store keeps its own identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    /// `user@host`.
    pub user_at_host: String,
    /// The state dir as the settings give it.
    pub state_dir: PathBuf,
    /// The account's own default state dir, from its home in the user database.
    pub account_default: Option<PathBuf>,
    /// The identity made from the spelling of the state dir before identities were kept (the
    /// default then followed the environment): what a store that exported then was sent under.
    pub legacy: String,
}

impl Naming {
    pub fn new(state_dir: &Path, env_default: Option<&Path>, env: Env<'_>) -> Naming {
        let user_at_host = format!("{}@{}", user_name(), gethostname::gethostname().to_string_lossy());
        let legacy = if env_default == Some(state_dir) {
            user_at_host.clone()
        } else {
            suffixed(&user_at_host, state_dir)
        };
        Naming {
            account_default: account_state_dir(env),
            user_at_host,
            state_dir: state_dir.to_path_buf(),
            legacy,
        }
    }

    /// The identity of a store that has not kept one: made from the folder the state dir
    /// resolves to (which must exist: the store is open).
    pub fn fresh(&self) -> String {
        let resolved = resolved(&self.state_dir);
        let default = self
            .account_default
            .as_deref()
            .and_then(|d| std::fs::canonicalize(d).ok());
        if default.as_deref() == Some(resolved.as_path()) {
            self.user_at_host.clone()
        } else {
            suffixed(&self.user_at_host, &resolved)
        }
    }
}

impl Naming {
    /// The identity of the store under the state dir, read beside it (`history`, `doctor`: the
    /// store need not be open, and nothing is written). A stream record that cannot be read is
    /// an error, never a fresh identity the backend does not know.
    pub fn beside(&self) -> Result<String, StoreError> {
        Ok(match stream::read(&stream::path_in(&self.state_dir))? {
            Some(record) => record.identity_or(|| self.fresh(), &self.legacy),
            None => self.fresh(),
        })
    }
}

/// `dir` as the file system resolves it, for a folder that may not exist yet: its longest part
/// that exists resolved (symlinks followed), the rest added as written (`.` and `..` applied).
fn resolved(dir: &Path) -> PathBuf {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let parts: Vec<Component<'_>> = absolute.components().collect();
    for existing in (1..=parts.len()).rev() {
        let Ok(mut real) = std::fs::canonicalize(parts[..existing].iter().collect::<PathBuf>()) else {
            continue;
        };
        for part in &parts[existing..] {
            match part {
                Component::ParentDir => {
                    real.pop();
                }
                Component::CurDir => {}
                other => real.push(other),
            }
        }
        return real;
    }
    absolute
}

/// `user@host/` and 8 hex digits of the hash of `dir`'s bytes.
fn suffixed(user_at_host: &str, dir: &Path) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(dir.as_os_str().as_encoded_bytes());
    format!("{user_at_host}/{:08x}", hash >> 32)
}

/// The default state dir of the account this process runs as, from its home in the user
/// database rather than `HOME` (on Windows, `%LOCALAPPDATA%`, which is the account's own).
fn account_state_dir(env: Env<'_>) -> Option<PathBuf> {
    const NAME: &str = "reasonix-exporter";
    if cfg!(windows) {
        return env("LOCALAPPDATA").map(|d| PathBuf::from(d).join(NAME));
    }
    let home = account_home()?;
    if cfg!(target_os = "macos") {
        return Some(home.join("Library/Application Support").join(NAME));
    }
    Some(home.join(".local/state").join(NAME))
}

/// The home folder the user database gives this process's account.
fn account_home() -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: getpwuid returns a pointer into static storage or null; it is read at once,
        // before any other call could reuse that storage, and copied out.
        unsafe {
            let entry = libc::getpwuid(libc::getuid());
            if entry.is_null() || (*entry).pw_dir.is_null() {
                return None;
            }
            let dir = std::ffi::CStr::from_ptr((*entry).pw_dir).to_bytes();
            (!dir.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(dir)))
        }
    }
    #[cfg(not(unix))]
    None
}

/// The name of the user this process runs as (not `$USER`, which a service may not have).
fn user_name() -> String {
    #[cfg(unix)]
    {
        // SAFETY: as in `account_home`.
        unsafe {
            let uid = libc::getuid();
            let entry = libc::getpwuid(uid);
            if !entry.is_null() && !(*entry).pw_name.is_null() {
                return std::ffi::CStr::from_ptr((*entry).pw_name)
                    .to_string_lossy()
                    .into_owned();
            }
            format!("uid{uid}")
        }
    }
    #[cfg(not(unix))]
    std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::env_of;

    fn naming(state_dir: &Path, account_default: Option<&Path>) -> Naming {
        let mut naming = Naming::new(state_dir, None, &env_of(&[]));
        naming.account_default = account_default.map(Path::to_path_buf);
        naming
    }

    /// A symlink at `link` to `target`, where the platform makes one without privileges.
    fn symlink_to(target: &Path, link: &Path) -> Option<PathBuf> {
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(target, link).unwrap();
            Some(link.to_path_buf())
        }
        #[cfg(not(unix))]
        {
            let _ = (target, link);
            None
        }
    }

    #[test]
    fn every_spelling_of_one_folder_is_one_identity() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        std::fs::create_dir_all(state.join("sub")).unwrap();
        let one = naming(&state, None).fresh();
        assert!(one.contains('@') && one.contains('/'), "{one}");
        let spellings = [root.path().join("state/"), state.join("sub/.."), state.join(".")];
        for spelling in spellings
            .into_iter()
            .chain(symlink_to(&state, &root.path().join("link")))
        {
            assert_eq!(naming(&spelling, None).fresh(), one, "{}", spelling.display());
        }
        let other = root.path().join("other");
        std::fs::create_dir(&other).unwrap();
        assert_ne!(naming(&other, None).fresh(), one);
        // Before the folder exists (`doctor` before the first run): the identity it will have.
        let later = root.path().join("later");
        let before = naming(&root.path().join("./later/x/.."), None).fresh();
        std::fs::create_dir(&later).unwrap();
        assert_eq!(before, naming(&later, None).fresh());
    }

    #[test]
    fn the_accounts_own_default_folder_is_the_plain_user_at_host() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("default");
        std::fs::create_dir(&state).unwrap();
        let plain = naming(&state, Some(&state)).fresh();
        assert!(plain.contains('@') && !plain.contains('/'), "{plain}");
        // A default that the environment moved elsewhere is another folder, so another store.
        let moved = root.path().join("moved");
        std::fs::create_dir(&moved).unwrap();
        assert_eq!(
            naming(&moved, Some(&state)).fresh(),
            format!("{plain}/{}", &naming(&moved, None).fresh()[plain.len() + 1..])
        );
        assert_ne!(naming(&moved, Some(&state)).fresh(), plain);
    }

    #[test]
    fn the_identity_of_before_is_made_from_the_spelling_as_it_was() {
        let default = Path::new("/home/alice/.local/state/reasonix-exporter");
        let plain = Naming::new(default, Some(default), &env_of(&[])).legacy;
        assert!(plain.contains('@') && !plain.contains('/'), "{plain}");
        let other = Naming::new(Path::new("/srv/second"), Some(default), &env_of(&[])).legacy;
        assert!(
            other.starts_with(&format!("{plain}/")) && other.len() == plain.len() + 9,
            "{other}"
        );
        assert_ne!(
            other,
            Naming::new(Path::new("/srv/second/"), Some(default), &env_of(&[])).legacy
        );
    }
}

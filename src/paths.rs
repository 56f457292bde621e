//! Where things are: the Reasonix stats folder resolved as Reasonix resolves it, path settings
//! cleaned as Reasonix cleans them, and where each resolved setting came from.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The environment as the exporter reads it: a variable's value as the OS holds it, bytes that
/// need not be UTF-8 (a path may be any bytes); `None` when unset or blank.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// Where a resolved setting came from, for `doctor` and for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env(&'static str),
    ConfigFile,
    /// `state` in the `[storage]` table of Reasonix's own `config.toml` (Reasonix Studio 2.x).
    ReasonixConfig,
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("command-line flag"),
            Origin::Env(name) => write!(f, "${name}"),
            Origin::ConfigFile => f.write_str("config file"),
            Origin::ReasonixConfig => f.write_str("[storage] state in Reasonix's config.toml"),
            Origin::Default => f.write_str("default"),
        }
    }
}

/// Reasonix's stats folder: `<state root>/stats`, where the state root is `$REASONIX_STATE_HOME`,
/// else `state` in the `[storage]` table of `<Reasonix home>/config.toml`, else the Reasonix home:
/// `$REASONIX_HOME`, else `%APPDATA%\reasonix` on Windows, else `~/.reasonix`
/// (`docs/ledger-format.md`, "Where the files are"). Returns `None` only when no home folder can be
/// found either.
pub fn reasonix_stats_dir(env: Env<'_>) -> Option<(PathBuf, Origin)> {
    if let Some(root) = env("REASONIX_STATE_HOME").and_then(|v| clean_path(&v, env)) {
        return Some((root.join("stats"), Origin::Env("REASONIX_STATE_HOME")));
    }
    let (home, origin) = reasonix_home(env)?;
    if let Some(root) = storage_state(&home.join("config.toml"), env) {
        return Some((root.join("stats"), Origin::ReasonixConfig));
    }
    Some((home.join("stats"), origin))
}

fn reasonix_home(env: Env<'_>) -> Option<(PathBuf, Origin)> {
    if let Some(home) = env("REASONIX_HOME").and_then(|v| clean_path(&v, env)) {
        return Some((home, Origin::Env("REASONIX_HOME")));
    }
    if cfg!(windows)
        && let Some(appdata) = env("APPDATA").and_then(|v| clean_path(&v, env))
    {
        return Some((appdata.join("reasonix"), Origin::Default));
    }
    Some((home_dir(env)?.join(".reasonix"), Origin::Default))
}

/// The state root Reasonix's `config.toml` names, read-only: a file that is missing, unreadable,
/// not a regular file of at most 1 MiB, or not valid TOML names nothing, as for Reasonix.
fn storage_state(config: &std::path::Path, env: Env<'_>) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut options = std::fs::File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO swapped in is opened without waiting, then refused as not a regular file.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(config).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take((1 << 20) + 1).read_to_string(&mut text).ok()?;
    if text.len() > 1 << 20 {
        return None;
    }
    let doc: toml::Table = text.parse().ok()?;
    let state = doc.get("storage")?.as_table()?.get("state")?.as_str()?;
    clean_path(OsStr::new(state), env)
}

/// The user's home folder: `$HOME` (`%USERPROFILE%` on Windows), else the OS's answer.
pub fn home_dir(env: Env<'_>) -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    env(var)
        .filter(|h| !trim_space(h.as_encoded_bytes()).is_empty())
        .map(PathBuf::from)
        .or_else(std::env::home_dir)
}

/// Cleans a path setting the way Reasonix does: trims white space, expands `$VAR`, `${VAR}`
/// (`%VAR%` too on Windows) and a leading `~`, and makes a relative path absolute. A blank value
/// is `None` (unset). The bytes are kept as they are: a path need not be UTF-8, here or in a
/// variable it names.
pub fn clean_path(value: &OsStr, env: Env<'_>) -> Option<PathBuf> {
    cleaned(value, env).0
}

/// [`clean_path`] for the exporter's own settings: a `$VAR` (on Windows, a `%VAR%` too) that is
/// unset is an error (its name), not a piece that turns `$DATA/state` into `/state`.
pub fn clean_setting_path(value: &OsStr, env: Env<'_>) -> Result<Option<PathBuf>, String> {
    match cleaned(value, env) {
        (_, Some(unset)) => Err(unset),
        (path, None) => Ok(path),
    }
}

/// The cleaned path, and the first variable it names that is unset.
fn cleaned(value: &OsStr, env: Env<'_>) -> (Option<PathBuf>, Option<String>) {
    let trimmed = trim_space(value.as_encoded_bytes());
    if trimmed.is_empty() {
        return (None, None);
    }
    let (expanded, unset) = expand_vars(trimmed, env);
    let (expanded, unset) = if cfg!(windows) {
        let (expanded, unset_percent) = expand_percent_vars(&expanded, env);
        (expanded, unset.or(unset_percent))
    } else {
        (expanded, unset)
    };
    (absolute(expanded, env), unset)
}

/// `expanded` with a leading `~` made the home folder, and absolute.
fn absolute(expanded: Vec<u8>, env: Env<'_>) -> Option<PathBuf> {
    let path = match expanded.strip_prefix(b"~") {
        Some(rest) if rest.is_empty() || rest.starts_with(b"/") || rest.starts_with(b"\\") => {
            let home = home_dir(env)?;
            let rest: Vec<u8> = rest
                .iter()
                .copied()
                .skip_while(|b| *b == b'/' || *b == b'\\')
                .collect();
            home.join(os_string_of(rest))
        }
        _ => PathBuf::from(os_string_of(expanded)),
    };
    if path.is_absolute() {
        Some(path)
    } else {
        std::env::current_dir().ok().map(|cwd| cwd.join(path))
    }
}

/// `$NAME` and `${NAME}` replaced by the variable's value (empty when unset), as Go's
/// `os.ExpandEnv` does, and the first name that was unset. A `$` not followed by a name stays as
/// it is.
fn expand_vars(text: &[u8], env: Env<'_>) -> (Vec<u8>, Option<String>) {
    let mut unset = None;
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.iter().position(|b| *b == b'$') {
        out.extend_from_slice(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix(b"{") {
            match braced.iter().position(|b| *b == b'}') {
                Some(end) => (&braced[..end], end + 2),
                None => (&b""[..], 0),
            }
        } else {
            let end = after
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match std::str::from_utf8(name) {
            Ok(name) if !name.is_empty() => {
                match env(name) {
                    Some(value) => out.extend_from_slice(value.as_encoded_bytes()),
                    None => {
                        unset.get_or_insert_with(|| name.to_string());
                    }
                }
                rest = &after[consumed..];
            }
            _ => {
                out.push(b'$');
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest);
    (out, unset)
}

/// `%NAME%` replaced by the variable's value, as Reasonix does on Windows after `$NAME`, with
/// the `%`s paired left to right as `ExpandEnvironmentStrings` pairs them: a pair whose name is
/// unset stays as it is, both `%`s, and a `%` with no closing one stays too. Also the first name
/// of a variable (no path separator in it) that was unset.
fn expand_percent_vars(text: &[u8], env: Env<'_>) -> (Vec<u8>, Option<String>) {
    let mut unset = None;
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.iter().position(|b| *b == b'%') {
        out.extend_from_slice(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(end) = after.iter().position(|b| *b == b'%') else {
            out.extend_from_slice(&rest[open..]);
            return (out, unset);
        };
        let name = std::str::from_utf8(&after[..end]).ok().filter(|n| !n.is_empty());
        match name.and_then(env) {
            Some(value) => out.extend_from_slice(value.as_encoded_bytes()),
            None => {
                out.extend_from_slice(&rest[open..open + end + 2]);
                if let Some(name) = name.filter(|n| !n.contains(['\\', '/', ':'])) {
                    unset.get_or_insert_with(|| name.to_string());
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.extend_from_slice(rest);
    (out, unset)
}

/// `bytes` without the white space around it, Unicode's as Go's `strings.TrimSpace` takes it
/// (U+00A0 included) where the bytes are UTF-8, ASCII's where they are not.
pub fn trim_space(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.trim().as_bytes(),
        Err(_) => bytes.trim_ascii(),
    }
}

/// The OS string of `bytes`: pieces of OS strings cut at ASCII characters, and whole ones.
pub fn os_string_of(bytes: Vec<u8>) -> OsString {
    #[cfg(unix)]
    return std::os::unix::ffi::OsStringExt::from_vec(bytes);
    #[cfg(not(unix))]
    return OsString::from(String::from_utf8_lossy(&bytes).into_owned());
}

/// An environment of just `pairs`, for tests of settings and paths.
#[cfg(test)]
pub fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: std::collections::HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Unix: Unix paths and HOME; the Windows defaults are run under Wine by tests/shipped/.
    #[cfg(unix)]
    #[test]
    fn state_home_wins_over_reasonix_home() {
        let env = env_of(&[
            ("REASONIX_STATE_HOME", "/s"),
            ("REASONIX_HOME", "/h"),
            ("HOME", "/u"),
        ]);
        let (dir, origin) = reasonix_stats_dir(&env).unwrap();
        assert_eq!(dir, PathBuf::from("/s/stats"));
        assert_eq!(origin, Origin::Env("REASONIX_STATE_HOME"));
    }

    // Unix: Unix paths and HOME; the Windows defaults are run under Wine by tests/shipped/.
    #[cfg(unix)]
    #[test]
    fn blank_variable_counts_as_unset() {
        let env = env_of(&[
            ("REASONIX_STATE_HOME", "  "),
            ("REASONIX_HOME", "/h"),
            ("HOME", "/u"),
        ]);
        assert_eq!(reasonix_stats_dir(&env).unwrap().0, PathBuf::from("/h/stats"));
        let env = env_of(&[("REASONIX_HOME", ""), ("HOME", "/u")]);
        assert_eq!(
            reasonix_stats_dir(&env).unwrap().0,
            PathBuf::from("/u/.reasonix/stats")
        );
    }

    // Unix: Unix paths and HOME; the Windows defaults are run under Wine by tests/shipped/.
    #[cfg(unix)]
    #[test]
    fn white_space_around_a_path_is_trimmed_as_go_trims_it() {
        let env = env_of(&[("REASONIX_HOME", "\u{a0}\t/rx\u{3000} ")]);
        assert_eq!(reasonix_stats_dir(&env).unwrap().0, PathBuf::from("/rx/stats"));
    }

    // Unix: Unix paths and HOME; the Windows defaults are run under Wine by tests/shipped/.
    #[cfg(unix)]
    #[test]
    fn tilde_and_variables_expand() {
        let env = env_of(&[("REASONIX_HOME", " ~/rx "), ("HOME", "/u")]);
        assert_eq!(reasonix_stats_dir(&env).unwrap().0, PathBuf::from("/u/rx/stats"));
        let env = env_of(&[("REASONIX_HOME", "$BASE/${SUB}/x$"), ("BASE", "/b"), ("SUB", "s")]);
        assert_eq!(
            reasonix_stats_dir(&env).unwrap().0,
            PathBuf::from("/b/s/x$/stats")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_path_keeps_bytes_that_are_not_utf8_in_itself_and_in_a_variable_it_names() {
        use std::os::unix::ffi::OsStrExt;
        let latin1 = |bytes: &[u8]| OsStr::from_bytes(bytes).to_os_string();
        let env = move |name: &str| match name {
            "REASONIX_HOME" => Some(latin1(b" $BASE/caf\xe9 ")),
            "BASE" => Some(latin1(b"/h\xff")),
            _ => None,
        };
        let (stats, origin) = reasonix_stats_dir(&env).unwrap();
        assert_eq!(stats.as_os_str().as_bytes(), b"/h\xff/caf\xe9/stats");
        assert_eq!(origin, Origin::Env("REASONIX_HOME"));
    }

    // Unix: Unix paths and HOME; the Windows defaults are run under Wine by tests/shipped/.
    #[cfg(unix)]
    #[test]
    fn reasonix_studios_storage_state_comes_after_the_variable_and_before_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "[storage]\nstate = \" $ROOT/moved \"\n").unwrap();
        let env = env_of(&[("REASONIX_HOME", home), ("ROOT", "/r")]);
        assert_eq!(
            reasonix_stats_dir(&env).unwrap(),
            (PathBuf::from("/r/moved/stats"), Origin::ReasonixConfig)
        );
        let env = env_of(&[("REASONIX_HOME", home), ("REASONIX_STATE_HOME", "/s")]);
        assert_eq!(reasonix_stats_dir(&env).unwrap().0, PathBuf::from("/s/stats"));
        for broken in [
            "[storage]\nstate = ",
            "[storage]\nstate = 3",
            "state = \"/x\"",
            "[storage]\nstate = \" \"",
        ] {
            std::fs::write(&config, broken).unwrap();
            let env = env_of(&[("REASONIX_HOME", home)]);
            assert_eq!(
                reasonix_stats_dir(&env).unwrap(),
                (dir.path().join("stats"), Origin::Env("REASONIX_HOME")),
                "{broken:?} names nothing"
            );
        }
    }

    #[test]
    fn percent_variables_expand_as_on_windows_and_unset_ones_stay() {
        let env = env_of(&[("APPDATA", "C:\\Users\\a\\AppData"), ("X", "x")]);
        let expand = |text: &str| {
            let (out, unset) = expand_percent_vars(text.as_bytes(), &env);
            (String::from_utf8(out).unwrap(), unset)
        };
        let kept = |text: &str| (text.to_string(), None);
        assert_eq!(expand("%APPDATA%\\rx"), kept("C:\\Users\\a\\AppData\\rx"));
        assert_eq!(
            expand("%NOPE%\\%X%"),
            ("%NOPE%\\x".to_string(), Some("NOPE".to_string()))
        );
        // Paired left to right: `%\%` is a pair (no variable), so `APPDATA` is not one.
        assert_eq!(expand("C:\\100%\\%APPDATA%"), kept("C:\\100%\\%APPDATA%"));
        assert_eq!(expand("100%%X%"), kept("100%%X%"));
        assert_eq!(expand("a%X"), kept("a%X"));
    }

    #[test]
    fn relative_path_is_made_absolute() {
        let env = env_of(&[("REASONIX_HOME", "rel/home")]);
        let (dir, _) = reasonix_stats_dir(&env).unwrap();
        assert!(dir.is_absolute());
        assert!(dir.ends_with("rel/home/stats"));
    }
}

//! Where things are: the Reasonix stats folder resolved as Reasonix resolves it, path settings
//! cleaned as Reasonix cleans them, and where each resolved setting came from.

use std::path::PathBuf;

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
/// (`../shared/spec/ledger.md`, "Where it is"). Returns `None` only when no home folder can be
/// found either.
pub fn reasonix_stats_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<(PathBuf, Origin)> {
    if let Some(root) = env("REASONIX_STATE_HOME").and_then(|v| clean_path(&v, env)) {
        return Some((root.join("stats"), Origin::Env("REASONIX_STATE_HOME")));
    }
    let (home, origin) = reasonix_home(env)?;
    if let Some(root) = storage_state(&home.join("config.toml"), env) {
        return Some((root.join("stats"), Origin::ReasonixConfig));
    }
    Some((home.join("stats"), origin))
}

fn reasonix_home(env: &dyn Fn(&str) -> Option<String>) -> Option<(PathBuf, Origin)> {
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
fn storage_state(config: &std::path::Path, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
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
    clean_path(state, env)
}

/// The user's home folder: `$HOME` (`%USERPROFILE%` on Windows), else the OS's answer.
pub fn home_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    env(var)
        .filter(|h| !h.trim().is_empty())
        .map(PathBuf::from)
        .or_else(std::env::home_dir)
}

/// Cleans a path setting the way Reasonix does: trims white space, expands `$VAR`, `${VAR}` and a
/// leading `~`, and makes a relative path absolute. A blank value is `None` (unset).
pub fn clean_path(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return None;
    }
    let expanded = expand_vars(trimmed, env);
    let path = match expanded.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '\\']) => {
            let home = home_dir(env)?;
            home.join(rest.trim_start_matches(['/', '\\']))
        }
        _ => PathBuf::from(&expanded),
    };
    if path.is_absolute() {
        Some(path)
    } else {
        std::env::current_dir().ok().map(|cwd| cwd.join(path))
    }
}

/// `$NAME` and `${NAME}` replaced by the variable's value (empty when unset), as Go's
/// `os.ExpandEnv` does. A `$` not followed by a name stays as it is.
fn expand_vars(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&env(name).unwrap_or_default());
            rest = &after[consumed..];
        }
    }
    out.push_str(rest);
    out
}

/// An environment of just `pairs`, for tests of settings and paths.
#[cfg(test)]
pub fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn relative_path_is_made_absolute() {
        let env = env_of(&[("REASONIX_HOME", "rel/home")]);
        let (dir, _) = reasonix_stats_dir(&env).unwrap();
        assert!(dir.is_absolute());
        assert!(dir.ends_with("rel/home/stats"));
    }
}

//! Where things are: the Reasonix stats folder resolved as Reasonix resolves it, path settings
//! cleaned as Reasonix cleans them, and where each resolved setting came from.

use std::path::PathBuf;

/// Where a resolved setting came from, for `doctor` and for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env(&'static str),
    ConfigFile,
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("command-line flag"),
            Origin::Env(name) => write!(f, "${name}"),
            Origin::ConfigFile => f.write_str("config file"),
            Origin::Default => f.write_str("default"),
        }
    }
}

/// Reasonix's stats folder: `<state root>/stats`, where the state root is `$REASONIX_STATE_HOME`,
/// else `$REASONIX_HOME`, else `%APPDATA%\reasonix` on Windows, else `~/.reasonix`.
/// Returns `None` only when no home folder can be found either.
pub fn reasonix_stats_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<(PathBuf, Origin)> {
    for name in ["REASONIX_STATE_HOME", "REASONIX_HOME"] {
        if let Some(root) = env(name).and_then(|v| clean_path(&v, env)) {
            return Some((root.join("stats"), Origin::Env(name)));
        }
    }
    if cfg!(windows)
        && let Some(appdata) = env("APPDATA").and_then(|v| clean_path(&v, env))
    {
        return Some((appdata.join("reasonix").join("stats"), Origin::Default));
    }
    let home = home_dir(env)?;
    Some((home.join(".reasonix").join("stats"), Origin::Default))
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
    fn relative_path_is_made_absolute() {
        let env = env_of(&[("REASONIX_HOME", "rel/home")]);
        let (dir, _) = reasonix_stats_dir(&env).unwrap();
        assert!(dir.is_absolute());
        assert!(dir.ends_with("rel/home/stats"));
    }
}

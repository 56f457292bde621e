//! The config file: found, read without blocking or reading forever, and parsed against the
//! keys of the catalog.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::SettingsError;

use super::catalog::{self, CONFIG};
use crate::paths::Env;
use crate::paths::home_dir;

/// The config file's values, by key; every key is one of the catalog's.
#[derive(Debug, Default)]
pub struct FileConfig(BTreeMap<&'static str, String>);

impl FileConfig {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

/// A config file is small: a larger one is not ours.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads the config file: `--config` (which must exist), its variable, or the default path when
/// present.
pub fn load(flag: Option<&Path>, env: Env<'_>) -> Result<(FileConfig, Option<PathBuf>), SettingsError> {
    let explicit = flag
        .map(Path::to_path_buf)
        .or_else(|| CONFIG.vars.iter().find_map(|var| env(var)).map(PathBuf::from));
    let path = match explicit {
        Some(path) => path,
        None => match default_config_file(env) {
            Some(path) if path.is_file() => path,
            _ => return Ok((FileConfig::default(), None)),
        },
    };
    let text = read_config_file(&path)?;
    let config = parse_config(&text).map_err(|error| SettingsError::ConfigText {
        path: path.clone(),
        error,
    })?;
    Ok((config, Some(path)))
}

/// Reads a config file without blocking on a FIFO or reading a device forever.
fn read_config_file(path: &Path) -> Result<String, SettingsError> {
    let problem = |problem: String| SettingsError::ConfigFile {
        path: path.to_path_buf(),
        problem,
    };
    let bytes = crate::own_files::read_named(path, MAX_CONFIG_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => problem(e.to_string()),
        _ => problem(format!("cannot be read ({e})")),
    })?;
    String::from_utf8(bytes).map_err(|_| problem("not UTF-8 text".into()))
}

/// Why a config file's text is refused: with the line (and column) it is on.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}")]
    Other(String),
    #[error("line {line}: unknown key `{key}`; the keys are: {known}")]
    UnknownKey { line: usize, key: String, known: String },
    #[error("line {line}: `{key}` must be a string, e.g. {key} = \"…\"")]
    NotAString { line: usize, key: String },
}

/// Parses a config file's text; an unknown key, or a value that is not a string, is an error
/// naming it and its line.
pub fn parse_config(text: &str) -> Result<FileConfig, ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            ConfigError::Syntax {
                line: before.matches('\n').count() + 1,
                column: before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1,
                message: one_line(e.message()),
            }
        }
        None => ConfigError::Other(one_line(e.message())),
    })?;
    let mut values = BTreeMap::new();
    for (key, value) in table {
        let line = line_of_key(text, &key);
        let Some(known) = catalog::file_keys().find(|k| *k == key) else {
            let known = catalog::file_keys().collect::<Vec<_>>().join(", ");
            return Err(ConfigError::UnknownKey { line, key, known });
        };
        let toml::Value::String(value) = value else {
            return Err(ConfigError::NotAString { line, key });
        };
        values.insert(known, value);
    }
    Ok(FileConfig(values))
}

/// A parser's message on one line: toml writes some over two (`invalid table header` and why).
fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    parts.join(": ")
}

/// The line on which `key = …` is written (1 when it cannot be found, e.g. a quoted key).
fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|line| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(1, |i| i + 1)
}

fn default_config_file(env: Env<'_>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home_dir(env).map(|h| h.join(".config")))?;
    Some(base.join("reasonix-exporter").join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_wrong_types_are_named_with_their_line() {
        let err = parse_config("stats_dir = \"/x\"\nstats_dri = \"/y\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("stats_dri") && err.contains("line 2"), "{err}");
        let err = parse_config("watch = true\n").unwrap_err().to_string();
        assert!(
            err.contains("watch") && err.contains("line 1") && err.contains("string"),
            "{err}"
        );
        let err = parse_config("watch = \"on\"\n[[oops\n").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}

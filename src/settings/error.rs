//! Why the settings cannot be used: each names the setting and where its value came from (a
//! flag, a variable, the config file), and says what would be valid. Header values and key
//! material never appear.

use std::path::PathBuf;

use crate::export::tls::TlsError;
use crate::export::transport::HeadersError;
use crate::inert_text::ShowPath;
use crate::paths::Origin;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "state dir {} (from {origin}) is inside the stats folder {}: the exporter never writes into Reasonix's folder; choose another --state-dir",
        state.shown(),
        stats.shown()
    )]
    StateInStats {
        state: PathBuf,
        origin: Origin,
        stats: PathBuf,
    },
    #[error(
        "${var} is not valid UTF-8, and the exporter reads it as text: set it again in UTF-8, or unset it"
    )]
    NotUtf8 { var: &'static str },
    #[error("{flag} is not valid UTF-8, and the exporter reads it as text: give it again in UTF-8")]
    FlagNotUtf8 { flag: String },
    #[error(
        "{what} setting from {origin} names ${var}, which is unset or blank: set it, or write the path out"
    )]
    UnsetInPath {
        what: &'static str,
        origin: Origin,
        var: String,
    },
    #[error("{what} setting from {origin} is blank")]
    Blank { what: &'static str, origin: Origin },
    #[error("cannot find {what}: no home folder; set {flag}")]
    NoHome { what: &'static str, flag: &'static str },
    #[error("{what} '{value}' from {from} is not valid: {expected}")]
    Invalid {
        what: &'static str,
        value: String,
        from: String,
        expected: &'static str,
    },
    #[error("{from} '{value}' is not a duration: write e.g. 500ms, 2s or 1m")]
    NotADuration { from: String, value: String },
    #[error("{from} '{value}' is not a whole number of milliseconds")]
    NotMilliseconds { from: String, value: String },
    #[error("{from} {value} is shorter than the 1ms allowed (a busy loop); choose 1ms or longer")]
    TooShort { from: String, value: String },
    #[error("{from} {value} is longer than the {max} allowed; choose a shorter one")]
    TooLong {
        from: String,
        value: String,
        max: String,
    },
    #[error("OTLP endpoint '{0}' must start with http:// or https://")]
    EndpointScheme(String),
    #[error(
        "{from} sets up TLS, but the OTLP endpoint '{endpoint}' is plain http://: use https://, or unset it"
    )]
    TlsOverHttp { from: String, endpoint: String },
    #[error("{from}: {error}")]
    Headers { from: String, error: HeadersError },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("config file {}: {problem}; fix the path given to --config (or $REASONIX_EXPORTER_CONFIG), or the file", path.shown())]
    ConfigFile { path: PathBuf, problem: String },
    #[error("config file {}: {error}", path.shown())]
    ConfigText {
        path: PathBuf,
        error: super::file::ConfigError,
    },
}

//! Every setting resolved once, flag > environment > config file > default, remembering where
//! each value came from (for `doctor` and for error messages).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;

use super::args::Options;
use crate::export::payload::Temporality;
use crate::export::tls::TlsFiles;
use crate::export::transport::{Headers, OtlpProtocol, OtlpTarget};
use crate::paths::{Origin, clean_path, home_dir, reasonix_stats_dir};

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub stats_dir: Setting<PathBuf>,
    pub state_dir: Setting<PathBuf>,
    /// The config file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// `None` when OTLP export is off.
    pub otlp: Option<OtlpSettings>,
    pub export_interval: Setting<Duration>,
    pub poll_interval: Setting<Duration>,
    /// Whether `run` listens for file events (else it polls alone).
    pub watch: Setting<bool>,
    /// `None` when the Prometheus endpoint is off.
    pub prometheus: Setting<Option<SocketAddr>>,
    /// Whether `run` and `once` enter the landlock sandbox.
    pub sandbox: Setting<bool>,
    pub reset_state: bool,
    /// The store's identity towards backends (`service.instance.id`): `user@host`, with a short
    /// hash of the state dir when it is not the default one, so that two stores on one host never
    /// feed one series, and a store keeps its series across restarts and rebuilds.
    pub instance: String,
}

/// Where and how to export.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    pub target: OtlpTarget,
    pub temporality: Temporality,
}

/// Every key of [`FileConfig`], for the test that keeps `config/` in sync.
pub const CONFIG_KEYS: [&str; 14] = [
    "stats_dir",
    "state_dir",
    "otlp",
    "otlp_endpoint",
    "otlp_protocol",
    "otlp_certificate",
    "otlp_client_certificate",
    "otlp_client_key",
    "temporality",
    "export_interval",
    "poll_interval",
    "watch",
    "prometheus",
    "sandbox",
];

/// The config file's keys; any other key is an error that names it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub stats_dir: Option<String>,
    pub state_dir: Option<String>,
    pub otlp: Option<String>,
    pub otlp_endpoint: Option<String>,
    pub otlp_protocol: Option<String>,
    pub otlp_certificate: Option<String>,
    pub otlp_client_certificate: Option<String>,
    pub otlp_client_key: Option<String>,
    pub temporality: Option<String>,
    pub export_interval: Option<String>,
    pub poll_interval: Option<String>,
    pub watch: Option<String>,
    pub prometheus: Option<String>,
    pub sandbox: Option<String>,
}

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Looks a variable up in the process environment; blank counts as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Settings {
    pub fn resolve(opts: &Options, env: Env<'_>) -> anyhow::Result<Settings> {
        let (file, config_file) = load_config_file(opts, env)?;

        let stats_dir = match pick(
            opts.stats_dir.as_ref().map(|p| p.display().to_string()),
            "REASONIX_EXPORTER_STATS_DIR",
            file.stats_dir.clone(),
            env,
        ) {
            Some((raw, origin)) => Setting {
                value: clean_path(&raw, env)
                    .ok_or_else(|| anyhow!("stats dir setting from {origin} is blank"))?,
                origin,
            },
            None => {
                let (value, origin) = reasonix_stats_dir(env).ok_or_else(|| {
                    anyhow!("cannot find the Reasonix stats dir: no home folder; set --stats-dir")
                })?;
                Setting { value, origin }
            }
        };

        let state_dir = match pick(
            opts.state_dir.as_ref().map(|p| p.display().to_string()),
            "REASONIX_EXPORTER_STATE_DIR",
            file.state_dir.clone(),
            env,
        ) {
            Some((raw, origin)) => Setting {
                value: clean_path(&raw, env)
                    .ok_or_else(|| anyhow!("state dir setting from {origin} is blank"))?,
                origin,
            },
            None => Setting {
                value: default_state_dir(env)
                    .ok_or_else(|| anyhow!("cannot choose a state dir: no home folder; set --state-dir"))?,
                origin: Origin::Default,
            },
        };

        let otlp_on = if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            false
        } else {
            match pick(
                opts.otlp.clone(),
                "REASONIX_EXPORTER_OTLP",
                file.otlp.clone(),
                env,
            ) {
                None => true,
                Some((value, origin)) => match value.trim() {
                    "on" => true,
                    "off" => false,
                    other => bail!("otlp setting '{other}' from {origin} is not valid: use on or off"),
                },
            }
        };
        let otlp = if otlp_on {
            Some(resolve_otlp_target(opts, &file, env)?)
        } else {
            None
        };

        let export_interval = match opts.export_interval.clone() {
            Some(raw) => Setting {
                value: parse_duration(&raw, "--export-interval")?,
                origin: Origin::Flag,
            },
            None => match env("OTEL_METRIC_EXPORT_INTERVAL") {
                Some(ms) => Setting {
                    value: parse_millis(&ms, "OTEL_METRIC_EXPORT_INTERVAL", MAX_INTERVAL)?,
                    origin: Origin::Env("OTEL_METRIC_EXPORT_INTERVAL"),
                },
                None => match &file.export_interval {
                    Some(raw) => Setting {
                        value: parse_duration(raw, "export_interval in the config file")?,
                        origin: Origin::ConfigFile,
                    },
                    None => Setting {
                        value: Duration::from_secs(60),
                        origin: Origin::Default,
                    },
                },
            },
        };

        let poll_interval = match pick(
            opts.poll_interval.clone(),
            "REASONIX_EXPORTER_POLL_INTERVAL",
            file.poll_interval.clone(),
            env,
        ) {
            Some((raw, origin)) => Setting {
                value: parse_duration(&raw, &format!("poll interval from {origin}"))?,
                origin,
            },
            None => Setting {
                value: Duration::from_secs(2),
                origin: Origin::Default,
            },
        };

        let watch = on_off_setting(
            "watch",
            pick(
                opts.watch.clone(),
                "REASONIX_EXPORTER_WATCH",
                file.watch.clone(),
                env,
            ),
        )?;

        let prometheus = match pick(
            opts.prometheus.clone(),
            "REASONIX_EXPORTER_PROMETHEUS",
            file.prometheus.clone(),
            env,
        ) {
            Some((raw, origin)) if raw.trim() == "off" => Setting { value: None, origin },
            Some((raw, origin)) => Setting {
                value: Some(raw.trim().parse().map_err(|_| {
                    anyhow!("prometheus address '{raw}' from {origin} is not HOST:PORT (e.g. 127.0.0.1:9464) or off")
                })?),
                origin,
            },
            None => Setting {
                value: Some(SocketAddr::from(([127, 0, 0, 1], 9464))),
                origin: Origin::Default,
            },
        };

        let sandbox = on_off_setting(
            "sandbox",
            pick(
                opts.sandbox.clone(),
                "REASONIX_EXPORTER_SANDBOX",
                file.sandbox.clone(),
                env,
            ),
        )?;

        let instance = instance_id(&state_dir.value, default_state_dir(env).as_deref());
        Ok(Settings {
            instance,
            stats_dir,
            state_dir,
            config_file,
            otlp,
            export_interval,
            poll_interval,
            watch,
            prometheus,
            sandbox,
            reset_state: opts.reset_state,
        })
    }
}

/// flag, then the variable, then the config file key.
fn pick(
    flag: Option<String>,
    var: &'static str,
    file: Option<String>,
    env: Env<'_>,
) -> Option<(String, Origin)> {
    flag.map(|v| (v, Origin::Flag))
        .or_else(|| env(var).map(|v| (v, Origin::Env(var))))
        .or_else(|| file.map(|v| (v, Origin::ConfigFile)))
}

fn resolve_otlp_target(opts: &Options, file: &FileConfig, env: Env<'_>) -> anyhow::Result<OtlpSettings> {
    let protocol = match opts
        .otlp_protocol
        .clone()
        .map(|v| (v, "--otlp-protocol".to_string()))
        .or_else(|| {
            [
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ]
            .into_iter()
            .find_map(|var| env(var).map(|v| (v, var.to_string())))
        })
        .or_else(|| {
            file.otlp_protocol
                .clone()
                .map(|v| (v, "otlp_protocol in the config file".into()))
        }) {
        None => OtlpProtocol::HttpProtobuf,
        Some((value, from)) => OtlpProtocol::parse(&value).ok_or_else(|| {
            anyhow!("OTLP protocol '{value}' from {from} is not supported: use grpc or http/protobuf")
        })?,
    };

    let endpoint = if let Some(url) = &opts.otlp_endpoint {
        url.clone()
    } else if let Some(url) = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
        url
    } else if let Some(base) = env("OTEL_EXPORTER_OTLP_ENDPOINT") {
        // The spec: the signal path is appended to the generic endpoint for HTTP, not for gRPC.
        match protocol {
            OtlpProtocol::HttpProtobuf => format!("{}/v1/metrics", base.trim().trim_end_matches('/')),
            OtlpProtocol::Grpc => base,
        }
    } else if let Some(url) = &file.otlp_endpoint {
        url.clone()
    } else {
        match protocol {
            OtlpProtocol::HttpProtobuf => "http://localhost:4318/v1/metrics".into(),
            OtlpProtocol::Grpc => "http://localhost:4317".into(),
        }
    };
    let endpoint = endpoint.trim().to_string();
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        bail!(
            "OTLP endpoint '{}' must start with http:// or https://",
            crate::export::transport::redacted(&endpoint)
        );
    }

    let temporality = match env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")
        .map(|v| (v, "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"))
        .or_else(|| {
            file.temporality
                .clone()
                .map(|v| (v, "temporality in the config file"))
        }) {
        None => Temporality::Cumulative,
        Some((value, from)) => match value.trim().to_ascii_lowercase().as_str() {
            "cumulative" => Temporality::Cumulative,
            // For counters, low-memory means delta.
            "delta" | "lowmemory" => Temporality::Delta,
            _ => bail!("temporality '{value}' from {from} is not valid: use cumulative or delta"),
        },
    };

    // The signal-specific variable wins over the generic one, as in every OTel SDK.
    let signal = |generic: &'static str, specific: &'static str| {
        env(specific)
            .map(|v| (v, specific))
            .or_else(|| env(generic).map(|v| (v, generic)))
    };
    let headers = match signal("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS") {
        None => Headers::default(),
        Some((text, var)) => Headers::parse(&text).map_err(|e| anyhow!("{var}: {e}"))?,
    };
    let timeout = match signal("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT") {
        None => Duration::from_secs(10),
        Some((ms, var)) => parse_millis(&ms, var, MAX_TIMEOUT)?,
    };
    let gzip = match signal(
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    ) {
        None => false,
        Some((value, var)) => match value.trim().to_ascii_lowercase().as_str() {
            "gzip" => true,
            "none" => false,
            _ => bail!("{var} '{value}' is not supported: use gzip or none"),
        },
    };

    // Each file: the flag, the signal's variable, the generic one, the config file key.
    let tls_path = |flag: &Option<PathBuf>,
                    generic: &'static str,
                    specific: &'static str,
                    key: &Option<String>,
                    key_name: &str| {
        flag.clone()
            .map(|p| (p, format!("--{}", key_name.replace('_', "-"))))
            .or_else(|| signal(generic, specific).map(|(v, var)| (PathBuf::from(v.trim()), var.to_string())))
            .or_else(|| {
                key.as_ref()
                    .and_then(|v| clean_path(v, env))
                    .map(|p| (p, format!("{key_name} in the config file")))
            })
    };
    let ca = tls_path(
        &opts.otlp_certificate,
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
        &file.otlp_certificate,
        "otlp_certificate",
    );
    let client_cert = tls_path(
        &opts.otlp_client_certificate,
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
        &file.otlp_client_certificate,
        "otlp_client_certificate",
    );
    let client_key = tls_path(
        &opts.otlp_client_key,
        "OTEL_EXPORTER_OTLP_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
        &file.otlp_client_key,
        "otlp_client_key",
    );
    let tls = TlsFiles::load(borrowed(&ca), borrowed(&client_cert), borrowed(&client_key))
        .map_err(|e| anyhow!(e))?;
    if !tls.is_empty() && endpoint.starts_with("http://") {
        let from = [&ca, &client_cert, &client_key]
            .into_iter()
            .find_map(|p| p.as_ref().map(|(_, from)| from.clone()))
            .unwrap_or_default();
        bail!(
            "{from} sets up TLS, but the OTLP endpoint '{}' is plain http://: use https://, or unset it",
            crate::export::transport::redacted(&endpoint)
        );
    }

    Ok(OtlpSettings {
        target: OtlpTarget {
            protocol,
            endpoint,
            headers,
            timeout,
            gzip,
            tls,
        },
        temporality,
    })
}

fn borrowed(setting: &Option<(PathBuf, String)>) -> Option<(&Path, &str)> {
    setting
        .as_ref()
        .map(|(path, from)| (path.as_path(), from.as_str()))
}

/// An on/off setting that is on unless set.
fn on_off_setting(name: &str, picked: Option<(String, Origin)>) -> anyhow::Result<Setting<bool>> {
    Ok(match picked {
        None => Setting {
            value: true,
            origin: Origin::Default,
        },
        Some((value, origin)) => Setting {
            value: parse_on_off(&value).ok_or_else(|| {
                anyhow!("{name} setting '{value}' from {origin} is not valid: use on or off")
            })?,
            origin,
        },
    })
}

fn parse_on_off(value: &str) -> Option<bool> {
    match value.trim() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// The longest export or poll interval: a day. Longer is a typo, and would overflow timers.
const MAX_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest export timeout: ten minutes, far beyond any collector's own limits.
const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);

fn parse_duration(raw: &str, what: &str) -> anyhow::Result<Duration> {
    let value = humantime::parse_duration(raw.trim())
        .map_err(|_| anyhow!("{what} '{raw}' is not a duration: write e.g. 500ms, 2s or 1m"))?;
    within(value, what, MAX_INTERVAL)
}

/// A whole number of milliseconds, as the OpenTelemetry variables write durations.
fn parse_millis(raw: &str, what: &str, max: Duration) -> anyhow::Result<Duration> {
    let ms: u64 = raw
        .trim()
        .parse()
        .map_err(|_| anyhow!("{what} '{raw}' is not a whole number of milliseconds"))?;
    within(Duration::from_millis(ms), what, max)
}

fn within(value: Duration, what: &str, max: Duration) -> anyhow::Result<Duration> {
    if value.is_zero() {
        bail!("{what} must be longer than zero");
    }
    if value > max {
        bail!(
            "{what} {} is longer than the {} allowed; choose a shorter one",
            humantime::format_duration(value),
            humantime::format_duration(max)
        );
    }
    Ok(value)
}

/// A config file is small: a larger one is not ours.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file without blocking on a FIFO or reading a device forever.
fn read_config_file(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let fix = "fix the path given to --config";
    let mut options = std::fs::File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO would block the open until a writer comes; its type is refused below.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .with_context(|| format!("cannot read config file {}; {fix}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read config file {}; {fix}", path.display()))?;
    if !meta.is_file() {
        bail!("config file {} is not a regular file; {fix}", path.display());
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read config file {}; {fix}", path.display()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        bail!("config file {} is larger than 1 MiB; {fix}", path.display());
    }
    String::from_utf8(bytes).map_err(|_| anyhow!("config file {} is not UTF-8 text; {fix}", path.display()))
}

/// Reads the config file: `--config` (which must exist), `$REASONIX_EXPORTER_CONFIG`, or the
/// default path when present.
fn load_config_file(opts: &Options, env: Env<'_>) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    let explicit = opts
        .config
        .clone()
        .or_else(|| env("REASONIX_EXPORTER_CONFIG").map(PathBuf::from));
    let path = match explicit {
        Some(path) => path,
        None => match default_config_file(env) {
            Some(path) if path.is_file() => path,
            _ => return Ok((FileConfig::default(), None)),
        },
    };
    let text = read_config_file(&path)?;
    let config = parse_config(&text).map_err(|e| anyhow!("config file {}: {e}", path.display()))?;
    Ok((config, Some(path)))
}

/// Parses a config file's text; an unknown key is an error naming it.
pub fn parse_config(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {}", e.message())
        }
        None => e.message().to_string(),
    })
}

fn default_config_file(env: Env<'_>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home_dir(env).map(|h| h.join(".config")))?;
    Some(base.join("reasonix-exporter").join("config.toml"))
}

/// `user@host`, and `/` with 8 hex digits of the state dir's hash unless it is `default`.
fn instance_id(state_dir: &Path, default: Option<&Path>) -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let mut id = format!("{}@{host}", user_name());
    if default != Some(state_dir) {
        let hash = xxhash_rust::xxh3::xxh3_64(state_dir.as_os_str().as_encoded_bytes());
        id.push_str(&format!("/{:08x}", hash >> 32));
    }
    id
}

/// The name of the user this process runs as (not `$USER`, which a service may not have).
fn user_name() -> String {
    #[cfg(unix)]
    {
        // SAFETY: getpwuid returns a pointer into static storage or null; it is read at once,
        // before any other call could reuse that storage, and copied out.
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

/// `$XDG_STATE_HOME/reasonix-exporter`, else the platform's per-user state folder.
fn default_state_dir(env: Env<'_>) -> Option<PathBuf> {
    const NAME: &str = "reasonix-exporter";
    if cfg!(windows) {
        return env("LOCALAPPDATA").map(|d| Path::new(&d).join(NAME));
    }
    if let Some(state) = env("XDG_STATE_HOME").and_then(|v| clean_path(&v, env)) {
        return Some(state.join(NAME));
    }
    let home = home_dir(env)?;
    if cfg!(target_os = "macos") {
        return Some(home.join("Library/Application Support").join(NAME));
    }
    Some(home.join(".local/state").join(NAME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn defaults_follow_reasonix_and_xdg() {
        let s = Settings::resolve(&Options::default(), &env_of(&[("HOME", "/u")])).unwrap();
        assert_eq!(s.stats_dir.value, PathBuf::from("/u/.reasonix/stats"));
        assert_eq!(
            s.state_dir.value,
            PathBuf::from("/u/.local/state/reasonix-exporter")
        );
        let otlp = s.otlp.unwrap();
        assert_eq!(otlp.target.endpoint, "http://localhost:4318/v1/metrics");
        assert_eq!(otlp.target.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(otlp.target.timeout, Duration::from_secs(10));
        assert!(!otlp.target.gzip);
        assert_eq!(otlp.temporality, Temporality::Cumulative);
        assert_eq!(s.export_interval.value, Duration::from_secs(60));
        assert_eq!(s.prometheus.value, Some("127.0.0.1:9464".parse().unwrap()));
    }

    #[test]
    fn flag_beats_variable_beats_default() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("REASONIX_EXPORTER_STATE_DIR", "/from-env"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let s = Settings::resolve(&Options::default(), &env).unwrap();
        assert_eq!(s.state_dir.value, PathBuf::from("/from-env"));
        assert_eq!(s.state_dir.origin, Origin::Env("REASONIX_EXPORTER_STATE_DIR"));
        // gRPC: the generic endpoint is used as it is.
        assert_eq!(s.otlp.unwrap().target.endpoint, "http://collector:4318/");

        let opts = Options {
            state_dir: Some("/from-flag".into()),
            otlp_protocol: Some("http/protobuf".into()),
            ..Options::default()
        };
        let s = Settings::resolve(&opts, &env).unwrap();
        assert_eq!(s.state_dir.value, PathBuf::from("/from-flag"));
        assert_eq!(
            s.otlp.unwrap().target.endpoint,
            "http://collector:4318/v1/metrics"
        );
    }

    #[test]
    fn signal_endpoint_is_used_as_given() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom"),
        ]);
        let s = Settings::resolve(&Options::default(), &env).unwrap();
        assert_eq!(s.otlp.unwrap().target.endpoint, "http://m:9/custom");
    }

    #[test]
    fn standard_variables_set_headers_timeout_compression() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-generic=1"),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "authorization=Bearer%20t"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "Delta"),
        ]);
        let otlp = Settings::resolve(&Options::default(), &env)
            .unwrap()
            .otlp
            .unwrap();
        assert_eq!(
            otlp.target.headers.0,
            [("authorization".to_string(), "Bearer t".to_string())]
        );
        assert_eq!(otlp.target.timeout, Duration::from_millis(2500));
        assert!(otlp.target.gzip);
        assert_eq!(otlp.temporality, Temporality::Delta);
        let env = env_of(&[("HOME", "/u"), ("OTEL_EXPORTER_OTLP_HEADERS", "token:s3cret")]);
        let err = Settings::resolve(&Options::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_HEADERS") && !err.contains("s3cret"),
            "{err}"
        );
    }

    #[test]
    fn sdk_disabled_turns_otlp_off() {
        let env = env_of(&[("HOME", "/u"), ("OTEL_SDK_DISABLED", "true")]);
        assert!(
            Settings::resolve(&Options::default(), &env)
                .unwrap()
                .otlp
                .is_none()
        );
    }

    #[test]
    fn bad_values_name_the_setting() {
        let env = env_of(&[("HOME", "/u")]);
        let opts = Options {
            otlp_protocol: Some("http/json".into()),
            ..Options::default()
        };
        let err = Settings::resolve(&opts, &env).unwrap_err().to_string();
        assert!(
            err.contains("--otlp-protocol") && err.contains("grpc or http/protobuf"),
            "{err}"
        );
        let env = env_of(&[("HOME", "/u"), ("OTEL_METRIC_EXPORT_INTERVAL", "soon")]);
        let err = Settings::resolve(&Options::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("OTEL_METRIC_EXPORT_INTERVAL"), "{err}");
    }

    #[test]
    fn example_config_documents_every_key_and_parses() {
        let example = include_str!("../../config/reasonix-exporter.toml");
        for key in CONFIG_KEYS {
            assert!(
                example.contains(&format!("\n# {key} = ")),
                "config example lacks {key}"
            );
        }
        // Uncommented, the example is a valid configuration that sets every key.
        let uncommented: String = example
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| CONFIG_KEYS.iter().any(|k| l.starts_with(&format!("{k} = "))))
            .map(|l| format!("{l}\n"))
            .collect();
        let config = parse_config(&uncommented).unwrap();
        assert_eq!(config.otlp_protocol.as_deref(), Some("http/protobuf"));
        assert_eq!(uncommented.lines().count(), CONFIG_KEYS.len());
        assert!(config.otlp_client_key.is_some());
        // The example's certificate paths don't exist here; everything else resolves.
        let resolvable: String = uncommented
            .lines()
            .filter(|l| !l.starts_with("otlp_certificate") && !l.starts_with("otlp_client_"))
            .map(|l| format!("{l}\n"))
            .collect();
        let path = std::env::temp_dir().join(format!("rx-example-{}.toml", std::process::id()));
        std::fs::write(&path, &resolvable).unwrap();
        let opts = Options {
            config: Some(path.clone()),
            ..Options::default()
        };
        let settings = Settings::resolve(&opts, &env_of(&[("HOME", "/u")])).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(settings.stats_dir.value, PathBuf::from("/u/.reasonix/stats"));
        assert_eq!(settings.stats_dir.origin, Origin::ConfigFile);
    }

    #[test]
    fn unknown_config_key_is_named() {
        let err = parse_config("stats_dir = \"/x\"\nstats_dri = \"/y\"\n").unwrap_err();
        assert!(err.contains("stats_dri"), "{err}");
    }

    #[test]
    fn the_instance_names_the_user_and_host_and_tells_state_dirs_apart() {
        let default = Path::new("/home/alice/.local/state/reasonix-exporter");
        let plain = instance_id(default, Some(default));
        assert!(plain.contains('@') && !plain.contains('/'), "{plain}");
        let other = instance_id(Path::new("/srv/second"), Some(default));
        assert!(
            other.starts_with(&format!("{plain}/")) && other.len() == plain.len() + 9,
            "{other}"
        );
        assert_eq!(
            other,
            instance_id(Path::new("/srv/second"), Some(default)),
            "stable"
        );
        assert_ne!(other, instance_id(Path::new("/srv/third"), Some(default)));
    }
}

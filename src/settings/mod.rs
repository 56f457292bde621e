//! Every setting resolved once, flag > environment > config file > default, remembering where
//! each value came from (for `doctor` and for error messages). What the settings are is in
//! `catalog.rs`; the config file in `file.rs`; the OTLP target in `otlp.rs`.

pub mod catalog;
mod error;
pub mod file;
pub mod identity;
mod otlp;
mod values;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::export::payload::Temporality;
use crate::export::resource::UserResource;
use crate::export::transport::OtlpTarget;
use crate::paths::{Env, Origin, clean_path, clean_setting_path, home_dir, reasonix_stats_dir};
use catalog::{
    CONFIG, Def, EXPORT_INTERVAL, OTLP, OTLP_CERTIFICATE, OTLP_CLIENT_CERTIFICATE, OTLP_CLIENT_KEY,
    POLL_INTERVAL, PROMETHEUS, SANDBOX, SDK_DISABLED, SETTINGS, STATE_DIR, STATS_DIR, WATCH, WEB_CONFIG,
};
pub use error::SettingsError;
use file::FileConfig;
use values::{MAX_INTERVAL, parse_duration, parse_millis, parse_on_off};

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
    /// The web configuration of `run`'s HTTP server, if one is given.
    pub web_config: Option<PathBuf>,
    /// Whether `run` and `once` enter the landlock sandbox.
    pub sandbox: Setting<bool>,
    pub reset_state: bool,
    /// How the store is named towards backends (`service.instance.id`) until it keeps its own
    /// identity: see [`identity`] and `Delivery::identity`.
    pub naming: identity::Naming,
    /// Where each setting that was set and has no [`Setting`] here came from, by its catalog
    /// key (see [`Settings::set_from`]).
    origins: BTreeMap<&'static str, Origin>,
}

/// Where and how to export.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    pub target: OtlpTarget,
    pub temporality: Temporality,
    /// Whether the GenAI conventions' token counters go too (`export/gen_ai.rs`).
    pub gen_ai: bool,
    /// What the user adds to the OTel resource.
    pub resource: UserResource,
}

/// The command line's values, by catalog key (a switch is present with an empty value).
pub type Flags = BTreeMap<&'static str, OsString>;

/// Looks a variable up in the process environment, as its bytes; blank counts as unset.
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !crate::paths::trim_space(v.as_encoded_bytes()).is_empty())
}

/// The settings whose values are paths: taken as bytes, as given. Every other setting is text,
/// and a variable that sets one with bytes that are not UTF-8 is an error, never unset.
const PATH_SETTINGS: [&Def; 7] = [
    &WEB_CONFIG,
    &STATS_DIR,
    &STATE_DIR,
    &CONFIG,
    &OTLP_CERTIFICATE,
    &OTLP_CLIENT_CERTIFICATE,
    &OTLP_CLIENT_KEY,
];

/// The first flag of a text setting whose value is not UTF-8 (a path's is used as given).
fn flag_not_text(flags: &Flags) -> Option<&'static Def> {
    SETTINGS
        .iter()
        .copied()
        .filter(|def| !PATH_SETTINGS.iter().any(|path| path.key == def.key))
        .find(|def| flags.get(def.key).is_some_and(|value| value.to_str().is_none()))
}

/// The first variable of a text setting whose value is not UTF-8.
fn not_text(env: Env<'_>) -> Option<&'static str> {
    let text_settings = SETTINGS
        .iter()
        .filter(|def| !PATH_SETTINGS.iter().any(|path| path.key == def.key));
    text_settings
        .flat_map(|def| def.vars.iter().copied())
        .chain([SDK_DISABLED, catalog::SEMCONV_OPT_IN])
        .find(|var| env(var).is_some_and(|value| value.to_str().is_none()))
}

/// Where a setting's value can come from, in order of precedence.
struct Sources<'a> {
    flags: &'a Flags,
    env: Env<'a>,
    file: FileConfig,
    /// What each picked setting's value came from.
    origins: std::cell::RefCell<BTreeMap<&'static str, Origin>>,
}

impl Sources<'_> {
    /// The flag, then the variables in order, then the config file key. A text setting's
    /// variables were checked to be UTF-8 (see [`not_text`]).
    fn pick(&self, def: &'static Def) -> Option<(String, Origin)> {
        self.pick_path(def)
            .map(|(value, origin)| (value.to_string_lossy().into_owned(), origin))
    }

    /// [`Sources::pick`] for a path setting: a variable's bytes as they are.
    fn pick_path(&self, def: &'static Def) -> Option<(OsString, Origin)> {
        let picked = def
            .flag
            .and_then(|_| self.flags.get(def.key))
            .map(|v| (v.clone(), Origin::Flag))
            .or_else(|| {
                def.vars
                    .iter()
                    .find_map(|var| (self.env)(var).map(|v| (v, Origin::Env(var))))
            })
            .or_else(|| {
                def.in_file
                    .then(|| self.file.get(def.key))
                    .flatten()
                    .map(|v| (OsString::from(v), Origin::ConfigFile))
            });
        if let Some((_, origin)) = &picked {
            self.origins.borrow_mut().insert(def.key, origin.clone());
        }
        picked
    }

    /// [`Sources::pick`] for a setting with a default value ([`Def::value`]): that value, from
    /// [`Origin::Default`], when nothing sets it.
    fn pick_or_default(&self, def: &'static Def) -> (String, Origin) {
        self.pick(def)
            .unwrap_or_else(|| (def.value.to_string(), Origin::Default))
    }
}

/// How an error names where a value came from: the flag, the variable, or the file's key.
fn source_name(def: &Def, origin: &Origin) -> String {
    match origin {
        Origin::Flag => format!("--{}", def.flag.map_or(def.key, |f| f.0)),
        Origin::Env(var) => (*var).to_string(),
        Origin::ConfigFile => format!("{} in the config file", def.key),
        Origin::ReasonixConfig => origin.to_string(),
        Origin::Default => "the default".into(),
    }
}

impl Settings {
    pub fn resolve(flags: &Flags, reset_state: bool, env: Env<'_>) -> Result<Settings, SettingsError> {
        if let Some(def) = flag_not_text(flags) {
            return Err(SettingsError::FlagNotUtf8 {
                flag: source_name(def, &Origin::Flag),
            });
        }
        if let Some(var) = not_text(env) {
            return Err(SettingsError::NotUtf8 { var });
        }
        let (file, config_file) = file::load(flags.get(catalog::CONFIG.key).map(Path::new), env)?;
        let sources = Sources {
            flags,
            env,
            file,
            origins: Default::default(),
        };
        let stats_dir = resolve_stats_dir(&sources)?;
        let state_dir = resolve_state_dir(&sources)?;
        outside_of(&state_dir, &stats_dir.value)?;
        let otlp = match resolve_otlp_on(&sources)? {
            true => Some(otlp::resolve(&sources)?),
            false => None,
        };
        let export_interval = resolve_export_interval(&sources)?;
        let (raw, origin) = sources.pick_or_default(&POLL_INTERVAL);
        let poll_interval = Setting {
            value: parse_duration(&raw, &source_name(&POLL_INTERVAL, &origin))?,
            origin,
        };
        let watch = on_off(&sources, &WATCH)?;
        let prometheus = resolve_prometheus(&sources)?;
        let web_config = resolve_web_config(&sources)?;
        let sandbox = on_off(&sources, &SANDBOX)?;
        let naming = identity::Naming::new(&state_dir.value, default_state_dir(env).as_deref(), env);
        Ok(Settings {
            naming,
            stats_dir,
            state_dir,
            config_file,
            otlp,
            export_interval,
            poll_interval,
            watch,
            prometheus,
            web_config,
            sandbox,
            reset_state,
            origins: sources.origins.into_inner(),
        }
        .with_each_origin_once())
    }

    /// The settings kept as a [`Setting`], with their origin.
    fn kept(&self) -> [(&'static Def, &Origin); 7] {
        [
            (&STATS_DIR, &self.stats_dir.origin),
            (&STATE_DIR, &self.state_dir.origin),
            (&EXPORT_INTERVAL, &self.export_interval.origin),
            (&POLL_INTERVAL, &self.poll_interval.origin),
            (&WATCH, &self.watch.origin),
            (&PROMETHEUS, &self.prometheus.origin),
            (&SANDBOX, &self.sandbox.origin),
        ]
    }

    /// Leaves in `origins` only what no [`Setting`] keeps.
    fn with_each_origin_once(mut self) -> Settings {
        let kept: Vec<&str> = self.kept().iter().map(|(def, _)| def.key).collect();
        self.origins.retain(|key, _| !kept.contains(key));
        self
    }

    /// Where the setting `key` came from, if something set it: its flag, one of its variables or
    /// the config file; `None` at its default, however that was found (the stats folder's from
    /// `REASONIX_HOME` or Reasonix's own config).
    pub fn set_from(&self, key: &str) -> Option<&Origin> {
        match self.kept().into_iter().find(|(def, _)| def.key == key) {
            Some((def, origin)) => match origin {
                Origin::Flag | Origin::ConfigFile => Some(origin),
                Origin::Env(var) if def.vars.contains(var) => Some(origin),
                _ => None,
            },
            None => self.origins.get(key),
        }
    }
}

fn default<T>(value: T) -> Setting<T> {
    Setting {
        value,
        origin: Origin::Default,
    }
}

/// A path setting cleaned (see [`clean_setting_path`]); a `$VAR` in it that is unset is an error.
pub(super) fn setting_path(
    raw: &std::ffi::OsStr,
    env: Env<'_>,
    what: &'static str,
    origin: &Origin,
) -> Result<Option<PathBuf>, SettingsError> {
    clean_setting_path(raw, env).map_err(|var| SettingsError::UnsetInPath {
        what,
        origin: origin.clone(),
        var,
    })
}

fn resolve_stats_dir(sources: &Sources<'_>) -> Result<Setting<PathBuf>, SettingsError> {
    Ok(match sources.pick_path(&STATS_DIR) {
        Some((raw, origin)) => Setting {
            value: setting_path(&raw, sources.env, "stats dir", &origin)?.ok_or_else(|| {
                SettingsError::Blank {
                    what: "stats dir",
                    origin: origin.clone(),
                }
            })?,
            origin,
        },
        None => {
            let (value, origin) = reasonix_stats_dir(sources.env).ok_or(SettingsError::NoHome {
                what: "the Reasonix stats dir",
                flag: "--stats-dir",
            })?;
            Setting { value, origin }
        }
    })
}

/// The exporter never writes into Reasonix's folder: a state dir that is the stats folder or
/// lies inside it (as the paths are, links resolved where they exist) is refused.
fn outside_of(state_dir: &Setting<PathBuf>, stats_dir: &Path) -> Result<(), SettingsError> {
    // As the kernel will resolve the path: part by part, a link followed and `..` taken from
    // where the link led, as long as the parts exist; past them, `..` taken away as written.
    let real = |path: &Path| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut real = PathBuf::new();
        let mut exists = true;
        for part in absolute.components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir if !exists => {
                    real.pop();
                }
                // The root (and a Windows drive) as it is.
                part @ (std::path::Component::Prefix(_) | std::path::Component::RootDir) => real.push(part),
                part => {
                    real.push(part);
                    if exists {
                        match real.canonicalize() {
                            Ok(resolved) => real = resolved,
                            Err(_) => exists = false,
                        }
                    }
                }
            }
        }
        real
    };
    let (state, stats) = (real(&state_dir.value), real(stats_dir));
    if state.starts_with(&stats) {
        return Err(SettingsError::StateInStats {
            state: state_dir.value.clone(),
            origin: state_dir.origin.clone(),
            stats: stats_dir.to_path_buf(),
        });
    }
    Ok(())
}

fn resolve_state_dir(sources: &Sources<'_>) -> Result<Setting<PathBuf>, SettingsError> {
    Ok(match sources.pick_path(&STATE_DIR) {
        Some((raw, origin)) => Setting {
            value: setting_path(&raw, sources.env, "state dir", &origin)?.ok_or_else(|| {
                SettingsError::Blank {
                    what: "state dir",
                    origin: origin.clone(),
                }
            })?,
            origin,
        },
        None => default(default_state_dir(sources.env).ok_or(SettingsError::NoHome {
            what: "a state dir",
            flag: "--state-dir",
        })?),
    })
}

/// `--otlp` when given (a flag is above every variable); else `OTEL_SDK_DISABLED=true` turns
/// export off, whatever the exporter's own variable or the config file say; then the `otlp`
/// setting.
fn resolve_otlp_on(sources: &Sources<'_>) -> Result<bool, SettingsError> {
    let setting = on_off(sources, &OTLP)?;
    if setting.origin == Origin::Flag {
        return Ok(setting.value);
    }
    let disabled = (sources.env)(SDK_DISABLED);
    if disabled.is_some_and(|v| v.as_encoded_bytes().trim_ascii().eq_ignore_ascii_case(b"true")) {
        sources
            .origins
            .borrow_mut()
            .insert(OTLP.key, Origin::Env(SDK_DISABLED));
        return Ok(false);
    }
    Ok(setting.value)
}

/// The flag and the file write a duration (`60s`); the OTel variable, milliseconds.
fn resolve_export_interval(sources: &Sources<'_>) -> Result<Setting<Duration>, SettingsError> {
    Ok(match sources.pick_or_default(&EXPORT_INTERVAL) {
        (raw, origin @ Origin::Env(var)) => Setting {
            value: parse_millis(&raw, var, MAX_INTERVAL)?,
            origin,
        },
        (raw, origin) => Setting {
            value: parse_duration(&raw, &source_name(&EXPORT_INTERVAL, &origin))?,
            origin,
        },
    })
}

/// A path as given, `~` and variables expanded in the config file's.
fn resolve_web_config(sources: &Sources<'_>) -> Result<Option<PathBuf>, SettingsError> {
    let Some((raw, origin)) = sources.pick_path(&WEB_CONFIG) else {
        return Ok(None);
    };
    let path = match origin {
        Origin::ConfigFile => setting_path(&raw, sources.env, WEB_CONFIG.key, &origin)?,
        _ => Some(PathBuf::from(crate::paths::os_string_of(
            crate::paths::trim_space(raw.as_encoded_bytes()).to_vec(),
        ))),
    };
    // Absolute, so that the sandbox can name its folder (a bare `web.yml` has an empty one).
    Ok(path
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| std::path::absolute(&p).unwrap_or(p)))
}

fn resolve_prometheus(sources: &Sources<'_>) -> Result<Setting<Option<SocketAddr>>, SettingsError> {
    Ok(match sources.pick_or_default(&PROMETHEUS) {
        (raw, origin) if raw.trim() == "off" => Setting { value: None, origin },
        (raw, origin) => Setting {
            value: Some(raw.trim().parse().map_err(|_| SettingsError::Invalid {
                what: "prometheus address",
                value: raw.clone(),
                from: source_name(&PROMETHEUS, &origin),
                expected: "write HOST:PORT (e.g. 127.0.0.1:10155) or off",
            })?),
            origin,
        },
    })
}

/// An on/off setting.
fn on_off(sources: &Sources<'_>, def: &'static Def) -> Result<Setting<bool>, SettingsError> {
    let (value, origin) = sources.pick_or_default(def);
    match parse_on_off(&value) {
        Some(on) => Ok(Setting { value: on, origin }),
        None => Err(SettingsError::Invalid {
            what: def.key,
            value,
            from: source_name(def, &origin),
            expected: "use on or off",
        }),
    }
}

/// `$XDG_STATE_HOME/reasonix-exporter`, else the platform's per-user state folder.
fn default_state_dir(env: Env<'_>) -> Option<PathBuf> {
    const NAME: &str = "reasonix-exporter";
    if cfg!(windows) {
        return env("LOCALAPPDATA").map(|d| PathBuf::from(d).join(NAME));
    }
    // The XDG spec: a relative value is invalid and is to be ignored (resolved against the
    // working folder, two stores started from two folders would both be "the default").
    let xdg = env("XDG_STATE_HOME").filter(|v| Path::new(v.as_os_str()).is_absolute());
    if let Some(state) = xdg.and_then(|v| clean_path(&v, env)) {
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
    #[cfg(unix)]
    use super::*;
    #[cfg(unix)]
    use crate::export::transport::OtlpProtocol;
    #[cfg(unix)]
    use crate::paths::env_of;

    #[cfg(unix)]
    fn flags(pairs: &[(&'static str, &str)]) -> Flags {
        pairs.iter().map(|(k, v)| (*k, OsString::from(v))).collect()
    }

    #[cfg(unix)]
    fn resolve(flags: &Flags, env: Env<'_>) -> Result<Settings, SettingsError> {
        Settings::resolve(flags, false, env)
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn defaults_follow_reasonix_and_xdg() {
        let s = resolve(&Flags::new(), &env_of(&[("HOME", "/u")])).unwrap();
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
        assert_eq!(s.prometheus.value, Some("127.0.0.1:10155".parse().unwrap()));
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn flag_beats_variable_beats_default() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("REASONIX_EXPORTER_STATE_DIR", "/from-env"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let s = resolve(&Flags::new(), &env).unwrap();
        assert_eq!(s.state_dir.value, PathBuf::from("/from-env"));
        assert_eq!(s.state_dir.origin, Origin::Env("REASONIX_EXPORTER_STATE_DIR"));
        // gRPC: the generic endpoint is used as it is.
        assert_eq!(s.otlp.unwrap().target.endpoint, "http://collector:4318/");

        let opts = flags(&[("state_dir", "/from-flag"), ("otlp_protocol", "http/protobuf")]);
        let s = resolve(&opts, &env).unwrap();
        assert_eq!(s.state_dir.value, PathBuf::from("/from-flag"));
        assert_eq!(
            s.otlp.unwrap().target.endpoint,
            "http://collector:4318/v1/metrics"
        );
        // The signal's path goes on the path, before a query or a fragment.
        for (generic, sent_to) in [
            (
                "http://gw:4318/otlp/?tenant=a",
                "http://gw:4318/otlp/v1/metrics?tenant=a",
            ),
            ("http://gw:4318?token=x", "http://gw:4318/v1/metrics?token=x"),
            ("https://u:p@gw#f", "https://u:p@gw/v1/metrics#f"),
        ] {
            let env = env_of(&[("HOME", "/u"), ("OTEL_EXPORTER_OTLP_ENDPOINT", generic)]);
            let s = resolve(&Flags::new(), &env).unwrap();
            assert_eq!(s.otlp.unwrap().target.endpoint, sent_to);
        }
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn signal_endpoint_is_used_as_given() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom"),
        ]);
        let s = resolve(&Flags::new(), &env).unwrap();
        assert_eq!(s.otlp.unwrap().target.endpoint, "http://m:9/custom");
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn an_unset_variable_in_a_path_setting_is_an_error_not_a_root_path() {
        let env = env_of(&[("HOME", "/u"), ("REASONIX_EXPORTER_STATE_DIR", "$DATA/reasonix")]);
        let e = resolve(&Flags::new(), &env).unwrap_err().to_string();
        assert!(
            e.contains("state dir") && e.contains("$DATA, which is unset or blank"),
            "{e}"
        );
        let env = env_of(&[
            ("HOME", "/u"),
            ("DATA", "/d"),
            ("REASONIX_EXPORTER_STATE_DIR", "$DATA/reasonix"),
        ]);
        assert_eq!(
            resolve(&Flags::new(), &env).unwrap().state_dir.value,
            PathBuf::from("/d/reasonix")
        );
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn a_scheme_in_capitals_is_a_scheme() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "HTTP://m:9/v1/metrics"),
        ]);
        let s = resolve(&Flags::new(), &env).unwrap();
        assert_eq!(s.otlp.unwrap().target.endpoint, "http://m:9/v1/metrics");
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn resource_attributes_with_a_bad_entry_are_an_error_never_dropped_or_kept_raw() {
        for (bad, says) in [
            ("team=a,noeq", "entry 2 has no '='"),
            ("=v", "entry 1 has an empty or invalid name"),
            ("team=%zz", "team: its value is not valid percent-encoded"),
        ] {
            let env = env_of(&[("HOME", "/u"), ("OTEL_RESOURCE_ATTRIBUTES", bad)]);
            let e = resolve(&Flags::new(), &env).unwrap_err().to_string();
            assert!(
                e.starts_with("OTEL_RESOURCE_ATTRIBUTES: ") && e.contains(says),
                "{bad}: {e}"
            );
        }
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team=pay%20ments,user=alice"),
        ]);
        assert!(resolve(&Flags::new(), &env).is_ok());
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
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
        let otlp = resolve(&Flags::new(), &env).unwrap().otlp.unwrap();
        assert_eq!(
            otlp.target.headers.0,
            [("authorization".to_string(), "Bearer t".to_string())]
        );
        assert_eq!(otlp.target.timeout, Duration::from_millis(2500));
        assert!(otlp.target.gzip);
        assert_eq!(otlp.temporality, Temporality::Delta);
        let env = env_of(&[("HOME", "/u"), ("OTEL_EXPORTER_OTLP_HEADERS", "token:s3cret")]);
        let err = resolve(&Flags::new(), &env).unwrap_err().to_string();
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_HEADERS") && !err.contains("s3cret"),
            "{err}"
        );
    }

    /// A header value that its transport cannot send (a line break) is an
    /// error naming the variable when the settings are read, never one at the first export.
    #[cfg(unix)]
    #[test]
    fn a_header_that_cannot_be_sent_is_refused_naming_the_variable() {
        for (headers, protocol) in [
            ("authorization=Bearer%0Ax", "http/protobuf"),
            ("authorization=Bearer%0Dx", "grpc"),
        ] {
            let env = env_of(&[
                ("HOME", "/u"),
                ("OTEL_EXPORTER_OTLP_HEADERS", headers),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            ]);
            let err = resolve(&Flags::new(), &env).unwrap_err().to_string();
            assert!(
                err.contains("OTEL_EXPORTER_OTLP_HEADERS") && err.contains("authorization"),
                "{err}"
            );
            assert!(!err.contains("Bearer"), "the value is never shown: {err}");
        }
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20%C3%A9"),
        ]);
        assert!(resolve(&Flags::new(), &env).is_ok(), "HTTP takes a UTF-8 value");
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn sdk_disabled_turns_otlp_off() {
        let env = env_of(&[("HOME", "/u"), ("OTEL_SDK_DISABLED", "true")]);
        assert!(resolve(&Flags::new(), &env).unwrap().otlp.is_none());
        let env = env_of(&[
            ("HOME", "/u"),
            ("OTEL_SDK_DISABLED", "TRUE"),
            ("REASONIX_EXPORTER_OTLP", "on"),
        ]);
        assert!(resolve(&Flags::new(), &env).unwrap().otlp.is_none());
        // A flag is above every variable.
        let settings = resolve(&flags(&[("otlp", "on")]), &env).unwrap();
        assert!(settings.otlp.is_some());
        assert_eq!(settings.set_from("otlp"), Some(&Origin::Flag));
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn bad_values_name_the_setting() {
        let env = env_of(&[("HOME", "/u")]);
        let opts = flags(&[("otlp_protocol", "http/json")]);
        let err = resolve(&opts, &env).unwrap_err().to_string();
        assert!(
            err.contains("--otlp-protocol") && err.contains("grpc or http/protobuf"),
            "{err}"
        );
        let env = env_of(&[("HOME", "/u"), ("OTEL_METRIC_EXPORT_INTERVAL", "soon")]);
        let err = resolve(&Flags::new(), &env).unwrap_err().to_string();
        assert!(err.contains("OTEL_METRIC_EXPORT_INTERVAL"), "{err}");
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn doctor_lists_what_was_set_not_how_a_default_was_found() {
        let env = env_of(&[
            ("HOME", "/u"),
            ("REASONIX_HOME", "/r"),
            ("REASONIX_EXPORTER_WATCH", "off"),
        ]);
        let settings = resolve(&flags(&[("poll_interval", "3s")]), &env).unwrap();
        assert_eq!(settings.stats_dir.origin, Origin::Env("REASONIX_HOME"));
        assert_eq!(
            settings.set_from("stats_dir"),
            None,
            "the default, found through REASONIX_HOME"
        );
        assert_eq!(
            settings.set_from("watch"),
            Some(&Origin::Env("REASONIX_EXPORTER_WATCH"))
        );
        assert_eq!(settings.set_from("poll_interval"), Some(&Origin::Flag));
        assert_eq!(settings.set_from("export_interval"), None);
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn the_example_config_resolves_and_its_origins_are_kept() {
        // The example's certificate paths don't exist here; everything else resolves.
        let resolvable: String = catalog::example_config()
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| catalog::file_keys().any(|k| l.starts_with(&format!("{k} = "))))
            .filter(|l| !l.starts_with("otlp_certificate") && !l.starts_with("otlp_client_"))
            .map(|l| format!("{l}\n"))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, &resolvable).unwrap();
        let opts = flags(&[("config", path.to_str().unwrap()), ("watch", "off")]);
        let env = env_of(&[("HOME", "/u"), ("REASONIX_EXPORTER_POLL_INTERVAL", "3s")]);
        let settings = resolve(&opts, &env).unwrap();
        assert_eq!(settings.stats_dir.value, PathBuf::from("/u/.reasonix/stats"));
        assert_eq!(settings.stats_dir.origin, Origin::ConfigFile);
        assert_eq!(settings.set_from("watch"), Some(&Origin::Flag));
        assert_eq!(
            settings.set_from("poll_interval"),
            Some(&Origin::Env("REASONIX_EXPORTER_POLL_INTERVAL"))
        );
        assert_eq!(settings.set_from("export_interval"), Some(&Origin::ConfigFile));
        assert!(!settings.watch.value);
    }

    #[cfg(unix)]
    #[test]
    fn a_text_variable_that_is_not_utf8_is_an_error_naming_it_and_a_path_is_taken() {
        use std::os::unix::ffi::OsStrExt;
        let with = |name: &'static str, bytes: &'static [u8]| {
            move |var: &str| match var {
                "HOME" => Some(OsString::from("/u")),
                _ if var == name => Some(std::ffi::OsStr::from_bytes(bytes).to_os_string()),
                _ => None,
            }
        };
        let headers = with("OTEL_EXPORTER_OTLP_HEADERS", b"authorization=Bearer \xe9");
        let e = resolve(&Flags::new(), &headers).unwrap_err().to_string();
        assert!(
            e.contains("$OTEL_EXPORTER_OTLP_HEADERS") && e.contains("UTF-8"),
            "{e}"
        );
        let state = with("REASONIX_EXPORTER_STATE_DIR", b"/s\xe9");
        let s = resolve(&Flags::new(), &state).unwrap();
        assert_eq!(s.state_dir.value.as_os_str().as_bytes(), b"/s\xe9");
    }

    // Unix: a home from HOME, and Unix paths; Windows finds its profile (tests/shipped/).
    #[cfg(unix)]
    #[test]
    fn a_relative_xdg_state_home_is_ignored_as_the_spec_says() {
        let relative = env_of(&[("HOME", "/u"), ("XDG_STATE_HOME", "state")]);
        assert_eq!(
            default_state_dir(&relative),
            Some(PathBuf::from("/u/.local/state/reasonix-exporter"))
        );
        let absolute = env_of(&[("HOME", "/u"), ("XDG_STATE_HOME", "/x/state")]);
        assert_eq!(
            default_state_dir(&absolute),
            Some(PathBuf::from("/x/state/reasonix-exporter"))
        );
    }
}

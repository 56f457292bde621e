//! The web configuration file of the Prometheus exporter-toolkit (`--web-config`), read as the
//! toolkit reads it (its `docs/web-configuration.md`): strict (an unknown key is an error),
//! paths relative to the file's folder, TLS on when a certificate, a key, a client CA or a
//! client policy is given. Where this exporter cannot do what a field asks (TLS 1.0 and 1.1,
//! suites and curves rustls does not have), the error says so and names the field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use yaml_rust2::Yaml;

use super::tls_config::{TlsServer, tls_server};

/// A web configuration, checked: everything a connection needs but the files' bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct WebConfig {
    /// `None`: plain HTTP.
    pub tls: Option<TlsServer>,
    /// `http_server_config.headers`, checked against the toolkit's list.
    pub headers: Vec<(String, String)>,
    /// `basic_auth_users`: name and bcrypt hash; empty: no authentication.
    pub users: Vec<(String, String)>,
    pub rate_limit: Option<RateLimit>,
}

/// PEM text, from a file or written inline (`tls_config.rs` reads where).
#[derive(Clone, PartialEq)]
pub enum Pem {
    File(PathBuf),
    Inline(String),
}

/// Never the inline text: it may be a private key.
impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            Pem::Inline(_) => f.write_str("Inline(…)"),
        }
    }
}

/// `rate_limit`: at most `burst` requests at once, one more every `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub interval: Duration,
    pub burst: u32,
}

/// What is wrong with a web configuration, by the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// `tls_server_config.min_version`, or `""` for the file as a whole.
    pub field: String,
    pub problem: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field.as_str() {
            "" => write!(f, "{}", self.problem),
            field => write!(f, "{field}: {}", self.problem),
        }
    }
}

pub(super) fn invalid(field: &str, problem: impl Into<String>) -> Invalid {
    Invalid {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// The headers `http_server_config.headers` may set, and the values each may take (`None`:
/// any), as the toolkit allows them.
const HEADERS: [(&str, Option<&[&str]>); 5] = [
    ("Strict-Transport-Security", None),
    ("X-Content-Type-Options", Some(&["nosniff"])),
    ("X-Frame-Options", Some(&["deny", "sameorigin"])),
    ("X-XSS-Protection", None),
    ("Content-Security-Policy", None),
];

/// Reads `text`, the file at `path` (relative paths in it are relative to its folder).
pub fn parse(text: &str, path: &Path) -> Result<WebConfig, Invalid> {
    let docs =
        yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| invalid("", format!("not YAML: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let top = match docs.first() {
        None | Some(Yaml::Null) => return Ok(WebConfig::plain()),
        Some(doc) => doc,
    };
    let fields = mapping(
        top,
        "",
        &[
            "tls_server_config",
            "http_server_config",
            "basic_auth_users",
            "rate_limit",
        ],
    )?;
    let mut config = WebConfig::plain();
    for (key, value) in fields {
        match key {
            "tls_server_config" => config.tls = tls_server(value, dir)?,
            "http_server_config" => config.headers = http_server(value)?,
            "basic_auth_users" => config.users = users(value)?,
            "rate_limit" => config.rate_limit = rate_limit(value)?,
            _ => unreachable!("mapping() lets only the listed keys through"),
        }
    }
    Ok(config)
}

impl WebConfig {
    /// No TLS, no users, no headers: what an empty file says.
    pub fn plain() -> WebConfig {
        WebConfig {
            tls: None,
            headers: Vec::new(),
            users: Vec::new(),
            rate_limit: None,
        }
    }

    /// The files it reads on every connection: certificate, key and client CA.
    pub fn files(&self) -> Vec<&Path> {
        let Some(tls) = &self.tls else {
            return Vec::new();
        };
        [Some(&tls.cert), Some(&tls.key), tls.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|pem| match pem {
                Pem::File(path) => Some(path.as_path()),
                Pem::Inline(_) => None,
            })
            .collect()
    }
}

/// The entries of a mapping at `at`, each key one of `known`; null is an empty mapping.
pub(super) fn mapping<'y>(
    value: &'y Yaml,
    at: &str,
    known: &[&str],
) -> Result<Vec<(&'y str, &'y Yaml)>, Invalid> {
    let hash = match value {
        Yaml::Null => return Ok(Vec::new()),
        Yaml::Hash(hash) => hash,
        _ => return Err(invalid(at, "must be a mapping of fields")),
    };
    let mut out = Vec::new();
    for (key, value) in hash {
        let Some(key) = key.as_str() else {
            return Err(invalid(at, "has a key that is not text"));
        };
        let field = joined(at, key);
        if !known.contains(&key) {
            return Err(invalid(
                &field,
                "is not a field of the web configuration format (misspelt?)",
            ));
        }
        out.push((key, value));
    }
    Ok(out)
}

pub(super) fn joined(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// A text value; a number or a boolean is taken as its text, as Go's YAML does for a string.
pub(super) fn text(value: &Yaml, field: &str) -> Result<String, Invalid> {
    match value {
        Yaml::String(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Real(r) => Ok(r.clone()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        Yaml::Null => Ok(String::new()),
        _ => Err(invalid(field, "must be text")),
    }
}

pub(super) fn texts(value: &Yaml, field: &str) -> Result<Vec<String>, Invalid> {
    match value {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Array(items) => items.iter().map(|item| text(item, field)).collect(),
        _ => Err(invalid(field, "must be a list")),
    }
}

/// A boolean as the toolkit's YAML 1.1 reads one (go-yaml v2's `resolve.go`): `yes`, `on`,
/// `y` and their `no` counterparts in their three letter cases, besides `true` and `false`; an
/// empty value or `null` is false (the field's zero value).
pub(super) fn boolean(value: &Yaml, field: &str) -> Result<bool, Invalid> {
    match value {
        Yaml::Boolean(b) => Ok(*b),
        Yaml::Null => Ok(false),
        Yaml::String(s) => match s.as_str() {
            "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Ok(true),
            "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Ok(false),
            _ => Err(invalid(field, "must be true or false")),
        },
        _ => Err(invalid(field, "must be true or false")),
    }
}

fn http_server(value: &Yaml) -> Result<Vec<(String, String)>, Invalid> {
    const AT: &str = "http_server_config";
    let mut headers = Vec::new();
    for (key, value) in mapping(value, AT, &["http2", "headers"])? {
        match key {
            // Served over HTTP/1.1 either way: Prometheus and the collector speak it.
            "http2" => {
                boolean(value, &joined(AT, key))?;
            }
            _ => {
                let at = joined(AT, "headers");
                let Yaml::Hash(hash) = value else {
                    if value.is_null() {
                        continue;
                    }
                    return Err(invalid(&at, "must be a mapping of header to value"));
                };
                for (name, value) in hash {
                    let name = text(name, &at)?;
                    let value = text(value, &joined(&at, &name))?;
                    let Some((_, allowed)) = HEADERS.iter().find(|(h, _)| *h == name) else {
                        return Err(invalid(
                            &joined(&at, &name),
                            "cannot be configured: only Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, X-XSS-Protection and Content-Security-Policy may",
                        ));
                    };
                    if let Some(allowed) = allowed
                        && !allowed.contains(&value.as_str())
                    {
                        return Err(invalid(
                            &joined(&at, &name),
                            // The value itself is not repeated: a header may carry anything.
                            format!("has a value it cannot take: expected one of {allowed:?}"),
                        ));
                    }
                    headers.push((name, value));
                }
            }
        }
    }
    Ok(headers)
}

fn users(value: &Yaml) -> Result<Vec<(String, String)>, Invalid> {
    const AT: &str = "basic_auth_users";
    let hash = match value {
        Yaml::Null => return Ok(Vec::new()),
        Yaml::Hash(hash) => hash,
        _ => return Err(invalid(AT, "must be a mapping of user name to bcrypt hash")),
    };
    let mut users = Vec::new();
    for (name, hashed) in hash {
        let name = text(name, AT)?;
        let field = joined(AT, &name);
        let hashed = text(hashed, &field)?;
        if hashed.parse::<bcrypt::HashParts>().is_err() {
            return Err(invalid(
                &field,
                "is not a bcrypt hash (write one with htpasswd -nBC 10 \"\" | tr -d ':\\n')",
            ));
        }
        users.push((name, hashed));
    }
    Ok(users)
}

fn rate_limit(value: &Yaml) -> Result<Option<RateLimit>, Invalid> {
    const AT: &str = "rate_limit";
    let mut limit = RateLimit {
        interval: Duration::ZERO,
        burst: 0,
    };
    for (key, value) in mapping(value, AT, &["interval", "burst"])? {
        let field = joined(AT, key);
        match key {
            "interval" => {
                let text = text(value, &field)?;
                limit.interval = humantime::parse_duration(&text)
                    .map_err(|_| invalid(&field, format!("{text:?} is not a duration (e.g. 1s, 500ms)")))?;
            }
            _ => {
                limit.burst = value
                    .as_i64()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| invalid(&field, "must be a whole number of requests"))?;
            }
        }
    }
    // An interval of 0 turns the limiter off, as in the toolkit.
    Ok((!limit.interval.is_zero()).then_some(limit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::web::tls_config::{ClientAuth, Curve, Suite, TlsVersion};

    fn read(text: &str) -> Result<WebConfig, Invalid> {
        parse(text, Path::new("/etc/reasonix/web.yml"))
    }

    #[test]
    fn an_empty_file_is_plain_http() {
        assert_eq!(read(""), Ok(WebConfig::plain()));
        assert_eq!(read("{}\n"), Ok(WebConfig::plain()));
    }

    /// Allowed SANs with a policy that lets a client go without a certificate: the toolkit
    /// drops such a client (its SAN check has no certificate), so one is required.
    #[test]
    fn allowed_sans_require_the_certificate_they_check() {
        for (policy, becomes) in [
            ("VerifyClientCertIfGiven", ClientAuth::RequireAndVerifyClientCert),
            ("RequestClientCert", ClientAuth::RequireAnyClientCert),
            (
                "RequireAndVerifyClientCert",
                ClientAuth::RequireAndVerifyClientCert,
            ),
        ] {
            let text = format!(
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: {policy}\n  client_ca_file: ca.pem\n  client_allowed_sans: [prometheus.example]\n"
            );
            let tls = read(&text).unwrap().tls.unwrap();
            assert_eq!(tls.client_auth, becomes, "{policy}");
        }
    }

    /// The toolkit's YAML 1.1 booleans (`off`, `yes`, an empty value) are taken as it takes
    /// them; anything else is still refused, naming the field.
    #[test]
    fn yaml_one_one_booleans_are_booleans() {
        for text in [
            "http_server_config:\n  http2: off\n",
            "http_server_config:\n  http2: Yes\n",
            "http_server_config:\n  http2:\n",
            "http_server_config:\n  http2: ~\n",
        ] {
            assert_eq!(read(text), Ok(WebConfig::plain()), "{text}");
        }
        let err = read("http_server_config:\n  http2: maybe\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("http2") && err.contains("true or false"), "{err}");
    }

    #[test]
    fn paths_are_relative_to_the_files_folder_and_tls_has_the_toolkits_defaults() {
        let config =
            read("tls_server_config:\n  cert_file: server.crt\n  key_file: /abs/server.key\n").unwrap();
        let tls = config.tls.unwrap();
        assert_eq!(tls.cert, Pem::File("/etc/reasonix/server.crt".into()));
        assert_eq!(tls.key, Pem::File("/abs/server.key".into()));
        assert_eq!(tls.client_auth, ClientAuth::NoClientCert);
        assert_eq!(
            (tls.min_version, tls.max_version),
            (TlsVersion::Tls12, TlsVersion::Tls13)
        );
        assert!(tls.prefer_server_suites);
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            (
                "tls_server_config:\n  cert_filse: a\n",
                "tls_server_config.cert_filse",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_allowed_sans: [a]\n",
                "tls_server_config.client_allowed_sans",
            ),
            (
                "tls_server_config:\n  key_file: k\n",
                "tls_server_config.cert_file",
            ),
            (
                "tls_server_config:\n  cert_file: c\n",
                "tls_server_config.key_file",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n",
                "tls_server_config.client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: x\n",
                "tls_server_config.client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS111\n",
                "tls_server_config.min_version",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS10\n",
                "tls_server_config.min_version",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA2048]\n",
                "tls_server_config.cipher_suites",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  curve_preferences: [CurveP257]\n",
                "tls_server_config.curve_preferences",
            ),
            (
                "http_server_config:\n  headers:\n    Content-Type: foo\n",
                "http_server_config.headers.Content-Type",
            ),
            (
                "http_server_config:\n  headers:\n    X-Frame-Options: foo\n",
                "http_server_config.headers.X-Frame-Options",
            ),
            ("basic_auth_users:\n  john: doe\n", "basic_auth_users.john"),
            ("rate_limit:\n  interval: soon\n", "rate_limit.interval"),
        ];
        for (text, field) in cases {
            let error = read(text).expect_err(text);
            assert_eq!(error.field, field, "{text}: {error}");
        }
    }

    #[test]
    fn the_toolkits_documented_fields_are_read() {
        let text = "tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n  key: secret\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  client_allowed_sans: [prometheus.example]\n  min_version: TLS13\n  max_version: TLS13\n  cipher_suites: [TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: false\nhttp_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=31536000\nbasic_auth_users:\n  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\nrate_limit:\n  interval: 1s\n  burst: 10\n";
        let config = read(text).unwrap();
        let tls = config.tls.unwrap();
        assert!(matches!(tls.cert, Pem::Inline(_)));
        assert_eq!(tls.client_ca, Some(Pem::File("/etc/reasonix/ca.pem".into())));
        assert_eq!(tls.allowed_sans, Some(vec!["prometheus.example".to_string()]));
        assert_eq!(tls.suites, vec![Suite::EcdheRsaAes128Gcm]);
        assert_eq!(tls.curves, vec![Curve::X25519, Curve::P256]);
        assert!(!tls.prefer_server_suites);
        assert_eq!(config.headers.len(), 2);
        assert_eq!(config.users[0].0, "alice");
        assert_eq!(config.rate_limit.unwrap().burst, 10);
    }
}

//! `--web-config`: the Prometheus exporter-toolkit's web configuration for `run`'s HTTP server,
//! TLS (with client certificates), basic auth and response headers, read as the toolkit reads
//! it. Like the toolkit, the file and the files it names are read again for every connection, so
//! a certificate replaced on disk is served without a restart; unchanged bytes reuse what was
//! built from them.
//!
//! - `config.rs`: the file's format, checked field by field;
//! - `tls_config.rs`: its `tls_server_config`, checked field by field;
//! - `tls.rs`: `tls_server_config` as a rustls server;
//! - `auth.rs`: `basic_auth_users`, bcrypt with its cache.

mod auth;
pub mod config;
mod tls;
pub mod tls_config;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use config::{Invalid, WebConfig};

use crate::inert_text::ShowPath;

/// The web configuration of a server: where it is read from, and what was built from its bytes.
pub struct Web {
    path: PathBuf,
    built: Mutex<Option<Built>>,
    verified: auth::Verified,
    /// The turn to run a bcrypt verification: one at a time, waited for by the request.
    bcrypt_turn: Arc<tokio::sync::Semaphore>,
    /// The current bytes were refused and that has been said.
    refusal_said: std::sync::atomic::AtomicBool,
    /// Whether TLS was on when it was first read.
    tls_at_start: std::sync::OnceLock<bool>,
}

/// What one reading of the files gave.
struct Built {
    /// The configuration file's bytes and each named file's, as read.
    bytes: Read,
    active: Result<Arc<Active>, Invalid>,
}

/// The bytes of one reading: the configuration file's, and each file it names with its own.
type Read = (Vec<u8>, Vec<(PathBuf, Result<Vec<u8>, String>)>);

/// The configuration a connection is served under.
pub struct Active {
    pub config: WebConfig,
    /// `None`: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    limiter: Option<Mutex<Bucket>>,
}

/// A token bucket for `rate_limit`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A web configuration that cannot be used, in one line naming the file and the field.
#[derive(Debug, thiserror::Error)]
#[error("web config {path}: {invalid}; fix it, or leave --web-config out to serve plain HTTP")]
pub struct WebConfigError {
    pub path: String,
    pub invalid: Invalid,
}

impl Web {
    /// Reads `path` and what it names: an error is one line naming the field.
    pub fn load(path: &Path) -> Result<Web, WebConfigError> {
        let web = Web {
            path: path.to_path_buf(),
            built: Mutex::new(None),
            verified: auth::Verified::default(),
            bcrypt_turn: Arc::new(tokio::sync::Semaphore::new(1)),
            refusal_said: std::sync::atomic::AtomicBool::new(false),
            tls_at_start: std::sync::OnceLock::new(),
        };
        web.current().map_err(|invalid| WebConfigError {
            path: path.shown().to_string(),
            invalid,
        })?;
        Ok(web)
    }

    /// The folders a sandbox must let it read: the file's, and each named file's.
    pub fn folders(&self) -> Vec<PathBuf> {
        let mut files = vec![self.path.clone()];
        let built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Built {
            active: Ok(active), ..
        }) = built.as_ref()
        {
            files.extend(active.config.files().into_iter().map(Path::to_path_buf));
        }
        let mut folders = Vec::new();
        for file in files {
            folders.push(file.parent().unwrap_or(Path::new(".")).to_path_buf());
            // A certificate behind a symlink (certbot's live/ into archive/) is read where it
            // is: its real folder too.
            let real = std::fs::canonicalize(&file).ok();
            folders.extend(real.as_deref().and_then(Path::parent).map(Path::to_path_buf));
        }
        folders.retain(|f| !f.as_os_str().is_empty());
        folders.sort();
        folders.dedup();
        folders
    }

    /// The configuration for a new connection or request: the files read again, and what was
    /// built from them when their bytes have not changed. Whether TLS is on stays as it was at
    /// start: a file emptied or half written never turns a TLS port into plain HTTP.
    pub fn current(&self) -> Result<Arc<Active>, Invalid> {
        let text = read_small(&self.path).map_err(|problem| Invalid {
            field: String::new(),
            problem,
        })?;
        let mut guard = self.built.lock().unwrap_or_else(|e| e.into_inner());
        let config = match std::str::from_utf8(&text) {
            // Read again, an empty file is most likely one being written: never a moment without
            // the passwords it had.
            Ok("") if self.tls_at_start.get().is_some() => Err(Invalid {
                field: String::new(),
                problem: "is empty (being written?); write {} in it to serve without TLS or passwords".into(),
            }),
            Ok(text) => config::parse(text, &self.path),
            Err(_) => Err(Invalid {
                field: String::new(),
                problem: "is not UTF-8 text".into(),
            }),
        };
        let named: Vec<(PathBuf, Result<Vec<u8>, String>)> = match &config {
            Ok(config) => config
                .files()
                .into_iter()
                .map(|file| (file.to_path_buf(), read_small(file)))
                .collect(),
            Err(_) => Vec::new(),
        };
        let bytes = (text, named);
        if let Some(built) = guard.as_ref()
            && built.bytes == bytes
        {
            return built.active.clone();
        }
        let tls_at_start = *self
            .tls_at_start
            .get_or_init(|| matches!(&config, Ok(c) if c.tls.is_some()));
        let active = config
            .and_then(|config| {
                if config.tls.is_some() == tls_at_start {
                    return build(config, &bytes.1);
                }
                let (then, now) = if tls_at_start {
                    ("on", "off")
                } else {
                    ("off", "on")
                };
                Err(Invalid {
                    field: "tls_server_config".into(),
                    problem: format!("TLS was {then} at start and is {now} now; restart run to change it"),
                })
            })
            .map(Arc::new);
        self.refusal_said
            .store(false, std::sync::atomic::Ordering::Relaxed);
        *guard = Some(Built {
            bytes,
            active: active.clone(),
        });
        active
    }

    /// Whether it served TLS when it was first read (and so does for good).
    pub fn tls_at_start(&self) -> bool {
        self.tls_at_start.get().copied().unwrap_or(false)
    }

    /// `invalid` as one line naming the file.
    pub fn refusal(&self, invalid: Invalid) -> WebConfigError {
        WebConfigError {
            path: self.path.shown().to_string(),
            invalid,
        }
    }

    /// Whether the refusal of the current bytes is still to be said (once per change of them).
    pub fn newly_refused(&self) -> bool {
        !self.refusal_said.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Checks a request's credentials (blocking: bcrypt).
    pub fn check(&self, users: &[(String, String)], user: &str, password: &str) -> bool {
        self.verified.check(users, user, password)
    }
}

/// The most of any one file read: a web configuration, a certificate chain, a key.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A regular file of at most [`MAX_FILE_BYTES`], or why not (never a FIFO or a device, which
/// could hold the server up for good).
fn read_small(path: &Path) -> Result<Vec<u8>, String> {
    crate::own_files::read_named(path, MAX_FILE_BYTES).map_err(|e| match e.kind() {
        // Not a regular file, or larger than the bound: what it is, said as such.
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
            format!("{} is {e}", path.shown())
        }
        _ => format!("{} cannot be read: {e}", path.shown()),
    })
}

/// The server a configuration describes, from the bytes of the files it names as they were read.
fn build(config: WebConfig, named: &[(PathBuf, Result<Vec<u8>, String>)]) -> Result<Active, Invalid> {
    let tls = match &config.tls {
        None => None,
        Some(tls_config) => {
            let read = |pem: &config::Pem, field: &str| -> Result<Vec<u8>, Invalid> {
                let problem = |problem: String| Invalid {
                    field: format!("tls_server_config.{field}"),
                    problem,
                };
                match pem {
                    config::Pem::Inline(text) => Ok(text.clone().into_bytes()),
                    config::Pem::File(path) => match named.iter().find(|(p, _)| p == path) {
                        Some((_, Ok(bytes))) => Ok(bytes.clone()),
                        Some((_, Err(e))) => Err(problem(e.clone())),
                        None => Err(problem(format!("{} was not read", path.shown()))),
                    },
                }
            };
            let cert = read(&tls_config.cert, "cert_file")?;
            let key = read(&tls_config.key, "key_file")?;
            let ca = tls_config
                .client_ca
                .as_ref()
                .map(|ca| read(ca, "client_ca_file"))
                .transpose()?;
            let pems = tls::Pems {
                cert: &cert,
                key: &key,
                client_ca: ca.as_deref(),
            };
            let server =
                tls::server(tls_config, &pems).map_err(|(field, problem)| Invalid { field, problem })?;
            Some(Arc::new(server))
        }
    };
    let limiter = config.rate_limit.map(|limit| {
        Mutex::new(Bucket {
            tokens: f64::from(limit.burst),
            at: Instant::now(),
        })
    });
    Ok(Active { config, tls, limiter })
}

impl Active {
    /// Takes a token of `rate_limit`; `false` when none is left.
    fn admit(&self) -> bool {
        let (Some(limit), Some(bucket)) = (self.config.rate_limit, &self.limiter) else {
            return true;
        };
        let mut bucket = bucket.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let earned = now.duration_since(bucket.at).as_secs_f64() / limit.interval.as_secs_f64();
        bucket.tokens = (bucket.tokens + earned).min(f64::from(limit.burst));
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What every request goes through under a web configuration, read again for it as the toolkit
/// does (a user removed is refused on a kept-alive connection too): the rate limit, the headers,
/// and basic auth (a wrong or missing password is a bare 401). A configuration that cannot be
/// used is a 500, as the toolkit answers.
pub async fn guard(web: Arc<Web>, request: Request, next: Next) -> Response {
    let Ok(active) = web.current() else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n").into_response();
    };
    // Before the headers, as the toolkit answers it.
    if !active.admit() {
        return (StatusCode::TOO_MANY_REQUESTS, "Too Many Requests\n").into_response();
    }
    let users = &active.config.users;
    let allowed = if users.is_empty() {
        true
    } else {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|h| auth::credentials(h.as_bytes()));
        match given {
            None => false,
            Some((user, password)) => match web.verified.cached(&active.config.users, &user, &password) {
                Some(allowed) => allowed,
                None => {
                    // One bcrypt at a time, its turn waited for here: a client that goes away
                    // leaves the queue with its request, so no blocking work piles up behind
                    // the connections (at most one verification runs, even at a stop).
                    match web.bcrypt_turn.clone().acquire_owned().await {
                        Ok(turn) => {
                            let (web, active) = (web.clone(), active.clone());
                            tokio::task::spawn_blocking(move || {
                                let _turn = turn;
                                web.check(&active.config.users, &user, &password)
                            })
                            .await
                            .unwrap_or(false)
                        }
                        Err(_) => false,
                    }
                }
            },
        }
    };
    let mut response = if allowed {
        next.run(request).await
    } else {
        let mut refused = Response::new(Body::from("Unauthorized\n"));
        *refused.status_mut() = StatusCode::UNAUTHORIZED;
        refused
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
        refused
    };
    for (name, value) in &active.config.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

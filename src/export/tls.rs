//! TLS to the collector: which certificate authority to trust, and the client certificate for
//! mutual TLS. The files are read and checked once, at start (before the sandbox closes), so that
//! a wrong path or a file that holds no PEM is a one-line error naming the setting, not a failed
//! handshake minutes later.
//!
//! With a CA file, that CA is the only one trusted, as in the Go and Java OTel exporters: an
//! operator who pins a private CA does not also want every public one. Without it, the system's
//! trust store is used.

use std::fmt;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::inert_text::ShowPath;

/// A PEM file as read at start, with the setting it came from (for messages).
#[derive(Clone, PartialEq, Eq)]
pub struct PemFile {
    pub path: PathBuf,
    pub pem: Vec<u8>,
}

/// What TLS needs beyond the system defaults. `Debug` shows paths only: a key is a secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE`: the CA (or CAs) that signed the collector's certificate.
    pub ca: Option<PemFile>,
    /// `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE` and `OTEL_EXPORTER_OTLP_CLIENT_KEY`, for mTLS.
    pub client: Option<(PemFile, PemFile)>,
}

impl fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsFiles")
            .field("ca", &self.ca.as_ref().map(|c| &c.path))
            .field(
                "client",
                &self.client.as_ref().map(|(cert, key)| (&cert.path, &key.path)),
            )
            .finish()
    }
}

/// Why the TLS files cannot be used: each names the file and where its path came from, never
/// its bytes.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "{0} is set but no client key is: set OTEL_EXPORTER_OTLP_CLIENT_KEY (or --otlp-client-key) too, for mutual TLS"
    )]
    NoKey(String),
    #[error(
        "{0} is set but no client certificate is: set OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE (or --otlp-client-certificate) too, for mutual TLS"
    )]
    NoCertificate(String),
    #[error("cannot read {} (from {from}): {error}; fix the path or the file's permissions", path.shown())]
    Unreadable {
        path: PathBuf,
        from: String,
        error: std::io::Error,
    },
    #[error("{} (from {from}) is not valid PEM: give a PEM certificate file", path.shown())]
    NotPem { path: PathBuf, from: String },
    #[error("{} (from {from}) holds no certificate: give a PEM file with a BEGIN CERTIFICATE block", path.shown())]
    NoCertificateInFile { path: PathBuf, from: String },
    #[error(
        "{} (from {from}) holds no private key: give a PEM file with a BEGIN PRIVATE KEY block (PKCS#8, PKCS#1 or SEC1)",
        path.shown()
    )]
    NoKeyInFile { path: PathBuf, from: String },
}

impl TlsFiles {
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.client.is_none()
    }

    /// Reads and checks the files. `setting` names where each path came from, for the message.
    pub fn load(
        ca: Option<(&Path, &str)>,
        client_cert: Option<(&Path, &str)>,
        client_key: Option<(&Path, &str)>,
    ) -> Result<TlsFiles, TlsError> {
        let ca = ca.map(|(path, from)| read_certificates(path, from)).transpose()?;
        let client = match (client_cert, client_key) {
            (None, None) => None,
            (Some((_, from)), None) => return Err(TlsError::NoKey(from.to_owned())),
            (None, Some((_, from))) => return Err(TlsError::NoCertificate(from.to_owned())),
            (Some((cert, cert_from)), Some((key, key_from))) => {
                Some((read_certificates(cert, cert_from)?, read_key(key, key_from)?))
            }
        };
        Ok(TlsFiles { ca, client })
    }
}

/// The largest PEM file read: a system CA bundle is a few hundred KiB.
const MAX_PEM_BYTES: u64 = 4 << 20;

/// A regular file of at most [`MAX_PEM_BYTES`]: a FIFO or a device named by mistake is an error,
/// never a hang or a read without end.
fn read(path: &Path, from: &str) -> Result<Vec<u8>, TlsError> {
    crate::own_files::read_named(path, MAX_PEM_BYTES).map_err(|error| TlsError::Unreadable {
        path: path.to_path_buf(),
        from: from.to_owned(),
        error,
    })
}

fn read_certificates(path: &Path, from: &str) -> Result<PemFile, TlsError> {
    let pem = read(path, from)?;
    let named = || (path.to_path_buf(), from.to_owned());
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            let (path, from) = named();
            TlsError::NotPem { path, from }
        })?;
    if certificates.is_empty() {
        let (path, from) = named();
        return Err(TlsError::NoCertificateInFile { path, from });
    }
    Ok(PemFile {
        path: path.to_path_buf(),
        pem,
    })
}

fn read_key(path: &Path, from: &str) -> Result<PemFile, TlsError> {
    let pem = read(path, from)?;
    // The parse error could quote the file; only the path is shown.
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| TlsError::NoKeyInFile {
        path: path.to_path_buf(),
        from: from.to_owned(),
    })?;
    Ok(PemFile {
        path: path.to_path_buf(),
        pem,
    })
}

/// Makes ring the process's TLS crypto provider (the one this build links), once.
pub fn install_crypto_provider() {
    // An error means one is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_a_client_identity_is_refused_naming_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("client.pem");
        std::fs::write(&cert, "x").unwrap();
        let err = TlsFiles::load(None, Some((&cert, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("OTEL_EXPORTER_OTLP_CLIENT_KEY"), "{err}");
    }

    #[test]
    fn a_file_without_pem_is_refused_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap();
        let err = TlsFiles::load(Some((&ca, "--otlp-certificate")), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ca.pem") && err.contains("BEGIN CERTIFICATE"),
            "{err}"
        );
        let missing = dir.path().join("missing.pem");
        let err = TlsFiles::load(Some((&missing, "--otlp-certificate")), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("missing.pem") && err.contains("--otlp-certificate"),
            "{err}"
        );
    }

    /// A FIFO named by mistake is an error at once, never an open or a read that waits for a
    /// writer; a device or a huge file is not read without end.
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_an_endless_file_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ca.pem");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other precondition.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        for path in [fifo.as_path(), Path::new("/dev/zero")] {
            let err = TlsFiles::load(Some((path, "OTEL_EXPORTER_OTLP_CERTIFICATE")), None, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains("OTEL_EXPORTER_OTLP_CERTIFICATE"), "{err}");
        }
    }
}

//! A throwaway certificate authority for TLS tests: a self-signed CA, a server certificate for
//! `localhost` and 127.0.0.1, and a client certificate for mutual TLS, all as PEM files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};

pub struct Pki {
    /// The CA's certificate, what `OTEL_EXPORTER_OTLP_CERTIFICATE` points at.
    pub ca: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    ca_pem: String,
    server_cert_pem: String,
    server_key_pem: String,
}

impl Pki {
    /// A fresh CA and its certificates, written under `dir`.
    pub fn new(dir: &Path) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "reasonix-exporter test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();

        let server_key = KeyPair::generate().unwrap();
        let mut server = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        server
            .subject_alt_names
            .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = server.signed_by(&server_key, &ca).unwrap();

        let client_key = KeyPair::generate().unwrap();
        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client
            .distinguished_name
            .push(DnType::CommonName, "reasonix-exporter");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client.signed_by(&client_key, &ca).unwrap();

        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        Pki {
            ca: write("ca.pem", &ca.pem()),
            client_cert: write("client.pem", &client_cert.pem()),
            client_key: write("client.key", &client_key.serialize_pem()),
            ca_pem: ca.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
        }
    }

    /// Writes the server's certificate and key (for `localhost` and 127.0.0.1) under `dir`, for a
    /// real collector's TLS settings; returns their paths.
    pub fn write_server(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let cert = dir.join("server.pem");
        let key = dir.join("server.key");
        std::fs::write(&cert, &self.server_cert_pem).unwrap();
        std::fs::write(&key, &self.server_key_pem).unwrap();
        (cert, key)
    }

    /// A collector's TLS set-up for tonic, requiring a client certificate from this CA.
    pub fn tonic_server(&self) -> tonic::transport::ServerTlsConfig {
        tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(
                &self.server_cert_pem,
                &self.server_key_pem,
            ))
            .client_ca_root(tonic::transport::Certificate::from_pem(&self.ca_pem))
    }

    /// The same for a plain rustls server (the HTTP receiver).
    pub fn rustls_server(&self) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(self.server_cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(self.server_key_pem.as_bytes()).unwrap(),
            )
            .unwrap();
        Arc::new(config)
    }
}

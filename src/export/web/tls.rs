//! A web configuration's `tls_server_config` as a rustls server: the certificate and key, the
//! client policy (a client certificate requested, required, verified against the client CA,
//! its SANs held to `client_allowed_sans`), the versions, suites and curves.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoClientAuth, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme};

use super::tls_config::{ClientAuth, Curve, Suite, TlsServer, TlsVersion};

/// The PEM texts a server is made of: certificate chain, key and client CA.
pub struct Pems<'a> {
    pub cert: &'a [u8],
    pub key: &'a [u8],
    pub client_ca: Option<&'a [u8]>,
}

/// The rustls server for `tls` with these files' contents; the error names the field.
pub fn server(tls: &TlsServer, pems: &Pems<'_>) -> Result<ServerConfig, (String, String)> {
    let field = |f: &str| format!("tls_server_config.{f}");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pems.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| (field("cert_file"), format!("not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err((field("cert_file"), "holds no PEM certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(pems.key)
        .map_err(|e| (field("key_file"), format!("not a PEM private key: {e}")))?;
    let provider = Arc::new(provider(tls));
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (tls.min_version..=tls.max_version).contains(v))
    .map(|(_, v)| v)
    .collect();
    let verifier = client_verifier(tls, pems.client_ca, &provider)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| {
            (
                field("cipher_suites"),
                format!("leaves no suite for the versions allowed: {e}"),
            )
        })?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| {
            (
                field("key_file"),
                format!("does not go with the certificate: {e}"),
            )
        })?;
    config.ignore_client_order = tls.prefer_server_suites;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// ring's suites and groups, cut to those the configuration lists (TLS 1.3's suites always).
fn provider(tls: &TlsServer) -> CryptoProvider {
    use ring::cipher_suite as cs;
    let mut provider = ring::default_provider();
    if !tls.suites.is_empty() {
        let tls12 = tls.suites.iter().map(|s| match s {
            Suite::EcdheEcdsaAes128Gcm => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            Suite::EcdheEcdsaAes256Gcm => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            Suite::EcdheEcdsaChacha20 => cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            Suite::EcdheRsaAes128Gcm => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            Suite::EcdheRsaAes256Gcm => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            Suite::EcdheRsaChacha20 => cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        });
        let tls13 = [
            cs::TLS13_AES_128_GCM_SHA256,
            cs::TLS13_AES_256_GCM_SHA384,
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ];
        provider.cipher_suites = tls13.into_iter().chain(tls12).collect();
    }
    if !tls.curves.is_empty() {
        provider.kx_groups = tls
            .curves
            .iter()
            .map(|c| match c {
                Curve::X25519 => ring::kx_group::X25519,
                Curve::P256 => ring::kx_group::SECP256R1,
                Curve::P384 => ring::kx_group::SECP384R1,
            })
            .collect();
    }
    provider
}

fn client_verifier(
    tls: &TlsServer,
    client_ca: Option<&[u8]>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, (String, String)> {
    let inner: Arc<dyn ClientCertVerifier> = match tls.client_auth {
        ClientAuth::NoClientCert => return Ok(Arc::new(NoClientAuth)),
        ClientAuth::RequestClientCert => Arc::new(AnyClientCert {
            mandatory: false,
            provider: provider.clone(),
        }),
        ClientAuth::RequireAnyClientCert => Arc::new(AnyClientCert {
            mandatory: true,
            provider: provider.clone(),
        }),
        ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert => {
            let roots = Arc::new(roots(client_ca)?);
            let builder = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
            let builder = match tls.client_auth {
                ClientAuth::VerifyClientCertIfGiven => builder.allow_unauthenticated(),
                _ => builder,
            };
            builder.build().map_err(|e| {
                (
                    "tls_server_config.client_ca_file".into(),
                    format!("cannot verify clients with it: {e}"),
                )
            })?
        }
    };
    Ok(match &tls.allowed_sans {
        None => inner,
        Some(allowed) => Arc::new(AllowedSans {
            inner,
            allowed: allowed.clone(),
        }),
    })
}

/// The client CA's certificates; without one, the system's roots (as Go verifies then).
fn roots(client_ca: Option<&[u8]>) -> Result<RootCertStore, (String, String)> {
    let field = || "tls_server_config.client_ca_file".to_string();
    let mut roots = RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = match client_ca {
        Some(pem) => CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(|e| (field(), format!("not a PEM certificate: {e}")))?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err((field(), "holds no CA certificate to verify clients with".into()));
    }
    Ok(roots)
}

/// `RequestClientCert` and `RequireAnyClientCert`: a certificate asked for and taken as it is
/// (its handshake signature still checked), as Go's policies of those names do.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `client_allowed_sans`: a client certificate, verified as `inner` verifies it, must carry one
/// of `allowed` as a DNS name, e-mail address, IP address or URI.
#[derive(Debug)]
struct AllowedSans {
    inner: Arc<dyn ClientCertVerifier>,
    allowed: Vec<String>,
}

impl ClientCertVerifier for AllowedSans {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.inner.verify_client_cert(end_entity, intermediates, now)?;
        let sans = subject_alt_names(end_entity);
        if sans.iter().any(|san| self.allowed.contains(san)) {
            Ok(verified)
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The DNS names, e-mail addresses, IP addresses and URIs a certificate is for, as text.
fn subject_alt_names(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return Vec::new();
    };
    let Ok(Some(sans)) = parsed.subject_alternative_name() else {
        return Vec::new();
    };
    sans.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(s) | GeneralName::RFC822Name(s) | GeneralName::URI(s) => Some(s.to_string()),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => Some(std::net::IpAddr::from(<[u8; 4]>::try_from(*bytes).ok()?).to_string()),
                16 => Some(std::net::IpAddr::from(<[u8; 16]>::try_from(*bytes).ok()?).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

//! `tls_server_config` of a web configuration (`config.rs`), field by field as the
//! exporter-toolkit reads it; what rustls cannot do is refused by name.

use std::path::Path;

use yaml_rust2::Yaml;

use super::config::{Invalid, Pem, boolean, invalid, joined, mapping, text, texts};

const AT: &str = "tls_server_config";

/// Its fields; the first seven turn TLS on when any is given.
const FIELDS: [&str; 13] = [
    "cert_file",
    "key_file",
    "cert",
    "key",
    "client_auth_type",
    "client_ca_file",
    "client_ca",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    NoClientCert,
    RequestClientCert,
    RequireAnyClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// A TLS 1.2 suite rustls has, by the name Go gives it; TLS 1.3's cannot be chosen (in Go
/// either: it accepts their names and keeps them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    EcdheEcdsaAes128Gcm,
    EcdheEcdsaAes256Gcm,
    EcdheEcdsaChacha20,
    EcdheRsaAes128Gcm,
    EcdheRsaAes256Gcm,
    EcdheRsaChacha20,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    X25519,
    P256,
    P384,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TlsServer {
    pub cert: Pem,
    pub key: Pem,
    pub client_ca: Option<Pem>,
    pub client_auth: ClientAuth,
    /// `client_allowed_sans`: a client certificate must carry one of them.
    pub allowed_sans: Option<Vec<String>>,
    pub min_version: TlsVersion,
    pub max_version: TlsVersion,
    /// Empty: rustls' own.
    pub suites: Vec<Suite>,
    /// Empty: rustls' own.
    pub curves: Vec<Curve>,
    pub prefer_server_suites: bool,
}

/// `tls_server_config`; `None` when it does not turn TLS on.
pub(super) fn tls_server(value: &Yaml, dir: &Path) -> Result<Option<TlsServer>, Invalid> {
    let fields = mapping(value, AT, &FIELDS)?;
    let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let field = |key: &str| joined(AT, key);
    let text_of = |key: &str| {
        get(key)
            .map(|v| text(v, &field(key)))
            .transpose()
            .map(Option::unwrap_or_default)
    };
    let turning_on: [&str; 7] = FIELDS[..7].try_into().expect("seven");
    let values = turning_on.map(text_of);
    let [cert_file, key_file, cert, key, auth, ca_file, ca] = match values {
        [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e), Ok(f), Ok(g)] => [a, b, c, d, e, f, g],
        values => return Err(values.into_iter().find_map(Result::err).expect("one failed")),
    };
    // The toolkit's test of "TLS is on".
    if [&cert_file, &key_file, &cert, &key, &auth, &ca_file, &ca]
        .iter()
        .all(|v| v.is_empty())
    {
        return Ok(None);
    }
    let (client_auth, allowed_sans) = client_policy(
        &auth,
        ca_file.is_empty() && ca.is_empty(),
        get("client_allowed_sans"),
    )?;
    let pem = |file: &str, inline: &str| match (file, inline) {
        ("", "") => None,
        ("", inline) => Some(Pem::Inline(inline.to_string())),
        // The file wins over the inline text, as in the toolkit.
        (file, _) => Some(Pem::File(dir.join(file))),
    };
    let cert = pem(&cert_file, &cert)
        .ok_or_else(|| invalid(&field("cert_file"), "missing one of cert or cert_file"))?;
    let key =
        pem(&key_file, &key).ok_or_else(|| invalid(&field("key_file"), "missing one of key or key_file"))?;
    let client_ca = pem(&ca_file, &ca);
    let (min_version, max_version) = versions(get("min_version"), get("max_version"))?;
    let suites = match get("cipher_suites") {
        None => Vec::new(),
        Some(v) => suites(&texts(v, &field("cipher_suites"))?, &field("cipher_suites"))?,
    };
    let curves = match get("curve_preferences") {
        None => Vec::new(),
        Some(v) => curves(
            &texts(v, &field("curve_preferences"))?,
            &field("curve_preferences"),
        )?,
    };
    let prefer_server_suites = get("prefer_server_cipher_suites")
        .map(|v| boolean(v, &field("prefer_server_cipher_suites")))
        .transpose()?
        .unwrap_or(true);
    Ok(Some(TlsServer {
        cert,
        key,
        client_ca,
        client_auth,
        allowed_sans,
        min_version,
        max_version,
        suites,
        curves,
        prefer_server_suites,
    }))
}

/// Go's names of the suites it offers; the TLS 1.3 ones are kept whatever the list says.
fn suites(names: &[String], field: &str) -> Result<Vec<Suite>, Invalid> {
    let mut out = Vec::new();
    for name in names {
        let suite = match name.as_str() {
            "TLS_AES_128_GCM_SHA256" | "TLS_AES_256_GCM_SHA384" | "TLS_CHACHA20_POLY1305_SHA256" => continue,
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => Suite::EcdheEcdsaAes128Gcm,
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => Suite::EcdheEcdsaAes256Gcm,
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
                Suite::EcdheEcdsaChacha20
            }
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => Suite::EcdheRsaAes128Gcm,
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => Suite::EcdheRsaAes256Gcm,
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
                Suite::EcdheRsaChacha20
            }
            // Go's other secure suites: CBC and plain-RSA key exchange, which rustls leaves out.
            "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"
            | "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"
            | "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
            | "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"
            | "TLS_RSA_WITH_AES_128_GCM_SHA256"
            | "TLS_RSA_WITH_AES_256_GCM_SHA384"
            | "TLS_RSA_WITH_AES_128_CBC_SHA"
            | "TLS_RSA_WITH_AES_256_CBC_SHA" => {
                return Err(invalid(
                    field,
                    format!(
                        "{name} cannot be honoured: rustls has no CBC or RSA key-exchange suites; use the ECDHE GCM or CHACHA20 ones"
                    ),
                ));
            }
            other => return Err(invalid(field, format!("unknown cipher {other:?}"))),
        };
        out.push(suite);
    }
    Ok(out)
}

fn curves(names: &[String], field: &str) -> Result<Vec<Curve>, Invalid> {
    names
        .iter()
        .map(|name| match name.as_str() {
            "X25519" => Ok(Curve::X25519),
            "CurveP256" => Ok(Curve::P256),
            "CurveP384" => Ok(Curve::P384),
            "CurveP521" => Err(invalid(
                field,
                "CurveP521 cannot be honoured: this exporter's TLS (rustls with ring) has X25519, CurveP256 and CurveP384",
            )),
            other => Err(invalid(field, format!("unknown curve {other:?}"))),
        })
        .collect()
}

/// `client_auth_type`, checked against the client CA and `client_allowed_sans`.
fn client_policy(
    auth: &str,
    no_ca: bool,
    sans: Option<&Yaml>,
) -> Result<(ClientAuth, Option<Vec<String>>), Invalid> {
    let field = |key: &str| joined(AT, key);
    let client_auth = match auth {
        "" | "NoClientCert" => ClientAuth::NoClientCert,
        "RequestClientCert" => ClientAuth::RequestClientCert,
        "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAnyClientCert,
        "VerifyClientCertIfGiven" => ClientAuth::VerifyClientCertIfGiven,
        "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerifyClientCert,
        other => {
            return Err(invalid(
                &field("client_auth_type"),
                format!(
                    "{other:?} is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
                ),
            ));
        }
    };
    if !no_ca && client_auth == ClientAuth::NoClientCert {
        return Err(invalid(
            &field("client_auth_type"),
            "a client CA is given without a client auth policy: set client_auth_type (RequireAndVerifyClientCert to authenticate clients)",
        ));
    }
    // Null is no check, as in Go; an empty list refuses every client.
    let allowed_sans = sans
        .filter(|v| !v.is_null())
        .map(|v| texts(v, &field("client_allowed_sans")))
        .transpose()?;
    // The toolkit checks the SANs of the first certificate a client sent, and a client that
    // sent none is dropped (its check has no certificate to look at): with allowed SANs, a
    // policy that lets a client go without one requires one, as the toolkit ends up doing.
    let client_auth = match (client_auth, &allowed_sans) {
        (ClientAuth::NoClientCert, Some(_)) => {
            return Err(invalid(
                &field("client_allowed_sans"),
                "needs a client_auth_type that asks for a certificate (RequireAndVerifyClientCert): with NoClientCert every client is refused",
            ));
        }
        (ClientAuth::VerifyClientCertIfGiven, Some(_)) => ClientAuth::RequireAndVerifyClientCert,
        (ClientAuth::RequestClientCert, Some(_)) => ClientAuth::RequireAnyClientCert,
        (policy, _) => policy,
    };
    Ok((client_auth, allowed_sans))
}

/// `min_version` and `max_version`, defaults TLS12 and TLS13 as the toolkit's.
fn versions(min: Option<&Yaml>, max: Option<&Yaml>) -> Result<(TlsVersion, TlsVersion), Invalid> {
    let field = |key: &str| joined(AT, key);
    let version = |key: &str, value: Option<&Yaml>, default: TlsVersion| -> Result<TlsVersion, Invalid> {
        let Some(value) = value else {
            return Ok(default);
        };
        match text(value, &field(key))?.as_str() {
            "TLS12" => Ok(TlsVersion::Tls12),
            "TLS13" => Ok(TlsVersion::Tls13),
            old @ ("TLS10" | "TLS11") => Err(invalid(
                &field(key),
                format!(
                    "{old} cannot be honoured: this exporter speaks TLS 1.2 and 1.3 only (rustls); write TLS12 or TLS13"
                ),
            )),
            other => Err(invalid(
                &field(key),
                format!("unknown TLS version {other:?}: write TLS12 or TLS13"),
            )),
        }
    };
    let min_version = version("min_version", min, TlsVersion::Tls12)?;
    let max_version = version("max_version", max, TlsVersion::Tls13)?;
    if min_version > max_version {
        return Err(invalid(
            &field("min_version"),
            "is above max_version: no TLS version is left",
        ));
    }
    Ok((min_version, max_version))
}

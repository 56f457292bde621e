//! The OTLP target: protocol, endpoint, temporality, headers, timeout, compression and TLS files,
//! each from the standard OpenTelemetry variables as every OTel SDK reads them.

use std::path::{Path, PathBuf};

use super::catalog::{
    COMPRESSION, Def, GEN_AI, GEN_AI_OPT_IN, GRPC_ENDPOINT, HEADERS, OTLP_CERTIFICATE,
    OTLP_CLIENT_CERTIFICATE, OTLP_CLIENT_KEY, OTLP_ENDPOINT, OTLP_PROTOCOL, RESOURCE, SEMCONV_OPT_IN,
    TEMPORALITY, TIMEOUT,
};
use super::values::{MAX_TIMEOUT, parse_millis};
use super::{OtlpSettings, SettingsError, Sources, on_off, setting_path, source_name};
use crate::export::payload::Temporality;
use crate::export::resource::UserResource;
use crate::export::tls::TlsFiles;
use crate::export::transport::{Headers, OtlpProtocol, OtlpTarget, parse_pairs, redacted};
use crate::paths::{Origin, os_string_of};

/// The generic variable whose value gets the signal's path appended for HTTP (the spec: not for
/// gRPC, and not the signal-specific one).
const GENERIC_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

pub(super) fn resolve(sources: &Sources<'_>) -> Result<OtlpSettings, SettingsError> {
    let (value, origin) = sources.pick_or_default(&OTLP_PROTOCOL);
    let protocol = OtlpProtocol::parse(&value).ok_or_else(|| SettingsError::Invalid {
        what: "OTLP protocol",
        value: value.clone(),
        from: source_name(&OTLP_PROTOCOL, &origin),
        expected: "use grpc or http/protobuf",
    })?;
    let endpoint = endpoint(sources, protocol)?;
    let temporality = choice(
        sources,
        &TEMPORALITY,
        "temporality",
        "use cumulative or delta",
        |v| {
            match v.to_ascii_lowercase().as_str() {
                "cumulative" => Some(Temporality::Cumulative),
                // For counters, low-memory means delta.
                "delta" | "lowmemory" => Some(Temporality::Delta),
                _ => None,
            }
        },
    )?;
    let headers = match sources.pick(&HEADERS) {
        None => Headers::default(),
        Some((text, origin)) => Headers::parse(&text)
            .and_then(|headers| headers.check_for(protocol).map(|()| headers))
            .map_err(|error| SettingsError::Headers {
                from: source_name(&HEADERS, &origin),
                error,
            })?,
    };
    let resource = user_resource(sources)?;
    let (ms, origin) = sources.pick_or_default(&TIMEOUT);
    let timeout = parse_millis(&ms, &source_name(&TIMEOUT, &origin), MAX_TIMEOUT)?;
    let gzip = choice(
        sources,
        &COMPRESSION,
        "compression",
        "use gzip or none",
        |v| match v.to_ascii_lowercase().as_str() {
            "gzip" => Some(true),
            "none" => Some(false),
            _ => None,
        },
    )?;
    let tls = tls_files(sources, &endpoint)?;
    let gen_ai = gen_ai(sources)?;
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
        gen_ai,
        resource,
    })
}

/// The GenAI conventions' view: our flag or variable; else `OTEL_SEMCONV_STABILITY_OPT_IN`
/// listing `gen_ai_latest_experimental` (a comma-separated list, as every OTel SDK reads it);
/// else the config file; else off.
fn gen_ai(sources: &Sources<'_>) -> Result<bool, SettingsError> {
    let ours = GEN_AI.flag.and_then(|_| sources.flags.get(GEN_AI.key)).is_some()
        || GEN_AI.vars.iter().any(|var| (sources.env)(var).is_some());
    let opted_in = (sources.env)(SEMCONV_OPT_IN).is_some_and(|list| {
        list.to_string_lossy()
            .split(',')
            .any(|entry| entry.trim() == GEN_AI_OPT_IN)
    });
    if !ours && opted_in {
        sources
            .origins
            .borrow_mut()
            .insert(GEN_AI.key, Origin::Env(SEMCONV_OPT_IN));
        return Ok(true);
    }
    Ok(on_off(sources, &GEN_AI)?.value)
}

/// The resource attributes the user adds: `OTEL_RESOURCE_ATTRIBUTES` (percent-decoded; a bad
/// entry is an error, never dropped or kept half-decoded), then `OTEL_SERVICE_NAME`.
fn user_resource(sources: &Sources<'_>) -> Result<UserResource, SettingsError> {
    let [attributes_var, service_name_var] = [RESOURCE.vars[0], RESOURCE.vars[1]];
    let attributes = match (sources.env)(attributes_var) {
        Some(text) => parse_pairs(&text.to_string_lossy()).map_err(|error| SettingsError::Headers {
            from: attributes_var.to_string(),
            error,
        })?,
        None => Vec::new(),
    };
    let service_name = (sources.env)(service_name_var).map(|name| name.to_string_lossy().into_owned());
    Ok(UserResource {
        attributes,
        service_name,
    })
}

/// A setting with a few valid words, read by `parse`; `None` when it is not set.
fn choice<T>(
    sources: &Sources<'_>,
    def: &'static Def,
    what: &'static str,
    expected: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, SettingsError> {
    let (value, origin) = sources.pick_or_default(def);
    match parse(value.trim()) {
        Some(chosen) => Ok(chosen),
        None => Err(SettingsError::Invalid {
            what,
            value,
            from: source_name(def, &origin),
            expected,
        }),
    }
}

fn endpoint(sources: &Sources<'_>, protocol: OtlpProtocol) -> Result<String, SettingsError> {
    let endpoint = match sources.pick(&OTLP_ENDPOINT) {
        Some((base, Origin::Env(GENERIC_ENDPOINT))) => match protocol {
            OtlpProtocol::HttpProtobuf => with_signal_path(base.trim()),
            OtlpProtocol::Grpc => base,
        },
        Some((url, _)) => url,
        None => match protocol {
            OtlpProtocol::HttpProtobuf => OTLP_ENDPOINT.value.into(),
            OtlpProtocol::Grpc => GRPC_ENDPOINT.into(),
        },
    };
    let endpoint = lowercase_scheme(endpoint.trim());
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(SettingsError::EndpointScheme(redacted(&endpoint)));
    }
    Ok(endpoint)
}

/// The generic endpoint with the metrics signal's path appended to its path, before any query or
/// fragment (`http://gw:4318/otlp?tenant=a` sends to `/otlp/v1/metrics?tenant=a`).
fn with_signal_path(base: &str) -> String {
    let after_scheme = base.find("://").map_or(0, |at| at + 3);
    let end_of_path = base[after_scheme..]
        .find(['?', '#'])
        .map_or(base.len(), |at| after_scheme + at);
    let (path, rest) = base.split_at(end_of_path);
    format!("{}/v1/metrics{rest}", path.trim_end_matches('/'))
}

/// `endpoint` with its scheme in lower case: schemes are case-insensitive (RFC 3986), and
/// `HTTP://collector:4318` is what a user may well write.
fn lowercase_scheme(endpoint: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") =>
        {
            format!("{}://{rest}", scheme.to_ascii_lowercase())
        }
        _ => endpoint.to_string(),
    }
}

/// The CA and the client identity, read and checked now; TLS files for a plain `http://`
/// endpoint are an error (almost certainly a forgotten `https`).
fn tls_files(sources: &Sources<'_>, endpoint: &str) -> Result<TlsFiles, SettingsError> {
    let path = |def: &'static Def| -> Result<Option<(PathBuf, String)>, SettingsError> {
        let Some((raw, origin)) = sources.pick_path(def) else {
            return Ok(None);
        };
        let path = match origin {
            Origin::ConfigFile => setting_path(&raw, sources.env, def.key, &origin)?,
            _ => Some(PathBuf::from(os_string_of(
                crate::paths::trim_space(raw.as_encoded_bytes()).to_vec(),
            ))),
        };
        Ok(path.map(|path| (path, source_name(def, &origin))))
    };
    let ca = path(&OTLP_CERTIFICATE)?;
    let client_cert = path(&OTLP_CLIENT_CERTIFICATE)?;
    let client_key = path(&OTLP_CLIENT_KEY)?;
    let tls = TlsFiles::load(borrowed(&ca), borrowed(&client_cert), borrowed(&client_key))?;
    if !tls.is_empty() && endpoint.starts_with("http://") {
        let from = [&ca, &client_cert, &client_key]
            .into_iter()
            .find_map(|p| p.as_ref().map(|(_, from)| from.clone()))
            .unwrap_or_default();
        return Err(SettingsError::TlsOverHttp {
            from,
            endpoint: redacted(endpoint),
        });
    }
    Ok(tls)
}

fn borrowed(setting: &Option<(PathBuf, String)>) -> Option<(&Path, &str)> {
    setting
        .as_ref()
        .map(|(path, from)| (path.as_path(), from.as_str()))
}

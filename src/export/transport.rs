//! Getting an encoded OTLP request to the collector: gRPC (tonic, the official service client)
//! or HTTP/protobuf (reqwest). Headers, timeout and compression come from the standard
//! `OTEL_EXPORTER_OTLP_*` settings, TLS from [`super::tls`]. Header values are secrets: they
//! never reach a message.

use std::fmt;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::tls::{TlsFiles, install_crypto_provider};

/// The wire protocol to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    Grpc,
    HttpProtobuf,
}

impl OtlpProtocol {
    pub fn parse(value: &str) -> Option<OtlpProtocol> {
        match value.trim() {
            "grpc" => Some(OtlpProtocol::Grpc),
            "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// Request headers (`OTEL_EXPORTER_OTLP_HEADERS`). `Debug` shows the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}=<redacted>")))
            .finish()
    }
}

impl Headers {
    /// Parses the W3C-baggage-like list `name=value,name2=value2`, values percent-decoded. An error
    /// names the entry's position, never its value.
    pub fn parse(text: &str) -> Result<Headers, String> {
        let mut headers = Vec::new();
        for (i, entry) in text.split(',').enumerate() {
            if entry.trim().is_empty() {
                continue;
            }
            let Some((name, value)) = entry.split_once('=') else {
                return Err(format!("entry {} has no '=' (write name=value)", i + 1));
            };
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!("entry {} has an invalid header name", i + 1));
            }
            let value = percent_decode(value.trim())
                .ok_or_else(|| format!("header {name}: its value is not valid percent-encoded UTF-8"))?;
            headers.push((name.to_ascii_lowercase(), value));
        }
        Ok(Headers(headers))
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Everything needed to reach the collector.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpTarget {
    pub protocol: OtlpProtocol,
    /// The full URL requests go to (for HTTP, including `/v1/metrics`).
    pub endpoint: String,
    pub headers: Headers,
    pub timeout: Duration,
    pub gzip: bool,
    /// A private CA and a client certificate; used with `https://` endpoints.
    pub tls: TlsFiles,
}

/// Why a request did not get through, by what the collector can have of it.
#[derive(Debug)]
pub enum SendError {
    /// No connection could be made: not a byte of the request left.
    NotSent(String),
    /// The collector answered with a refusal: it does not have the data.
    Refused(String),
    /// Sent, or partly sent, and no answer came: a timeout, a connection closed or reset before
    /// the answer. The collector may or may not have the data.
    Unknown(String),
}

impl SendError {
    /// Whether the collector may have the data after all.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, SendError::Unknown(_))
    }
}

impl std::error::Error for SendError {}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NotSent(detail) | SendError::Refused(detail) => f.write_str(detail),
            SendError::Unknown(detail) => write!(f, "no answer ({detail})"),
        }
    }
}

/// A connection to the collector, reused across exports. Cloning is cheap and shares it.
#[derive(Clone)]
pub enum Transport {
    Grpc {
        client: MetricsServiceClient<Channel>,
        metadata: Vec<(
            MetadataKey<tonic::metadata::Ascii>,
            MetadataValue<tonic::metadata::Ascii>,
        )>,
        timeout: Duration,
    },
    Http {
        client: reqwest::Client,
        url: String,
        headers: reqwest::header::HeaderMap,
        gzip: bool,
    },
}

impl Transport {
    /// Sets the connection up (lazily: nothing is sent yet). Must run inside a tokio runtime.
    pub fn new(target: &OtlpTarget) -> Result<Transport, String> {
        // reqwest asks for the provider even for plain http.
        install_crypto_provider();
        let https = target.endpoint.starts_with("https://");
        match target.protocol {
            OtlpProtocol::Grpc => {
                let mut endpoint = Endpoint::from_shared(target.endpoint.clone())
                    .map_err(|e| format!("not a valid URL: {e}"))?
                    .connect_timeout(target.timeout)
                    .timeout(target.timeout);
                if https {
                    endpoint = endpoint
                        .tls_config(grpc_tls(&target.tls))
                        .map_err(|e| format!("cannot set TLS up: {}", error_chain(&e)))?;
                }
                let mut client = MetricsServiceClient::new(endpoint.connect_lazy());
                if target.gzip {
                    client = client.send_compressed(CompressionEncoding::Gzip);
                }
                let mut metadata = Vec::new();
                for (name, value) in &target.headers.0 {
                    let key = MetadataKey::from_bytes(name.as_bytes())
                        .map_err(|_| format!("header {name} is not a valid gRPC metadata name"))?;
                    let value = MetadataValue::try_from(value.as_str())
                        .map_err(|_| format!("header {name}: its value is not valid gRPC metadata"))?;
                    metadata.push((key, value));
                }
                Ok(Transport::Grpc {
                    client,
                    metadata,
                    timeout: target.timeout,
                })
            }
            OtlpProtocol::HttpProtobuf => {
                let url =
                    reqwest::Url::parse(&target.endpoint).map_err(|e| format!("not a valid URL: {e}"))?;
                let mut headers = reqwest::header::HeaderMap::new();
                headers.insert(
                    reqwest::header::CONTENT_TYPE,
                    reqwest::header::HeaderValue::from_static("application/x-protobuf"),
                );
                if target.gzip {
                    headers.insert(
                        reqwest::header::CONTENT_ENCODING,
                        reqwest::header::HeaderValue::from_static("gzip"),
                    );
                }
                for (name, value) in &target.headers.0 {
                    let key = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("header {name} is not a valid HTTP header name"))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| format!("header {name}: its value is not a valid HTTP header value"))?;
                    headers.insert(key, value);
                }
                let mut builder = reqwest::Client::builder().timeout(target.timeout);
                builder = if https {
                    http_tls(builder, &target.tls)?
                } else {
                    // No TLS will happen: don't load the system's trust store (150 files) for it.
                    builder.tls_certs_only(Vec::new())
                };
                let client = builder
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))?;
                Ok(Transport::Http {
                    client,
                    url: url.to_string(),
                    headers,
                    gzip: target.gzip,
                })
            }
        }
    }

    /// Sends one encoded `ExportMetricsServiceRequest`.
    pub async fn send(mut self, request: &[u8]) -> Result<(), SendError> {
        match self {
            Transport::Grpc {
                ref mut client,
                ref metadata,
                timeout,
            } => {
                let message = ExportMetricsServiceRequest::decode(request)
                    .map_err(|e| SendError::NotSent(format!("unreadable request: {e}")))?;
                let mut call = tonic::Request::new(message);
                call.set_timeout(timeout);
                for (key, value) in metadata.iter() {
                    call.metadata_mut().insert(key.clone(), value.clone());
                }
                match client.export(call).await {
                    Ok(_) => Ok(()),
                    Err(status) => Err(grpc_send_error(&status)),
                }
            }
            Transport::Http {
                ref client,
                ref url,
                ref headers,
                gzip,
            } => {
                let body = if gzip {
                    gzip_bytes(request)
                } else {
                    request.to_vec()
                };
                let response = client
                    .post(url.as_str())
                    .headers(headers.clone())
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| {
                        let detail =
                            with_tls_hint(format!("cannot reach the collector: {}", error_chain(&e)));
                        if e.is_connect() {
                            SendError::NotSent(detail)
                        } else if e.is_timeout() {
                            SendError::Unknown("HTTP, timed out".into())
                        } else {
                            SendError::Unknown(detail)
                        }
                    })?;
                let status = response.status();
                if status.is_success() {
                    Ok(())
                } else {
                    Err(SendError::Refused(format!(
                        "the collector answered HTTP {status}"
                    )))
                }
            }
        }
    }
}

/// The CA given, or the system's roots; and the client identity when there is one.
fn grpc_tls(tls: &TlsFiles) -> ClientTlsConfig {
    let mut config = ClientTlsConfig::new();
    config = match &tls.ca {
        Some(ca) => config.ca_certificate(tonic::transport::Certificate::from_pem(&ca.pem)),
        None => config.with_native_roots(),
    };
    if let Some((cert, key)) = &tls.client {
        config = config.identity(tonic::transport::Identity::from_pem(&cert.pem, &key.pem));
    }
    config
}

fn http_tls(builder: reqwest::ClientBuilder, tls: &TlsFiles) -> Result<reqwest::ClientBuilder, String> {
    let mut builder = builder;
    if let Some(ca) = &tls.ca {
        let certificates = reqwest::Certificate::from_pem_bundle(&ca.pem)
            .map_err(|_| format!("{} is not a valid PEM certificate bundle", ca.path.display()))?;
        builder = builder.tls_certs_only(certificates);
    }
    if let Some((cert, key)) = &tls.client {
        let mut pem = key.pem.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&cert.pem);
        let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
            format!(
                "{} and {} are not a matching PEM certificate and key",
                cert.path.display(),
                key.path.display()
            )
        })?;
        builder = builder.identity(identity);
    }
    Ok(builder)
}

/// A certificate the exporter does not trust, or one the collector wants: say which setting fixes it.
fn with_tls_hint(detail: String) -> String {
    if detail.contains("UnknownIssuer") {
        format!(
            "{detail} (if a private CA signed the collector's certificate, point OTEL_EXPORTER_OTLP_CERTIFICATE or --otlp-certificate at it)"
        )
    } else if detail.contains("CertificateRequired") {
        format!(
            "{detail} (the collector wants a client certificate: set OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY)"
        )
    } else {
        detail
    }
}

/// What a failed gRPC call means for the data. A status the collector sent has no source; one
/// made on this side from a transport error has one: a failed connect sent nothing, anything
/// later (a reset, a closed stream) may have delivered the request without its answer.
fn grpc_send_error(status: &tonic::Status) -> SendError {
    let detail = with_tls_hint(grpc_failure(status));
    let chain = std::error::Error::source(status).map(error_chain);
    match (status.code(), chain) {
        (tonic::Code::DeadlineExceeded | tonic::Code::Cancelled, _) => {
            SendError::Unknown(format!("gRPC {}", status.code()))
        }
        (_, None) => SendError::Refused(detail),
        (_, Some(chain)) if chain.contains("tcp connect error") || chain.contains("dns error") => {
            SendError::NotSent(detail)
        }
        (_, Some(_)) => SendError::Unknown(detail),
    }
}

fn grpc_failure(status: &tonic::Status) -> String {
    let message = status.message();
    if message.is_empty() {
        format!("the collector answered gRPC {}", status.code())
    } else {
        format!("the collector answered gRPC {}: {message}", status.code())
    }
}

/// The error and its sources, e.g. "error sending request: connection refused".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn gzip_bytes(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_never_show_their_values() {
        let h = Headers::parse("Authorization=Bearer%20s3cret, x-team = platform ,").unwrap();
        assert_eq!(
            h.0,
            [
                ("authorization".to_string(), "Bearer s3cret".to_string()),
                ("x-team".into(), "platform".into())
            ]
        );
        let shown = format!("{h:?}");
        assert!(
            !shown.contains("s3cret") && shown.contains("authorization"),
            "{shown}"
        );
        let err = Headers::parse("api-key:s3cret").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
        let err = Headers::parse("api-key=%zz-s3cret").unwrap_err();
        assert!(!err.contains("s3cret") && err.contains("api-key"), "{err}");
    }
}

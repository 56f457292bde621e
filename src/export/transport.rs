//! Getting an encoded OTLP request to the collector: gRPC (tonic, the official service client)
//! or HTTP/protobuf (reqwest). Headers, timeout and compression come from the standard
//! `OTEL_EXPORTER_OTLP_*` settings, TLS from [`super::tls`]. Header values are secrets: they
//! never reach a message.

use std::fmt;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
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

impl OtlpTarget {
    /// The endpoint as it may be shown: without user-info and query, which can hold credentials.
    pub fn shown_endpoint(&self) -> String {
        redacted(&self.endpoint)
    }
}

/// `url` with its user-info and its query replaced by `***`: `http://***@host/v1/metrics?***`.
/// Works on text that is not a valid URL too: it only cuts.
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(at) => format!("***@{}", &authority[at + 1..]),
        None => authority.to_string(),
    };
    let path_end = after.find(['?', '#']).unwrap_or(after.len());
    let (path, tail) = after.split_at(path_end);
    let query = if tail.starts_with('?') { "?***" } else { "" };
    format!("{scheme}{host}{path}{query}")
}

/// What the collector said when it took a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accepted {
    /// Points it rejected all the same (`partial_success.rejected_data_points`).
    pub rejected_points: i64,
    /// Its explanation, when it gave one.
    pub message: String,
}

impl Accepted {
    fn from_response(response: Option<ExportMetricsServiceResponse>) -> Accepted {
        match response.and_then(|r| r.partial_success) {
            Some(partial) => Accepted {
                rejected_points: partial.rejected_data_points,
                message: partial.error_message,
            },
            None => Accepted::default(),
        }
    }

    /// The warning to give when the collector dropped points of an accepted request.
    pub fn warning(&self) -> Option<String> {
        if self.rejected_points == 0 && self.message.is_empty() {
            return None;
        }
        let message = printable(&self.message);
        Some(format!(
            "the collector accepted the export but rejected {} data points{}; those values are not in the backend until a later export is accepted whole: check the collector's logs",
            self.rejected_points,
            if message.is_empty() {
                String::new()
            } else {
                format!(" ({message})")
            }
        ))
    }
}

/// A collector's own text, cut to one short line.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect::<String>()
        .trim()
        .to_string()
}

/// The longest wait a collector's `Retry-After` can ask for; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Why a request did not get through, by what the collector can have of it.
#[derive(Debug)]
pub enum SendError {
    /// No connection could be made: not a byte of the request left.
    NotSent(String),
    /// The collector answered with a refusal: it does not have the data. It may have said when
    /// to try again (`Retry-After`, capped at [`MAX_RETRY_AFTER`]).
    Refused {
        detail: String,
        retry_after: Option<Duration>,
        /// The request was too large for it (HTTP 413, gRPC RESOURCE_EXHAUSTED).
        too_large: bool,
    },
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
            SendError::NotSent(detail) | SendError::Refused { detail, .. } => f.write_str(detail),
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
                // A redirect would carry the payload and the headers (credentials among them) to
                // wherever it points: none is followed, the 3xx is a refusal that says so.
                let mut builder = reqwest::Client::builder()
                    .timeout(target.timeout)
                    .redirect(reqwest::redirect::Policy::none());
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
    pub async fn send(mut self, request: &[u8]) -> Result<Accepted, SendError> {
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
                    Ok(response) => Ok(Accepted::from_response(Some(response.into_inner()))),
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
                        let e = e.without_url();
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
                    // The answer is small; a body that cannot be read or decoded is no partial
                    // success to report.
                    let body = response.bytes().await.unwrap_or_default();
                    return Ok(Accepted::from_response(
                        ExportMetricsServiceResponse::decode(body.as_ref()).ok(),
                    ));
                }
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after);
                let detail = if status.is_redirection() {
                    format!(
                        "the collector answered HTTP {status}, a redirect, which is not followed (it would carry the headers elsewhere): set the OTLP endpoint to the URL it points to"
                    )
                } else {
                    format!("the collector answered HTTP {status}")
                };
                Err(SendError::Refused {
                    detail,
                    retry_after,
                    too_large: status == reqwest::StatusCode::PAYLOAD_TOO_LARGE,
                })
            }
        }
    }
}

/// `Retry-After` as seconds or an HTTP date, capped at [`MAX_RETRY_AFTER`].
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let at = humantime::parse_rfc3339_weak(value)
                .ok()
                .or_else(|| httpdate_to_system_time(value))?;
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only date form HTTP/1.1 senders use.
fn httpdate_to_system_time(value: &str) -> Option<std::time::SystemTime> {
    let mut parts = value.split_whitespace().skip(1);
    let day = parts.next()?;
    let month = parts.next()?;
    let year = parts.next()?;
    let time = parts.next()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let text = format!("{year}-{month:02}-{day:0>2}T{time}Z");
    humantime::parse_rfc3339(&text).ok()
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
        (code, None) => SendError::Refused {
            detail,
            retry_after: None,
            too_large: code == tonic::Code::ResourceExhausted
                && (status.message().contains("larger than max") || status.message().contains("too large")),
        },
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

    #[test]
    fn endpoints_are_shown_without_credentials() {
        for (url, shown) in [
            (
                "http://user:secret@host:4318/v1/metrics?api_key=k",
                "http://***@host:4318/v1/metrics?***",
            ),
            ("https://host/v1/metrics", "https://host/v1/metrics"),
            ("http://a@b@host?x", "http://***@host?***"),
            ("not a url:secret@x", "***@x"),
            ("http://host/p#frag", "http://host/p"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn retry_after_is_read_in_both_forms_and_capped() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("86400"), Some(MAX_RETRY_AFTER));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        let soon = std::time::SystemTime::now() + Duration::from_secs(120);
        let wait = parse_retry_after(&httpdate(soon)).unwrap();
        assert!(
            wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
            "{wait:?}"
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    fn httpdate(at: std::time::SystemTime) -> String {
        // 2026-12-01T14:35:07Z -> Tue, 01 Dec 2026 14:35:07 GMT (the weekday is not read).
        let text = humantime::format_rfc3339_seconds(at).to_string();
        let month = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ][text[5..7].parse::<usize>().unwrap() - 1];
        format!(
            "Xxx, {} {month} {} {} GMT",
            &text[8..10],
            &text[..4],
            &text[11..19]
        )
    }
}

//! Where and how to reach the collector, and what can come back: the settings of a target
//! (protocol, endpoint, headers, TLS files), the collector's answers and the ways a send fails.

use std::fmt;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;

use crate::export::tls::TlsFiles;

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

/// Why `OTEL_EXPORTER_OTLP_HEADERS` cannot be read; it never holds a value.
#[derive(Debug, thiserror::Error)]
pub enum HeadersError {
    #[error("entry {0} has no '=' (write name=value)")]
    NoEquals(usize),
    #[error("entry {0} has an empty or invalid name")]
    BadName(usize),
    #[error("{0}: its value is not valid percent-encoded UTF-8")]
    BadValue(String),
    #[error("header {0} is the exporter's to set (it frames the request), never a setting's: remove it")]
    Reserved(String),
    #[error(
        "header {name}: its value cannot be sent as {kind} (a control character such as a line break): fix the value"
    )]
    NotSendable { name: String, kind: &'static str },
}

/// Headers that frame the request: set by the exporter from what it sends, never by a setting
/// (a `content-length` from one cut the body to 5 bytes, and still "exported 46 data points").
const RESERVED: [&str; 8] = [
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "host",
    "connection",
    "te",
    "grpc-timeout",
];

impl Headers {
    /// Parses `OTEL_EXPORTER_OTLP_HEADERS`' list (see [`parse_pairs`]), names lower-cased; a
    /// header that frames the request is refused.
    pub fn parse(text: &str) -> Result<Headers, HeadersError> {
        let mut headers = Vec::new();
        for (name, value) in parse_pairs(text)? {
            let name = name.to_ascii_lowercase();
            if RESERVED.contains(&name.as_str()) || name.starts_with(':') {
                return Err(HeadersError::Reserved(name));
            }
            headers.push((name, value));
        }
        Ok(Headers(headers))
    }

    /// Checks that every header can be sent over `protocol`, as its transport will build it: an
    /// error now, naming the setting, rather than one after the ingest, at the first export.
    pub fn check_for(&self, protocol: OtlpProtocol) -> Result<(), HeadersError> {
        for (name, value) in &self.0 {
            let sendable = match protocol {
                OtlpProtocol::HttpProtobuf => {
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
                        && reqwest::header::HeaderValue::from_str(value).is_ok()
                }
                OtlpProtocol::Grpc => {
                    tonic::metadata::MetadataKey::<tonic::metadata::Ascii>::from_bytes(name.as_bytes())
                        .is_ok()
                        && tonic::metadata::MetadataValue::<tonic::metadata::Ascii>::try_from(value.as_str())
                            .is_ok()
                }
            };
            if !sendable {
                return Err(HeadersError::NotSendable {
                    name: name.clone(),
                    kind: match protocol {
                        OtlpProtocol::HttpProtobuf => "an HTTP header",
                        OtlpProtocol::Grpc => "gRPC metadata",
                    },
                });
            }
        }
        Ok(())
    }
}

/// Parses the W3C-baggage-like list `name=value,name2=value2` of the OTel variables (headers,
/// resource attributes), values percent-decoded. Every entry is one, or the list is an error: an
/// entry is never dropped or kept half-decoded without a word. An error names the entry's
/// position or name, never its value.
pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, HeadersError> {
    let mut pairs = Vec::new();
    for (i, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(HeadersError::NoEquals(i + 1));
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(HeadersError::BadName(i + 1));
        }
        let value = percent_decode(value.trim()).ok_or_else(|| HeadersError::BadValue(name.to_owned()))?;
        pairs.push((name.to_owned(), value));
    }
    Ok(pairs)
}

/// Percent-decoded UTF-8, or `None` when a `%` is not followed by two hex digits (as Go's
/// `url.PathUnescape` refuses it) or the bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let escapes_are_whole = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'%')
        .all(|(i, _)| {
            bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        });
    if !escapes_are_whole {
        return None;
    }
    percent_encoding::percent_decode(bytes)
        .decode_utf8()
        .ok()
        .map(|text| text.into_owned())
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
/// Works on text that is not a valid URL too, a mistyped one included (`http:/u:p@host`,
/// `https//…`, a password holding `/`, `?`, `#` or `@`): it only cuts, and errs towards cutting
/// more. Everything up to the last `@` is user-info, wherever it is; the scheme as typed stays.
pub fn redacted(url: &str) -> String {
    let scheme_len = url
        .find(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
        .unwrap_or(url.len());
    let separator_len = url[scheme_len..]
        .find(|c: char| c != ':' && c != '/')
        .unwrap_or(url.len() - scheme_len);
    let kept = scheme_len + separator_len;
    // A scheme is what comes before a slash: `user:pass@host` has none.
    let (scheme, rest) = if scheme_len > 0 && url[scheme_len..kept].contains('/') {
        url.split_at(kept)
    } else {
        ("", url)
    };
    let (user_info, rest) = match rest.rfind('@') {
        Some(at) => ("***@", &rest[at + 1..]),
        None => ("", rest),
    };
    let (address, query) = match rest.find(['?', '#']) {
        Some(at) if rest[at..].starts_with('?') => (&rest[..at], "?***"),
        Some(at) => (&rest[..at], ""),
        None => (rest, ""),
    };
    format!("{scheme}{user_info}{address}{query}")
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
    pub(super) fn from_response(response: Option<ExportMetricsServiceResponse>) -> Accepted {
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

/// A collector's own text, cut to one short line with nothing a terminal would act on.
pub(super) fn printable(text: &str) -> String {
    crate::inert_text::one_line(text.trim(), 200)
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
        /// It refused the data itself (HTTP 400, gRPC INVALID_ARGUMENT): the same points would be
        /// refused again, e.g. a sample older than the newest a backend holds.
        bad_data: bool,
    },
    /// Sent, or partly sent, and no answer came that can be read: a timeout, a connection closed
    /// or reset before the answer, an answer that cannot be decoded. The collector may or may not
    /// have the data.
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
            SendError::Unknown(detail) => write!(f, "outcome unknown ({detail})"),
        }
    }
}

/// The error and its sources, e.g. "error sending request: connection refused".
pub(super) fn error_chain(error: &dyn std::error::Error) -> String {
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
    crate::inert_text::one_line(&text, 500)
}

/// The hint for a TLS handshake the exporter or the collector refused, found in the error's
/// chain as rustls reports it: which setting fixes it.
pub(super) fn tls_hint(error: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    use rustls::{AlertDescription, CertificateError, Error};
    match find_cause::<Error>(error)? {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => Some(
            "if a private CA signed the collector's certificate, point OTEL_EXPORTER_OTLP_CERTIFICATE or --otlp-certificate at it",
        ),
        Error::AlertReceived(AlertDescription::CertificateRequired) => Some(
            "the collector wants a client certificate: set OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY",
        ),
        _ => None,
    }
}

/// The first `T` in `error`'s chain of causes, looking inside `io::Error`s too (whose `source`
/// skips the error they wrap, and which libraries wrap in one another).
fn find_cause<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref())
            && let Some(found) = find_cause::<T>(inner)
        {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// `detail`, followed by the TLS hint for `error` when there is one.
pub(super) fn with_tls_hint(detail: String, error: &(dyn std::error::Error + 'static)) -> String {
    match tls_hint(error) {
        Some(hint) => format!("{detail} ({hint})"),
        None => detail,
    }
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
        let err = Headers::parse("api-key:s3cret").unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
        let err = Headers::parse("api-key=%zz-s3cret").unwrap_err().to_string();
        assert!(!err.contains("s3cret") && err.contains("api-key"), "{err}");
    }

    #[test]
    fn a_header_that_frames_the_request_is_never_a_settings() {
        for name in [
            "Content-Length",
            "content-type",
            "Host",
            "transfer-encoding",
            ":authority",
        ] {
            let err = Headers::parse(&format!("x-team=a,{name}=5"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&name.to_ascii_lowercase()) && err.contains("remove it"),
                "{err}"
            );
        }
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
            ("http:/user:S3CRET@host/v1/metrics", "http:/***@host/v1/metrics"),
            ("https//user:S3CRET@host", "https//***@host"),
            ("http://u:S3/CRET@host/v1", "http://***@host/v1"),
            ("http://u:S3?CRET@host/v1", "http://***@host/v1"),
            ("http://u:S3#CRET@host/v1", "http://***@host/v1"),
            ("HTTP://u:S3CRET@host", "HTTP://***@host"),
            ("user:S3CRET@host:4318", "***@host:4318"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }
}

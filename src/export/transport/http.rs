//! OTLP over HTTP/protobuf: reqwest, no redirects followed.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use prost::Message;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use super::TransportError;
use super::target::{Accepted, MAX_RETRY_AFTER, OtlpTarget, SendError, error_chain, with_tls_hint};
use crate::export::tls::TlsFiles;

/// An HTTP client for the collector, reused across exports.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    gzip: bool,
}

impl Http {
    pub fn new(target: &OtlpTarget) -> Result<Http, TransportError> {
        let url = reqwest::Url::parse(&target.endpoint).map_err(|e| TransportError::Url(e.to_string()))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        if target.gzip {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        for (name, value) in &target.headers.0 {
            let key = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| TransportError::HeaderName(name.clone(), "HTTP header"))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| TransportError::HeaderValue(name.clone(), "HTTP header"))?;
            headers.insert(key, value);
        }
        // A redirect would carry the payload and the headers (credentials among them) to
        // wherever it points: none is followed, the 3xx is a refusal that says so.
        // A connect (and TLS handshake) that does not finish in nine tenths of the budget is its
        // own error, one that sent nothing: not the whole request's timeout, whose outcome is
        // unknown once the body may have gone.
        let mut builder = reqwest::Client::builder()
            .timeout(target.timeout)
            .connect_timeout(target.timeout - target.timeout / 10)
            .redirect(reqwest::redirect::Policy::none());
        builder = if target.endpoint.starts_with("https://") {
            with_tls(builder, &target.tls)?
        } else {
            // No TLS will happen: don't load the system's trust store (150 files) for it.
            builder.tls_certs_only(Vec::new())
        };
        let client = builder
            .build()
            .map_err(|e| TransportError::Client(error_chain(&e)))?;
        Ok(Http {
            client,
            url: url.to_string(),
            headers,
            gzip: target.gzip,
        })
    }

    /// Sends one encoded `ExportMetricsServiceRequest`.
    pub async fn send(self, request: &[u8]) -> Result<Accepted, SendError> {
        let body = if self.gzip {
            crate::export::gzip(request)
        } else {
            request.to_vec()
        };
        let response = self
            .client
            .post(self.url.as_str())
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| {
                let e = e.without_url();
                let detail = with_tls_hint(format!("cannot reach the collector: {}", error_chain(&e)), &e);
                if not_http1(&e) {
                    // What answered speaks another protocol (an HTTP/2-only gRPC port): it cannot
                    // have taken an HTTP/1.1 export.
                    SendError::NotSent(format!(
                        "{detail}: what answers there does not speak HTTP/1.1, likely a gRPC port (4317); use --otlp-protocol grpc, or the HTTP port (4318)"
                    ))
                } else if e.is_connect() {
                    SendError::NotSent(detail)
                } else if e.is_timeout() {
                    SendError::Unknown("HTTP, timed out".into())
                } else {
                    SendError::Unknown(detail)
                }
            })?;
        let status = response.status();
        if status.is_success() {
            // The collector took it. A body that cannot be read or decoded, or that runs past
            // what an answer can be, is no partial success to report.
            let body = read_answer(response).await;
            return Ok(Accepted::from_response(
                ExportMetricsServiceResponse::decode(body.as_slice()).ok(),
            ));
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
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
            bad_data: status == reqwest::StatusCode::BAD_REQUEST,
        })
    }
}

/// Whether `error` is an answer that is not HTTP/1 at all: bytes that came before the request
/// was asked (an HTTP/2 server speaks first, with its settings), or whose first bytes are no
/// HTTP version. Any other answer that cannot be parsed may come after the collector took the
/// export, and stays an outcome unknown.
fn not_http1(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        // hyper may wrap it: a request canceled because of the unexpected message.
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            let said = hyper.to_string();
            if (hyper.is_parse() && said.starts_with("invalid HTTP version"))
                || said.starts_with("received unexpected message from connection")
            {
                return true;
            }
        }
        cause = e.source();
    }
    false
}

/// The most of an answer that is read: a partial success is a count and a line of text, and an
/// answer that goes on past this (an endless chunked body) must not fill the memory.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The answer's body, or nothing if it cannot be read whole within [`MAX_ANSWER_BYTES`].
async fn read_answer(response: reqwest::Response) -> Vec<u8> {
    read_capped(response, MAX_ANSWER_BYTES).await.unwrap_or_default()
}

/// An answer's body, or `None` if it cannot be read whole within `max` bytes.
pub async fn read_capped(mut response: reqwest::Response, max: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() <= max => body.extend_from_slice(&chunk),
            Ok(None) => return Some(body),
            // Too long, or broken off: the connection is dropped with the response.
            _ => return None,
        }
    }
}

/// `Retry-After` as seconds or an HTTP date, capped at [`MAX_RETRY_AFTER`].
pub(super) fn parse_retry_after(value: &str) -> Option<Duration> {
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

fn with_tls(
    builder: reqwest::ClientBuilder,
    tls: &TlsFiles,
) -> Result<reqwest::ClientBuilder, TransportError> {
    let mut builder = builder;
    if let Some(ca) = &tls.ca {
        let certificates = reqwest::Certificate::from_pem_bundle(&ca.pem)
            .map_err(|_| TransportError::CaBundle(ca.path.clone()))?;
        builder = builder.tls_certs_only(certificates);
    }
    if let Some((cert, key)) = &tls.client {
        let mut pem = key.pem.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&cert.pem);
        let identity = reqwest::Identity::from_pem(&pem)
            .map_err(|_| TransportError::Identity(cert.path.clone(), key.path.clone()))?;
        builder = builder.identity(identity);
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

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

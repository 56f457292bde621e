//! Getting an encoded OTLP request to the collector: gRPC (`grpc.rs`, tonic's official service
//! client) or HTTP/protobuf (`http.rs`, reqwest); what a target is and what can come back is in
//! `target.rs`. Headers, timeout and compression come from the standard `OTEL_EXPORTER_OTLP_*`
//! settings, TLS from [`super::tls`]. Header values are secrets: they never reach a message.

mod grpc;
mod http;
mod target;

pub use http::read_capped;
use std::path::PathBuf;

pub use target::{
    Accepted, Headers, HeadersError, MAX_RETRY_AFTER, OtlpProtocol, OtlpTarget, SendError, parse_pairs,
    redacted,
};

use super::tls::install_crypto_provider;
use crate::inert_text::ShowPath;

/// Why the connection to the collector cannot be set up. Header values are never in it.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("not a valid URL: {0}")]
    Url(String),
    #[error("cannot set TLS up: {0}")]
    Tls(String),
    #[error("header {0} is not a valid {1} name")]
    HeaderName(String, &'static str),
    #[error("header {0}: its value is not a valid {1} value")]
    HeaderValue(String, &'static str),
    #[error("{} is not a valid PEM certificate bundle", .0.shown())]
    CaBundle(PathBuf),
    #[error("{} and {} are not a matching PEM certificate and key", .0.shown(), .1.shown())]
    Identity(PathBuf, PathBuf),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// A connection to the collector, reused across exports. Cloning is cheap and shares it.
#[derive(Clone)]
pub enum Transport {
    Grpc(grpc::Grpc),
    Http(http::Http),
}

impl Transport {
    /// Sets the connection up (lazily: nothing is sent yet). Must run inside a tokio runtime.
    pub fn new(target: &OtlpTarget) -> Result<Transport, TransportError> {
        // reqwest asks for the provider even for plain http.
        install_crypto_provider();
        match target.protocol {
            OtlpProtocol::Grpc => grpc::Grpc::new(target).map(Transport::Grpc),
            OtlpProtocol::HttpProtobuf => http::Http::new(target).map(Transport::Http),
        }
    }

    /// Sends one encoded `ExportMetricsServiceRequest`.
    pub async fn send(self, request: &[u8]) -> Result<Accepted, SendError> {
        match self {
            Transport::Grpc(grpc) => grpc.send(request).await,
            Transport::Http(http) => http.send(request).await,
        }
    }
}

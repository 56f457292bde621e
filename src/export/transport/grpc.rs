//! OTLP over gRPC: tonic's generated client for the collector's metrics service.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{Ascii, MetadataKey, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::TransportError;
use super::target::{Accepted, OtlpTarget, SendError, error_chain, with_tls_hint};
use crate::export::tls::TlsFiles;

/// A gRPC connection to the collector, reused across exports.
#[derive(Clone)]
pub struct Grpc {
    client: MetricsServiceClient<Channel>,
    metadata: Vec<(MetadataKey<Ascii>, MetadataValue<Ascii>)>,
    timeout: Duration,
}

impl Grpc {
    /// Sets the channel up lazily: nothing is sent yet.
    pub fn new(target: &OtlpTarget) -> Result<Grpc, TransportError> {
        let mut endpoint = Endpoint::from_shared(target.endpoint.clone())
            .map_err(|e| TransportError::Url(e.to_string()))?
            .connect_timeout(target.timeout)
            .timeout(target.timeout);
        if target.endpoint.starts_with("https://") {
            endpoint = endpoint
                .tls_config(tls_config(&target.tls))
                .map_err(|e| TransportError::Tls(error_chain(&e)))?;
        }
        let mut client = MetricsServiceClient::new(endpoint.connect_lazy());
        if target.gzip {
            client = client.send_compressed(CompressionEncoding::Gzip);
        }
        let mut metadata = Vec::new();
        for (name, value) in &target.headers.0 {
            let key = MetadataKey::from_bytes(name.as_bytes())
                .map_err(|_| TransportError::HeaderName(name.clone(), "gRPC metadata"))?;
            let value = MetadataValue::try_from(value.as_str())
                .map_err(|_| TransportError::HeaderValue(name.clone(), "gRPC metadata"))?;
            metadata.push((key, value));
        }
        Ok(Grpc {
            client,
            metadata,
            timeout: target.timeout,
        })
    }

    /// Sends one encoded `ExportMetricsServiceRequest`.
    pub async fn send(mut self, request: &[u8]) -> Result<Accepted, SendError> {
        let message = ExportMetricsServiceRequest::decode(request)
            .map_err(|e| SendError::NotSent(format!("unreadable request: {e}")))?;
        let mut call = tonic::Request::new(message);
        call.set_timeout(self.timeout);
        for (key, value) in &self.metadata {
            call.metadata_mut().insert(key.clone(), value.clone());
        }
        match self.client.export(call).await {
            Ok(response) => Ok(Accepted::from_response(Some(response.into_inner()))),
            Err(status) => Err(grpc_send_error(&status)),
        }
    }
}

/// The CA given, or the system's roots; and the client identity when there is one.
fn tls_config(tls: &TlsFiles) -> ClientTlsConfig {
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

/// What a failed gRPC call means for the data. A status the collector sent has no source; one
/// made on this side from a transport error has one: a failed connect sent nothing, anything
/// later (a reset, a closed stream) may have delivered the request without its answer.
fn grpc_send_error(status: &tonic::Status) -> SendError {
    let detail = with_tls_hint(grpc_failure(status), status);
    let chain = std::error::Error::source(status).map(error_chain);
    match (status.code(), chain) {
        (tonic::Code::DeadlineExceeded | tonic::Code::Cancelled, _) => {
            SendError::Unknown(format!("gRPC {}", status.code()))
        }
        // Made here, not sent: the collector answered, and its answer could not be read.
        (_, None) if answer_unreadable(status) => {
            SendError::Unknown(format!("the collector's answer cannot be read: {detail}"))
        }
        (code, None) => SendError::Refused {
            detail,
            retry_after: None,
            // The collector's own words: gRPC has no separate code for "too large".
            too_large: code == tonic::Code::ResourceExhausted
                && (status.message().contains("larger than max") || status.message().contains("too large")),
            bad_data: code == tonic::Code::InvalidArgument,
        },
        // hyper-util's connect error is a private type: its text is all there is to go by.
        (_, Some(chain)) if chain.contains("tcp connect error") || chain.contains("dns error") => {
            SendError::NotSent(detail)
        }
        (_, Some(_)) => SendError::Unknown(detail),
    }
}

/// Whether `status` is tonic's own, for an answer it could not decode (malformed, or past its
/// size limit): whatever the collector meant, it took the request. tonic's words are all there
/// is to go by.
fn answer_unreadable(status: &tonic::Status) -> bool {
    let message = status.message();
    match status.code() {
        tonic::Code::Internal => {
            message.starts_with("failed to decode Protobuf message")
                || message.starts_with("Unexpected EOF decoding stream")
                || message.starts_with("protocol error: received message with compressed-flag")
                // Said of the response only: a tonic collector says the same of our request
                // ("while sending request"), which is its refusal.
                || (message.starts_with("protocol error: received message with invalid compression flag")
                    && message.contains("while receiving response"))
                || (message.starts_with("Error decompressing") && message.contains("while receiving response"))
                // A 200 with `grpc-status: 0` and no message.
                || message.starts_with("Missing response message")
        }
        tonic::Code::OutOfRange => message.starts_with("Error, decoded message length too large"),
        _ => false,
    }
}

fn grpc_failure(status: &tonic::Status) -> String {
    let message = super::target::printable(status.message());
    if message.is_empty() {
        format!("the collector answered gRPC {}", status.code())
    } else {
        format!("the collector answered gRPC {}: {message}", status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer tonic could not read is an unknown outcome (the collector took the request),
    /// never a refusal to send again; a status the collector itself sent is its own.
    #[test]
    fn tonics_own_words_for_an_unreadable_answer_are_an_unknown_outcome() {
        for unreadable in [
            tonic::Status::internal(
                "protocol error: received message with invalid compression flag: 103 (valid flags are 0 and 1) while receiving response with status: 200 OK",
            ),
            tonic::Status::internal("Missing response message."),
            tonic::Status::internal("failed to decode Protobuf message: buffer underflow"),
            tonic::Status::internal(
                "Error decompressing: corrupt deflate stream, while receiving response with status: 200 OK",
            ),
            tonic::Status::out_of_range(
                "Error, decoded message length too large: found 9 bytes, the limit is: 4",
            ),
        ] {
            assert!(answer_unreadable(&unreadable), "{unreadable:?}");
        }
        for refusal in [
            tonic::Status::internal("the collector's own trouble"),
            tonic::Status::internal(
                "protocol error: received message with invalid compression flag: 7 (valid flags are 0 and 1), while sending request",
            ),
            tonic::Status::internal("Error decompressing: corrupt deflate stream, while sending request"),
            tonic::Status::resource_exhausted(
                "Error decompressing: size limit, of 4 bytes, exceeded while decompressing message",
            ),
            tonic::Status::unavailable("Missing response message."),
            tonic::Status::resource_exhausted("queue is full"),
        ] {
            assert!(!answer_unreadable(&refusal), "{refusal:?}");
        }
    }
}

//! The two servers: gRPC through tonic, and HTTP/1.1 (with or without TLS) by hand.

use super::*;

pub(super) struct GrpcSink(pub(super) Shared);

#[tonic::async_trait]
impl MetricsService for GrpcSink {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        if self.0.refuse.load(Ordering::SeqCst) {
            let refusal = self.0.refusal.lock().unwrap().clone();
            let message = if refusal.is_empty() {
                "refusing on purpose".into()
            } else {
                refusal
            };
            return Err(tonic::Status::unavailable(message));
        }
        let team = request
            .metadata()
            .get("x-team")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let gzipped = request
            .metadata()
            .get("grpc-encoding")
            .is_some_and(|v| v == "gzip");
        self.0.seen.lock().unwrap().push((team, gzipped));
        self.0.requests.lock().unwrap().push(request.into_inner());
        let stall = self.0.stall_ms.load(Ordering::SeqCst);
        if stall > 0 {
            tokio::time::sleep(Duration::from_millis(stall)).await;
        }
        Ok(tonic::Response::new(partial_answer(&self.0)))
    }
}

fn partial_answer(shared: &Shared) -> ExportMetricsServiceResponse {
    if shared.endless_answers.load(Ordering::SeqCst) {
        return ExportMetricsServiceResponse {
            partial_success: Some(
                opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsPartialSuccess {
                    rejected_data_points: 0,
                    error_message: "x".repeat(5 << 20),
                },
            ),
        };
    }
    let rejected = shared.partial.load(Ordering::SeqCst);
    ExportMetricsServiceResponse {
        partial_success: (rejected > 0).then(|| {
            opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsPartialSuccess {
                rejected_data_points: rejected,
                error_message: "dropped on purpose: datapoint too old".into(),
            }
        }),
    }
}

pub(super) fn serve_http_connection(stream: impl Read + Write, shared: Shared) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        let (mut team, mut gzipped) = (None, false);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("x-team") {
                    team = Some(value.to_string());
                } else if name.eq_ignore_ascii_case("content-encoding") {
                    gzipped = value.eq_ignore_ascii_case("gzip");
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        shared.arrivals.lock().unwrap().push((Instant::now(), length));
        let max_body = shared.max_body.load(Ordering::SeqCst);
        if max_body > 0 && length > max_body {
            let reply = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";
            if reader.get_mut().write_all(reply).is_err() {
                return;
            }
            continue;
        }
        let ok = request_line.starts_with("POST /v1/metrics ") && !shared.refuse.load(Ordering::SeqCst);
        if ok {
            if gzipped {
                let mut plain = Vec::new();
                flate2::read::GzDecoder::new(body.as_slice())
                    .read_to_end(&mut plain)
                    .expect("valid gzip");
                body = plain;
            }
            shared.seen.lock().unwrap().push((team, gzipped));
            let request = ExportMetricsServiceRequest::decode(body.as_slice()).expect("valid OTLP protobuf");
            shared.requests.lock().unwrap().push(request);
            let stall = shared.stall_ms.load(Ordering::SeqCst);
            if stall > 0 {
                std::thread::sleep(Duration::from_millis(stall));
            }
            if shared.drop_answers.load(Ordering::SeqCst) {
                return;
            }
        }
        if ok && shared.endless_answers.load(Ordering::SeqCst) {
            let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nTransfer-Encoding: chunked\r\n\r\n";
            let chunk = format!("{:x}\r\n{}\r\n", 1 << 16, "x".repeat(1 << 16));
            let stream = reader.get_mut();
            if stream.write_all(head).is_ok() {
                while stream.write_all(chunk.as_bytes()).is_ok() {}
            }
            return;
        }
        let reply: Vec<u8> = if ok {
            let answer = partial_answer(&shared).encode_to_vec();
            let mut reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
                answer.len()
            )
            .into_bytes();
            reply.extend_from_slice(&answer);
            reply
        } else {
            let retry_after = match shared.retry_after.load(Ordering::SeqCst) {
                0 => String::new(),
                seconds => format!("Retry-After: {seconds}\r\n"),
            };
            format!("HTTP/1.1 503 Service Unavailable\r\n{retry_after}Content-Length: 0\r\n\r\n").into_bytes()
        };
        if reader
            .get_mut()
            .write_all(&reply)
            .and_then(|_| reader.get_mut().flush())
            .is_err()
        {
            return;
        }
    }
}

//! Real OTLP receivers on real sockets: gRPC (tonic, with the official opentelemetry-proto
//! service types) and HTTP/protobuf (a plain HTTP/1.1 server decoding the same messages). Each
//! keeps every request it was sent, and can be told to refuse them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;

use super::model::{QUANTITIES, Series};

/// The `x-team` header of a request, and whether its body was gzipped.
pub type Seen = (Option<String>, bool);

#[derive(Clone, Default)]
struct Shared {
    requests: Arc<Mutex<Vec<ExportMetricsServiceRequest>>>,
    refuse: Arc<AtomicBool>,
    /// gRPC: what a refusal says (empty: "refusing on purpose").
    refusal: Arc<Mutex<String>>,
    /// Keep the data but answer only after this long (0: at once).
    stall_ms: Arc<std::sync::atomic::AtomicU64>,
    /// HTTP: keep the data, then close the connection without an answer.
    drop_answers: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// HTTP: a body larger than this is refused with 413 (0: no limit).
    max_body: Arc<std::sync::atomic::AtomicUsize>,
    /// gRPC: answer accepted exports with a message past tonic's 4 MiB limit. HTTP: answer them
    /// with a chunked body that never ends.
    endless_answers: Arc<AtomicBool>,
    /// Answer accepted exports with a partial success rejecting this many points (0: none).
    partial: Arc<std::sync::atomic::AtomicI64>,
    /// HTTP: refusals carry `Retry-After: <seconds>` (0: none).
    retry_after: Arc<std::sync::atomic::AtomicU64>,
    /// HTTP: every request that arrived, refused or not, with its size.
    arrivals: Arc<Mutex<Vec<(Instant, usize)>>>,
}

pub struct Receiver {
    /// What to pass as `--otlp-endpoint`.
    pub endpoint: String,
    pub protocol: &'static str,
    shared: Shared,
    _runtime: Option<tokio::runtime::Runtime>,
}

impl Receiver {
    /// A gRPC receiver on a free loopback port.
    pub fn grpc() -> Receiver {
        Receiver::grpc_with(None)
    }

    /// A gRPC receiver over TLS that requires a client certificate, at `https://localhost:<port>`.
    pub fn grpc_tls(pki: &super::pki::Pki) -> Receiver {
        Receiver::grpc_with(Some(pki.tonic_server()))
    }

    fn grpc_with(tls: Option<tonic::transport::ServerTlsConfig>) -> Receiver {
        let shared = Shared::default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let service = MetricsServiceServer::new(GrpcSink(shared.clone()))
            .accept_compressed(tonic::codec::CompressionEncoding::Gzip);
        let mut server = tonic::transport::Server::builder();
        let scheme = match tls {
            Some(tls) => {
                server = server.tls_config(tls).expect("server TLS");
                "https://localhost"
            }
            None => "http://127.0.0.1",
        };
        runtime.spawn(
            server
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        Receiver {
            endpoint: format!("{scheme}:{port}"),
            protocol: "grpc",
            shared,
            _runtime: Some(runtime),
        }
    }

    /// An HTTP/protobuf receiver on a free loopback port, serving `/v1/metrics`.
    pub fn http() -> Receiver {
        let shared = Shared::default();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accept_shared = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accept_shared.clone();
                std::thread::spawn(move || serve_http_connection(stream, shared));
            }
        });
        Receiver {
            endpoint: format!("http://127.0.0.1:{port}/v1/metrics"),
            protocol: "http/protobuf",
            shared,
            _runtime: None,
        }
    }

    /// An HTTP/protobuf receiver over TLS that requires a client certificate, at
    /// `https://localhost:<port>/v1/metrics`. A failed handshake just closes the connection.
    pub fn http_tls(pki: &super::pki::Pki) -> Receiver {
        let shared = Shared::default();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accept_shared = shared.clone();
        let config = pki.rustls_server();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accept_shared.clone();
                let connection = rustls::ServerConnection::new(config.clone()).expect("TLS session");
                std::thread::spawn(move || {
                    serve_http_connection(rustls::StreamOwned::new(connection, stream), shared)
                });
            }
        });
        Receiver {
            endpoint: format!("https://localhost:{port}/v1/metrics"),
            protocol: "http/protobuf",
            shared,
            _runtime: None,
        }
    }

    /// Take every export, and answer past any sensible size (see `Shared::endless_answers`).
    pub fn endless_answers(&self, endless: bool) {
        self.shared.endless_answers.store(endless, Ordering::SeqCst);
    }

    /// gRPC: refuse every request, saying `message`.
    pub fn refuse_saying(&self, message: &str) {
        *self.shared.refusal.lock().unwrap() = message.to_string();
        self.refuse(true);
    }

    /// Answer every export with an error from now on (or stop doing so).
    pub fn refuse(&self, refuse: bool) {
        self.shared.refuse.store(refuse, Ordering::SeqCst);
    }

    /// Keep every request but answer only after `delay`: the sender cannot know it landed.
    pub fn stall(&self, delay: Duration) {
        self.shared
            .stall_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// HTTP: keep every request, then close the connection without answering (or stop doing so).
    pub fn drop_answers(&self, drop: bool) {
        self.shared.drop_answers.store(drop, Ordering::SeqCst);
    }

    /// HTTP: refuse a body larger than `bytes` with 413 Payload Too Large.
    pub fn max_body(&self, bytes: usize) {
        self.shared.max_body.store(bytes, Ordering::SeqCst);
    }

    /// Answer each accepted export with a partial success that rejects `points` points.
    pub fn partial(&self, points: i64) {
        self.shared.partial.store(points, Ordering::SeqCst);
    }

    /// HTTP: refusals say `Retry-After: <seconds>`.
    pub fn retry_after(&self, seconds: u64) {
        self.shared.retry_after.store(seconds, Ordering::SeqCst);
    }

    /// HTTP: when each request arrived, and its body size, refused ones included.
    pub fn arrivals(&self) -> Vec<(Instant, usize)> {
        self.shared.arrivals.lock().unwrap().clone()
    }

    /// `(x-team header, gzipped)` for every request received.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<ExportMetricsServiceRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests that carry data points (the exporter opens each export with an empty one).
    pub fn data_requests(&self) -> Vec<ExportMetricsServiceRequest> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.resource_metrics
                    .iter()
                    .any(|rm| rm.scope_metrics.iter().any(|sm| !sm.metrics.is_empty()))
            })
            .collect()
    }

    /// Waits until at least `n` requests arrived, or panics after `timeout`.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.requests().len() < n {
            assert!(
                Instant::now() < deadline,
                "only {} of {n} requests arrived",
                self.requests().len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The backend's view, as one that keeps one series per label set has it: per series the
    /// newest cumulative value received (whatever its start time), plus every delta point
    /// summed as they come.
    pub fn backend_totals(&self) -> BTreeMap<Series, [u64; 8]> {
        let mut last: BTreeMap<(Series, usize), (u64, u64)> = BTreeMap::new();
        let mut delta: BTreeMap<Series, [u64; 8]> = BTreeMap::new();
        for req in self.requests() {
            for rm in &req.resource_metrics {
                for sm in &rm.scope_metrics {
                    for metric in &sm.metrics {
                        let Some(q) = quantity_of(&metric.name) else {
                            continue;
                        };
                        let Some(Data::Sum(sum)) = &metric.data else {
                            panic!("{} is not a sum", metric.name)
                        };
                        assert!(sum.is_monotonic, "{} must be monotonic", metric.name);
                        for p in &sum.data_points {
                            let value = match p.value {
                                Some(
                                    opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(
                                        v,
                                    ),
                                ) => v as u64,
                                other => panic!("{}: not an integer point: {other:?}", metric.name),
                            };
                            let series = series_of(&p.attributes);
                            if sum.aggregation_temporality == 1 {
                                delta.entry(series).or_insert([0; 8])[q] += value;
                            } else {
                                let key = (series, q);
                                let slot = last.entry(key).or_insert((0, 0));
                                if p.time_unix_nano >= slot.0 {
                                    *slot = (p.time_unix_nano, value);
                                }
                            }
                        }
                    }
                }
            }
        }
        for ((series, q), (_, value)) in last {
            delta.entry(series).or_insert([0; 8])[q] += value;
        }
        delta.retain(|_, v| v.iter().any(|x| *x > 0));
        delta
    }
}

/// Spend by `(series, currency, billing_mode)`.
pub type CostView = BTreeMap<(Series, String, String), f64>;
/// Unpriced requests by `(series, reason)`.
pub type UnpricedView = BTreeMap<(Series, String), u64>;

impl Receiver {
    /// The backend's view of the cumulative cost metrics: per series the newest value of
    /// `reasonix.cost` by `(series, currency, billing_mode)` and of `reasonix.requests.unpriced` by
    /// `(series, reason)`.
    pub fn backend_cost(&self) -> (CostView, UnpricedView) {
        use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
        let mut cost: BTreeMap<(Series, String, String), (u64, f64)> = BTreeMap::new();
        let mut unpriced: BTreeMap<(Series, String), (u64, u64)> = BTreeMap::new();
        for req in self.requests() {
            for metric in req
                .resource_metrics
                .iter()
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| &sm.metrics)
            {
                let Some(Data::Sum(sum)) = &metric.data else {
                    continue;
                };
                if !matches!(
                    metric.name.as_str(),
                    "reasonix.cost" | "reasonix.requests.unpriced"
                ) {
                    continue;
                }
                for p in &sum.data_points {
                    let mut attrs: BTreeMap<String, String> = BTreeMap::new();
                    for kv in &p.attributes {
                        if let Some(AnyValue::StringValue(v)) =
                            kv.value.as_ref().and_then(|v| v.value.clone())
                        {
                            attrs.insert(kv.key.clone(), v);
                        }
                    }
                    let series = (
                        attrs["model_ref"].clone(),
                        attrs["provider"].clone(),
                        attrs["source"].clone(),
                    );
                    match (metric.name.as_str(), p.value) {
                        ("reasonix.cost", Some(Value::AsDouble(v))) => {
                            assert_eq!(metric.unit, "{currency}");
                            let key = (series, attrs["currency"].clone(), attrs["billing_mode"].clone());
                            let slot = cost.entry(key).or_insert((0, 0.0));
                            if p.time_unix_nano >= slot.0 {
                                *slot = (p.time_unix_nano, v);
                            }
                        }
                        ("reasonix.requests.unpriced", Some(Value::AsInt(v))) => {
                            let key = (series, attrs["reason"].clone());
                            let slot = unpriced.entry(key).or_insert((0, 0));
                            if p.time_unix_nano >= slot.0 {
                                *slot = (p.time_unix_nano, v as u64);
                            }
                        }
                        (_, other) => panic!("{}: a point of the wrong type: {other:?}", metric.name),
                    }
                }
            }
        }
        (
            cost.into_iter().map(|(k, (_, v))| (k, v)).collect(),
            unpriced.into_iter().map(|(k, (_, v))| (k, v)).collect(),
        )
    }
}

/// One ledger point as sent: `(series, quantity index, start, time, value)`.
type LedgerPoint = (Series, usize, u64, u64, u64);

impl Receiver {
    /// Every ledger point sent, in the order the requests arrived: `(series, quantity index,
    /// start, time, value)`, and the requests' `service.instance.id`s.
    fn ledger_points(&self) -> (Vec<Vec<LedgerPoint>>, Vec<Option<String>>) {
        let mut requests = Vec::new();
        let mut instances = Vec::new();
        for req in self.requests() {
            let mut points = Vec::new();
            for metric in req
                .resource_metrics
                .iter()
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| &sm.metrics)
            {
                let (Some(q), Some(Data::Sum(sum))) = (quantity_of(&metric.name), &metric.data) else {
                    continue;
                };
                for p in &sum.data_points {
                    let Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(v)) =
                        p.value
                    else {
                        continue;
                    };
                    points.push((
                        series_of(&p.attributes),
                        q,
                        p.start_time_unix_nano,
                        p.time_unix_nano,
                        v as u64,
                    ));
                }
            }
            if !points.is_empty() {
                requests.push(points);
                instances.push(resource_attr(&req, "service.instance.id"));
            }
        }
        (requests, instances)
    }

    /// The start times of every ledger point received.
    pub fn start_times(&self) -> std::collections::BTreeSet<u64> {
        self.ledger_points()
            .0
            .into_iter()
            .flatten()
            .map(|p| p.2)
            .collect()
    }

    /// What a backend keeping one series per label set shows: each series' newest value.
    pub fn newest_values(&self) -> BTreeMap<Series, [u64; 8]> {
        let mut newest: BTreeMap<(Series, usize), (u64, u64)> = BTreeMap::new();
        for (series, q, _, time, value) in self.ledger_points().0.into_iter().flatten() {
            let slot = newest.entry((series, q)).or_insert((0, 0));
            if time >= slot.0 {
                *slot = (time, value);
            }
        }
        let mut out: BTreeMap<Series, [u64; 8]> = BTreeMap::new();
        for ((series, q), (_, value)) in newest {
            out.entry(series).or_insert([0; 8])[q] = value;
        }
        out.retain(|_, v| v.iter().any(|x| *x > 0));
        out
    }

    /// The promises of one durable cumulative stream, over every request received: one start
    /// time and one `service.instance.id` throughout, one point per series and quantity per
    /// request, request times a millisecond apart at least and rising, and no value ever below
    /// one sent before. `Err` says which promise broke first.
    pub fn check_one_stream(&self) -> Result<(), String> {
        self.check_stream(true)
    }

    /// The promises of [`Receiver::check_one_stream`] but the one start time: for a store whose
    /// state folder was deleted, which starts a new stream that must still never go down.
    pub fn check_never_down(&self) -> Result<(), String> {
        self.check_stream(false)
    }

    /// What a backend that keeps points by their time sees: per series and quantity, every
    /// point received in time order (a tie in arrival order), and none below the one before.
    /// `Err` names the first that went down.
    pub fn check_never_down_in_time(&self) -> Result<(), String> {
        let mut points: BTreeMap<(Series, usize), Vec<(u64, u64)>> = BTreeMap::new();
        for (series, q, _, time, value) in self.ledger_points().0.into_iter().flatten() {
            points
                .entry((series, q))
                .or_default()
                .push((time / 1_000_000, value));
        }
        for ((series, q), mut points) in points {
            points.sort_by_key(|(ms, _)| *ms);
            for pair in points.windows(2) {
                if pair[1].1 < pair[0].1 {
                    return Err(format!(
                        "{series:?} quantity {q}: {} at {} ms after {} at {} ms",
                        pair[1].1, pair[1].0, pair[0].1, pair[0].0
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_stream(&self, one_start: bool) -> Result<(), String> {
        let (requests, instances) = self.ledger_points();
        let mut starts = std::collections::BTreeSet::new();
        let mut last_ms = None;
        let mut highest: BTreeMap<(Series, usize), u64> = BTreeMap::new();
        for (i, points) in requests.iter().enumerate() {
            let mut seen = std::collections::BTreeSet::new();
            let times: std::collections::BTreeSet<u64> = points.iter().map(|p| p.3).collect();
            if times.len() != 1 {
                return Err(format!(
                    "request {i} has points at {} different times",
                    times.len()
                ));
            }
            let ms = points[0].3 / 1_000_000;
            if last_ms.is_some_and(|last| ms <= last) {
                return Err(format!(
                    "request {i} is not a millisecond later than the one before"
                ));
            }
            last_ms = Some(ms);
            for (series, q, start, _, value) in points {
                starts.insert(*start);
                if !seen.insert((series.clone(), *q)) {
                    return Err(format!("request {i} has two points of {series:?} quantity {q}"));
                }
                let high = highest.entry((series.clone(), *q)).or_insert(0);
                if value < high {
                    return Err(format!(
                        "request {i}: {series:?} quantity {q} went down from {high} to {value}"
                    ));
                }
                *high = *value;
            }
        }
        if one_start && starts.len() > 1 {
            return Err(format!("{} start times: {starts:?}", starts.len()));
        }
        let ids: std::collections::BTreeSet<_> = instances.iter().collect();
        if ids.len() > 1 || ids.iter().any(|id| id.is_none()) {
            return Err(format!("service.instance.id is not one value: {ids:?}"));
        }
        Ok(())
    }
}

pub fn quantity_of(metric: &str) -> Option<usize> {
    let names = [
        "reasonix.prompt.tokens",
        "reasonix.completion.tokens",
        "reasonix.reasoning.tokens",
        "reasonix.cache_hit.tokens",
        "reasonix.cache_miss.tokens",
        "reasonix.tokens",
        "reasonix.requests",
        "reasonix.turns",
    ];
    debug_assert_eq!(names.len(), QUANTITIES.len());
    names.iter().position(|n| *n == metric)
}

/// The three attributes of a point, which must be exactly `model_ref`, `provider`, `source`.
pub fn series_of(attributes: &[KeyValue]) -> Series {
    let mut found = BTreeMap::new();
    for kv in attributes {
        let Some(AnyValue::StringValue(s)) = kv.value.as_ref().and_then(|v| v.value.clone()) else {
            panic!("attribute {} is not a string", kv.key)
        };
        found.insert(kv.key.clone(), s);
    }
    let keys: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["model_ref", "provider", "source"],
        "exactly three attributes"
    );
    (
        found["model_ref"].clone(),
        found["provider"].clone(),
        found["source"].clone(),
    )
}

/// A resource attribute's string value.
pub fn resource_attr(req: &ExportMetricsServiceRequest, key: &str) -> Option<String> {
    let resource = req.resource_metrics.first()?.resource.as_ref()?;
    resource
        .attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

struct GrpcSink(Shared);

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

fn serve_http_connection(stream: impl Read + Write, shared: Shared) {
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

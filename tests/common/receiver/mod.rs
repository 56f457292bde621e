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

mod backend_view;
mod servers;

// Each test binary uses some of them (as `dead_code` is allowed above).
#[allow(unused_imports)]
pub use backend_view::{CostView, UnpricedView, quantity_of, resource_attr, series_of};
use servers::{GrpcSink, serve_http_connection};

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

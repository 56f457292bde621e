//! The export side: counters out of the store, to an OTLP collector and to Prometheus.

pub mod accept_retry;
pub mod backoff;
pub mod gen_ai;
pub mod health;
pub mod otlp;
pub mod page;
pub mod payload;
pub mod prometheus;
pub mod resource;
pub mod self_metrics;
pub mod server;
pub mod sink;
pub mod tls;
pub mod transport;
pub mod web;

/// `bytes` gzipped, fast (an OTLP request's body, a scrape's answer).
pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

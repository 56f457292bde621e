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

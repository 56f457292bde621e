//! reasonix-exporter: the Reasonix usage ledger as exact OpenTelemetry counters.
//!
//! Data flows one way: [`ledger`] (find, tail, decode) → [`ingest`] → [`store`] (seen set,
//! totals, checkpoints) → [`export`] (OTLP) → [`cli`].

pub mod cli;
pub mod daemon;
pub mod export;
pub mod files;
pub mod ingest;
pub mod ledger;
pub mod paths;
pub mod sandbox;
pub mod series;
pub mod settings;
pub mod snapshot;
pub mod store;

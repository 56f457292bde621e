//! reasonix-exporter: the Reasonix usage ledger as exact OpenTelemetry counters.
//!
//! Data flows one way: [`ledger`] (find, tail, decode) → [`series`] (the data model) →
//! [`store`] (seen set, totals, checkpoints) → [`delivery`] (what backends received) →
//! [`upgrade`] → [`ingest`] → [`status_file`] → [`export`] (OTLP, `/metrics`) → [`history`] →
//! [`sandbox`] → [`settings`] → [`daemon`] (`run`), [`rules`] and [`cli`]; below them all,
//! [`bytes`], [`inert_text`], [`events`], [`paths`], [`descriptors`], [`own_files`] and
//! [`catalog`].
//! `tests/layers/` checks that no module uses one above it (the order is in docs/design.md).

pub mod bytes;
pub mod catalog;
pub mod cli;
pub mod daemon;
pub mod delivery;
pub mod descriptors;
pub mod events;
pub mod export;
pub mod history;
pub mod inert_text;
pub mod ingest;
pub mod ledger;
pub mod own_files;
pub mod paths;
pub mod rules;
pub mod sandbox;
pub mod series;
pub mod settings;
pub mod status_file;
pub mod store;
pub mod upgrade;

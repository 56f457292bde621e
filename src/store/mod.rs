//! The store: the only durable state. A sled database under the state dir holding what was
//! counted (the seen set, lifetime totals per attribute set, per-file checkpoints and ingestion
//! counts: the count store, `count_store.rs`), beside the records a backend's deliveries need
//! (`records/`, and three facts in the database, `delivered.rs`), whose meaning is
//! `delivery/`'s. Every batch commits atomically, so a crash never leaves a line counted without
//! its hash, or a hash without its count.
//!
//! sled 0.34 is unmaintained; nothing outside `engine/` sees it (every call, and in `keys.rs`
//! every key), so a change of engine stays inside that folder.
//!
//! The files, lowest first: each imports only files before it, and this one defines nothing
//! (`tests/layers/store_imports.rs`).
//!
//! - `seen.rs`, `counts.rs`, `pending_export.rs`, `pass_regions.rs`: the values the store holds
//!   (seen-set partitions, ingestion counts, the delta export in flight, the cost pass's regions);
//! - `engine/keys.rs`: the key table, with the store's format;
//! - `error.rs`: what can go wrong, each in one line with its fix;
//! - `engine/`: sled's configuration, reads and writes ([`engine::Write`]);
//! - `lock.rs`, `private_dir.rs`: one process per state dir, and a state dir of its own;
//! - `upgrade/layouts.rs`: the older layouts' decoders;
//! - `records/`: the small files beside the store that must survive a power cut (the stream
//!   record, the export record, the history frontier), in one checksummed frame;
//! - `partitions.rs`: the seen set's partitions as committed, and how a commit writes them;
//! - `batch.rs`: what a poll has read and not yet committed;
//! - `delivered.rs`: delivery's three facts in the database (`delivery/` owns them);
//! - `compaction.rs`: the store copied into a new database when sled's log has grown far past
//!   what it holds, swapped in, and a swap a crash cut short finished or undone;
//! - `count_store.rs`: [`Store`], opened, committed to and closed;
//! - `marking.rs`: a poll's lines marked seen against the committed seen set;
//! - `recovery.rs`: opening a store that was there, and refusing one that was damaged;
//! - `upgrade/`: older formats converted where they are loaded, and the cost pass's store side.
//!
//! Between the methods of [`Store`] in `count_store.rs`, `recovery.rs` and `upgrade/` calls run
//! both ways (opening recovers, recovery upgrades, an upgrade loads): they are one type's.

mod batch;
mod compaction;
mod count_store;
pub mod counts;
mod delivered;
mod engine;
mod error;
#[cfg(test)]
mod formats;
pub mod lock;
mod marking;
mod partitions;
mod pass_regions;
mod pending_export;
mod private_dir;
mod records;
mod recovery;
pub mod seen;
pub mod upgrade;

pub use batch::Batch;
pub use count_store::Store;
pub use delivered::{Delivered, DeliveredTable};
pub use engine::keys::FORMAT_VERSION;
pub use error::StoreError;
pub use pass_regions::{PassFile, PassProgress};
pub use pending_export::PendingExport;
pub use records::{export_record, history, stream};

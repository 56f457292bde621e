//! reasonix-exporter's ledger reading, from the crate's own files, as the fuzz targets use it
//! (`reasonix_exporter::ledger::…`, `reasonix_exporter::catalog::…`): see Cargo.toml.

#[path = "../../src/bytes.rs"]
pub mod bytes;
#[path = "../../src/catalog.rs"]
pub mod catalog;
pub mod ledger;

//! Upgrades of stores made by older builds, in one place. The store converts an old format where
//! it loads it (`store/upgrade/`), in one atomic write; what needs the ledger read again is done
//! here, before a poll's usual reading, and costs the usual reading nothing once it is over:
//!
//! - `cost_pass.rs`: a store made before cost gains the quote of every line it had counted, by
//!   reading again, with the ledger's own tailer, the regions of the files it had read.

mod cost_pass;

pub use cost_pass::run as cost_pass;

//! The command line: its arguments (made from the settings catalog), and one module per command
//! other than `run` (which is `crate::daemon`).

pub mod args;
pub mod doctor;
pub mod generate;
pub mod once;
pub mod status;

//! The command line: arguments, settings, and one module per command.

pub mod args;
pub mod doctor;
pub mod generate;
pub mod once;
pub mod run;
pub mod settings;
pub mod status;

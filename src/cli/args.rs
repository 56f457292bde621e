//! The command line, as clap sees it. Resolution against the environment and the config file
//! happens in [`super::settings`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `--version`: the crate's version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("REASONIX_EXPORTER_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "reasonix-exporter",
    version = VERSION,
    about = "Turns the Reasonix usage ledger into exact OpenTelemetry and Prometheus counters."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub options: Options,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Watch the ledger and export continuously (the default).
    Run,
    /// Ingest what is new, export once, and exit.
    Once,
    /// Print lifetime totals from the store (no network).
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Check paths, configuration, store and collector, and say how to fix what is wrong.
    Doctor,
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `reasonix-exporter man > reasonix-exporter.1`.
    Man,
}

/// Options shared by every command. Each is optional here so that its origin (flag, variable,
/// config file, default) can be told apart.
#[derive(Debug, Default, Args)]
pub struct Options {
    /// Reasonix's stats folder [default: as Reasonix resolves it, e.g. ~/.reasonix/stats]
    #[arg(long, global = true, value_name = "DIR")]
    pub stats_dir: Option<PathBuf>,
    /// Where the exporter keeps its store [default: $XDG_STATE_HOME/reasonix-exporter]
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// TOML configuration file [default: $XDG_CONFIG_HOME/reasonix-exporter/config.toml if present]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Collector URL, used as given [default: http://localhost:4318/v1/metrics, or http://localhost:4317 for grpc]
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// grpc or http/protobuf [default: http/protobuf]
    #[arg(long, global = true, value_name = "PROTOCOL")]
    pub otlp_protocol: Option<String>,
    /// on, or off to ingest without exporting [default: on]
    #[arg(long, global = true, value_name = "on|off")]
    pub otlp: Option<String>,
    /// CA certificate (PEM) that signed the collector's, for https endpoints; the only CA trusted
    #[arg(long, global = true, value_name = "FILE")]
    pub otlp_certificate: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS with the collector
    #[arg(long, global = true, value_name = "FILE")]
    pub otlp_client_certificate: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS with the collector
    #[arg(long, global = true, value_name = "FILE")]
    pub otlp_client_key: Option<PathBuf>,
    /// on: on Linux, limit reads to the stats folder and writes to the state dir (landlock) [default: on]
    #[arg(long, global = true, value_name = "on|off")]
    pub sandbox: Option<String>,
    /// How often `run` exports, e.g. 60s [default: 60s]
    #[arg(long, global = true, value_name = "DURATION")]
    pub export_interval: Option<String>,
    /// How often `run` looks for changes when file events are missing, e.g. 2s [default: 2s]
    #[arg(long, global = true, value_name = "DURATION")]
    pub poll_interval: Option<String>,
    /// on, or off to find changes by polling alone (network filesystems) [default: on]
    #[arg(long, global = true, value_name = "on|off")]
    pub watch: Option<String>,
    /// Prometheus listen address, or off [default: 127.0.0.1:9464]
    #[arg(long, global = true, value_name = "ADDR|off")]
    pub prometheus: Option<String>,
    /// Delete the store and rebuild it from the ledger.
    #[arg(long, global = true)]
    pub reset_state: bool,
    /// Log level or filter (error, warn, info, debug, trace) [default: $RUST_LOG, else info]
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// text, or json for log shippers
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

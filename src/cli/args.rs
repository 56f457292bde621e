//! The command line, as clap sees it. Resolution against the environment and the config file
//! happens in [`crate::settings`].

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::settings::Flags;
use crate::settings::catalog;

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
    /// Write the store's history (what it counted before it first exported) as points at their
    /// own time, for a backend's backfill (deploy/README.md, "Bring your history").
    History {
        /// `openmetrics` for `promtool tsdb create-blocks-from openmetrics`; `victoriametrics`
        /// for VictoriaMetrics' `/api/v1/import` (both on standard output); `otlp`: sent to the
        /// OTLP endpoint, for a backend with an out-of-order window as long as the history.
        #[arg(long, value_enum, default_value_t = HistoryFormat::Openmetrics)]
        format: HistoryFormat,
        /// A label every series of the history carries, as the backend names the live stream's
        /// (`job`, `instance`, a promoted resource attribute); repeat for each. Not with `otlp`,
        /// whose series carry the live stream's resource.
        #[arg(long = "label", value_name = "NAME=VALUE")]
        labels: Vec<String>,
        /// Before writing, check against the backend's Prometheus query API at URL (Prometheus,
        /// VictoriaMetrics) that every series of the history is a live one, labels and all.
        #[arg(long, value_name = "URL")]
        check: Option<String>,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `reasonix-exporter man > reasonix-exporter.1`.
    Man,
    /// Print the Prometheus rules for a budgets file: today's and this month's spend and each
    /// budget's alerts (deploy/README.md, "Budgets and alerts").
    Rules {
        #[arg(value_name = "BUDGETS_FILE")]
        budgets: std::path::PathBuf,
    },
}

/// Options shared by every command, made from the settings catalog
/// (`src/settings/catalog.rs`). Each is optional here so that its origin (flag, variable, config
/// file, default) can be told apart.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// The settings given as flags, by catalog key.
    pub flags: Flags,
    pub reset_state: bool,
    pub log_level: Option<String>,
    pub log_format: LogFormat,
}

impl Args for Options {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for def in catalog::SETTINGS {
            let Some((flag, value)) = def.flag else { continue };
            let arg = Arg::new(def.key).long(flag).global(true).help(def.help_text());
            cmd = cmd.arg(if value.is_empty() {
                arg.action(ArgAction::SetTrue)
            } else {
                // Taken as given: a path need not be UTF-8 (a text setting that is not is an
                // error naming its flag, when the settings are resolved).
                arg.value_name(value)
                    .action(ArgAction::Set)
                    .value_parser(clap::value_parser!(std::ffi::OsString))
            });
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Options::augment_args(cmd)
    }
}

impl FromArgMatches for Options {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Options, clap::Error> {
        let mut options = Options::default();
        options.update_from_arg_matches(matches)?;
        Ok(options)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for def in catalog::SETTINGS {
            match def.flag {
                Some((_, "")) if matches.get_flag(def.key) => {
                    self.flags.insert(def.key, std::ffi::OsString::new());
                }
                Some((_, "")) => {}
                Some(_) => {
                    if let Some(value) = matches.get_one::<std::ffi::OsString>(def.key) {
                        self.flags.insert(def.key, value.clone());
                    }
                }
                None => {}
            }
        }
        self.reset_state = self.flags.contains_key(catalog::RESET_STATE.key);
        let text = |def: &catalog::Def| -> Result<Option<String>, clap::Error> {
            match self.flags.get(def.key) {
                None => Ok(None),
                Some(value) => value.to_str().map(|v| Some(v.to_owned())).ok_or_else(|| {
                    let flag = def.flag.map_or(def.key, |(flag, _)| flag);
                    clap::Error::raw(
                        clap::error::ErrorKind::InvalidUtf8,
                        format!("--{flag} is not valid UTF-8: give it again in UTF-8\n"),
                    )
                }),
            }
        };
        self.log_level = text(&catalog::LOG_LEVEL)?;
        let format = text(&catalog::LOG_FORMAT)?;
        let format = format.as_deref().unwrap_or(catalog::LOG_FORMAT.value);
        self.log_format = LogFormat::from_str(format, true).map_err(|_| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("--log-format '{format}' is not valid: use text or json\n"),
            )
        })?;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    Openmetrics,
    Victoriametrics,
    Otlp,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use reasonix_exporter::cli::args::{Cli, Command, LogFormat, Options};
use reasonix_exporter::cli::{doctor, generate, once, status};
use reasonix_exporter::daemon;
use reasonix_exporter::sandbox;
use reasonix_exporter::settings::{Settings, process_env};

fn main() -> ExitCode {
    private_files();
    let cli = Cli::parse();
    if let Err(err) = init_logging(&cli.options) {
        eprintln!("reasonix-exporter: {err:#}");
        return ExitCode::FAILURE;
    }
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line: the error and its causes, outermost first.
            eprintln!("reasonix-exporter: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn try_main(cli: Cli) -> anyhow::Result<()> {
    let settings = || Settings::resolve(&cli.options.flags, cli.options.reset_state, &process_env);
    match cli.command.unwrap_or(Command::Run) {
        Command::Run => {
            let settings = sandboxed(settings()?)?;
            runtime(true)?.block_on(daemon::run(&settings))
        }
        Command::Once => {
            let settings = sandboxed(settings()?)?;
            runtime(false)?.block_on(once::once(&settings))
        }
        Command::Status { json } => status::status(&settings()?, json),
        Command::Doctor => runtime(false)?.block_on(doctor::doctor(&settings()?)),
        // Generated from the command line's definition alone: no settings, no store.
        Command::Completions { shell } => Ok(generate::print(&generate::completions(shell))?),
        Command::Man => {
            let mut page = Vec::new();
            generate::man_page(&mut page)?;
            Ok(generate::print(&page)?)
        }
    }
}

/// Everything the exporter creates (the store, its records, the status snapshot) says which
/// models were used and how much: readable by its user alone (0600 files, 0700 folders), whatever
/// umask the process was started with.
fn private_files() {
    #[cfg(unix)]
    // SAFETY: umask only sets the process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Enters the sandbox (before the runtime starts any thread) and says how that went.
fn sandboxed(settings: Settings) -> anyhow::Result<Settings> {
    let (stats, state) = (&settings.stats_dir.value, &settings.state_dir.value);
    let outcome = sandbox::enter(settings.sandbox.value, stats, state)?;
    sandbox::log(&outcome, stats, state);
    Ok(settings)
}

/// `--log-level` wins over `RUST_LOG`; info by default. Logs go to stderr, one line per event.
fn init_logging(options: &Options) -> anyhow::Result<()> {
    let filter = match &options.log_level {
        Some(level) => EnvFilter::try_new(level).map_err(|_| {
            anyhow::anyhow!("--log-level '{level}' is not a level: use error, warn, info, debug or trace")
        })?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match options.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
    Ok(())
}

/// The daemon gets two workers (ingestion, and the HTTP server and exports); `once` needs one.
fn runtime(daemon: bool) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = if daemon {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    Ok(builder.enable_all().build()?)
}

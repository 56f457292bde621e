use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;

use reasonix_exporter::cli::args::{Cli, Command, LogFormat, Options};
use reasonix_exporter::cli::{self, doctor, generate, history, once, status};
use reasonix_exporter::daemon;
use reasonix_exporter::export::web::Web;
use reasonix_exporter::rules;
use reasonix_exporter::sandbox;
use reasonix_exporter::settings::{Settings, process_env};

fn main() -> ExitCode {
    private_files();
    let cli = Cli::parse();
    if matches!(cli.command, None | Some(Command::Run)) {
        daemon::allocator::start_tuned();
    }
    if let Err(err) = init_logging(&cli.options) {
        return fail(&err);
    }
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

/// One line on stderr: the error and its causes, outermost first (a closed stderr is no panic).
fn fail(err: &anyhow::Error) -> ExitCode {
    // One line whatever it quotes (a key from a config file, a value from the environment):
    // a control character is shown escaped, never acted on by the terminal.
    let said = reasonix_exporter::inert_text::one_line(&format!("{err:#}"), 8192);
    let _ = writeln!(std::io::stderr(), "reasonix-exporter: {said}");
    ExitCode::FAILURE
}

fn try_main(cli: Cli) -> anyhow::Result<()> {
    if !matches!(
        cli.command,
        Some(Command::Completions { .. } | Command::Man | Command::Rules { .. })
    ) {
        clock_after_1970()?;
    }
    let settings = || Settings::resolve(&cli.options.flags, cli.options.reset_state, &process_env);
    match cli.command.unwrap_or(Command::Run) {
        Command::Run => {
            let settings = settings()?;
            // Read before the sandbox, which then lets it read the folders of its files again.
            let web = match (&settings.web_config, settings.prometheus.value) {
                (Some(path), Some(_)) => Some(Web::load(path)?),
                _ => None,
            };
            let reads = web.as_ref().map(Web::folders).unwrap_or_default();
            let settings = sandboxed(settings, &reads)?;
            runtime(true)?.block_on(daemon::run(&settings, web))
        }
        Command::Once => {
            let settings = sandboxed(settings()?, &[])?;
            runtime(false)?.block_on(once::once(&settings))
        }
        Command::Status { json } => status::status(&settings()?, json),
        Command::History {
            format,
            labels,
            check,
        } => history::history(&settings()?, format, &labels, check.as_deref()),
        Command::Doctor => runtime(false)?.block_on(doctor::doctor(&settings()?)),
        // Generated from the command line's definition alone: no settings, no store.
        Command::Completions { shell } => Ok(cli::print(&generate::completions(shell))?),
        Command::Man => {
            let mut page = Vec::new();
            generate::man_page(&mut page)?;
            Ok(cli::print(&page)?)
        }
        // Made from the budgets file alone: no settings, no store, no network.
        Command::Rules { budgets } => Ok(cli::print(&rules::rules(&budgets)?)?),
    }
}

/// Every point and record carries Unix time, and the store's engine cannot start on a clock
/// before it: say so in one line rather than fail inside it.
fn clock_after_1970() -> anyhow::Result<()> {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(_) => Ok(()),
        Err(_) => anyhow::bail!(
            "the system clock is before 1970; set it to the right time (e.g. `timedatectl set-ntp true`) and start again"
        ),
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
fn sandboxed(settings: Settings, reads: &[std::path::PathBuf]) -> anyhow::Result<Settings> {
    let (stats, state) = (&settings.stats_dir.value, &settings.state_dir.value);
    let outcome = sandbox::enter(settings.sandbox.value, stats, state, reads)?;
    sandbox::log(&outcome, stats, state);
    Ok(settings)
}

/// `--log-level` wins over `RUST_LOG`; info by default. Logs go to stderr, one line per event
/// (docs/design.md, "Logs").
fn init_logging(options: &Options) -> anyhow::Result<()> {
    let json = matches!(options.log_format, LogFormat::Json);
    let default_level = reasonix_exporter::settings::catalog::LOG_LEVEL.value;
    reasonix_exporter::events::init(options.log_level.as_deref(), default_level, json)
        .map_err(anyhow::Error::msg)
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

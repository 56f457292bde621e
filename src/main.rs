use std::process::ExitCode;

use clap::Parser;

use reasonix_exporter::cli::args::{Cli, Command};
use reasonix_exporter::cli::settings::{Settings, process_env};
use reasonix_exporter::cli::{once, status};

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    let settings = Settings::resolve(&cli.options, &process_env)?;
    match cli.command.unwrap_or(Command::Run) {
        Command::Once => runtime()?.block_on(once::once(&settings)),
        Command::Status { json } => status::status(&settings, json),
        Command::Run | Command::Doctor => {
            anyhow::bail!("this command is not available yet in this build; use `once` (see README)")
        }
    }
}

/// A small runtime: the exporter does little concurrent work, and tonic needs one to exist.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

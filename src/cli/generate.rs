//! `completions` and `man`: shell completion scripts and the man page, generated from the clap
//! definition so that they never drift from the real options.

use std::io::Write;

use clap::CommandFactory;

use super::args::Cli;

const BIN: &str = "reasonix-exporter";

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    // Into memory: clap_complete panics if its writer fails (a closed pipe, say).
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut out);
    out
}

/// Writes the man page, one roff document covering every command, to `out`.
pub fn man_page(out: &mut impl Write) -> std::io::Result<()> {
    let command = Cli::command();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    // Each command's own section: clap_mangen renders subcommands only by name.
    writeln!(out, ".SH COMMANDS")?;
    for sub in command.get_subcommands() {
        writeln!(out, ".TP\n\\fB{}\\fR", sub.get_name())?;
        if let Some(about) = sub.get_about() {
            writeln!(out, "{}", roff_escape(&about.to_string()))?;
        }
    }
    writeln!(out, ".SH FILES")?;
    writeln!(
        out,
        ".TP\n~/.reasonix/stats/YYYY-MM-DD.jsonl\nReasonix's usage ledger, read only.\n.TP\n$XDG_STATE_HOME/reasonix-exporter\nThe store: seen lines, totals, checkpoints, what was delivered.\n.TP\n$XDG_CONFIG_HOME/reasonix-exporter/config.toml\nOptional configuration; flags and environment variables win over it."
    )?;
    man.render_version_section(out)?;
    Ok(())
}

/// Roff treats a leading `.` or `'` as a request, and `\` as an escape.
fn roff_escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e");
    match escaped.chars().next() {
        Some('.') | Some('\'') => format!("\\&{escaped}"),
        _ => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_command_and_option() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let script = String::from_utf8(completions(shell)).unwrap();
            // Fish lists options without their dashes.
            for word in [
                "once",
                "status",
                "doctor",
                "stats-dir",
                "otlp-endpoint",
                "reset-state",
            ] {
                assert!(script.contains(word), "{shell:?} completion lacks {word}");
            }
        }
    }

    #[test]
    fn man_page_has_the_sections_and_every_option() {
        let mut out = Vec::new();
        man_page(&mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH reasonix-exporter"),
            "{page}"
        );
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH COMMANDS",
            ".SH FILES",
            ".SH VERSION",
        ] {
            assert!(page.contains(section), "no {section}");
        }
        for option in ["stats\\-dir", "state\\-dir", "otlp\\-endpoint", "prometheus"] {
            assert!(page.contains(option), "no {option}");
        }
        assert_eq!(roff_escape(".hidden"), "\\&.hidden");
    }
}

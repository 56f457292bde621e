//! Where and how events are written: to stderr, one line each, as text (the sentence) or JSON
//! (the fields as well).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};

/// Starts the log: `level` (a filter such as `info` or `reasonix_exporter=debug`) wins over
/// `RUST_LOG`, which wins over `default_level`; `json` carries every event's fields. The error
/// names what is wrong with `level`.
pub fn init(level: Option<&str>, default_level: &str, json: bool) -> Result<(), String> {
    let filter = match level {
        Some(level) => EnvFilter::try_new(level).map_err(|_| {
            format!("--log-level '{level}' is not a level: use error, warn, info, debug or trace")
        })?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    if json {
        builder.json().init();
    } else {
        builder
            .fmt_fields(Sentences)
            .with_ansi(std::io::stderr().is_terminal())
            .init();
    }
    Ok(())
}

/// The text format's fields: an event of ours (it has an `event` name) shows its sentence alone,
/// which says every value its fields hold; any other (a library's, at debug) shows its fields as
/// the default format does.
struct Sentences;

impl<'writer> FormatFields<'writer> for Sentences {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'writer>, fields: R) -> std::fmt::Result {
        let mut seen = Sentence::default();
        fields.record(&mut seen);
        match seen {
            Sentence { named: true, message } => writer.write_str(&message),
            _ => DefaultFields::new().format_fields(writer, fields),
        }
    }
}

#[derive(Default)]
struct Sentence {
    named: bool,
    message: String,
}

impl tracing::field::Visit for Sentence {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "event" => self.named = true,
            _ => {}
        }
    }
}

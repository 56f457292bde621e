//! Every setting, described once: its name, flag, environment variables, config file key,
//! default and help. The command line (`cli/args.rs`), the config file's schema (`file.rs`),
//! `doctor`'s origins, the README's configuration table and the example config
//! (`config/reasonix-exporter.toml`) are all made from this table; a test compares the last two
//! with the committed files.

/// One setting.
#[derive(Debug)]
pub struct Def {
    /// Its name: the config file key when it has one, and how `doctor` names it.
    pub key: &'static str,
    /// The command-line flag (without `--`) and the name of its value; `""` for a switch.
    pub flag: Option<(&'static str, &'static str)>,
    /// Environment variables, the first one set winning (a signal-specific OTel variable comes
    /// before its generic one).
    pub vars: &'static [&'static str],
    /// How the README shows the variables, when a plain list does not say enough.
    pub vars_shown: Option<&'static str>,
    /// Read from the config file under `key`.
    pub in_file: bool,
    /// The default as one writes it, when it is one value (else `""`): the README, `--help`,
    /// the example config and the resolution (`settings/mod.rs`) all take it from here.
    pub value: &'static str,
    /// The default as the README says it: what follows the value, or all of it without one.
    pub default: &'static str,
    /// One line for `--help`, before the default.
    pub help: &'static str,
    /// The example config's comment (lines joined by `\n`) and the value it shows (`""`: the
    /// default).
    pub example: Option<(&'static str, &'static str)>,
}

impl Def {
    /// The README's default column.
    pub fn default_text(&self) -> String {
        match self.value {
            "" => self.default.to_string(),
            value => format!("`{value}`{}", self.default),
        }
    }

    /// The `--help` line.
    pub fn help_text(&self) -> String {
        match self.value {
            "" => self.help.to_string(),
            value => format!("{} [default: {value}]", self.help),
        }
    }
}

macro_rules! def {
    ($($field:ident: $value:expr),* $(,)?) => {
        {
            // Some settings give every field; the others take the rest from `BLANK`.
            #[allow(clippy::needless_update)]
            let def = Def { $($field: $value,)* ..BLANK };
            def
        }
    };
}

const BLANK: Def = Def {
    key: "",
    flag: None,
    vars: &[],
    vars_shown: None,
    in_file: false,
    value: "",
    default: "",
    help: "",
    example: None,
};

pub const STATS_DIR: Def = def! {
    key: "stats_dir",
    flag: Some(("stats-dir", "DIR")),
    vars: &["REASONIX_EXPORTER_STATS_DIR"],
    in_file: true,
    default: "as Reasonix resolves it: `$REASONIX_STATE_HOME/stats`, else `[storage] state` of Reasonix's `config.toml` + `/stats`, else `$REASONIX_HOME/stats`, else `~/.reasonix/stats` (`%APPDATA%\\reasonix\\stats` on Windows)",
    help: "Reasonix's stats folder [default: as Reasonix resolves it, e.g. ~/.reasonix/stats]",
    example: Some((
        "Reasonix's stats folder. Default: as Reasonix resolves it — $REASONIX_STATE_HOME/stats, else\n`state` in the [storage] table of Reasonix's config.toml + /stats, else $REASONIX_HOME/stats,\nelse ~/.reasonix/stats (%APPDATA%\\reasonix\\stats on Windows). `~` and $VARIABLES are expanded.",
        "~/.reasonix/stats",
    )),
};

pub const STATE_DIR: Def = def! {
    key: "state_dir",
    flag: Some(("state-dir", "DIR")),
    vars: &["REASONIX_EXPORTER_STATE_DIR"],
    in_file: true,
    default: "`$XDG_STATE_HOME/reasonix-exporter`, else `~/.local/state/reasonix-exporter` (macOS: `~/Library/Application Support/reasonix-exporter`; Windows: `%LOCALAPPDATA%\\reasonix-exporter`)",
    help: "Where the exporter keeps its store [default: $XDG_STATE_HOME/reasonix-exporter]",
    example: Some((
        "Where the exporter keeps its store (seen lines, totals, checkpoints, what was delivered).\nDefault: $XDG_STATE_HOME/reasonix-exporter, else ~/.local/state/reasonix-exporter.",
        "~/.local/state/reasonix-exporter",
    )),
};

pub const CONFIG: Def = def! {
    key: "config",
    flag: Some(("config", "FILE")),
    vars: &["REASONIX_EXPORTER_CONFIG"],
    default: "`$XDG_CONFIG_HOME/reasonix-exporter/config.toml` if present",
    help: "TOML configuration file [default: $XDG_CONFIG_HOME/reasonix-exporter/config.toml if present]",
};

pub const OTLP: Def = def! {
    key: "otlp",
    flag: Some(("otlp", "on|off")),
    vars: &["REASONIX_EXPORTER_OTLP"],
    vars_shown: Some("`REASONIX_EXPORTER_OTLP`; `OTEL_SDK_DISABLED=true` turns it off but for the flag"),
    in_file: true,
    value: "on",
    default: "",
    help: "on, or off to ingest without exporting",
    example: Some(("\"on\", or \"off\" to ingest without exporting (status still works).", "")),
};

/// The default of [`OTLP_ENDPOINT`] with gRPC, as its texts say (a test holds them to it).
pub const GRPC_ENDPOINT: &str = "http://localhost:4317";

/// Read with [`OTLP`]: `true` turns export off, as in every OTel SDK.
pub const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

pub const OTLP_ENDPOINT: Def = def! {
    key: "otlp_endpoint",
    flag: Some(("otlp-endpoint", "URL")),
    vars: &["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (as given), `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/metrics` appended for HTTP)"),
    in_file: true,
    value: "http://localhost:4318/v1/metrics",
    default: "; `http://localhost:4317` for gRPC",
    help: "Collector URL, used as given (with grpc: http://localhost:4317)",
    example: Some((
        "The collector URL, used as given (include /v1/metrics for HTTP).\nDefault: http://localhost:4318/v1/metrics, or http://localhost:4317 with grpc.",
        "",
    )),
};

pub const OTLP_PROTOCOL: Def = def! {
    key: "otlp_protocol",
    flag: Some(("otlp-protocol", "PROTOCOL")),
    vars: &["OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"],
    in_file: true,
    value: "http/protobuf",
    default: " (the OTel default); or `grpc`",
    help: "grpc or http/protobuf",
    example: Some(("\"grpc\" or \"http/protobuf\".", "")),
};

pub const TEMPORALITY: Def = def! {
    key: "temporality",
    vars: &["OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE` (`cumulative`, `delta`, `lowmemory` = delta)"),
    in_file: true,
    value: "cumulative",
    default: "",
    example: Some(("\"cumulative\" (exact across crashes; recommended) or \"delta\".", "")),
};

pub const HEADERS: Def = def! {
    key: "headers",
    vars: &["OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)HEADERS` (`k=v,k2=v2`, percent-decoded)"),
    default: "none; values are never printed",
};

pub const TIMEOUT: Def = def! {
    key: "timeout",
    vars: &["OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)TIMEOUT` (ms)"),
    value: "10000",
    default: "",
};

pub const COMPRESSION: Def = def! {
    key: "compression",
    vars: &["OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)COMPRESSION` (`gzip`, `none`)"),
    value: "none",
    default: "",
};

pub const OTLP_CERTIFICATE: Def = def! {
    key: "otlp_certificate",
    flag: Some(("otlp-certificate", "FILE")),
    vars: &["OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)CERTIFICATE`"),
    in_file: true,
    default: "the system's trust store; a PEM CA given here is the **only** CA trusted (https endpoints)",
    help: "CA certificate (PEM) that signed the collector's, for https endpoints; the only CA trusted",
    example: Some((
        "TLS to an https:// collector (all PEM). The CA that signed the collector's certificate; when\nset it is the only CA trusted, else the system's trust store is used. Same as\nOTEL_EXPORTER_OTLP_CERTIFICATE.",
        "/etc/reasonix-exporter/collector-ca.pem",
    )),
};

pub const OTLP_CLIENT_CERTIFICATE: Def = def! {
    key: "otlp_client_certificate",
    flag: Some(("otlp-client-certificate", "FILE")),
    vars: &["OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)CLIENT_CERTIFICATE`"),
    in_file: true,
    default: "none; PEM, for mutual TLS (set the key too)",
    help: "Client certificate (PEM) for mutual TLS with the collector",
    example: Some((
        "A client certificate and its key, for mutual TLS (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and\nOTEL_EXPORTER_OTLP_CLIENT_KEY). Set both or neither.",
        "/etc/reasonix-exporter/client.pem",
    )),
};

pub const OTLP_CLIENT_KEY: Def = def! {
    key: "otlp_client_key",
    flag: Some(("otlp-client-key", "FILE")),
    vars: &["OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"],
    vars_shown: Some("`OTEL_EXPORTER_OTLP_(METRICS_)CLIENT_KEY`"),
    in_file: true,
    default: "none; PEM (PKCS#8, PKCS#1 or SEC1); never printed",
    help: "Client private key (PEM) for mutual TLS with the collector",
    example: Some(("", "/etc/reasonix-exporter/client.key")),
};

pub const RESOURCE: Def = def! {
    key: "resource",
    vars: &["OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME"],
    default: "see Metrics",
};

pub const EXPORT_INTERVAL: Def = def! {
    key: "export_interval",
    flag: Some(("export-interval", "DURATION")),
    vars: &["OTEL_METRIC_EXPORT_INTERVAL"],
    vars_shown: Some("`OTEL_METRIC_EXPORT_INTERVAL` (ms)"),
    in_file: true,
    value: "60s",
    default: " (used by `run`)",
    help: "How often `run` exports, e.g. 60s",
    example: Some(("How often `run` exports.", "")),
};

pub const POLL_INTERVAL: Def = def! {
    key: "poll_interval",
    flag: Some(("poll-interval", "DURATION")),
    vars: &["REASONIX_EXPORTER_POLL_INTERVAL"],
    in_file: true,
    value: "2s",
    default: " (used by `run`)",
    help: "How often `run` looks for changes when file events are missing, e.g. 2s",
    example: Some(("How often `run` looks for changes when file events are missing (network filesystems).", "")),
};

pub const WATCH: Def = def! {
    key: "watch",
    flag: Some(("watch", "on|off")),
    vars: &["REASONIX_EXPORTER_WATCH"],
    in_file: true,
    value: "on",
    default: "; `off` finds changes by polling alone (network filesystems)",
    help: "on, or off to find changes by polling alone (network filesystems)",
    example: Some(("\"on\" to react to file events at once (inotify, FSEvents, ReadDirectoryChangesW), or \"off\" to\nfind changes by polling alone, e.g. on network filesystems where events never arrive.", "")),
};

pub const GEN_AI: Def = def! {
    key: "gen_ai_conventions",
    flag: Some(("gen-ai-conventions", "on|off")),
    vars: &["REASONIX_EXPORTER_GEN_AI_CONVENTIONS"],
    vars_shown: Some("`REASONIX_EXPORTER_GEN_AI_CONVENTIONS`; `OTEL_SEMCONV_STABILITY_OPT_IN` listing `gen_ai_latest_experimental` turns it on"),
    in_file: true,
    value: "off",
    default: "; `on` also sends the OpenTelemetry GenAI conventions' token counters over OTLP",
    help: "on to also send the OpenTelemetry GenAI conventions' token counters over OTLP",
    example: Some(("\"on\" to also send the token counters of the OpenTelemetry GenAI semantic conventions\n(gen_ai.client.inference.usage.*) over OTLP, from the same store and stream as reasonix.*;\nOTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental does the same.", "")),
};

/// The OpenTelemetry variable that opts into the latest GenAI conventions when it lists
/// [`GEN_AI_OPT_IN`] (as the conventions name it).
pub const SEMCONV_OPT_IN: &str = "OTEL_SEMCONV_STABILITY_OPT_IN";
pub const GEN_AI_OPT_IN: &str = "gen_ai_latest_experimental";

pub const PROMETHEUS: Def = def! {
    key: "prometheus",
    flag: Some(("prometheus", "ADDR|off")),
    vars: &["REASONIX_EXPORTER_PROMETHEUS"],
    in_file: true,
    value: "127.0.0.1:10155",
    default: " (used by `run`)",
    help: "Prometheus listen address, or off",
    example: Some(("Prometheus /metrics listen address, or \"off\".", "")),
};

pub const WEB_CONFIG: Def = def! {
    key: "web_config",
    flag: Some(("web-config", "FILE")),
    vars: &["REASONIX_EXPORTER_WEB_CONFIG"],
    in_file: true,
    default: "none: plain HTTP, no authentication; a file in the Prometheus exporter-toolkit's web configuration format adds TLS, client certificates, basic auth and headers",
    help: "Prometheus exporter-toolkit web configuration (TLS, basic auth, headers) for run's HTTP server",
    example: Some((
        "TLS (client certificates too), basic auth with bcrypt hashes and response headers for run's\nHTTP server, in the Prometheus exporter-toolkit's web configuration format: node_exporter's\nfile works as it is. Read again for every connection: a certificate replaced on disk is served\nwithout a restart. Default: none, plain HTTP.",
        "/etc/reasonix-exporter/web-config.yml",
    )),
};

pub const SANDBOX: Def = def! {
    key: "sandbox",
    flag: Some(("sandbox", "on|off")),
    vars: &["REASONIX_EXPORTER_SANDBOX"],
    in_file: true,
    value: "on",
    default: ": on Linux, `run` and `once` may read only below the stats folder (and `--web-config`'s folders) and write only below the state dir (landlock)",
    help: "on: on Linux, limit reads to the stats folder and writes to the state dir (landlock)",
    example: Some(("\"on\" (Linux): run and once may read only below the stats folder (and web_config's folders)\nand write only below the state dir (a landlock sandbox, where the kernel has it). \"off\" to follow a stats folder symlink that\ngets re-pointed elsewhere without a restart.", "")),
};

pub const LOG_LEVEL: Def = def! {
    key: "log_level",
    flag: Some(("log-level", "LEVEL")),
    vars: &["RUST_LOG"],
    vars_shown: Some("`RUST_LOG` (any `tracing` filter)"),
    value: "info",
    default: "; the flag wins over the variable",
    help: "Log level or filter (error, warn, info, debug, trace); wins over $RUST_LOG",
};

pub const LOG_FORMAT: Def = def! {
    key: "log_format",
    flag: Some(("log-format", "text|json")),
    value: "text",
    default: "; `json` is one object per line for log shippers",
    help: "text, or json for log shippers",
};

pub const RESET_STATE: Def = def! {
    key: "reset_state",
    flag: Some(("reset-state", "")),
    default: "off: delete the store and rebuild it from the ledger",
    help: "Delete the store and rebuild it from the ledger",
};

/// Every setting, in the order the README and the example config show them.
pub const SETTINGS: [&Def; 24] = [
    &STATS_DIR,
    &STATE_DIR,
    &CONFIG,
    &OTLP,
    &OTLP_ENDPOINT,
    &OTLP_PROTOCOL,
    &TEMPORALITY,
    &HEADERS,
    &TIMEOUT,
    &COMPRESSION,
    &OTLP_CERTIFICATE,
    &OTLP_CLIENT_CERTIFICATE,
    &OTLP_CLIENT_KEY,
    &RESOURCE,
    &GEN_AI,
    &EXPORT_INTERVAL,
    &POLL_INTERVAL,
    &WATCH,
    &PROMETHEUS,
    &WEB_CONFIG,
    &SANDBOX,
    &LOG_LEVEL,
    &LOG_FORMAT,
    &RESET_STATE,
];

/// The config file's keys.
pub fn file_keys() -> impl Iterator<Item = &'static str> {
    SETTINGS.into_iter().filter(|d| d.in_file).map(|d| d.key)
}

/// The README's configuration table.
pub fn readme_table() -> String {
    let mut out = String::from("| flag | variable | file key | default |\n|---|---|---|---|\n");
    for def in SETTINGS {
        let flag = match def.flag {
            Some((flag, "")) => format!("`--{flag}`"),
            Some((flag, value)) => format!("`--{flag} {}`", value.replace('|', "\\|")),
            None => "—".into(),
        };
        let vars = match (def.vars_shown, def.vars) {
            (Some(shown), _) => shown.to_string(),
            (None, []) => "—".into(),
            (None, vars) => vars
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let key = if def.in_file {
            format!("`{}`", def.key)
        } else {
            "—".into()
        };
        out.push_str(&format!("| {flag} | {vars} | {key} | {} |\n", def.default_text()));
    }
    out
}

/// `config/reasonix-exporter.toml`: every file key, commented out, with its default.
pub fn example_config() -> String {
    let mut out = String::from(
        "# reasonix-exporter configuration (TOML).\n#\n\
         # Put it at $XDG_CONFIG_HOME/reasonix-exporter/config.toml (~/.config/reasonix-exporter/config.toml)\n\
         # to have it read by default, or pass --config FILE. Every key is optional: the value shown is the\n\
         # default. Precedence: command-line flag > environment variable > this file > default.\n\
         # An unknown key is an error that names it.\n",
    );
    for def in SETTINGS.into_iter().filter(|d| d.in_file) {
        let Some((comment, value)) = def.example else {
            continue;
        };
        let value = if value.is_empty() { def.value } else { value };
        if !comment.is_empty() {
            out.push('\n');
            for line in comment.lines() {
                out.push_str(&format!("# {line}\n"));
            }
        }
        out.push_str(&format!("# {} = \"{value}\"\n", def.key));
    }
    out.push_str(
        "\n# Headers, timeout and compression for the collector are set with the standard variables\n\
         # OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_EXPORTER_OTLP_COMPRESSION\n\
         # (not here: header values are secrets and do not belong in a file others may read).\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares `generated` with the committed `path` (the part between `begin` and `end`
    /// markers when given); a difference fails and leaves the generated text in `target/`.
    fn assert_committed(path: &str, generated: &str, markers: Option<(&str, &str)>) {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text = std::fs::read_to_string(&full).unwrap();
        let committed = match markers {
            Some((begin, end)) => {
                let start = text
                    .find(begin)
                    .unwrap_or_else(|| panic!("{path} has no {begin}"))
                    + begin.len();
                let stop = text.find(end).unwrap_or_else(|| panic!("{path} has no {end}"));
                text[start..stop].trim_start_matches('\n').to_string()
            }
            None => text,
        };
        if committed != generated {
            let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(full.file_name().unwrap());
            std::fs::write(&out, generated).unwrap();
            panic!(
                "{path} differs from src/settings/catalog.rs; the generated text is in {}",
                out.display()
            );
        }
    }

    #[test]
    fn the_readme_table_is_the_catalog() {
        assert_committed(
            "README.md",
            &readme_table(),
            Some((
                "<!-- settings table: made from src/settings/catalog.rs -->",
                "<!-- end of settings table -->",
            )),
        );
    }

    #[test]
    fn the_example_config_is_the_catalog_and_parses_with_every_key_set() {
        let example = example_config();
        assert_committed("config/reasonix-exporter.toml", &example, None);
        let uncommented: String = example
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| file_keys().any(|k| l.starts_with(&format!("{k} = "))))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(uncommented.lines().count(), file_keys().count());
        let config = super::super::file::parse_config(&uncommented).unwrap();
        for key in file_keys() {
            assert!(config.get(key).is_some(), "{key} is not read from the file");
        }
    }

    #[test]
    fn the_endpoints_texts_say_its_defaults() {
        for text in [
            OTLP_ENDPOINT.default_text(),
            OTLP_ENDPOINT.help_text(),
            OTLP_ENDPOINT.example.unwrap().0.into(),
        ] {
            assert!(text.contains(GRPC_ENDPOINT), "{text}");
        }
        assert!(OTLP_ENDPOINT.example.unwrap().0.contains(OTLP_ENDPOINT.value));
    }

    #[test]
    fn every_flag_and_key_is_unique() {
        let mut flags: Vec<_> = SETTINGS.iter().filter_map(|d| d.flag.map(|f| f.0)).collect();
        let mut keys: Vec<_> = SETTINGS.iter().map(|d| d.key).collect();
        let (n_flags, n_keys) = (flags.len(), keys.len());
        flags.sort();
        flags.dedup();
        keys.sort();
        keys.dedup();
        assert_eq!((flags.len(), keys.len()), (n_flags, n_keys));
    }
}

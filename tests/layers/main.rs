//! The shape of the code, checked: data flows one way through `src/` (no module uses one above
//! it, so there is no cycle), no source file holds more than 500 lines outside its tests, and no
//! function outside tests is longer than 80 lines. docs/design.md describes the layers. And of the
//! tests: one that may skip is `#[ignore]`d with what it needs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod store_imports;

/// The top-level modules, lowest first: each may use only those before it.
const LAYERS: [&str; 21] = [
    "bytes",
    "inert_text",
    "events",
    "paths",
    "descriptors",
    "own_files",
    "catalog",
    "ledger",
    "series",
    "store",
    "delivery",
    "upgrade",
    "ingest",
    "status_file",
    "export",
    "history",
    "sandbox",
    "settings",
    "daemon",
    "rules",
    "cli",
];

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's lines up to its `#[cfg(test)] mod tests` (its tests are not counted).
fn code_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests {"))
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

fn all_sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            (rel, path, text)
        })
        .collect()
}

#[test]
fn no_module_uses_one_above_it() {
    let mut wrong = Vec::new();
    for (rel, _, text) in all_sources() {
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(rank) = LAYERS.iter().position(|l| *l == top) else {
            assert!(
                ["lib", "main"].contains(&top),
                "src/{rel}: a top-level module missing from LAYERS (and from docs/design.md)"
            );
            continue;
        };
        // Test modules inside a file may reach anywhere.
        let test_module_at = |at: usize| text[..at].contains("#[cfg(test)]\nmod tests {");
        for (at, _) in text.match_indices("crate::") {
            let used: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let Some(used_rank) = LAYERS.iter().position(|l| *l == used) else {
                continue;
            };
            if used_rank > rank && !test_module_at(at) {
                wrong.push(format!("src/{rel} uses crate::{used}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules using one above them:\n{}",
        wrong.join("\n")
    );
}

/// The rooms inside the store and around it, each the only place that knows its concern:
/// sled and the store's keys (`store/engine/`), the stored byte layouts' reader (`bytes.rs`),
/// old formats (`store/upgrade/`, `upgrade/`), and the log (`events/`, each event with an
/// `event` name).
#[test]
fn each_concern_stays_in_its_room() {
    let mut wrong = Vec::new();
    for (rel, _, text) in all_sources() {
        let code = code_lines(&text).join("\n");
        let in_engine = rel.starts_with("store/engine/");
        let rules: [(&str, &str, bool); 3] = [
            ("sled::", "sled outside store/engine/", !in_engine),
            ("scan_prefix(", "a scan of sled outside store/engine/", !in_engine),
            // The frame of the record files cuts off its checksum; every field is read by `bytes.rs`.
            (
                "split_at_checked(",
                "a byte reader outside bytes.rs",
                rel != "bytes.rs" && rel != "store/records/frame.rs",
            ),
        ];
        for (needle, what, outside) in rules {
            if outside && code.contains(needle) {
                wrong.push(format!("src/{rel}: {what} ({needle})"));
            }
        }
        // `store/formats.rs` holds the golden bytes of every layout, old ones included (tests only).
        let upgrade_room =
            rel.starts_with("upgrade/") || rel.starts_with("store/upgrade/") || rel == "store/formats.rs";
        for line in code
            .lines()
            .filter(|l| l.contains("fn ") && l.contains("_before_"))
        {
            if !upgrade_room {
                wrong.push(format!(
                    "src/{rel}: an old format outside the upgrade rooms: {}",
                    line.trim()
                ));
            }
        }
        if !rel.starts_with("events/") && code.contains("tracing::") {
            wrong.push(format!("src/{rel}: a log call outside src/events/ (tracing::)"));
        }
        for (at, _) in code.match_indices("tracing::") {
            let call: String = code[at..].chars().take(160).collect();
            if level_of(&call).is_some() && event_name(&call).is_none() {
                wrong.push(format!(
                    "src/{rel}: a log event without an `event` name: {}",
                    call.lines().next().unwrap_or("")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "out of their rooms:\n{}", wrong.join("\n"));
}

/// Counting apart from delivery (docs/design.md, "Layout"): `impl Store` is the count store's,
/// in `store/` alone. Each leg talks to `Delivery` through its own calls: the OTLP leg, which
/// never calls the count store, begins its next export at one place (`next_export`, which reads
/// what was counted) and settles the collector's answer (`settle`); `/metrics` asks what a scrape
/// may serve (`serve`, and `serve_last` at a clean stop).
#[test]
fn each_leg_talks_to_delivery_at_one_place() {
    const PUSH: &[&str] = &["next_export(", "settle("];
    const PULL: &[&str] = &["serve(", "serve_last("];
    let mut wrong = Vec::new();
    let mut begun = 0;
    for (rel, _, text) in all_sources() {
        let code = store_imports::without_comments(&code_lines(&text));
        if code.contains("impl Store {") && !rel.starts_with("store/") {
            wrong.push(format!("src/{rel}: `impl Store` outside the count store"));
        }
        let leg = match rel.as_str() {
            r if r.starts_with("export/") || r == "daemon/exports.rs" => PUSH,
            "daemon/publish.rs" => PULL,
            _ => continue,
        };
        let first_line = |at: usize| code[at..].lines().next().unwrap_or("").to_string();
        if leg == PUSH {
            for at in calls_on(&code, "store.") {
                wrong.push(format!(
                    "src/{rel}: the export path calls the count store: {}",
                    first_line(at)
                ));
            }
        }
        for at in calls_on(&code, "delivery.") {
            let call = &code[at + "delivery.".len()..];
            match leg.iter().find(|method| call.starts_with(**method)) {
                Some(&"next_export(") => begun += 1,
                Some(_) => {}
                None => wrong.push(format!(
                    "src/{rel}: a leg calls delivery elsewhere: {}",
                    first_line(at)
                )),
            }
        }
    }
    assert_eq!(begun, 1, "the OTLP leg begins its exports at one place");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Where `code` calls a method on the variable `name` ends in (`store.`), not on a field or a
/// word of a longer name (`self.store.`, `reasonix_exporter.store.size`).
fn calls_on<'a>(code: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(name).filter_map(move |(at, _)| {
        let before = code[..at].chars().next_back();
        (!before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')).then_some(at)
    })
}

/// The level of a `tracing::` call that makes an event.
fn level_of(call: &str) -> Option<&'static str> {
    let rest = call.strip_prefix("tracing::")?;
    ["error", "warn", "info", "debug", "trace"]
        .into_iter()
        .find(|level| rest.starts_with(&format!("{level}!(")))
}

/// The `event = "…"` name an event call starts with.
fn event_name(call: &str) -> Option<&str> {
    let (_, args) = call.split_once('(')?;
    let rest = args.trim_start().strip_prefix("event = \"")?;
    rest.split_once('"').map(|(name, _)| name)
}

/// docs/design.md's "Logs" table lists every event src/events/ has, at the levels it has, and
/// no other.
#[test]
fn the_log_table_in_the_design_is_the_events_module() {
    let mut said: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for (rel, _, text) in all_sources() {
        for (at, _) in text.match_indices("tracing::") {
            let call: String = text[at..].chars().take(160).collect();
            if let (Some(level), Some(name), true) =
                (level_of(&call), event_name(&call), rel.starts_with("events/"))
            {
                said.entry(name.to_string()).or_default().insert(level);
            }
        }
    }
    let said: BTreeMap<String, String> = said
        .into_iter()
        .map(|(name, levels)| (name, levels.into_iter().collect::<Vec<_>>().join(", ")))
        .collect();
    let design =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md")).unwrap();
    let logs = design
        .split("\n## Logs\n")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let table: BTreeMap<String, String> = logs
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    assert!(said.len() > 40, "the events were found: {said:?}");
    assert_eq!(
        table, said,
        "docs/design.md \"Logs\" (left) against src/events/ (right)"
    );
}

#[test]
fn files_and_functions_stay_small() {
    let mut wrong = Vec::new();
    for (rel, _, text) in all_sources() {
        let lines = code_lines(&text);
        if lines.len() > MAX_FILE_LINES {
            wrong.push(format!("src/{rel}: {} lines outside tests", lines.len()));
        }
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let trimmed = line.trim_start();
            let starts_fn = [
                "fn ",
                "pub fn ",
                "pub(super) fn ",
                "pub(crate) fn ",
                "async fn ",
                "pub async fn ",
                "pub(super) async fn ",
            ]
            .iter()
            .any(|p| trimmed.starts_with(p));
            if starts_fn && !line.trim_end().ends_with(';') {
                let indent = &line[..line.len() - trimmed.len()];
                let close = format!("{indent}}}");
                let end = (i + 1..lines.len())
                    .find(|&j| lines[j].trim_end() == close)
                    .unwrap_or(i);
                if end + 1 - i > MAX_FN_LINES {
                    wrong.push(format!(
                        "src/{rel}:{}: a function of {} lines",
                        i + 1,
                        end + 1 - i
                    ));
                }
                i = end;
            }
            i += 1;
        }
    }
    assert!(wrong.is_empty(), "over the limits:\n{}", wrong.join("\n"));
}

/// The tests are held to the size rule of `src/`: no file of `tests/` holds more than 500 lines
/// (a test binary too long for one file is a folder, `tests/NAME/main.rs` and its modules).
#[test]
fn test_files_stay_small() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"), &mut files);
    files.sort();
    let long: Vec<String> = files
        .iter()
        .map(|path| (path, std::fs::read_to_string(path).unwrap().lines().count()))
        .filter(|(_, lines)| *lines > MAX_FILE_LINES)
        .map(|(path, lines)| format!("{}: {lines} lines", path.display()))
        .collect();
    assert!(files.len() > 40, "the test files were found: {files:?}");
    assert!(long.is_empty(), "over the limit:\n{}", long.join("\n"));
}

/// What a test calls when what it needs (a server, a tool, root, a kernel feature) may be
/// missing, so that it returns having checked nothing.
const MAY_SKIP: [&str; 11] = [
    "tools::skip(",
    "tools::built(",
    "tools::installed(",
    "strace_installed(",
    ".traced(",
    "with_faked_clock(",
    "Prometheus::start(",
    "Prometheus::scraping(",
    "Mount::tmpfs(",
    "as_nobody(",
    "kernel_has_landlock(",
];

/// The top-level functions of a test file: their attributes, name and body.
fn functions(text: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("fn ").or_else(|| line.strip_prefix("pub fn ")) else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let attrs = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#["))
            .copied()
            .collect();
        let end = lines[i..]
            .iter()
            .position(|l| *l == "}")
            .map_or(lines.len(), |n| i + n);
        out.push((attrs, name, lines[i..end].join("\n")));
    }
    out
}

/// A plain `cargo test` reports a test that returned early as `ok`: one that may skip is
/// `#[ignore]`d with what it needs, and `.ci/run` runs it with `--include-ignored`.
#[test]
fn a_test_that_may_skip_is_ignored_with_what_it_needs() {
    let mut bare = Vec::new();
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")).unwrap() {
        let path = entry.unwrap().path();
        // A test binary is `tests/NAME.rs`, or `tests/NAME/main.rs` with its modules beside it,
        // read as one text: a helper in `main.rs` may skip for a test in a module.
        let text = if path.join("main.rs").is_file() {
            let mut files = Vec::new();
            sources(&path, &mut files);
            files.sort();
            files
                .iter()
                .map(|f| std::fs::read_to_string(f).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("layers.rs") {
            std::fs::read_to_string(&path).unwrap()
        } else {
            continue;
        };
        let fns = functions(&text);
        let mut skipping: Vec<&str> = Vec::new();
        loop {
            let more: Vec<&str> = fns
                .iter()
                .filter(|(_, name, body)| {
                    !skipping.contains(&name.as_str())
                        && (MAY_SKIP.iter().any(|call| body.contains(call))
                            || skipping.iter().any(|helper| body.contains(&format!("{helper}("))))
                })
                .map(|(_, name, _)| name.as_str())
                .collect();
            if more.is_empty() {
                break;
            }
            skipping.extend(more);
        }
        for (attrs, name, _) in &fns {
            if attrs.contains("#[test]")
                && skipping.contains(&name.as_str())
                && !attrs.contains("#[ignore = \"needs ")
            {
                bare.push(format!("{}: {name}", path.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "tests that may skip, not #[ignore = \"needs …\"]: {bare:#?}"
    );
}

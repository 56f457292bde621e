//! Inside `store/`, each pair of files has one direction of import.

use super::*;

/// Inside `store/`, the files have an order in which each imports only those before it, directly
/// or through a name a `mod.rs` passes on (`pub use count_store::Store`): no circle, not even of
/// two; and a `mod.rs` only passes names on, so that no import runs back up to it.
#[test]
fn the_stores_files_import_in_one_direction() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut files = Vec::new();
    sources(&store, &mut files);
    let module_of = |path: &Path| -> Vec<String> {
        let rel = path.strip_prefix(&store).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        parts
    };
    // A file's own tests (`mod tests`, last in a file) are left out: their `super::*` is the file.
    let texts: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            (module_of(f), without_comments(&code_lines(code)))
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = texts.iter().map(|(m, _)| m.clone()).collect();
    // The names each `mod.rs` takes from its children, and the file each comes from.
    let mut passed_on: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    for (me, code) in texts
        .iter()
        .filter(|(m, _)| m.is_empty() || modules.iter().any(|o| o.starts_with(m) && o != m))
    {
        for line in code.lines() {
            let Some(path) = line
                .trim()
                .strip_prefix("pub use ")
                .or_else(|| line.trim().strip_prefix("use "))
            else {
                continue;
            };
            for names in paths_in(path) {
                let Some(last) = names.last() else { continue };
                let from = resolve(&modules, &passed_on, me.clone(), &names);
                if from.len() > me.len() {
                    passed_on.insert((me.clone(), last.clone()), from);
                }
            }
        }
    }
    let mut edges = BTreeSet::new();
    let mut up = BTreeSet::new();
    for (me, code) in &texts {
        for (base, names) in uses_of_the_store(me, code) {
            let target = resolve(&modules, &passed_on, base, &names);
            if me.starts_with(&target) && &target != me {
                up.insert(format!(
                    "store/{} imports {}/mod.rs",
                    me.join("/"),
                    ["store"]
                        .iter()
                        .copied()
                        .chain(target.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join("/")
                ));
            } else if !target.starts_with(me) {
                edges.insert((me.join("/"), target.join("/")));
            }
        }
    }
    assert!(
        up.is_empty(),
        "imports that run back up to what a mod.rs defines:\n{}",
        up.iter().cloned().collect::<Vec<_>>().join("\n")
    );
    let circle = a_circle(&edges);
    assert!(
        circle.is_empty(),
        "the store's files import in a circle: store/{}",
        circle.join(" -> store/")
    );
    assert!(edges.len() > 20, "the store's imports were found: {edges:?}");
    let both: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("store/{a} and store/{b}"))
        .collect();
    assert!(
        both.is_empty(),
        "files that import each other:\n{}",
        both.join("\n")
    );
}

/// A circle of imports among `edges` (file to file), as the files along it; empty when there is
/// none, so that the files have an order in which each imports only those before it.
fn a_circle(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    fn visit(
        file: &str,
        edges: &BTreeSet<(String, String)>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|f| f == file) {
            let mut circle = path[at..].to_vec();
            circle.push(file.to_string());
            return Some(circle);
        }
        if done.contains(file) {
            return None;
        }
        path.push(file.to_string());
        for (_, to) in edges.iter().filter(|(from, _)| from == file) {
            if let Some(circle) = visit(to, edges, done, path) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(file.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for (from, _) in edges {
        if let Some(circle) = visit(from, edges, &mut done, &mut Vec::new()) {
            return circle;
        }
    }
    Vec::new()
}

/// `code` without its comment lines (a doc link is not an import).
pub(crate) fn without_comments(code: &[&str]) -> String {
    let kept: Vec<&str> = code
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    kept.join("\n")
}

/// The file module `names` leads to from `base`: through modules, and through names a `mod.rs`
/// passes on.
fn resolve(
    modules: &BTreeSet<Vec<String>>,
    passed_on: &BTreeMap<(Vec<String>, String), Vec<String>>,
    base: Vec<String>,
    names: &[String],
) -> Vec<String> {
    let mut target = base;
    for name in names {
        let deeper = [target.clone(), vec![name.clone()]].concat();
        if modules.contains(&deeper) {
            target = deeper;
        } else if let Some(from) = passed_on.get(&(target.clone(), name.clone())) {
            target = from.clone();
        } else {
            break;
        }
    }
    target
}

/// Every path into the store's modules that `code` (of the module `me`) names: where it starts
/// (`super::`, as often as it is written, or `crate::store::`), and the names after it, one path
/// for each item of a `{…}` list.
fn uses_of_the_store(me: &[String], code: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    for (at, _) in code
        .match_indices("super::")
        .chain(code.match_indices("crate::store::"))
    {
        if code[..at].ends_with("super::") {
            continue; // the rest of a `super::super::` path, read from its start
        }
        let mut base = me.to_vec();
        let mut rest = &code[at..];
        if let Some(after) = rest.strip_prefix("crate::store::") {
            base.clear();
            rest = after;
        }
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        for names in paths_in(rest) {
            found.push((base.clone(), names));
        }
    }
    found
}

/// The paths a `use` path (or a path in code) at the start of `text` names: `a::b::C` is one,
/// `a::{b::C, D}` two.
fn paths_in(text: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = text;
    loop {
        if rest.starts_with('{') {
            return braced_items(rest)
                .into_iter()
                .flat_map(|item| paths_in(item.trim()))
                .map(|names| [prefix.clone(), names].concat())
                .collect();
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            return vec![prefix];
        }
        rest = &rest[name.len()..];
        prefix.push(name);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => return vec![prefix],
        }
    }
}

/// The items of the `{…}` list `text` starts with, split at its own commas.
fn braced_items(text: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 1);
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.push(&text[start..at]);
                    return items;
                }
            }
            ',' if depth == 1 => {
                items.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items
}

//! The engine's modules stand on floors: no module reaches, through any
//! chain of `crate::` paths, back to itself. A circle here is how the old
//! `Inner` knot grew, so a new one fails this test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module (file stem) each name re-exported at the crate root comes from.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in lib.split(';') {
        let statement = statement.trim();
        let Some(rest) = statement.strip_prefix("pub use ") else { continue };
        let Some((module, items)) = rest.split_once("::") else { continue };
        for item in items.trim_matches(|c| c == '{' || c == '}' || char::is_whitespace(c)).split(',') {
            let item = item.trim();
            if !item.is_empty() {
                exports.insert(item.to_owned(), module.trim().to_owned());
            }
        }
    }
    exports
}

/// The first identifier of each top-level item of a `{…}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(group[start..i].to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    heads.push(group[start..].to_owned());
    heads
        .iter()
        .filter_map(|h| {
            let ident: String = h.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            (!ident.is_empty()).then_some(ident)
        })
        .collect()
}

/// The modules a file names through `crate::…`.
fn references(source: &str, modules: &BTreeSet<String>, exports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            names.extend(group_heads(&group[..end]));
        } else {
            names.extend(group_heads(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("")));
        }
    }
    names
        .into_iter()
        .filter_map(|name| if modules.contains(&name) { Some(name) } else { exports.get(&name).cloned() })
        .collect()
}

fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let exports = root_exports(&read(&src.join("lib.rs")));
    let files: Vec<_> = std::fs::read_dir(src)
        .expect("the engine's src")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "rs") && !path.ends_with("lib.rs"))
        .collect();
    let modules: BTreeSet<String> =
        files.iter().filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned())).collect();
    files
        .iter()
        .map(|path| {
            let module = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let mut uses = references(&read(path), &modules, &exports);
            uses.remove(&module);
            (module, uses)
        })
        .collect()
}

#[test]
fn engine_modules_form_no_import_circle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 10, "the engine's modules were read: {graph:?}");
    assert!(graph["drain"].contains("run") && graph["run"].contains("server_core"), "paths were followed: {graph:?}");
    assert_eq!(circle(&graph), None, "modules of a2-engine import each other in a circle");
}

#[test]
fn a_circle_is_found() {
    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    graph.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circle(&graph).map(|c| c.len()), Some(4));
    let modules = BTreeSet::from(["x".to_owned(), "y".to_owned()]);
    let exports = BTreeMap::from([("Thing".to_owned(), "y".to_owned())]);
    let found = references("use crate::{x::{A, B}, Thing};\nlet _ = crate::x::f();", &modules, &exports);
    assert_eq!(found, BTreeSet::from(["x".to_owned(), "y".to_owned()]));
}

//! The crates' floors, read from their manifests: the engine and the
//! operator reach no store backend, not even through another crate, so a
//! backend is added in the registry alone (as sqlx's core knows no driver).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// Every workspace crate's normal dependencies on other workspace crates.
fn workspace_graph() -> HashMap<String, Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut manifests = vec![root.join("src-tauri/Cargo.toml")];
    let crates = std::fs::read_dir(root.join("crates")).unwrap_or_else(|e| panic!("crates/: {e}"));
    manifests.extend(crates.flatten().map(|entry| entry.path().join("Cargo.toml")));
    let mut graph = HashMap::new();
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let mut name = None;
        let mut section = String::new();
        let mut dependencies = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_owned();
                continue;
            }
            let key = line.split(['=', '.', ' ']).next().unwrap_or("");
            if section == "[package]" && key == "name" {
                name = line.split('"').nth(1).map(str::to_owned);
            }
            // Only what the crate's own code links: dev-dependencies are its tests'.
            let normal =
                section == "[dependencies]" || section.ends_with(".dependencies]") && !section.contains("dev-");
            if normal && key.starts_with("a2-") {
                dependencies.push(key.to_owned());
            }
        }
        let name = name.unwrap_or_else(|| panic!("{} names no package", manifest.display()));
        graph.insert(name, dependencies);
    }
    graph
}

fn reachable(graph: &HashMap<String, Vec<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut next = vec![from.to_owned()];
    while let Some(name) = next.pop() {
        for dependency in graph.get(&name).into_iter().flatten() {
            if seen.insert(dependency.clone()) {
                next.push(dependency.clone());
            }
        }
    }
    seen
}

#[test]
fn engine_and_operator_reach_no_store_backend() {
    let graph = workspace_graph();
    let backends = ["a2-store-registry", "a2-store-sql", "a2-store-sqlite", "a2-store-postgres"];
    for upper in ["a2-engine", "a2-operator"] {
        assert!(graph.contains_key(upper), "{upper} is a workspace crate");
        let reached = reachable(&graph, upper);
        let named: Vec<_> = backends.iter().filter(|b| reached.contains(**b)).collect();
        assert!(named.is_empty(), "{upper} reaches {named:?}: open stores through a StoreOpener instead");
    }
    // The shells' command list is where stores are opened by URL.
    assert!(reachable(&graph, "a2-studio-api").contains("a2-store-registry"));
}

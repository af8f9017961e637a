//! Every scenario the suite defines is stamped for every backend: a
//! `pub async fn` scenario missing from `conformance_suite!` would pass
//! silently by never running, and a backend that does not stamp the suite
//! would run none of it.

use std::collections::BTreeSet;
use std::path::Path;

/// Scenarios a backend's own test file runs instead of the macro, and why.
const RUN_BY_HAND: &[(&str, &str)] = &[(
    "consumer_totals_in_chunks_match_the_whole",
    "compares two stores over one database: SQLite's and Postgres's own tests open the pair",
)];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names of `pub async fn NAME(factory: &dyn StoreFactory…) {` in the suite's sources.
fn scenarios(src: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = read(&path);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("pub async fn ") {
            rest = &rest[at + "pub async fn ".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let (signature, after) = rest.split_once(')').unwrap_or((rest, ""));
            // A scenario returns nothing; a helper (`open`) returns what it made.
            if signature.contains("factory: &dyn StoreFactory") && after.trim_start().starts_with('{') {
                names.insert(name);
            }
        }
    }
    names
}

/// The identifiers listed inside `conformance_suite!`'s stamps.
fn stamped(lib: &str) -> BTreeSet<String> {
    let start = lib.find("macro_rules! conformance_suite").unwrap_or_else(|| panic!("no conformance_suite! in lib.rs"));
    let end = lib[start..].find("macro_rules! __stamp").map_or(lib.len(), |e| start + e);
    lib[start..end]
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| word.contains('_') && word.chars().all(|c| c.is_lowercase() || c == '_' || c.is_numeric()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_scenario_is_stamped_for_every_backend() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let defined = scenarios(&root.join("src"));
    assert!(defined.len() > 80, "the scenarios were found: {}", defined.len());
    let stamped = stamped(&read(&root.join("src/lib.rs")));
    let by_hand: BTreeSet<String> = RUN_BY_HAND.iter().map(|(name, _)| (*name).to_owned()).collect();
    let missing: Vec<&String> = defined.iter().filter(|n| !stamped.contains(*n) && !by_hand.contains(*n)).collect();
    assert!(missing.is_empty(), "scenarios defined but not stamped by conformance_suite!: {missing:?}");
    let sources: String = std::fs::read_dir(root.join("src"))
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| read(&path))
        .collect();
    for (name, _) in RUN_BY_HAND {
        assert!(
            sources.contains(&format!("pub async fn {name}(")),
            "{name} is listed as run by hand but is not defined"
        );
    }

    let crates = root.join("..");
    for (backend, file) in [
        ("memory", "a2-conformance/tests/conformance.rs"),
        ("sqlite", "a2-store-sqlite/tests/conformance.rs"),
        ("postgres", "a2-store-postgres/tests/conformance.rs"),
        ("postgres_pooled", "a2-store-postgres/tests/conformance_pooled.rs"),
    ] {
        let text = read(&crates.join(file));
        assert!(
            text.contains(&format!("conformance_suite!({backend},")),
            "{file} does not stamp the suite for {backend}"
        );
    }
    for (name, _) in RUN_BY_HAND {
        for tests in ["a2-store-sqlite/tests", "a2-store-postgres/tests"] {
            let dir = crates.join(tests);
            let runs = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .any(|path| path.extension().is_some_and(|e| e == "rs") && read(&path).contains(name));
            assert!(runs, "no test of {tests} runs {name}");
        }
    }
}

/// The pooled stamp (Postgres through PgBouncer) runs the whole suite, as the
/// direct one does: its file stamps `conformance_suite!` once, with the same
/// pace, and stamps nothing by hand beside it (a list of its own would let a
/// new scenario miss the pooled run, where transaction pooling breaks what a
/// direct connection forgives).
#[test]
fn pooled_stamp_runs_every_scenario() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let stamp_of = |file: &str| -> Vec<String> {
        let text = read(&crates.join(file));
        assert!(!text.contains("__stamp"), "{file} stamps scenarios by hand");
        text.lines().filter(|l| l.contains("conformance_suite!(")).map(|l| l.trim().to_owned()).collect()
    };
    let direct = stamp_of("a2-store-postgres/tests/conformance.rs");
    let pooled = stamp_of("a2-store-postgres/tests/conformance_pooled.rs");
    assert_eq!(pooled, ["a2_conformance::conformance_suite!(postgres_pooled, postgres_pooled, realtime);"]);
    assert_eq!(direct.len(), 1, "{direct:?}");
    let pace = |stamp: &str| stamp.rsplit(',').next().map(|p| p.trim_end_matches(");").trim().to_owned());
    assert_eq!(pace(&pooled[0]), pace(&direct[0]), "the pooled run keeps the direct run's pace");
}

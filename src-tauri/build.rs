//! Tauri's build step reads the root `tauri.conf.json`. `generate_context!`
//! needs `ui/dist`: when Vite has not run yet, a placeholder page lets
//! `cargo check`/`test` work without Node (the real UI is built by xtask).
//! Every Studio command gets an `allow-` permission of its own (from the
//! one command list), so the window may call only what its capability names.

include!("../crates/a2-studio-api/src/command_list.rs");

macro_rules! command_names {
    ($( $name:ident($request:ty) -> $response:ty; )*) => {
        &[$(stringify!($name)),*]
    };
}

/// The commands the shell serves: with an app manifest, none is allowed
/// unless a capability grants its `allow-` permission.
const COMMANDS: &[&str] = studio_commands!(command_names);

fn main() {
    let dist = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/dist"));
    if !dist.join("index.html").exists() {
        println!(
            "cargo:warning=ui/dist is missing: embedding a placeholder page (run `cargo xtask studio` to build the UI)"
        );
        let _ = std::fs::create_dir_all(dist);
        let _ = std::fs::write(
            dist.join("index.html"),
            "<!doctype html><title>A2 Studio</title><p>The UI is not built: run <code>cargo xtask studio</code>.</p>",
        );
    }
    println!("cargo:rerun-if-changed=../ui/dist/index.html");
    println!("cargo:rerun-if-changed=../crates/a2-studio-api/src/command_list.rs");
    let manifest = tauri_build::AppManifest::new().commands(COMMANDS);
    tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json").app_manifest(manifest))
        .unwrap_or_else(|error| panic!("tauri build step failed: {error:#}"));
}

//! What the `a2` binary's tests share: running it, and the clusters they start.

use std::path::Path;
use std::process::Command;

#[path = "../../../../tests/src/cluster.rs"]
#[allow(dead_code)] // each test file uses the clusters it needs
pub mod cluster;

/// `a2 --store <store> <args>` with its profiles in `config`: (exit code, stdout, stderr).
pub fn a2_with_config(store: &str, args: &[&str], config: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_a2"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env("A2_STUDIO_CONFIG_DIR", config)
        .env_remove("PGSSLMODE")
        .output()
        .unwrap_or_else(|e| panic!("running a2: {e}"));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

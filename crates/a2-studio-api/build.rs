//! The web mode embeds `ui/dist`: rebuild when the UI is rebuilt (Vite
//! names its files by content hash, so new files appear, not only new bytes).
//! Also records the commit built from, for `a2 --version` and `a2-studio --version`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../../ui/dist");
    println!("cargo:rerun-if-env-changed=A2_COMMIT");
    let commit = std::env::var("A2_COMMIT").ok().or_else(git_commit).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=A2_COMMIT={commit}");
}

/// The checkout's commit, `+dirty` never added (a build is of what was committed
/// plus whatever the worktree holds; the commit names where it stands). Reruns
/// when HEAD moves.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let dir = git(&["rev-parse", "--absolute-git-dir"])?;
    println!("cargo:rerun-if-changed={}", Path::new(&dir).join("HEAD").display());
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!("cargo:rerun-if-changed={}", Path::new(&dir).join(reference).display());
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}

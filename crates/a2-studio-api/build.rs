//! The web mode embeds `ui/dist`: rebuild when the UI is rebuilt (Vite
//! names its files by content hash, so new files appear, not only new bytes).

fn main() {
    println!("cargo:rerun-if-changed=../../ui/dist");
}

//! `sqlx::migrate!` embeds the migrations when this crate compiles, and on
//! stable Rust nothing tells cargo to compile it again when one changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}

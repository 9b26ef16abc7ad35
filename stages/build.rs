//! Fingerprints this crate's sources so every cache key of its kinds records the code that
//! produced it (see `prefflow_engine::code`; `CODE` in `src/lib.rs` adds the engine's).
//! Everything under `src/` counts, so a file a kind embeds there counts too.

#[path = "../engine/fingerprint.rs"]
mod fingerprint;

fn main() {
    fingerprint::emit("PREFFLOW_SOURCES_HASH", &["src", "Cargo.toml", "build.rs"]);
}

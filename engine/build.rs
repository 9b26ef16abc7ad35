//! Fingerprints the engine's sources (and the workspace's locked dependencies) so every cache
//! key records the code that produced it: see `src/code.rs`.

#[path = "fingerprint.rs"]
mod fingerprint;

fn main() {
    fingerprint::emit(
        "PREFFLOW_SOURCES_HASH",
        &["src", "Cargo.toml", "build.rs", "fingerprint.rs"],
    );
    fingerprint::emit("PREFFLOW_LOCK_HASH", &["../Cargo.lock"]);
}

//! Build-time source fingerprints, shared by the build scripts of every crate that defines stage
//! kinds (`engine/build.rs`, `stages/build.rs` includes this file by path).
//!
//! A fingerprint hashes the relative path and the bytes of every file under the given roots, in
//! sorted order, so it changes exactly when a file is added, removed, renamed or edited. It is
//! emitted as a `rustc-env` variable the crate reads with `env!` (see `prefflow_engine::code`).
//! The hash is std's SipHash run twice with different prefixes (128 bits): the build script needs
//! no dependency, and a toolchain whose hasher differs only invalidates caches, never reuses them.

use std::hash::{Hash, Hasher};
use std::path::Path;

/// Hashes `roots` (relative to the crate's directory) into `rustc-env` variable `var`, and asks
/// cargo to re-run the build script when any of them changes.
pub fn emit(var: &str, roots: &[&str]) {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    for root in roots {
        println!("cargo:rerun-if-changed={root}");
    }
    println!(
        "cargo:rustc-env={var}={}",
        fingerprint(Path::new(&dir), roots)
    );
}

/// The hash (32 hex digits) of every file under `roots`, relative to `dir`: paths and contents.
pub fn fingerprint(dir: &Path, roots: &[&str]) -> String {
    let mut files = Vec::new();
    for root in roots {
        collect(&dir.join(root), root, &mut files);
    }
    files.sort();
    let halves = [b"prefflow-code-a", b"prefflow-code-b"].map(|salt| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        for rel in &files {
            rel.hash(&mut h);
            match std::fs::read(dir.join(rel)) {
                Ok(bytes) => bytes.hash(&mut h),
                Err(e) => e.kind().to_string().hash(&mut h),
            }
        }
        h.finish()
    });
    format!("{:016x}{:016x}", halves[0], halves[1])
}

/// Relative paths (with `/`) of every file under `path`, which is `rel` under the crate.
fn collect(path: &Path, rel: &str, out: &mut Vec<String>) {
    if path.is_file() {
        out.push(rel.replace('\\', "/"));
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        collect(&entry.path(), &format!("{rel}/{name}"), out);
    }
}

//! Code is part of the key: the build-time fingerprints of the crates a stage kind is made of.
//!
//! Every crate that defines kinds has a build script (see `engine/fingerprint.rs`) that hashes
//! its sources into the compile-time variable `PREFFLOW_SOURCES_HASH`, and declares a
//! [`CrateCode`] static naming the workspace crates it depends on. A kind registered from that
//! crate (see [`crate::Registry::defined_in`]) carries the flattened [`CodeFingerprint`] in its
//! recipe key, so pulling a fix re-runs what the fix can change, and `plan`/`why` say
//! "code changed" and which crate. `Kind::VERSION` stays for deliberate semantic bumps; early
//! cutoff keeps a code change that leaves an output identical from re-running what reads it.
//!
//! The grain is the crate: any edit under `src/` of the crate or of a crate it depends on
//! (including comments and tests) changes the fingerprint. That errs on the side of re-running.

use std::collections::BTreeMap;

/// Crate name → source hash, for a kind's crate and every workspace crate it depends on; part of
/// every recipe key.
pub type CodeFingerprint = BTreeMap<String, String>;

/// The code of one crate: its own sources' hash and the crates it depends on.
#[derive(Debug)]
pub struct CrateCode {
    /// The crate's (or pseudo-crate's) name, as `why` shows it.
    pub name: &'static str,
    /// Hash of its sources, computed by its build script.
    pub sources: &'static str,
    /// The workspace crates it depends on (their code is part of this one's).
    pub deps: &'static [&'static CrateCode],
}

impl CrateCode {
    /// This crate's hash and, transitively, its dependencies'.
    pub fn fingerprint(&self) -> CodeFingerprint {
        let mut out = CodeFingerprint::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut CodeFingerprint) {
        out.insert(self.name.to_string(), self.sources.to_string());
        for dep in self.deps {
            dep.collect(out);
        }
    }
}

/// The workspace's locked third-party dependencies (`Cargo.lock`): a dependency upgrade can
/// change outputs as surely as an edit.
pub static LOCKED_DEPENDENCIES: CrateCode = CrateCode {
    name: "Cargo.lock",
    sources: env!("PREFFLOW_LOCK_HASH"),
    deps: &[],
};

/// The engine's code: the generic kinds' fingerprint, and part of every other crate's.
pub static CODE: CrateCode = CrateCode {
    name: env!("CARGO_PKG_NAME"),
    sources: env!("PREFFLOW_SOURCES_HASH"),
    deps: &[&LOCKED_DEPENDENCIES],
};

/// The build scripts' hashing, compiled here too so it is tested.
#[cfg(test)]
#[path = "../fingerprint.rs"]
#[allow(dead_code)]
mod fingerprint;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_fingerprint_changes_with_any_file_edit_add_or_rename() {
        let dir = std::env::temp_dir().join(format!("prefflow-code-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        write("src/lib.rs", "pub fn a() {}");
        write("src/kinds/b.rs", "pub fn b() {}");
        write("Cargo.toml", "[package]");
        let roots = ["src", "Cargo.toml"];
        let first = fingerprint::fingerprint(&dir, &roots);
        assert_eq!(first.len(), 32);
        assert_eq!(first, fingerprint::fingerprint(&dir, &roots), "stable");
        write("src/kinds/b.rs", "pub fn b() { }");
        let edited = fingerprint::fingerprint(&dir, &roots);
        assert_ne!(first, edited, "an edit in a subdirectory counts");
        write("src/kinds/b.rs", "pub fn b() {}");
        assert_eq!(
            first,
            fingerprint::fingerprint(&dir, &roots),
            "reverting restores it"
        );
        std::fs::rename(dir.join("src/kinds/b.rs"), dir.join("src/kinds/c.rs")).expect("mv");
        assert_ne!(
            first,
            fingerprint::fingerprint(&dir, &roots),
            "a rename counts"
        );
        write("src/kinds/b.rs", "pub fn b() {}");
        assert_ne!(
            first,
            fingerprint::fingerprint(&dir, &roots),
            "an added file counts"
        );
        assert_ne!(
            first,
            fingerprint::fingerprint(&dir, &["src"]),
            "every root counts"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_engine_fingerprint_names_its_sources_and_the_lock_file() {
        let fp = CODE.fingerprint();
        assert_eq!(
            fp.keys().map(String::as_str).collect::<Vec<_>>(),
            ["Cargo.lock", "prefflow-engine"]
        );
        assert!(fp.values().all(|h| h.len() == 32), "{fp:?}");
        assert_ne!(fp["Cargo.lock"], fp["prefflow-engine"]);
    }
}

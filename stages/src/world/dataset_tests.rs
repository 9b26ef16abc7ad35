//! Tests over the authored datasets in `datasets/`: every app and persona file loads, and the
//! default world synthesizes.

use std::path::PathBuf;

use super::*;

/// The repository's `datasets/` directory.
pub(crate) fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../datasets")
}

#[test]
fn every_app_file_loads() {
    let cat = match Catalog::load_dir(&datasets().join("apps")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert!(cat.apps.len() >= 4);
}

#[test]
fn every_persona_file_loads() {
    let cat = Catalog::load_dir(&datasets().join("apps")).unwrap();
    let dir = datasets().join("personas");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            if let Err(e) = Persona::load(&path, &cat) {
                panic!("{e}");
            }
            n += 1;
        }
    }
    assert!(n >= 1);
}

/// The default world (maya, 3,051 events, seed 7), built once per test binary.
pub(crate) fn default_world() -> &'static World {
    static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| {
        let d = datasets();
        match World::build(
            &d.join("apps"),
            &d.join("personas/maya.yaml"),
            &HistoryParams::default(),
        ) {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        }
    })
}

#[test]
fn default_world_has_the_paper_shape() {
    let w = default_world();
    assert_eq!(w.catalog.apps.len(), 26);
    let inferable = w
        .persona
        .profile
        .iter()
        .filter(|e| e.source == persona::Source::Inferable)
        .count();
    assert!(
        w.persona.profile.len() >= 92,
        "{} entries",
        w.persona.profile.len()
    );
    assert!(inferable >= 92, "{inferable} inferable entries");
    let dims: std::collections::BTreeSet<&str> = w
        .persona
        .profile
        .iter()
        .map(|e| e.dimension.as_str())
        .collect();
    assert_eq!(dims.len(), 13, "{dims:?}");
    assert_eq!(w.history.len(), 3051);
}

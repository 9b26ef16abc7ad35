//! Shared test fixtures: the default world (maya, 3,051 events, seed 7), built once.

use std::path::PathBuf;

use crate::world::{HistoryParams, World};

/// The repository's `datasets/` directory.
pub fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../datasets")
}

/// The default world, built once per test binary.
pub fn world() -> &'static World {
    static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| {
        let d = datasets();
        World::build(
            &d.join("apps"),
            &d.join("personas/maya.yaml"),
            &HistoryParams::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

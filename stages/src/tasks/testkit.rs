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

/// Every instance of the authored templates over the default world, built once.
pub fn candidates() -> &'static [super::TaskBundle] {
    static ALL: std::sync::OnceLock<Vec<super::TaskBundle>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let dir = datasets().join("tasks");
        let files =
            super::template::load_dir(&dir, "datasets/tasks").unwrap_or_else(|e| panic!("{e}"));
        let domains =
            super::template::load_domains(&dir, "datasets/tasks").unwrap_or_else(|e| panic!("{e}"));
        super::generate::instantiate_all(world(), &files, &domains)
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Runs `future` to completion on a fresh single-threaded runtime: how tests drive the async
/// episode loop, agents and judges (model requests themselves run on the client's I/O runtime).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a test runtime: {e}"))
        .block_on(future)
}

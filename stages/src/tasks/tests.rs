//! Tests over the authored templates in `datasets/tasks/` on the default world.

use std::path::PathBuf;

use super::generate::instantiate_all;
use super::template::load_dir;
use super::testkit::world as default_world;
use super::validate::validate;
use super::world_index::WorldIndex;

fn templates_dir() -> PathBuf {
    super::testkit::datasets().join("tasks")
}

#[test]
fn report_of_every_candidate() {
    let world = default_world();
    let files = match load_dir(&templates_dir(), "datasets/tasks") {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    let all = match instantiate_all(world, &files) {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    };
    let ix = WorldIndex::new(world);
    for b in &all {
        for r in validate(&ix, b) {
            println!(
                "{} [{}] {:?}: {}",
                b.task.task_id,
                r.check.as_str(),
                r.subject,
                r.reason
            );
        }
    }
    println!("{} candidates", all.len());
}

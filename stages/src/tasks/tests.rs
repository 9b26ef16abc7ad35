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
    let n = all.len() as f64;
    let count = |f: &dyn Fn(&super::model::TaskBundle) -> usize| {
        all.iter().map(f).sum::<usize>() as f64 / n
    };
    let by = |b: &super::model::TaskBundle, src: Option<super::model::Source>| {
        b.criteria
            .iter()
            .filter(|c| match src {
                None => c.kind == super::model::CriterionKind::Action,
                Some(s) => c
                    .slot_id
                    .as_deref()
                    .and_then(|id| b.slot(id))
                    .is_some_and(|x| x.source == s),
            })
            .count()
    };
    for b in &all {
        if b.task.task_id.ends_with("-01") {
            let n = all
                .iter()
                .filter(|x| x.task.template == b.task.template)
                .count();
            println!(
                "T {:28} n={} a={} i={} q={} cross={} {}",
                b.task.template,
                n,
                by(b, None),
                by(b, Some(super::model::Source::Inferable)),
                by(b, Some(super::model::Source::AskOnly)),
                b.task.cross_app,
                b.task.perturbation.as_str()
            );
        }
    }
    println!(
        "{} candidates; action {:.2} inferable {:.2} ask {:.2} cross {:.1}%",
        all.len(),
        count(&|b| by(b, None)),
        count(&|b| by(b, Some(super::model::Source::Inferable))),
        count(&|b| by(b, Some(super::model::Source::AskOnly))),
        100.0 * count(&|b| b.task.cross_app as usize)
    );
}

#[test]
fn scratch_mutations() {
    let world = default_world();
    let files = load_dir(&templates_dir(), "datasets/tasks").unwrap();
    let all = instantiate_all(world, &files).unwrap();
    let ix = WorldIndex::new(world);
    let mut b = all[0].clone();
    println!(
        "{}",
        serde_json::to_string_pretty(&b.task.defaults_solution).unwrap()
    );
    b.task.defaults_solution[0]["args"]["restaurant"] = serde_json::json!("baan-thai");
    for r in validate(&ix, &b) {
        println!(
            "{} [{}] {:?}: {}",
            b.task.task_id,
            r.check.as_str(),
            r.subject,
            r.reason
        );
    }
}

//! The inter-stage tables, each defined once: its columns, their types and meaning, and
//! constants for the column names code refers to. Kinds name these definitions in their
//! `OUTPUT_DEFS` and `INPUTS` (checked by `Plan::build` before anything runs), and
//! `docs/tables.md` is generated from them ([`markdown`], printed by `prefflow tables`; a test
//! fails when the file is stale).

pub mod aggregate;
pub mod episodes;
pub mod judging;
pub mod tasks;
pub mod world;

use prefflow_engine::schema::TableDef;

/// A part of the table documentation: a heading, prose, and the tables it defines.
pub struct Section {
    /// The heading.
    pub title: &'static str,
    /// Markdown before the tables.
    pub intro: &'static str,
    /// The tables, in the order the docs show them.
    pub tables: &'static [&'static TableDef],
    /// Markdown after the tables.
    pub outro: &'static str,
}

/// Every section of `docs/tables.md`, in order.
pub static SECTIONS: &[Section] = &[
    Section {
        title: "World (issue 3)",
        intro: "Written by `build_world`, `import_persona` (`profile_entries`, `history_events`, `summary`) and `build_knowu_world`.",
        tables: &[
            &world::PROFILE_ENTRIES,
            &world::HISTORY_EVENTS,
            &world::APPS,
            &world::APP_RECORDS,
            &world::SOURCES,
            &world::SUMMARY,
        ],
        outro: WORLD_AUDIT,
    },
    Section {
        title: "Tasks (issue 4; see [tasks.md](tasks.md))",
        intro: "Written by `generate_tasks`, `import_review` and `validate_tasks` (the released set is `taskset.*` in `pipelines/taskset.yaml`). JSON columns hold the values documented in tasks.md. `export_review` writes `sheet`: the review sheet's columns, all str.",
        tables: &[
            &tasks::TASKS,
            &tasks::SLOTS,
            &tasks::CRITERIA,
            &tasks::BUNDLES,
            &tasks::AUDIT,
            &tasks::REJECTIONS,
            &tasks::STATS,
        ],
        outro: "",
    },
    Section {
        title: "KnowU tasks (issue 7; see [knowu.md](knowu.md))",
        intro: KNOWU_TASKS,
        tables: &[],
        outro: "",
    },
    Section {
        title: "Episodes (issue 5; also written by `import_knowu_runs`)",
        intro: "",
        tables: &[&episodes::EPISODES, &episodes::STEPS, &episodes::DIFFS],
        outro: episodes::NOTES,
    },
    Section {
        title: "Judging (issue 6)",
        intro: "",
        tables: &[
            &judging::VERDICTS,
            &judging::SCORES,
            &judging::REQUESTS,
            &judging::INTERACTION,
        ],
        outro: "",
    },
    Section {
        title: "Aggregation (issue 6)",
        intro: "See [metrics.md](metrics.md) for the conventions. `aggregate` also writes `usage`: `variant` str, `role` str (`agent`, `user`, `judge`), `episodes` u32, `prompt_tokens` u64, `completion_tokens` u64, `cost` f64 (sums over the variant's episodes, at each model's `prices`; Table 1's companion, per model), `judge` str? (as in `table1`).",
        tables: &[
            &aggregate::TABLE1,
            &aggregate::PAIRED,
            &aggregate::PASS_K,
            &aggregate::PERTURBATIONS,
            &aggregate::HISTORY_CURVE,
            &aggregate::FAILURE_LABELS,
            &aggregate::AGREEMENT,
            &aggregate::LABELS,
            &aggregate::REPORT,
        ],
        outro: "",
    },
];

/// `build_world`'s `audit` table (named like the review rounds' `audit`, so described here).
const WORLD_AUDIT: &str = "`build_world` also writes `audit`: `section` str, `key` str, `value` f64, `detail` str: `total` (events, distinct_texts, distinct_ratio, stamped_signal_share), `separability` (balanced_accuracy, signal_recall, noise_recall of a multinomial naive Bayes over text words, trained on a seeded half of the events), `contradictions` (total and per rule: shift, avoid, before_exists, one_off_repeated), `entry_events` / `entry_counter` / `entry_agreement` per inferable entry, one `contradiction` row per finding with the event and why (`prefflow show world.audit`; see `stages/src/world/audit.rs`).";

/// The KnowU tables, described in prose (their columns follow KnowU-Bench's files).
const KNOWU_TASKS: &str = "`build_knowu_world` writes the World tables; its `sources` has one more row kind, `knowu_profile`
(the KnowU profile YAML). `generate_knowu_tasks` writes the Tasks tables (plain tasks: a task's
KnowU facts are in `knowu_tasks`, keyed by `task_name` = `task_id`) and:

| table | columns |
|---|---|
| `knowu_tasks` | tasks.csv's `task_name`, `class_name`, `split` (`general` \\| `personalized` \\| `proactive`), `difficulty` (`easy` \\| `hard`), `profile`, `tags`, `apps`, `habit_keys` (`;`-joined), `goal` str; `expect` str (`act` \\| `silent` \\| `stop`, proactive; else empty), `lambda` f64? (personalized), `decision`? str (`accept` \\| `reject`, proactive), `reason` str, `clock`? str, `notification`? str (proactive situation), `in_knowu` bool (a KnowU-Bench class; else prefflow-only, `Prefflow…`), `habit`? str (the persona's habit key that decided `expect`), `habit_match`? str (`key` \\| `meaning`) |
| `skipped` | `template`, `persona`, `split`, `missing` str (the section and the phrases looked for) |
| `generated` | `persona`, `split` str, `tasks`, `knowu_classes`, `skipped` u32 |

`run_knowu_episodes` (`run_episodes` plus the `knowu_tasks` input) writes KnowU tasks' rule score
to `episodes.score`. `import_knowu_runs` also writes `reports` (one row per `eval_report_*.json`,
with `score_mismatches` u32 against the task directories and `latest` bool) and `errors`
(`task_id`? str, `file` str, `message` str: one row per file it could not read; that episode has
status `error`). `knowu_metrics` writes `episode_metrics` (per episode: split, difficulty,
persona, `has_result`, `success`, steps, queries, the decision and step indices, `bucket`,
`policy_success`, `bucket_from_quirk`, `profile_found`, `in_scope`), `splits`, `policy`,
`personas` (each with episode counts and `missing_profile_episodes`) and `overall` (counts,
`overall_SR`, `error_episodes`, `out_of_scope_episodes`, `scope` = its `classes`); see
[knowu.md](knowu.md).";

/// Every defined table, in documentation order.
pub fn all() -> impl Iterator<Item = &'static TableDef> {
    SECTIONS.iter().flat_map(|s| s.tables.iter().copied())
}

/// The definition of the table called `name`.
pub fn get(name: &str) -> Option<&'static TableDef> {
    all().find(|t| t.name == name)
}

/// `docs/tables.md`, generated from [`SECTIONS`].
pub fn markdown() -> String {
    let mut out = String::from(
        "# Table contracts\n\n\
         <!-- Generated from stages/src/tables/ by `prefflow tables`; do not edit by hand \
         (`cargo test` fails when this file is stale). -->\n\n\
         Stages talk only through tables. These are the columns every producer writes and every \
         consumer may rely on; a stage may add columns, never rename or drop these. Kinds declare \
         which of these tables they read and write, and `prefflow plan` / `run` check every \
         `inputs` reference against the declarations before anything runs. Types are polars \
         dtypes; nullable columns are marked `?`; lists are `list[str]`; JSON blobs are `str` \
         holding JSON.\n",
    );
    for section in SECTIONS {
        out.push_str(&format!("\n## {}\n", section.title));
        if !section.intro.is_empty() {
            out.push_str(&format!("\n{}\n", section.intro));
        }
        for table in section.tables {
            out.push_str(&table_markdown(table));
        }
        if !section.outro.is_empty() {
            out.push_str(&format!("\n{}\n", section.outro));
        }
    }
    out
}

fn table_markdown(t: &TableDef) -> String {
    let mut out = format!(
        "\n### `{}`\n\n{}.\n\n| column | type | meaning |\n|---|---|---|\n",
        t.name, t.doc
    );
    for c in t.columns {
        let null = if c.nullable { "?" } else { "" };
        out.push_str(&format!(
            "| `{}` | {}{null} | {} |\n",
            c.name,
            c.dtype.name(),
            c.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_tables_md_is_generated_from_the_definitions() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/tables.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == markdown(),
            "docs/tables.md is stale: regenerate it with `cargo run -- tables > docs/tables.md`"
        );
    }

    #[test]
    fn every_kind_declares_columns_its_definitions_have_and_tables_it_writes() {
        let mut registry = prefflow_engine::Registry::new();
        crate::register(&mut registry);
        for kind in registry.iter() {
            for def in kind.output_defs() {
                assert!(
                    kind.outputs().contains(&def.name),
                    "kind `{}` declares `{}` but does not write it",
                    kind.name(),
                    def.name
                );
                assert!(get(def.name).is_some(), "`{}` is not in SECTIONS", def.name);
            }
            for input in kind.inputs() {
                for column in input.columns {
                    let def = input
                        .def
                        .expect("a kind that names columns names the table");
                    assert!(
                        def.column(column).is_some(),
                        "kind `{}` reads `{}.{column}`, which its definition lacks",
                        kind.name(),
                        def.name
                    );
                }
            }
        }
    }

    #[test]
    fn table_names_are_unique_and_columns_unique_within_a_table() {
        let mut names = std::collections::HashSet::new();
        for t in all() {
            assert!(names.insert(t.name), "table `{}` is defined twice", t.name);
            let mut cols = std::collections::HashSet::new();
            for c in t.columns {
                assert!(
                    cols.insert(c.name),
                    "`{}.{}` is defined twice",
                    t.name,
                    c.name
                );
            }
        }
    }
}

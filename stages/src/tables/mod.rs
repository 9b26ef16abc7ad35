//! The inter-stage tables, each defined once: its columns, their types and meaning, and
//! constants for the column names code refers to. Kinds name these definitions in their
//! `OUTPUT_DEFS` and `INPUTS` (checked by `Plan::build` before anything runs), and
//! `docs/tables.md` is generated from them ([`markdown`], printed by `prefflow tables`; a test
//! fails when the file is stale).

pub mod aggregate;
pub mod completions;
pub mod episodes;
pub mod judging;
pub mod knowu;
#[cfg(test)]
mod literals;
pub mod row;
pub mod tasks;
pub mod world;

pub(crate) use row::row;

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
            &world::AUDIT,
        ],
        outro: WORLD_AUDIT,
    },
    Section {
        title: "Tasks (issue 4; see [tasks.md](tasks.md))",
        intro: "Written by `generate_tasks`, `import_review` and `validate_tasks` (the released set is `taskset.*` in `pipelines/taskset.yaml`). JSON columns hold the values documented in tasks.md.",
        tables: &[
            &tasks::TASKS,
            &tasks::SLOTS,
            &tasks::CRITERIA,
            &tasks::BUNDLES,
            &tasks::AUDIT,
            &tasks::REPEATS,
            &tasks::REJECTIONS,
            &tasks::STATS,
            &tasks::SHEET,
        ],
        outro: "",
    },
    Section {
        title: "KnowU tasks (issue 7; see [knowu.md](knowu.md))",
        intro: KNOWU_INTRO,
        tables: &[
            &knowu::KNOWU_TASKS,
            &knowu::SKIPPED,
            &knowu::GENERATED,
            &knowu::REPORTS,
            &knowu::IMPORT_ERRORS,
            &knowu::WRITTEN,
            &knowu::EPISODE_METRICS,
            &knowu::SPLITS,
            &knowu::POLICY,
            &knowu::PERSONAS,
            &knowu::OVERALL,
            &knowu::LEADERBOARD,
            &knowu::LEADERBOARD_TEXT,
        ],
        outro: KNOWU_NOTES,
    },
    Section {
        title: "Episodes (issue 5; also written by `import_knowu_runs`)",
        intro: "",
        tables: &[
            &episodes::EPISODES,
            &episodes::STEPS,
            &episodes::DIFFS,
            &episodes::COMPLETIONS,
        ],
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
        intro: "See [metrics.md](metrics.md) for the conventions.",
        tables: &[
            &aggregate::TABLE1,
            &aggregate::PAIRED,
            &aggregate::PASS_K,
            &aggregate::PERTURBATIONS,
            &aggregate::HISTORY_CURVE,
            &aggregate::FAILURE_LABELS,
            &aggregate::USAGE,
            &aggregate::AGREEMENT,
            &aggregate::LABELS,
            &aggregate::LABELLED_EPISODES,
            &aggregate::DISAGREEMENTS,
            &aggregate::JUDGE_ERRORS,
            &aggregate::SIMULATOR_CHECK,
            &aggregate::REPORT,
        ],
        outro: "",
    },
];

/// The sections of `build_world`'s `audit` table.
const WORLD_AUDIT: &str = "`build_world` also writes `audit`, whose sections are: `total` (events, distinct_texts, distinct_ratio, stamped_signal_share, distinct_cores, core_ratio, stamped_core_share: core texts drop companions, day and time phrases, asides, \"this time\" and \"again\"), `separability` (balanced_accuracy, signal_recall, noise_recall of a multinomial naive Bayes over text words, trained on a seeded half of the events; logistic_balanced_accuracy of a class-balanced logistic regression on word uni- and bigrams, 5-fold cross-validated; rule_balanced_accuracy of the best single n-gram rule, raw or shaped, anywhere or at the start or end, chosen on the same half, its feature in `detail`), `separability_gram` (the 12 word uni- and bigrams the logistic regression trained on every event weighs most towards noise, then towards signal: key the gram, value its weight, positive towards noise), `contradictions` (total and per rule: shift, avoid, before_exists, one_off_repeated, completed_before_date, purchase_absent, repeated_purchase, repeated_completion, place_conflict, purpose_twice, work_on_day_off, weekday_mismatch), `entry_events` / `entry_counter` / `entry_agreement` per inferable entry, one `contradiction` row per finding with the event and why (`prefflow show world.audit`; see `stages/src/world/audit.rs`).";

/// What the KnowU tables share with the others.
const KNOWU_INTRO: &str = "`build_knowu_world` writes the World tables; its `sources` has one more row kind, `knowu_profile` (the KnowU profile YAML). `generate_knowu_tasks` writes the Tasks tables (plain tasks: a task's KnowU facts are in `knowu_tasks`, keyed by `task_name` = `task_id`) and `knowu_tasks`, `skipped`, `generated`. `import_knowu_runs` writes the Episodes tables (`episodes`, `steps`) plus `reports` and `errors`; `export_knowu_runs` writes `written`; `knowu_metrics` writes `episode_metrics`, `splits`, `policy`, `personas`, `overall`; `knowu_leaderboard` writes `leaderboard` and `text`.";

/// After the KnowU tables.
const KNOWU_NOTES: &str = "`run_knowu_episodes` (`run_episodes` plus the `knowu_tasks` input) writes KnowU tasks' rule score to `episodes.score`. See [knowu.md](knowu.md) for how each metric is computed.";

/// Every defined table, in documentation order.
pub fn all() -> impl Iterator<Item = &'static TableDef> {
    SECTIONS.iter().flat_map(|s| s.tables.iter().copied())
}

/// Whether `def` is one of the documented definitions.
pub fn documented(def: &TableDef) -> bool {
    all().any(|t| std::ptr::eq(t, def))
}

/// `docs/tables.md`, generated from [`SECTIONS`].
pub fn markdown() -> String {
    let mut out = String::from(
        "# Table contracts\n\n\
         <!-- Generated from stages/src/tables/ by `prefflow tables`; do not edit by hand \
         (`cargo test` fails when this file is stale). -->\n\n\
         Stages talk only through tables. These are the columns every producer writes and every \
         consumer may rely on, except those marked *only*, which only the producers named write \
         and no consumer may require. Kinds declare which of these tables they read and write; \
         `prefflow plan` / `run` check every `inputs` reference against the declarations before \
         anything runs, and every result against its declaration before it is committed (a \
         column not declared here, a missing or mistyped one, or nulls in a non-null one fail \
         the stage). Types are polars \
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
    if t.open {
        return format!("\n### `{}`\n\n{}.\n", t.name, t.doc);
    }
    let mut out = format!(
        "\n### `{}`\n\n{}.\n\n| column | type | meaning |\n|---|---|---|\n",
        t.name, t.doc
    );
    for c in t.columns {
        let null = if c.nullable { "?" } else { "" };
        let only = c.only.map(|p| format!(" (only {p})")).unwrap_or_default();
        out.push_str(&format!(
            "| `{}` | {}{null} | {}{only} |\n",
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
                assert!(documented(def), "`{}` is not in SECTIONS", def.name);
            }
            for input in kind.inputs() {
                for column in input.columns {
                    let def = input
                        .def
                        .expect("a kind that names columns names the table");
                    let declared = def.column(column);
                    assert!(
                        declared.is_some(),
                        "kind `{}` reads `{}.{column}`, which its definition lacks",
                        kind.name(),
                        def.name
                    );
                    assert!(
                        declared.is_some_and(|c| c.only.is_none()),
                        "kind `{}` requires `{}.{column}`, which only some producers write",
                        kind.name(),
                        def.name
                    );
                }
            }
        }
    }

    #[test]
    fn table_names_are_unique_within_a_section_and_columns_within_a_table() {
        for section in SECTIONS {
            let mut names = std::collections::HashSet::new();
            for t in section.tables {
                assert!(names.insert(t.name), "table `{}` is defined twice", t.name);
            }
        }
        for t in all() {
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

    /// Declared column names written as string literals *used as columns* outside `tables/`,
    /// per file ([`literals`] says which uses count): the hand-written column lists and readers
    /// that row structs ([`row`]) and their column constants replace.
    fn column_literals() -> std::collections::BTreeMap<String, Vec<usize>> {
        let names: std::collections::BTreeSet<&str> = all()
            .flat_map(|t| t.columns.iter().map(|c| c.name))
            .collect();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut counts = std::collections::BTreeMap::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("stages/src").flatten() {
                let path = entry.path();
                if path == root.join("tables") {
                    continue;
                }
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let lines = literals::column_uses(&text, &names);
                if !lines.is_empty() {
                    let rel = path.strip_prefix(&root).unwrap_or(&path);
                    counts.insert(rel.display().to_string(), lines);
                }
            }
        }
        counts
    }

    /// Issue 28's contract: no declared column name as a string literal outside `tables/` — every
    /// reader and writer goes through a table's row struct or its column constants, so a
    /// renamed column is a compile error, not a silent empty read.
    #[test]
    fn no_declared_column_name_is_spelled_as_a_literal_outside_tables() {
        let found: Vec<String> = column_literals()
            .iter()
            .map(|(file, lines)| format!("stages/src/{file}: lines {lines:?}"))
            .collect();
        assert!(
            found.is_empty(),
            "declared column names spelled as string literals outside tables/: use the table's \
             row struct or its column constant\n{}",
            found.join("\n")
        );
    }
}

//! `judge_agreement`: the judges against human labels (iPrefBench §4.5). Its `labels`
//! directory holds the authored, labelled episodes (`episodes/`, `labels/pass1`, `labels/pass2`,
//! `labels/adjudication.csv`; datasets/judge-labels/README.md): every judge that ran on them
//! against the gold labels (criterion, success, recall, extra requests, with Cohen's κ), the two
//! passes against each other, and the user simulator over the question–answer pairs. Episode-keyed
//! CSVs directly in the directory (or a CSV file as `labels`) are compared at criterion, success
//! and slot level with the `verdicts` they name.

use std::collections::{BTreeMap, HashMap};

use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::support::{optional_input, required_input};
use crate::episodes::labelled;
use crate::metrics::judge_agreement::{
    agreement_frame, judge_agreement, labels_frame, read_labels, AgreementRow,
};
use crate::metrics::judge_labels::{
    asked_per_ask, disagreements_frame, gold, judgements, read_adjudication, read_pass,
};
use crate::metrics::judge_validation::{
    compare, errors_frame, judge_side, simulator_check, simulator_frame, simulator_rows,
    AuthoredSet, Judged,
};
use crate::tables::{aggregate as t, judging as j};
use crate::tasks::frames::bundles_from_table;
use crate::tasks::TaskBundle;

/// Parameters of `judge_agreement`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeAgreementParams {
    /// The labelled set's directory (default `datasets/judge-labels`), or one episode-keyed
    /// labels CSV.
    #[serde(default = "labels_dir")]
    pub labels: String,
}

fn labels_dir() -> String {
    "datasets/judge-labels".into()
}

/// Validates the judges against human labels.
pub struct JudgeAgreement;

impl Kind for JudgeAgreement {
    type Params = JudgeAgreementParams;
    type State = ();
    const NAME: &'static str = "judge_agreement";
    const VERSION: &'static str = "3";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &t::AGREEMENT,
        &t::LABELS,
        &t::LABELLED_EPISODES,
        &t::DISAGREEMENTS,
        &t::JUDGE_ERRORS,
        &t::SIMULATOR_CHECK,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &j::VERDICTS,
            &[j::EPISODE_ID, j::CRITERION_ID, j::MODE, j::VERDICT],
        ),
        InputDef::optional(&j::REQUESTS, &[j::EPISODE_ID, "slot_id", "slot_source"]),
        InputDef::optional(
            &j::SCORES,
            &[j::EPISODE_ID, j::TASK_ID, j::EPOCH, j::SUCCESS, "judge"],
        ),
        InputDef::optional(
            &j::INTERACTION,
            &[j::EPISODE_ID, "requests", "matched_requests", "judge"],
        ),
        InputDef::optional(
            &crate::tables::episodes::STEPS,
            &[
                crate::tables::episodes::EPISODE_ID,
                crate::tables::episodes::ACTION_TYPE,
                "user_reply",
            ],
        ),
        InputDef::optional(
            &crate::tables::tasks::BUNDLES,
            &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
        ),
    ];
    const SUMMARY: &'static str = "verdicts (+ requests, scores, interaction, steps, bundles) + the labelled set (datasets/judge-labels) → agreement (p_o, Cohen's κ per level and rater pair), labels, episodes, disagreements, judge_errors, simulator (params: labels; use gather: true)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.labels.clone()]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let root = ctx.resolve(&params.labels);
        let keyed = if root.is_file() || root.is_dir() {
            read_labels(&root, &params.labels)?
        } else {
            Vec::new()
        };
        let mut rows = if keyed.is_empty() {
            Vec::new()
        } else {
            judge_agreement(
                &keyed,
                &*required_input(ctx, "verdicts")?,
                optional_input(ctx, "requests")?.as_deref(),
            )?
        };
        let authored = if root.is_dir() {
            authored(ctx, &root, &params.labels, &mut rows)?
        } else {
            Authored::empty()?
        };
        if rows.is_empty() {
            tracing::warn!(
                "stage `{}`: no labels under `{}`; agreement is empty",
                ctx.stage,
                params.labels
            );
        }
        Ok(Tables::new([
            ("agreement", agreement_frame(&rows)?),
            ("labels", labels_frame(&keyed)?),
            ("labelled", authored.episodes),
            ("disagreements", authored.disagreements),
            ("judge_errors", authored.errors),
            ("simulator", authored.simulator),
        ]))
    }
}

/// The authored set's output tables.
struct Authored {
    episodes: polars::prelude::DataFrame,
    disagreements: polars::prelude::DataFrame,
    errors: polars::prelude::DataFrame,
    simulator: polars::prelude::DataFrame,
}

impl Authored {
    fn empty() -> Result<Self, StageError> {
        let (episodes, bundles) = (Default::default(), HashMap::new());
        let set = AuthoredSet::new(&episodes, &bundles);
        Ok(Self {
            episodes: set.frame(&bundles)?,
            disagreements: disagreements_frame(&[])?,
            errors: errors_frame(&BTreeMap::new(), &Default::default())?,
            simulator: simulator_frame(&[])?,
        })
    }
}

/// Validates the judges on the authored set under `root`, adding agreement rows.
fn authored(
    ctx: &StageContext<'_>,
    root: &std::path::Path,
    shown: &str,
    rows: &mut Vec<AgreementRow>,
) -> Result<Authored, StageError> {
    let bad = |m: String| StageError::Input(format!("stage `{}`: {m}", ctx.stage));
    let episodes =
        labelled::load(&root.join("episodes"), &format!("{shown}/episodes")).map_err(bad)?;
    let bundles: HashMap<String, TaskBundle> = match optional_input(ctx, "bundles")? {
        Some(df) => bundles_from_table(&df)?
            .into_iter()
            .map(|b| (b.task.task_id.clone(), b))
            .collect(),
        None => HashMap::new(),
    };
    let set = AuthoredSet::new(&episodes, &bundles);
    for (ep, _, fresh) in set.episodes.values() {
        if *fresh != labelled::Freshness::Fresh {
            tracing::warn!(
                "stage `{}`: labelled episode `{}` is {} ({}); its labels are left out — see `prefflow show {}.labelled`",
                ctx.stage, ep.id, fresh.as_str(), ep.file, ctx.stage
            );
        }
    }
    let pass = |n: &str| read_pass(&root.join("labels").join(n), &format!("{shown}/labels/{n}"));
    let (raw1, raw2) = (pass("pass1")?, pass("pass2")?);
    let p1 = judgements(&raw1, &set.tasks, &set.asks)?;
    let p2 = judgements(&raw2, &set.tasks, &set.asks)?;
    let adj = read_adjudication(
        &root.join("labels/adjudication.csv"),
        &format!("{shown}/labels/adjudication.csv"),
    )?;
    let (gold, disagreements) = gold(&p1, &p2, &adj);
    let unresolved = disagreements
        .iter()
        .filter(|d| d.resolved.is_none())
        .count();
    if unresolved > 0 {
        tracing::warn!(
            "stage `{}`: {unresolved} disagreement(s) of the two passes have no adjudication; they are left out (prefflow show {}.disagreements)",
            ctx.stage, ctx.stage
        );
    }
    let tables = (
        optional_input(ctx, "scores")?,
        optional_input(ctx, "verdicts")?,
        optional_input(ctx, "requests")?,
        optional_input(ctx, "interaction")?,
    );
    let mut judges = BTreeMap::new();
    if let (Some(scores), Some(verdicts), Some(requests), Some(interaction)) = &tables {
        if !gold.is_empty() {
            let judged = Judged {
                scores,
                verdicts,
                requests,
                interaction,
            };
            judges = judge_side(&judged, &set)?;
            for (judge, js) in &judges {
                rows.extend(compare(&format!("{judge}~gold"), js, &gold));
            }
        }
    }
    if !p1.is_empty() && !p2.is_empty() {
        rows.extend(compare("pass1~pass2", &p1, &p2));
    }
    let checks = match optional_input(ctx, "steps")? {
        Some(steps) => simulator_check(&steps, &set, &asked_per_ask(&raw1, &raw2))?,
        None => Vec::new(),
    };
    rows.extend(simulator_rows(&checks));
    Ok(Authored {
        episodes: set.frame(&bundles)?,
        disagreements: disagreements_frame(&disagreements)?,
        errors: errors_frame(&judges, &gold)?,
        simulator: simulator_frame(&checks)?,
    })
}

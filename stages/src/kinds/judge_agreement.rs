//! `judge_agreement`: human labels (CSV) + the judge's `verdicts` (and `requests`) → agreement
//! and Cohen's κ between the rule judge, the LLM judge and humans (iPrefBench §4.5). The
//! labelled sample in `datasets/judge-labels/` makes the stage run by default.

use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::aggregate::{optional_input, required_input};
use crate::metrics::judge_agreement::{
    agreement_frame, judge_agreement, labels_frame, read_labels,
};

/// Parameters of `judge_agreement`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeAgreementParams {
    /// A labels CSV or a directory of them (default `datasets/judge-labels`).
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
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] = &["agreement", "labels"];
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::aggregate::AGREEMENT,
        &crate::tables::aggregate::LABELS,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::judging::VERDICTS,
            &[
                crate::tables::judging::EPISODE_ID,
                crate::tables::judging::CRITERION_ID,
                crate::tables::judging::MODE,
                crate::tables::judging::VERDICT,
            ],
        ),
        InputDef::optional(
            &crate::tables::judging::REQUESTS,
            &[crate::tables::judging::EPISODE_ID, "slot_id", "slot_source"],
        ),
    ];
    const SUMMARY: &'static str = "verdicts (+ requests) + human labels CSV → agreement (p_o, Cohen's κ per level and rater pair), labels (params: labels; use gather: true)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.labels.clone()]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let labels = read_labels(&ctx.resolve(&params.labels), &params.labels)?;
        if labels.is_empty() {
            tracing::warn!(
                "stage `{}`: no labels under `{}`; agreement is empty",
                ctx.stage,
                params.labels
            );
        }
        let rows = judge_agreement(
            &labels,
            &*required_input(ctx, "verdicts")?,
            optional_input(ctx, "requests")?.as_deref(),
        )?;
        Ok(Tables::new([
            ("agreement", agreement_frame(&rows)?),
            ("labels", labels_frame(&labels)?),
        ]))
    }
}

//! `knowu_leaderboard`: our runs beside KnowU-Bench's published results (the paper's Table 2 with
//! its difficulty columns; the site's rows where they differ, with a note), each row with its
//! coverage; partial runs are marked and not ranked among full ones. Plus a Markdown rendering.
//!
//! The stage kind only: what it computes lives in [`crate::knowu::interop::leaderboard`].

use crate::knowu::interop::leaderboard::*;
use crate::tables::episodes as ep;
use crate::tables::knowu as ku;
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};

/// Places our runs on KnowU-Bench's leaderboard; the published tables are in the cache key.
pub struct KnowuLeaderboard;

impl Kind for KnowuLeaderboard {
    type Params = LeaderboardParams;
    type State = ();
    const NAME: &'static str = "knowu_leaderboard";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::knowu::LEADERBOARD,
        &crate::tables::knowu::LEADERBOARD_TEXT,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &ku::OVERALL,
            &[ep::VARIANT, ku::AGENT, ku::OverallRow::overall_SR],
        ),
        InputDef::required(&ku::SPLITS, &[ep::VARIANT, ku::AGENT, ku::SPLIT]),
    ];
    const SUMMARY: &'static str = "KnowU-Bench leaderboard: the paper's Table 2 (difficulty columns), the site's rows where they differ (noted), our runs with their coverage (partial runs unranked), from knowu_metrics tables overall + splits (params: published?, path?, date?, approach?); table `text` is a Markdown rendering";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        let site = params
            .path
            .iter()
            .map(|p| crate::knowu::data::locate_str(p));
        std::iter::once(params.published.clone())
            .chain(site)
            .collect()
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let site = params.path.as_ref().map(|p| ctx.resolve(p));
        let paper = ctx.resolve(&params.published);
        let mut rows = published(&paper, &params.published, site.as_deref())?;
        rows.extend(our_rows(
            ctx.input("overall")?,
            ctx.input("splits")?,
            params,
        )?);
        let board = leaderboard_frame(rank(rows))?;
        let text = render_markdown(&board)?;
        let lines: Vec<ku::LeaderboardTextRow> = text
            .lines()
            .map(|line| ku::LeaderboardTextRow {
                line: line.to_string(),
            })
            .collect();
        Ok(Tables::new([
            (ku::LEADERBOARD.name, board),
            (
                ku::LEADERBOARD_TEXT.name,
                ku::LeaderboardTextRow::to_frame(&lines)?,
            ),
        ]))
    }
}

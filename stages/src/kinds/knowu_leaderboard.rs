//! `knowu_leaderboard`: KnowU-Bench's published leaderboard with our runs ranked among them, in
//! the benchmark's column layout (Rank, Model & Date, Approach & Details, Overall, General,
//! Personalized, Proactive — success rates in percent), plus a Markdown rendering.
//!
//! The stage kind only: what it computes lives in [`crate::knowu::interop::leaderboard`].

use crate::knowu::interop::leaderboard::*;
use polars::prelude::*;
use prefflow_engine::schema::TableDef;
use prefflow_engine::{Kind, StageContext, StageError, Tables};

/// Places our runs on KnowU-Bench's leaderboard; leaderboard.json is in the cache key.
pub struct KnowuLeaderboard;

impl Kind for KnowuLeaderboard {
    type Params = LeaderboardParams;
    type State = ();
    const NAME: &'static str = "knowu_leaderboard";
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] = &["leaderboard", "text"];
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::knowu::LEADERBOARD,
        &crate::tables::knowu::LEADERBOARD_TEXT,
    ];
    const SUMMARY: &'static str = "KnowU-Bench leaderboard with our runs side by side, from knowu_metrics tables overall + splits (params: path, date?, approach?); table `text` is a Markdown rendering";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![crate::knowu::data::locate_str(&params.path)]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let mut rows = read_published(&ctx.resolve(&params.path))?;
        rows.extend(our_rows(
            ctx.input("overall")?,
            ctx.input("splits")?,
            params,
        )?);
        let board = leaderboard_frame(rank(rows))?;
        let text = render_markdown(&board)?;
        let lines = Column::new("line".into(), text.lines().collect::<Vec<_>>());
        Ok(Tables::new([
            ("leaderboard", board),
            ("text", DataFrame::new_infer_height(vec![lines])?),
        ]))
    }
}

//! Tables laid out as text for terminals. `prefflow show` asks [`render`] for every table it
//! prints as a grid and prints the layout instead when there is one, so the command knows no
//! table by name and a new layout is added here, beside the others.

use polars::prelude::DataFrame;

use crate::tables::aggregate::Table1Row as T1;
use crate::tables::{aggregate::TABLE1, world::SUMMARY};

/// The laid-out text of a table called `table` (as its stage names it), or `None` for the
/// generic grid (also when `df` does not have the columns the layout reads).
pub fn render(table: &str, df: &DataFrame) -> Option<String> {
    if table == TABLE1.name {
        // Table 1 as the paper lays it out: metrics down, variants across.
        table1(df)
    } else if table == SUMMARY.name {
        // A world summary prints whole, grouped, like the papers' statistics.
        crate::world::summary::render_table(df)
    } else {
        None
    }
}

/// Table 1 for terminals (`prefflow show iprefbench.table1`): metrics down, variants across,
/// each cell `value [95% CI] (n=tasks, templates)`. None when `df` does not look like a `table1`.
pub fn table1(df: &DataFrame) -> Option<String> {
    let schema = df.schema();
    let is_table1 = [T1::variant, T1::metric, T1::display, T1::n]
        .iter()
        .all(|c| schema.contains(c));
    if !is_table1 {
        return None;
    }
    let view = super::view::table1_view(df).ok()?;
    Some(super::view::render_text(&view))
}

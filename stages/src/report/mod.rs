//! The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with
//! Table 1, paired differences, pass^k, judge agreement, the Figure 2–4 plots and a per-task
//! drill-down into trajectories, ask_user exchanges and criterion verdicts. The page layout is
//! a minijinja template (`datasets/report/report.html.j2`); this module prepares its data.

pub mod drilldown;
pub mod figures;
pub mod palette;
pub mod svg;
pub mod text;
pub mod view;

pub use view::{
    render_text, table1_grid, table1_view, table_view, text_column, Table1Cell, Table1Grid,
    Table1Row, TableView,
};

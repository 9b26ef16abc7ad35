//! `query`: polars SQL over the stage's inputs.

use polars::prelude::*;
use polars::sql::SQLContext;
use serde::Deserialize;

use crate::error::StageError;
use crate::kind::{Kind, StageContext, Tables};

/// Parameters of `query`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryParams {
    /// The SQL. Each input is a table named `<stage>_<table>`, and also `<stage>` when that
    /// stage contributes one table.
    pub sql: String,
}

/// Transforms tables with SQL, so small reshaping steps need no Rust.
pub struct Query;

impl Kind for Query {
    type Params = QueryParams;
    type State = ();
    const NAME: &'static str = "query";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static crate::schema::TableDef] = &[&super::tables::TABLE];
    const SUMMARY: &'static str = "polars SQL over the inputs into table `table` (params: sql; inputs are named <stage> and <stage>_<table>)";

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let mut sql = SQLContext::new();
        let mut names = Vec::new();
        for input in ctx.inputs {
            let qualified = format!("{}_{}", input.stage, input.table);
            sql.register(&qualified, input.df.clone().lazy());
            names.push(qualified);
            if ctx.inputs.iter().filter(|i| i.stage == input.stage).count() == 1 {
                sql.register(&input.stage, input.df.clone().lazy());
                names.push(input.stage.clone());
            }
        }
        let df = sql
            .execute(&params.sql)
            .and_then(|lf| lf.collect())
            .map_err(|e| {
                // A misspelled table is the usual mistake: say which ones there are.
                StageError::Input(format!(
                    "stage `{}`: SQL failed: {e}; the tables this query can use: {} (its inputs: `<stage>_<table>`, and `<stage>` when that stage gives one table)",
                    ctx.stage,
                    names.join(", ")
                ))
            })?;
        Ok(Tables::single("table", df))
    }
}

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
    const OUTPUTS: &'static [&'static str] = &["table"];
    const SUMMARY: &'static str = "polars SQL over the inputs into table `table` (params: sql; inputs are named <stage> and <stage>_<table>)";

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let mut sql = SQLContext::new();
        for input in ctx.inputs {
            sql.register(
                &format!("{}_{}", input.stage, input.table),
                input.df.clone().lazy(),
            );
            if ctx.inputs.iter().filter(|i| i.stage == input.stage).count() == 1 {
                sql.register(&input.stage, input.df.clone().lazy());
            }
        }
        let df = sql
            .execute(&params.sql)
            .and_then(|lf| lf.collect())
            .map_err(|e| StageError::Input(format!("stage `{}`: SQL failed: {e}", ctx.stage)))?;
        Ok(Tables::single("table", df))
    }
}

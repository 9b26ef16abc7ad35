//! `llm_complete`: one model completion per input row, from a prompt template.
//!
//! The smallest useful LLM stage: experiments, candidate generation, and the end-to-end check
//! that resource pools, retries and record/replay work together. Rows become template variables.

use polars::prelude::*;
use prefflow_engine::schema::TableDef;
use prefflow_engine::{Execution, Kind, StageContext, StageError, Tables};
use serde::Deserialize;
use serde_json::Value;

use crate::episodes::prompts::{Flavor, Prompts};
use crate::llm::{ChatMessage, ChatRequest, LlmClient, LlmConfig};
use crate::tables::completions::CompletionRow;

/// Parameters of `llm_complete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmCompleteParams {
    /// Endpoint, model and sampling settings.
    pub llm: LlmConfig,
    /// User message template (minijinja); each column of the row is a variable.
    pub prompt: String,
    /// Optional system message template.
    #[serde(default)]
    pub system: Option<String>,
    /// Repeat index: distinct epochs are distinct recorded requests.
    #[serde(default)]
    pub epoch: u32,
}

/// The role `llm_complete`'s calls are counted under in manifests and `prefflow show runs`.
pub const USAGE_ROLE: &str = "completion";

/// Completes a prompt per row; output `completions` = the input columns plus the reply.
pub struct LlmComplete;

impl Kind for LlmComplete {
    type Params = LlmCompleteParams;
    type State = ();
    const NAME: &'static str = "llm_complete";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[&crate::tables::episodes::COMPLETIONS];
    const DETERMINISTIC: bool = false;
    const SUMMARY: &'static str =
        "one chat completion per row of the first input (params: llm, prompt, system?, epoch?) → `completions`";

    // Waiting on the endpoint is all an item does: items are tasks on the engine's runtime, so
    // a pool of hundreds of requests in flight costs no thread each.
    const EXECUTION: Execution = Execution::Async;

    fn run_async<'a>(
        &'a self,
        params: &'a Self::Params,
        ctx: &'a StageContext<'a>,
    ) -> impl std::future::Future<Output = Result<Tables, StageError>> + Send + 'a {
        complete(params, ctx)
    }
}

/// The completions of the item's rows, one request after the other.
async fn complete(
    params: &LlmCompleteParams,
    ctx: &StageContext<'_>,
) -> Result<Tables, StageError> {
    let input = ctx.inputs.first().ok_or_else(|| {
        StageError::Input(format!(
            "stage `{}`: llm_complete needs an input table",
            ctx.stage
        ))
    })?;
    let client = LlmClient::new(params.llm.clone(), ctx.cache, ctx.offline)?
        .metered(Some(ctx.usage), USAGE_ROLE)
        .flow(&format!("{}[{}]", ctx.stage, ctx.variant));
    let requests = requests(params, ctx, &rows_as_json(&input.df))?;
    let mut out = Vec::with_capacity(requests.len());
    for request in &requests {
        let reply = client.chat(request, params.epoch).await?;
        out.push(CompletionRow {
            reply: reply.content.clone(),
            prompt_tokens: reply.usage.prompt_tokens,
            completion_tokens: reply.usage.completion_tokens,
            from_cache: reply.from_cache,
            cost: reply.usage.cost(params.llm.prices),
        });
    }
    let mut df = input.df.clone();
    for column in CompletionRow::to_frame(&out)?.columns() {
        df.with_column(column.clone())?;
    }
    Ok(Tables::single("completions", df))
}

/// The rendered request of every row, before the first request is sent.
fn requests(
    params: &LlmCompleteParams,
    ctx: &StageContext<'_>,
    rows: &[Value],
) -> Result<Vec<ChatRequest>, StageError> {
    let mut sources = vec![("prompt", params.prompt.as_str())];
    if let Some(system) = &params.system {
        sources.push(("system", system.as_str()));
    }
    let env =
        &Prompts::with_flavor("llm_complete", &sources, Flavor::Lenient).map_err(|(name, e)| {
            StageError::Input(format!("stage `{}`: bad `{name}` template: {e}", ctx.stage))
        })?;
    rows.iter()
        .map(|row| {
            let mut messages = Vec::new();
            if params.system.is_some() {
                messages.push(ChatMessage::new("system", render(env, "system", row)?));
            }
            messages.push(ChatMessage::new("user", render(env, "prompt", row)?));
            Ok(ChatRequest {
                messages,
                ..ChatRequest::default()
            })
        })
        .collect()
}

fn render(env: &Prompts, name: &str, row: &Value) -> Result<String, StageError> {
    env.render_plain(name, row)
        .map_err(|e| StageError::Input(format!("rendering `{name}`: {e}")))
}

/// Each row as a JSON object, for templates.
pub fn rows_as_json(df: &DataFrame) -> Vec<Value> {
    let columns = df.columns();
    (0..df.height())
        .map(|i| {
            let mut obj = serde_json::Map::new();
            for col in columns {
                let v = col.get(i).map(|v| any_to_json(&v)).unwrap_or(Value::Null);
                obj.insert(col.name().to_string(), v);
            }
            Value::Object(obj)
        })
        .collect()
}

fn any_to_json(v: &AnyValue) -> Value {
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(s) => Value::String(s.to_string()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::Int8(x) => (*x).into(),
        AnyValue::Int16(x) => (*x).into(),
        AnyValue::Int32(x) => (*x).into(),
        AnyValue::Int64(x) => (*x).into(),
        AnyValue::UInt8(x) => (*x).into(),
        AnyValue::UInt16(x) => (*x).into(),
        AnyValue::UInt32(x) => (*x).into(),
        AnyValue::UInt64(x) => (*x).into(),
        AnyValue::Float32(x) => {
            serde_json::Number::from_f64(f64::from(*x)).map_or(Value::Null, Value::Number)
        }
        AnyValue::Float64(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
        AnyValue::List(s) => Value::Array(s.iter().map(|x| any_to_json(&x)).collect()),
        other => Value::String(other.to_string()),
    }
}

//! `prefflow schema`: the JSON Schema of the pipeline format (docs/pipeline.schema.json).

/// Prints the schema, pretty.
pub(crate) fn run() -> anyhow::Result<u8> {
    println!(
        "{}",
        serde_json::to_string_pretty(&prefflow_engine::config::json_schema())?
    );
    Ok(0)
}

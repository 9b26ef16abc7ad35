//! `prefflow tables`: the inter-stage table contracts as Markdown (docs/tables.md).

/// Prints the contracts.
pub(crate) fn run() -> anyhow::Result<u8> {
    print!("{}", prefflow_stages::tables::markdown());
    Ok(0)
}

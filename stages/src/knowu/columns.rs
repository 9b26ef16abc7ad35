//! Typed access to input-table columns, so a missing or mistyped column becomes an error naming
//! the table, the column and the contract (docs/tables.md) instead of a panic.

use polars::prelude::*;

use crate::knowu::error::KnowuError;

/// Where the column contracts are written down, for error messages.
const CONTRACT: &str = "see docs/tables.md for the columns each table must carry";

/// A column of `df`, which must exist.
pub fn column<'a>(df: &'a DataFrame, table: &str, name: &str) -> Result<&'a Column, KnowuError> {
    df.column(name)
        .map_err(|_| KnowuError::table(table, format!("missing column `{name}`; {CONTRACT}")))
}

/// A column cast to `dtype` (e.g. integers of any width to `u32`).
pub fn cast(
    df: &DataFrame,
    table: &str,
    name: &str,
    dtype: &DataType,
) -> Result<Column, KnowuError> {
    let col = column(df, table, name)?;
    col.cast(dtype).map_err(|e| {
        KnowuError::table(
            table,
            format!(
                "column `{name}` has type {} where {dtype} is expected ({e}); {CONTRACT}",
                col.dtype()
            ),
        )
    })
}

/// The values of a string column (nulls as `None`).
pub fn strings(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<String>>, KnowuError> {
    let col = cast(df, table, name, &DataType::String)?;
    let ca = col
        .str()
        .map_err(|e| KnowuError::table(table, e.to_string()))?;
    Ok(ca.iter().map(|v| v.map(str::to_string)).collect())
}

/// The values of an optional string column: all `None` when the column is absent.
pub fn optional_strings(
    df: &DataFrame,
    table: &str,
    name: &str,
) -> Result<Vec<Option<String>>, KnowuError> {
    if df.column(name).is_ok() {
        strings(df, table, name)
    } else {
        Ok(vec![None; df.height()])
    }
}

/// The values of a numeric column cast to `u64` (nulls as `None`).
pub fn u64s(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<u64>>, KnowuError> {
    let col = cast(df, table, name, &DataType::UInt64)?;
    let ca = col
        .u64()
        .map_err(|e| KnowuError::table(table, e.to_string()))?;
    Ok(ca.iter().collect())
}

/// The values of a numeric column cast to `f64` (nulls as `None`).
pub fn f64s(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<f64>>, KnowuError> {
    let col = cast(df, table, name, &DataType::Float64)?;
    let ca = col
        .f64()
        .map_err(|e| KnowuError::table(table, e.to_string()))?;
    Ok(ca.iter().collect())
}

/// The values of a boolean column (nulls as `None`).
pub fn bools(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<bool>>, KnowuError> {
    let col = cast(df, table, name, &DataType::Boolean)?;
    let ca = col
        .bool()
        .map_err(|e| KnowuError::table(table, e.to_string()))?;
    Ok(ca.iter().collect())
}

/// A `list[str]` column of `n` empty lists (`disclosed_slots`, `shown_events` of imported steps).
pub fn empty_string_lists(name: &str, n: usize) -> Column {
    let mut builder = ListStringChunkedBuilder::new(name.into(), n, 0);
    for _ in 0..n {
        builder.append_values_iter(std::iter::empty());
    }
    builder.finish().into_series().into_column()
}

/// Checks that `df` has every column in `names`, naming the first one missing.
pub fn require(df: &DataFrame, table: &str, names: &[&str]) -> Result<(), KnowuError> {
    names
        .iter()
        .try_for_each(|name| column(df, table, name).map(|_| ()))
}

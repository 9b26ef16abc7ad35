//! Building output tables from row structs: one column per field, derived by a closure. The
//! episode and judge tables are long lists of such columns; these helpers keep each line one
//! column name and one field.

use polars::prelude::*;

/// A column of `f(row)` for every row.
pub(crate) fn col<T, V>(name: &str, rows: &[T], f: impl Fn(&T) -> V) -> Column
where
    Series: NamedFrom<Vec<V>, [V]>,
{
    Column::new(name.into(), rows.iter().map(f).collect::<Vec<V>>())
}

/// A `list[str]` column of `f(row)` for every row (typed even when there are no rows).
pub(crate) fn list_col<T>(name: &str, rows: &[T], f: impl Fn(&T) -> &[String]) -> Column {
    let dtype = DataType::List(Box::new(DataType::String));
    if rows.is_empty() {
        return Column::new_empty(name.into(), &dtype);
    }
    let series: Vec<Series> = rows.iter().map(|r| Series::new("".into(), f(r))).collect();
    Column::new(name.into(), series)
}

/// A frame of equal-length columns.
pub(crate) fn frame(columns: Vec<Column>) -> PolarsResult<DataFrame> {
    let height = columns.first().map(|c| c.len()).unwrap_or(0);
    DataFrame::new(height, columns)
}

//! Row structs that own their table's schema: one [`table!`](crate::table) declaration gives a
//! table its [`TableDef`](prefflow_engine::schema::TableDef) (what kinds declare and the docs
//! print), the writer (`Row::to_frame`) and the reader (`Row::from_frame`), so a column is
//! named once, in `tables/`, and the writer, the reader and the contract cannot drift apart.
//!
//! A field's Rust type decides its column's type and nullability ([`Cell`]): `String` is a
//! non-null `str`, `Option<String>` a nullable one, and so on. The reader is strict where the
//! contract is: a missing column, a column of another type, or a null in a non-null column is
//! a [`RowError`] naming the table, the column and the row.

use polars::prelude::*;
use prefflow_engine::schema::Dtype;

/// A reader's complaint: the table does not hold what its definition promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("table `{table}`, column `{column}`: {problem}")]
pub struct RowError {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// What is wrong, with the row when one is at fault.
    pub problem: String,
}

/// A Rust type one column holds: its declared type, and how a column of it is written and read.
pub trait Cell: Sized + Clone {
    /// The column's type.
    const DTYPE: Dtype;
    /// Whether the column may hold nulls (`Option<_>`).
    const NULLABLE: bool;
    /// A column named `name` holding `values`.
    fn column(name: &str, values: Vec<Self>) -> Column;
    /// The values of column `column` of `df` (of table `table`, for errors).
    fn read(
        df: &DataFrame,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<Self>, RowError>;
}

fn get<'a>(
    df: &'a DataFrame,
    table: &'static str,
    column: &'static str,
) -> Result<&'a Column, RowError> {
    df.column(column).map_err(|_| RowError {
        table,
        column,
        problem: "missing".into(),
    })
}

fn typed<T>(r: PolarsResult<T>, table: &'static str, column: &'static str) -> Result<T, RowError> {
    r.map_err(|e| RowError {
        table,
        column,
        problem: format!("another type than declared ({e})"),
    })
}

fn non_null<T>(
    values: Vec<Option<T>>,
    table: &'static str,
    column: &'static str,
) -> Result<Vec<T>, RowError> {
    values
        .into_iter()
        .enumerate()
        .map(|(row, v)| {
            v.ok_or_else(|| RowError {
                table,
                column,
                problem: format!("null in row {row}, but the column is declared non-null"),
            })
        })
        .collect()
}

/// Implements [`Cell`] for a scalar `$t` (non-null) and `Option<$t>` (nullable), read through
/// polars' `$chunked` accessor.
macro_rules! scalar_cell {
    ($t:ty, $dtype:ident, $chunked:ident, $owned:expr) => {
        impl Cell for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            const NULLABLE: bool = false;
            fn column(name: &str, values: Vec<Self>) -> Column {
                Column::new(name.into(), values)
            }
            fn read(
                df: &DataFrame,
                table: &'static str,
                column: &'static str,
            ) -> Result<Vec<Self>, RowError> {
                non_null(<Option<$t>>::read(df, table, column)?, table, column)
            }
        }

        impl Cell for Option<$t> {
            const DTYPE: Dtype = Dtype::$dtype;
            const NULLABLE: bool = true;
            fn column(name: &str, values: Vec<Self>) -> Column {
                Column::new(name.into(), values)
            }
            fn read(
                df: &DataFrame,
                table: &'static str,
                column: &'static str,
            ) -> Result<Vec<Self>, RowError> {
                let col = get(df, table, column)?;
                if col.dtype() == &DataType::Null {
                    return Ok(vec![None; col.len()]);
                }
                let chunked = typed(col.$chunked(), table, column)?;
                Ok(chunked.iter().map(|v| v.map($owned)).collect())
            }
        }
    };
}

scalar_cell!(String, Str, str, |s: &str| s.to_string());
scalar_cell!(bool, Bool, bool, |b| b);
scalar_cell!(u32, U32, u32, |v| v);
scalar_cell!(u64, U64, u64, |v| v);
scalar_cell!(i64, I64, i64, |v| v);
scalar_cell!(f64, F64, f64, |v| v);

/// Declares a table by its row struct: the struct, its `TableDef` (`$def`), and
/// `to_frame(&[Row])` / `from_frame(&DataFrame)`. Each field's doc comment is its column's
/// meaning in `docs/tables.md`; the field order is the column order.
#[macro_export]
macro_rules! table {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $row:ident as $def:ident ($name:literal, $table_doc:literal) {
            $( #[doc = $cdoc:literal] $fvis:vis $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $row {
            $( #[doc = $cdoc] $fvis $field: $ty, )*
        }

        #[doc = concat!("The `", $name, "` table: ", $table_doc, ".")]
        $vis static $def: prefflow_engine::schema::TableDef = prefflow_engine::schema::TableDef {
            name: $name,
            doc: $table_doc,
            columns: &[$(
                prefflow_engine::schema::ColumnDef {
                    name: stringify!($field),
                    dtype: <$ty as $crate::tables::row::Cell>::DTYPE,
                    nullable: <$ty as $crate::tables::row::Cell>::NULLABLE,
                    only: None,
                    doc: $cdoc.trim_ascii(),
                },
            )*],
            open: false,
        };

        impl $row {
            /// The rows as the table, columns in declaration order.
            pub fn to_frame(rows: &[Self]) -> polars::prelude::PolarsResult<polars::prelude::DataFrame> {
                polars::prelude::DataFrame::new_infer_height(vec![$(
                    <$ty as $crate::tables::row::Cell>::column(
                        stringify!($field),
                        rows.iter().map(|r| r.$field.clone()).collect(),
                    ),
                )*])
            }

            /// The rows of `df`; a missing or mistyped column, or a null where the column is
            /// declared non-null, is an error naming the table, column and row.
            pub fn from_frame(df: &polars::prelude::DataFrame) -> Result<Vec<Self>, $crate::tables::row::RowError> {
                $( let mut $field = <$ty as $crate::tables::row::Cell>::read(df, $name, stringify!($field))?.into_iter(); )*
                Ok((0..df.height())
                    .filter_map(|_| Some(Self { $( $field: $field.next()?, )* }))
                    .collect())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::tables::knowu::{Written, WRITTEN};
    use polars::prelude::*;

    fn rows() -> Vec<Written> {
        vec![
            Written {
                task_id: "A@p".into(),
                path: "out/A@p".into(),
                knowu_class: true,
                steps: 3,
                has_result: false,
            },
            Written {
                task_id: "B@p".into(),
                path: "out/B@p".into(),
                knowu_class: false,
                steps: 0,
                has_result: true,
            },
        ]
    }

    #[test]
    fn a_row_struct_writes_its_declared_table_and_reads_it_back() {
        let df = Written::to_frame(&rows()).unwrap();
        assert_eq!(WRITTEN.violations(&df), []);
        let names: Vec<&str> = WRITTEN.columns.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["task_id", "path", "knowu_class", "steps", "has_result"]
        );
        assert_eq!(WRITTEN.columns[0].doc, "the task");
        assert_eq!(Written::from_frame(&df).unwrap(), rows());
    }

    #[test]
    fn the_reader_refuses_a_missing_column_a_null_and_another_type() {
        let df = Written::to_frame(&rows()).unwrap();
        let err = Written::from_frame(&df.drop("steps").unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "table `written`, column `steps`: missing");
        let mut nulls = df.clone();
        nulls
            .with_column(Column::new("path".into(), [Some("x"), None]))
            .unwrap();
        let err = Written::from_frame(&nulls).unwrap_err();
        assert_eq!(
            err.to_string(),
            "table `written`, column `path`: null in row 1, but the column is declared non-null"
        );
        let mut typed = df;
        typed
            .with_column(Column::new("steps".into(), ["3", "0"]))
            .unwrap();
        let err = Written::from_frame(&typed).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("table `written`, column `steps`: another type"),
            "{err}"
        );
    }
}

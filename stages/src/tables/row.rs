//! Row structs that own their table's schema. A [`table!`](crate::tables::table!) declaration gives a
//! table its [`TableDef`](prefflow_engine::schema::TableDef) (what kinds declare and the docs
//! print), the writer (`Row::to_frame`) and the reader (`Row::from_frame`), so a column is
//! named once, in `tables/`, and the writer, the reader and the contract cannot drift apart.
//! A table several kinds write with different columns (`episodes`, `steps`: producer-only
//! columns, [`ColumnDef::only`](prefflow_engine::schema::ColumnDef::only)) keeps its hand-written
//! `TableDef`, and each producer's or consumer's view of it is a [`row!`](crate::tables::row!) struct
//! over some of its columns: the compiler checks every field against the definition (name,
//! type), so a view cannot name a column the table does not declare.
//!
//! A field's Rust type decides its column's type and nullability ([`Cell`]): `String` is a
//! non-null `str`, `Option<String>` a nullable one, `Vec<String>` a `list[str]`, and so on.
//! The reader is strict where the contract is: a missing column, a column of another type, or
//! a null in a non-null column is a [`RowError`] naming the table, the column and the row. A
//! nullable column only some producers write reads as nulls where it is absent.

use polars::prelude::*;
use prefflow_engine::schema::{Dtype, TableDef};

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
    /// The values of a column `df` lacks, which its definition says only some producers write:
    /// nulls for a nullable column, else the column is missing.
    fn absent(
        height: usize,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<Self>, RowError> {
        let _ = height;
        Err(missing(table, column))
    }
}

/// A scalar column type: written as is (non-null) or as options (nullable), read as options.
/// [`Cell`] is implemented once for every `T: Scalar` and once for every `Option<T>`.
pub trait Scalar: Sized + Clone {
    /// The column's type.
    const DTYPE: Dtype;
    /// A non-null column of `values`.
    fn column(name: &str, values: Vec<Self>) -> Column;
    /// A nullable column of `values`.
    fn nullable_column(name: &str, values: Vec<Option<Self>>) -> Column;
    /// The values of `col`, nulls as `None` (an error when it has another type).
    fn values(col: &Column) -> PolarsResult<Vec<Option<Self>>>;
}

fn missing(table: &'static str, column: &'static str) -> RowError {
    RowError {
        table,
        column,
        problem: "missing".into(),
    }
}

/// The values of a nullable column of `T`.
fn read_nullable<T: Scalar>(
    df: &DataFrame,
    table: &'static str,
    column: &'static str,
) -> Result<Vec<Option<T>>, RowError> {
    let col = df.column(column).map_err(|_| missing(table, column))?;
    if col.dtype() == &DataType::Null {
        return Ok(vec![None; col.len()]);
    }
    T::values(col).map_err(|e| RowError {
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

impl<T: Scalar> Cell for T {
    const DTYPE: Dtype = T::DTYPE;
    const NULLABLE: bool = false;
    fn column(name: &str, values: Vec<Self>) -> Column {
        T::column(name, values)
    }
    fn read(
        df: &DataFrame,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<Self>, RowError> {
        non_null(read_nullable::<T>(df, table, column)?, table, column)
    }
}

impl<T: Scalar> Cell for Option<T> {
    const DTYPE: Dtype = T::DTYPE;
    const NULLABLE: bool = true;
    fn column(name: &str, values: Vec<Self>) -> Column {
        T::nullable_column(name, values)
    }
    fn read(
        df: &DataFrame,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<Self>, RowError> {
        read_nullable::<T>(df, table, column)
    }
    fn absent(height: usize, _: &'static str, _: &'static str) -> Result<Vec<Self>, RowError> {
        Ok(vec![None; height])
    }
}

/// Whether a reader accepts a column of type `actual` for a field declared `declared`: the
/// declared type itself, or a number that converts to it without loss checked per value (tables
/// built by hand — JSON lines, CSV, another tool's Parquet — hold integers as `i64` and
/// fractions as `f64` whatever width the contract names; writers are held to the exact type
/// when the engine commits).
pub fn readable_as(declared: Dtype, actual: &DataType) -> bool {
    let integer = matches!(declared, Dtype::I32 | Dtype::I64 | Dtype::U32 | Dtype::U64);
    declared.matches(actual)
        || (integer && actual.is_integer())
        || (declared == Dtype::F64 && actual.is_primitive_numeric())
}

/// `col` converted to `declared` when [`readable_as`] allows it: a strict cast, so a value
/// that does not fit (a negative count, an overflow) is an error, never a silent null.
fn as_declared(col: &Column, declared: Dtype) -> PolarsResult<Column> {
    let target = declared.polars();
    if col.dtype() == &target || !readable_as(declared, col.dtype()) {
        return Ok(col.clone());
    }
    col.strict_cast(&target)
}

/// Implements [`Scalar`] for `$t`, read through polars' `$chunked` accessor.
macro_rules! scalar {
    ($t:ty, $dtype:ident, $chunked:ident, $owned:expr) => {
        impl Scalar for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            fn column(name: &str, values: Vec<Self>) -> Column {
                Column::new(name.into(), values)
            }
            fn nullable_column(name: &str, values: Vec<Option<Self>>) -> Column {
                Column::new(name.into(), values)
            }
            fn values(col: &Column) -> PolarsResult<Vec<Option<Self>>> {
                let col = as_declared(col, Dtype::$dtype)?;
                Ok(col.$chunked()?.iter().map(|v| v.map($owned)).collect())
            }
        }
    };
}

scalar!(String, Str, str, |s: &str| s.to_string());
scalar!(bool, Bool, bool, |b| b);
scalar!(u32, U32, u32, |v| v);
scalar!(i32, I32, i32, |v| v);
scalar!(u64, U64, u64, |v| v);
scalar!(i64, I64, i64, |v| v);
scalar!(f64, F64, f64, |v| v);

/// A `list[str]` column: one list per row, typed even when there are no rows.
impl Cell for Vec<String> {
    const DTYPE: Dtype = Dtype::ListStr;
    const NULLABLE: bool = false;
    fn column(name: &str, values: Vec<Self>) -> Column {
        if values.is_empty() {
            return Column::new_empty(name.into(), &Dtype::ListStr.polars());
        }
        let series: Vec<Series> = values
            .iter()
            .map(|v| Series::new("".into(), v.as_slice()))
            .collect();
        Column::new(name.into(), series)
    }
    fn read(
        df: &DataFrame,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<Self>, RowError> {
        let col = df.column(column).map_err(|_| missing(table, column))?;
        let typed = |e: PolarsError| RowError {
            table,
            column,
            problem: format!("another type than declared ({e})"),
        };
        let lists = col.list().map_err(typed)?;
        let values = lists
            .amortized_iter()
            .map(|list| match list {
                None => Ok(None),
                Some(s) => Ok(Some(
                    s.as_ref()
                        .str()?
                        .iter()
                        .flatten()
                        .map(str::to_string)
                        .collect(),
                )),
            })
            .collect::<PolarsResult<Vec<Option<Vec<String>>>>>()
            .map_err(typed)?;
        non_null(values, table, column)
    }
}

/// How a field's Rust value is held in its column: the column's [`Cell`] type and the two
/// conversions. A field of a [`row!`](crate::tables::row!) struct names its codec after `=>`
/// (`pub task_type: TaskType => Spelled`); without one it is [`Plain`], held as it is. This is
/// what lets a domain struct with typed values (enums, nested structs) be its table's row
/// itself, with no hand-written conversion to a struct of column cells.
pub trait Codec<T> {
    /// The column's cell type.
    type Stored: Cell;
    /// The cell holding `value` (an error says why it cannot be held).
    fn encode(value: &T) -> Result<Self::Stored, String>;
    /// The value a cell holds (an error says why it is not one).
    fn decode(stored: Self::Stored) -> Result<T, String>;
}

/// A field held as it is: its type is its column's [`Cell`] type.
pub struct Plain;

impl<T: Cell> Codec<T> for Plain {
    type Stored = T;
    fn encode(value: &T) -> Result<T, String> {
        Ok(value.clone())
    }
    fn decode(stored: T) -> Result<T, String> {
        Ok(stored)
    }
}

/// A field held as its JSON text (serde's compact form) in a `str` column: nested values a
/// table keeps whole (a task's overrides, its reference solution).
pub struct Json;

impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec<T> for Json {
    type Stored = String;
    fn encode(value: &T) -> Result<String, String> {
        serde_json::to_string(value).map_err(|e| e.to_string())
    }
    fn decode(stored: String) -> Result<T, String> {
        serde_json::from_str(&stored).map_err(|e| format!("not the JSON this column holds ({e})"))
    }
}

/// A unit enum held as its serde spelling (`"instruction_override"`) in a `str` column: the
/// same word the bundle's JSON holds, so the table and the JSON cannot spell a value apart.
pub struct Spelled;

impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec<T> for Spelled {
    type Stored = String;
    fn encode(value: &T) -> Result<String, String> {
        match serde_json::to_value(value).map_err(|e| e.to_string())? {
            serde_json::Value::String(word) => Ok(word),
            other => Err(format!("{other} is not spelled as one word")),
        }
    }
    fn decode(stored: String) -> Result<T, String> {
        serde_json::from_value(serde_json::Value::String(stored))
            .map_err(|e| format!("not a value this column holds ({e})"))
    }
}

/// The column of one field of `rows` for [`row!`](crate::tables::row!)'s `to_frame`: each value
/// encoded by codec `C`; a value `C` cannot hold is an error naming the column.
pub fn encode_column<'a, C: Codec<T>, T: 'a>(
    column: &str,
    values: impl Iterator<Item = &'a T>,
) -> PolarsResult<Column> {
    let stored = values
        .map(|v| {
            C::encode(v)
                .map_err(|e| PolarsError::ComputeError(format!("column `{column}`: {e}").into()))
        })
        .collect::<PolarsResult<Vec<C::Stored>>>()?;
    Ok(<C::Stored as Cell>::column(column, stored))
}

/// One field's values for [`row!`](crate::tables::row!)'s `from_frame`: the column read as its
/// cell type ([`read_field`]), each cell decoded by codec `C`; a cell that does not decode is
/// an error naming the table, the column and the row.
pub fn decode_column<C: Codec<T>, T>(
    df: &DataFrame,
    def: &'static TableDef,
    column: &'static str,
) -> Result<Vec<T>, RowError> {
    read_field::<C::Stored>(df, def, column)?
        .into_iter()
        .enumerate()
        .map(|(row, stored)| {
            C::decode(stored).map_err(|e| RowError {
                table: def.name,
                column,
                problem: format!("row {row}: {e}"),
            })
        })
        .collect()
}

/// Whether `columns` are every column of `def`, in its order: the compile-time check of a
/// [`row!`](crate::tables::row!) struct declared `is` its table (it writes the table whole).
pub const fn covers(def: &TableDef, columns: &[&str]) -> bool {
    if def.columns.len() != columns.len() {
        return false;
    }
    let mut i = 0;
    while i < columns.len() {
        let (a, b) = (def.columns[i].name.as_bytes(), columns[i].as_bytes());
        if a.len() != b.len() || !bytes_eq(a, b) {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `def` declares a column `name` of type `dtype`: the compile-time check of every
/// [`row!`](crate::tables::row!) field. Nullability may differ: a reader may view a non-null column only
/// some producers write as `Option<_>` (nulls where absent), a writer may fill a nullable column
/// with a non-null field; a null where none is allowed fails at run time either way (the reader
/// here, the engine's commit check for a writer).
pub const fn declares(def: &TableDef, name: &str, dtype: Dtype) -> bool {
    let mut i = 0;
    while i < def.columns.len() {
        let c = &def.columns[i];
        if c.name.len() == name.len() && bytes_eq(c.name.as_bytes(), name.as_bytes()) {
            return c.dtype as u8 == dtype as u8;
        }
        i += 1;
    }
    false
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `def` says only some producers write `column` (a reader may find it absent).
pub fn producer_only(def: &TableDef, column: &str) -> bool {
    def.column(column).is_some_and(|c| c.only.is_some())
}

/// Checks one field's column for [`row!`](crate::tables::row!)'s `check`.
pub fn check_field<T: Cell>(
    df: &DataFrame,
    def: &'static TableDef,
    column: &'static str,
) -> Result<(), RowError> {
    match df.column(column) {
        Err(_) if producer_only(def, column) => T::absent(0, def.name, column).map(|_| ()),
        Err(_) => Err(missing(def.name, column)),
        Ok(c) if readable_as(T::DTYPE, c.dtype()) => Ok(()),
        Ok(c) => Err(RowError {
            table: def.name,
            column,
            problem: format!("type {} where {} is declared", c.dtype(), T::DTYPE.name()),
        }),
    }
}

/// Reads one field's column for [`row!`](crate::tables::row!)'s `from_frame`.
pub fn read_field<T: Cell>(
    df: &DataFrame,
    def: &'static TableDef,
    column: &'static str,
) -> Result<Vec<T>, RowError> {
    if df.column(column).is_err() && producer_only(def, column) {
        return T::absent(df.height(), def.name, column);
    }
    T::read(df, def.name, column)
}

/// A row struct over some columns of the declared table `$def`, in field order: the struct,
/// `to_frame(&[Row])` (those columns, in that order), `from_frame(&DataFrame)` (reads those
/// columns, ignores others), `check(&DataFrame)` (has them, typed as declared, without
/// reading them) and one associated constant per field holding its column's name
/// (`Row::field`), for code that works on the columns with polars expressions (group-bys,
/// joins) instead of reading rows. Every field must be a column `$def` declares with the
/// field's type, or the crate does not compile ([`declares`]). Writers of a table with
/// producer-only columns and readers that need a few columns use this; a table with one
/// producer is declared whole with [`table!`](crate::tables::table!). A field whose column's
/// name would clash with a generated item names its column after `as`
/// (`pub check_name as "check": String`); its constant is then `Row::check_name`.
///
/// A domain struct can be its table's row itself: a field of a type no column holds names its
/// [`Codec`] after `=>` (`pub overrides: Overrides => Json`, `pub task_type: TaskType =>
/// Spelled`; the column's declared type is the codec's cell type), `struct Row is $def`
/// (instead of `of`) checks at compile time that the fields are every column of `$def` in its
/// order ([`covers`]), and fields that are no column follow in a `beside { … }` block (the
/// reader leaves them at their `Default`). The struct's own attributes pass through, so it
/// may derive serde's traits as well.
macro_rules! row {
    (
        $(#[$attr:meta])*
        $vis:vis struct $row:ident is $def:path { $($body:tt)* }
        $(beside { $($beside:tt)* })?
    ) => {
        $crate::tables::row::row! {
            $(#[$attr])*
            $vis struct $row of $def { $($body)* }
            $(beside { $($beside)* })?
        }

        const _: () = assert!(
            $crate::tables::row::covers(&$def, $row::COLUMNS),
            concat!(
                "`", stringify!($row), "` is declared `is ", stringify!($def),
                "` but its fields are not every column of the table, in its order"
            ),
        );
    };
    (
        $(#[$attr:meta])*
        $vis:vis struct $row:ident of $def:path {
            $( $(#[$fattr:meta])* $fvis:vis $field:ident $(as $col:literal)? : $ty:ty $(=> $codec:ty)?, )*
        }
        $(beside {
            $( $(#[$battr:meta])* $bvis:vis $bfield:ident : $bty:ty, )*
        })?
    ) => {
        $(#[$attr])*
        // Fields are column names, spelled as the table spells them (KnowU's `SR`, `AvgScore`).
        #[allow(non_snake_case)]
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $row {
            $( $(#[$fattr])* $fvis $field: $ty, )*
            $($( $(#[$battr])* $bvis $bfield: $bty, )*)?
        }

        $(
            const _: () = assert!(
                $crate::tables::row::declares(
                    &$def,
                    $crate::tables::row::column_name!($field $(as $col)?),
                    <$crate::tables::row::stored!($ty $(=> $codec)?) as $crate::tables::row::Cell>::DTYPE,
                ),
                concat!(
                    "`", stringify!($row), "::", stringify!($field),
                    "` is not a column of `", stringify!($def), "` of this type"
                ),
            );
        )*

        // A view need not use every generated item (a reader never writes).
        #[allow(non_upper_case_globals, non_snake_case, dead_code)]
        impl $row {
            /// These columns' names, in field order.
            pub const COLUMNS: &'static [&'static str] = &[$($crate::tables::row::column_name!($field $(as $col)?)),*];

            $(
                #[doc = concat!("The `", $crate::tables::row::column_name!($field $(as $col)?), "` column's name (for polars expressions).")]
                pub const $field: &'static str = $crate::tables::row::column_name!($field $(as $col)?);
            )*

            /// Whether `df` has these columns with their declared types (a nullable column
            /// only some producers write may be absent), without reading them: an error
            /// naming the table and the first column at fault.
            pub fn check(df: &polars::prelude::DataFrame) -> Result<(), $crate::tables::row::RowError> {
                $( $crate::tables::row::check_field::<$crate::tables::row::stored!($ty $(=> $codec)?)>(df, &$def, $crate::tables::row::column_name!($field $(as $col)?))?; )*
                Ok(())
            }

            /// The rows as a table, these columns in field order.
            pub fn to_frame(rows: &[Self]) -> polars::prelude::PolarsResult<polars::prelude::DataFrame> {
                let columns = vec![$(
                    $crate::tables::row::encode_column::<$crate::tables::row::codec!($($codec)?), $ty>(
                        $crate::tables::row::column_name!($field $(as $col)?),
                        rows.iter().map(|r| &r.$field),
                    )?,
                )*];
                polars::prelude::DataFrame::new(rows.len(), columns)
            }

            /// The rows of `df`; a missing or mistyped column, a null where the column is
            /// declared non-null, or a cell its field's codec cannot decode is an error naming
            /// the table, column and row.
            pub fn from_frame(df: &polars::prelude::DataFrame) -> Result<Vec<Self>, $crate::tables::row::RowError> {
                $( let mut $field = $crate::tables::row::decode_column::<$crate::tables::row::codec!($($codec)?), $ty>(df, &$def, $crate::tables::row::column_name!($field $(as $col)?))?.into_iter(); )*
                Ok((0..df.height())
                    .filter_map(|_| Some(Self {
                        $( $field: $field.next()?, )*
                        $($( $bfield: Default::default(), )*)?
                    }))
                    .collect())
            }
        }
    };
}

/// Declares a table by its row struct: the struct, its `TableDef` (`$def`), and
/// `to_frame(&[Row])` / `from_frame(&DataFrame)` (as [`row!`](crate::tables::row!)). Each field's doc
/// comment is its column's meaning in `docs/tables.md`; the field order is the column order.
/// The struct's own attributes (doc comment, extra derives such as `Default`) pass through.
macro_rules! table {
    (
        $(#[$attr:meta])*
        $vis:vis struct $row:ident as $def:ident ($name:literal, $table_doc:literal) {
            $( #[doc = $cdoc:literal] $fvis:vis $field:ident $(as $col:literal)? : $ty:ty $(=> $codec:ty)?, )*
        }
    ) => {
        #[doc = concat!("The `", $name, "` table: ", $table_doc, ".")]
        $vis static $def: prefflow_engine::schema::TableDef = prefflow_engine::schema::TableDef {
            name: $name,
            doc: $table_doc,
            columns: &[$(
                prefflow_engine::schema::ColumnDef {
                    name: $crate::tables::row::column_name!($field $(as $col)?),
                    dtype: <$crate::tables::row::stored!($ty $(=> $codec)?) as $crate::tables::row::Cell>::DTYPE,
                    nullable: <$crate::tables::row::stored!($ty $(=> $codec)?) as $crate::tables::row::Cell>::NULLABLE,
                    only: None,
                    doc: $cdoc.trim_ascii(),
                },
            )*],
            open: false,
        };

        $crate::tables::row::row! {
            $(#[$attr])*
            $vis struct $row of $def {
                $( #[doc = $cdoc] $fvis $field $(as $col)?: $ty $(=> $codec)?, )*
            }
        }
    };
}

/// A field's column name: the field's own, or the one given after `as` (a column whose name
/// would clash with a generated item, `rejections.check`).
macro_rules! column_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident as $col:literal) => {
        $col
    };
}

/// A field's [`Codec`]: the one named after `=>`, else [`Plain`].
macro_rules! codec {
    () => {
        $crate::tables::row::Plain
    };
    ($codec:ty) => {
        $codec
    };
}

/// A field's column cell type: its own, or its codec's [`Codec::Stored`].
macro_rules! stored {
    ($ty:ty) => {
        $ty
    };
    ($ty:ty => $codec:ty) => {
        <$codec as $crate::tables::row::Codec<$ty>>::Stored
    };
}

// Used by path (`crate::tables::row!`), like any item, so the tables module is what users import.
pub(crate) use {codec, column_name, row, stored, table};

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
    fn the_reader_refuses_a_missing_column_a_null_and_another_type_but_widens_numbers() {
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
        let mut wide = df.clone();
        wide.with_column(Column::new("steps".into(), [3i64, 0]))
            .unwrap();
        Written::check(&wide).unwrap();
        assert_eq!(Written::from_frame(&wide).unwrap(), rows());
        wide.with_column(Column::new("steps".into(), [3i64, -1]))
            .unwrap();
        let err = Written::from_frame(&wide).unwrap_err();
        assert!(err.to_string().contains("column `steps`"), "{err}");
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

//! The scanner behind the column-literal check (`no_declared_column_name_is_spelled_as_a_literal_outside_tables`):
//! which string literals outside `tables/` spell a declared column name *as a column*. A literal
//! that merely equals a column name — a JSON key of a tool's arguments (`"text"`), a role
//! (`"user"`), a YAML field, an `expect` message — is not a column use and is not counted; one
//! handed to something that names a column is:
//!
//! - an argument of a column accessor ([`ACCESSORS`]: polars' `column`, `col`, `alias`,
//!   `select`, `Series::new`, … and the crate's own column readers, `strs`, `text_column`,
//!   `columns::strings`, …), directly or in an array passed to one (`select(["a", "b"])`);
//! - a key of `df!` (`"a" => values`);
//! - an element of an array literal every element of which (two or more) is a column name: a
//!   column list, whatever reads it (`["variant", "agent"].map(col)`, a header list).
//!
//! The scanner is lexical (comments, char and raw-string literals skipped; brackets matched), so
//! it can miss a column name reached in a way the rules do not name (a helper not in
//! [`ACCESSORS`]): add such helpers here rather than leaving them uncounted.

use std::collections::BTreeSet;

/// Callees whose string arguments are column names: the last path segment of the function or
/// method (a `Type::` prefix where the name alone is ambiguous).
const ACCESSORS: &[&str] = &[
    // polars
    "column",
    "col",
    "cols",
    "Series::new",
    "Column::new",
    "Column::new_scalar",
    "Column::new_empty",
    "StringChunked::from_iter_options",
    // the crate's hand-written column readers
    "strs",
    "str_col",
    "texts",
    "text",
    "text_column",
    "f64s",
    "u64s",
    "u32s",
    "bools",
    "floats",
    "strings",
    "optional_strings",
    "cast",
    "require",
    "empty_string_lists",
    "csv_columns",
    "cell",
];

/// Polars methods whose string arguments are column names, counted only as methods
/// (`.rename(…)`: a free `rename(fields, "a", "b")` renames JSON fields).
const METHODS: &[&str] = &[
    "alias",
    "drop",
    "drop_many",
    "rename",
    "select",
    "group_by",
    "sort",
    "unique",
    "with_name",
    "get_column_index",
];

/// A string literal: its byte range (quotes included) and its text.
struct Literal<'a> {
    start: usize,
    end: usize,
    text: &'a str,
}

/// `text`'s ordinary string literals, and `text` with comments, char literals and every
/// literal's inside blanked (so brackets can be matched on it).
fn lex(text: &str) -> (Vec<Literal<'_>>, Vec<u8>) {
    let b = text.as_bytes();
    let mut masked = b.to_vec();
    let mut lits = Vec::new();
    let mut i = 0;
    let blank = |m: &mut Vec<u8>, from: usize, to: usize| {
        m[from..to.min(b.len())].iter_mut().for_each(|c| *c = b' ')
    };
    while i < b.len() {
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut masked, i, end);
            i = end;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '"'); otherwise a lifetime.
            let close = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            match close {
                Some(c) => {
                    blank(&mut masked, i, c + 1);
                    i = c + 1;
                }
                None => i += 1,
            }
        } else if b[i] == b'r' && !prev_ident && matches!(b.get(i + 1), Some(b'"' | b'#')) {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = b"\"".to_vec();
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + 2 + hashes;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut masked, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            lits.push(Literal {
                start: i,
                end,
                text: &text[i + 1..j.min(b.len())],
            });
            blank(&mut masked, i + 1, j);
            i = end;
        } else {
            i += 1;
        }
    }
    (lits, masked)
}

/// The position of the bracket that encloses `pos` (unmatched `(`, `[` or `{` before it).
fn enclosing(masked: &[u8], pos: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (0..pos).rev() {
        match masked[i] {
            b')' | b']' | b'}' => depth += 1,
            b'(' | b'[' | b'{' if depth == 0 => return Some(i),
            b'(' | b'[' | b'{' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The bracket that closes the one at `open`.
fn closing(masked: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in masked.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    masked.len()
}

/// The name called with the parenthesis at `open` (`df!`, `col`, `Series::new`; `.rename` for
/// a method), if any.
fn callee(masked: &[u8], open: usize) -> String {
    let before = std::str::from_utf8(&masked[..open])
        .unwrap_or("")
        .trim_end();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let name_start = before
        .trim_end_matches('!')
        .trim_end_matches(is_ident)
        .len();
    let name = &before[name_start..];
    let prefix = &before[..name_start];
    if prefix.trim_end().ends_with('.') {
        return format!(".{name}");
    }
    let path = prefix.strip_suffix("::").map(|p| {
        let start = p.trim_end_matches(is_ident).len();
        &p[start..]
    });
    match path {
        Some(ty) if !ty.is_empty() => format!("{ty}::{name}"),
        _ => name.to_string(),
    }
}

fn is_accessor(callee: &str) -> bool {
    if let Some(method) = callee.strip_prefix('.') {
        return METHODS.contains(&method) || ACCESSORS.contains(&method);
    }
    ACCESSORS.contains(&callee)
        || callee
            .rsplit_once("::")
            .is_some_and(|(_, last)| last != "new" && ACCESSORS.contains(&last))
}

/// Whether the array opened at `open` is a column list: two or more literals, all column
/// names, and nothing else but separators.
fn column_list(text: &str, masked: &[u8], open: usize, names: &BTreeSet<&str>) -> bool {
    let close = closing(masked, open);
    let inside = &masked[open + 1..close];
    if inside.iter().any(|c| b"([{".contains(c)) {
        return false;
    }
    let (lits, _) = lex(&text[open + 1..close]);
    let rest = inside
        .iter()
        .filter(|c| !c.is_ascii_whitespace() && **c != b',' && **c != b'"')
        .count();
    lits.len() >= 2 && rest == 0 && lits.iter().all(|l| names.contains(l.text))
}

/// Whether the literal at `lit` is used as a column name (the rules in the module doc).
fn is_column_use(text: &str, masked: &[u8], lit: &Literal, names: &BTreeSet<&str>) -> bool {
    let Some(mut open) = enclosing(masked, lit.start) else {
        return false;
    };
    if masked[open] == b'[' {
        let before = std::str::from_utf8(&masked[..open])
            .unwrap_or("")
            .trim_end();
        let indexing = before.ends_with(|c: char| c.is_ascii_alphanumeric() || "_)]!".contains(c));
        if indexing && !(before.ends_with(" in") || before.ends_with("\nin")) {
            return false;
        }
        if column_list(text, masked, open, names) {
            return true;
        }
        match enclosing(masked, open) {
            Some(outer) => open = outer,
            None => return false,
        }
    }
    if masked[open] != b'(' {
        return false;
    }
    let name = callee(masked, open);
    if name == "df!" || name.ends_with("::df!") {
        return text[lit.end..].trim_start().starts_with("=>");
    }
    is_accessor(&name)
}

/// The 1-based lines of the literals of `text` (a Rust source file) that use a name in `names`
/// as a column, one entry per literal.
pub(super) fn column_uses(text: &str, names: &BTreeSet<&str>) -> Vec<usize> {
    let (lits, masked) = lex(text);
    lits.iter()
        .filter(|l| names.contains(l.text))
        .filter(|l| is_column_use(text, &masked, l, names))
        .map(|l| 1 + text[..l.start].matches('\n').count())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(src: &str) -> usize {
        let names: BTreeSet<&str> = ["score", "agent", "user", "text"].into();
        column_uses(src, &names).len()
    }

    #[test]
    fn column_accessors_df_keys_and_column_lists_count() {
        assert_eq!(count(r#"df.column("score")?"#), 1);
        assert_eq!(
            count(r#"lazy.select([col("score"), col("agent").alias("user")])"#),
            3
        );
        assert_eq!(count(r#"columns::strings(df, "t", "agent")"#), 1);
        assert_eq!(count(r#"Series::new("score".into(), v)"#), 1);
        assert_eq!(count(r#"df!("score" => s, "agent" => vec!["user"; n])"#), 2);
        assert_eq!(count(r#"df.select(["score", "agent"])"#), 2);
        assert_eq!(count(r#"for c in ["score", "agent"] { f(c) }"#), 2);
    }

    #[test]
    fn other_uses_of_the_same_words_do_not() {
        assert_eq!(count(r#"json!({"text": t, "agent": a})"#), 0);
        assert_eq!(count(r#"ChatMessage::new("user", body)"#), 0);
        assert_eq!(count(r#"v["text"].as_str(); x.expect("score")"#), 0);
        assert_eq!(count(r#"["user", "other"].contains(&w)"#), 0);
        assert_eq!(count(r#"rename(&mut fields, "text", "index")"#), 0);
        assert_eq!(count(r#"df.rename("text", "score".into())"#), 2);
        assert_eq!(
            count("// df.column(\"score\")\nlet c = '\"'; f(\"user\")"),
            0
        );
        assert_eq!(count(r##"let s = r#"col("score")"#;"##), 0);
    }
}

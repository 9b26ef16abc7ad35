//! Reading what users write, with every problem said in their words: text files whose encoding
//! is wrong (UTF-16, Latin-1, a binary file given by mistake) are located and answered with
//! "re-save as UTF-8", and YAML parser messages that speak the parser's language (duplicate-key
//! policies, budget breaches, unknown fields) become a message and a fix.
//!
//! One home for this, used by the pipeline loader and by every stage that reads authored files
//! (apps, personas, templates, review sheets, KnowU logs), so the same mistake reads the same
//! everywhere.

use std::fmt;
use std::path::Path;

use serde_saphyr::budget::BudgetBreach;

/// A place in a user's file: `file:line:column`, or just `file` when no finer place is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line; 0 when unknown.
    pub line: u64,
    /// 1-based column (in characters); 0 when unknown.
    pub column: u64,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// Why a file cannot be read as text.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// The file system refused (missing file, a directory, no permission).
    #[error("cannot read {file}: {source}; check the path (relative paths start at the working directory)")]
    Io {
        /// The file as the user named it.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not UTF-8 text.
    #[error("{at}: {what}; re-save the file as UTF-8")]
    Encoding {
        /// Where the first bad byte is.
        at: Place,
        /// What the bytes look like instead.
        what: String,
    },
}

impl TextError {
    /// Where the problem is (the file alone for I/O errors).
    pub fn place(&self) -> Place {
        match self {
            TextError::Io { file, .. } => Place {
                file: file.clone(),
                line: 0,
                column: 0,
            },
            TextError::Encoding { at, .. } => at.clone(),
        }
    }
}

/// Reads `path` as UTF-8 text (a UTF-8 byte-order mark is dropped); `shown` is how messages
/// name the file.
pub fn read_text(path: &Path, shown: &str) -> Result<String, TextError> {
    let bytes = std::fs::read(path).map_err(|source| TextError::Io {
        file: shown.to_string(),
        source,
    })?;
    decode_text(shown, bytes)
}

/// Checks that `bytes` are UTF-8 text and says precisely what they are when not.
pub fn decode_text(shown: &str, bytes: Vec<u8>) -> Result<String, TextError> {
    let at = |offset: usize, bytes: &[u8]| {
        let (line, column) = line_column(bytes, offset);
        Place {
            file: shown.to_string(),
            line,
            column,
        }
    };
    let fail = |offset: usize, what: String, bytes: &[u8]| TextError::Encoding {
        at: at(offset, bytes),
        what,
    };
    if let Some(bom) = utf16_or_32_bom(&bytes) {
        return Err(fail(
            0,
            format!("the file is {bom} (it starts with a {bom} byte-order mark), not UTF-8"),
            &bytes,
        ));
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    if let Some(nul) = body.iter().position(|&b| b == 0) {
        let what = if looks_like_utf16(body) {
            "the file looks like UTF-16 without a byte-order mark (every other byte is zero), not UTF-8".to_string()
        } else {
            "the file holds a NUL byte here: it is binary (an image, archive or Parquet file?), not text".to_string()
        };
        return Err(fail(nul + (bytes.len() - body.len()), what, &bytes));
    }
    match std::str::from_utf8(body) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let offset = e.valid_up_to();
            let byte = body[offset];
            let what = format!(
                "byte 0x{byte:02X} is not UTF-8 (a file saved as Latin-1 or Windows-1252 writes `é` this way)"
            );
            Err(fail(offset + (bytes.len() - body.len()), what, &bytes))
        }
    }
}

fn utf16_or_32_bom(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => Some("UTF-32"),
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => Some("UTF-16"),
        _ => None,
    }
}

/// UTF-16 text without a byte-order mark: one byte of each pair is (nearly) always zero and
/// the other is printable ASCII; binary files have zeros everywhere.
fn looks_like_utf16(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(512)];
    let half = sample.len() / 2;
    if half < 2 {
        return false;
    }
    let share = |parity: usize, f: &dyn Fn(u8) -> bool| {
        sample
            .iter()
            .skip(parity)
            .step_by(2)
            .filter(|&&b| f(b))
            .count()
            * 10
    };
    let zero = |b: u8| b == 0;
    let text = |b: u8| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b);
    (0..2).any(|p| share(p, &zero) >= half * 9 && share(1 - p, &text) >= half * 8)
}

/// 1-based line and column (in characters, counting undecodable bytes as one) of `offset`.
pub fn line_column(bytes: &[u8], offset: usize) -> (u64, u64) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() as u64 + 1;
    (line, column)
}

/// Where a CSV file goes wrong: the row (1 is the header), its line, the header of the column
/// at fault when there is one, and what is wrong with the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvProblem {
    /// 1-based record number, counting the header as 1 (as a spreadsheet numbers rows).
    pub row: u64,
    /// 1-based line in the file (differs from `row` when cells hold line breaks).
    pub line: u64,
    /// The header of the column at fault, when the problem is in one column.
    pub column: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for CsvProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {} (line {})", self.row, self.line)?;
        if let Some(c) = &self.column {
            write!(f, ", column `{c}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Finds the first structural problem of a CSV with a header row: a record with more or fewer
/// cells than the header. `None` when every record fits (the caller's own error stands then).
pub fn csv_problem(text: &str) -> Option<CsvProblem> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h
            .iter()
            .map(|s| s.trim_start_matches('\u{feff}').to_string())
            .collect(),
        Err(e) => return Some(csv_error(&e, &[])),
    };
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(csv_error(&e, &headers)),
        }
    }
}

fn csv_error(e: &csv::Error, headers: &[String]) -> CsvProblem {
    let (row, line) = e.position().map_or((0, 0), |p| (p.record() + 1, p.line()));
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } if len > expected_len => format!(
            "{len} cells, but the header has {expected_len}; a cell that holds a comma must be quoted (\"a, b\")"
        ),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "{len} cells, but the header has {expected_len}; add the missing cells (empty ones too: `a,,c`)"
        ),
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text; re-save the file as UTF-8".to_string(),
        _ => format!("{e}"),
    };
    let column = match e.kind() {
        csv::ErrorKind::UnequalLengths { len, .. } => {
            let first_missing = (*len as usize).min(headers.len());
            headers.get(first_missing).cloned()
        }
        _ => None,
    };
    CsvProblem {
        row,
        line,
        column,
        message,
    }
}

/// Byte offsets where each element of a top-level JSON array starts, so a problem found in
/// element `i` after parsing can name its line (`serde_json` keeps no positions once parsed).
/// Empty when `text` is not an array; strings and nesting are skipped correctly.
pub fn json_array_offsets(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut offsets = Vec::new();
    let Some(open) = bytes.iter().position(|b| !b.is_ascii_whitespace()) else {
        return offsets;
    };
    if bytes[open] != b'[' {
        return offsets;
    }
    let (mut depth, mut in_string, mut escaped, mut expect) = (0usize, false, false, true);
    for (i, &b) in bytes.iter().enumerate().skip(open + 1) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if b.is_ascii_whitespace() {
            continue;
        }
        if depth == 0 && expect && b != b']' {
            offsets.push(i);
            expect = false;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => break,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => expect = true,
            _ => {}
        }
    }
    offsets
}

/// A YAML problem in the user's words: the message, and how to fix it when that can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlProblem {
    /// 1-based line and column, when the parser knows them.
    pub line_column: Option<(u64, u64)>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: Option<String>,
}

impl YamlProblem {
    /// `file:line:column` (or `file` when the parser gave no position).
    pub fn place(&self, file: &str) -> String {
        match self.line_column {
            Some((line, column)) => format!("{file}:{line}:{column}"),
            None => file.to_string(),
        }
    }

    /// `message (fix: …)`, for errors that carry their location separately; a syntax error
    /// with no specific fix gets the usual causes.
    pub fn text(&self) -> String {
        let fix = self.fix.as_deref().unwrap_or(
            "check the YAML at this place: quote text that contains `: ` or ` #` or starts with `[`, `{`, `*`, `&` or `!`, and indent with spaces",
        );
        format!("{} (fix: {fix})", self.message)
    }
}

/// Rephrases a serde-saphyr error: duplicate keys, alias bombs and other budget breaches,
/// unknown fields (with the closest allowed one), and otherwise the parser's own first line
/// without its position (which [`YamlProblem::line_column`] carries).
pub fn yaml_problem(e: &serde_saphyr::Error) -> YamlProblem {
    let line_column = e
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| (l.line(), l.column()));
    let (message, fix) = match original(e) {
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => (
            match key {
                Some(k) => format!("key `{k}` appears twice in the same mapping"),
                None => "a key appears twice in the same mapping".to_string(),
            },
            Some("keep only one of them; a mapping cannot repeat a key".to_string()),
        ),
        serde_saphyr::Error::Budget { breach, .. } => budget(breach),
        other => {
            let text = first_line(&other.to_string());
            let fix = unknown_field_fix(&text);
            (text, fix)
        }
    };
    YamlProblem {
        line_column,
        message,
        fix,
    }
}

fn original(mut e: &serde_saphyr::Error) -> &serde_saphyr::Error {
    loop {
        match e {
            serde_saphyr::Error::WithSnippet { error, .. }
            | serde_saphyr::Error::AliasError { error, .. } => e = error,
            other => return other,
        }
    }
}

fn budget(breach: &BudgetBreach) -> (String, Option<String>) {
    let aliases = "anchors (`&a`) and aliases (`*a`) that repeat other aliases multiply a small file into a huge one (an \"alias bomb\")";
    let (what, fix) = match breach {
        BudgetBreach::Nodes { nodes } => (
            format!(
                "the document expands to more than {} values",
                nodes.saturating_sub(1)
            ),
            format!(
                "{aliases}; write the values out or use fewer aliases, or split a file this large"
            ),
        ),
        BudgetBreach::Aliases { aliases: n } => (
            format!(
                "the document uses more than {} aliases",
                n.saturating_sub(1)
            ),
            format!("{aliases}; use fewer aliases"),
        ),
        BudgetBreach::AliasAnchorRatio {
            aliases: a,
            anchors,
        } => (
            format!("the document uses {a} aliases for {anchors} anchors"),
            format!("{aliases}; use fewer aliases"),
        ),
        BudgetBreach::Depth { depth } => (
            format!("the document nests {depth} levels deep"),
            "flatten the structure; no prefflow file needs more than a few levels".to_string(),
        ),
        other => (
            format!("the document is over a parser limit ({other:?})"),
            "split or simplify the file".to_string(),
        ),
    };
    (format!("YAML too large: {what}"), Some(fix))
}

/// The parser's first line, without its `error: line N column M:` prefix and `at line N,
/// column M` suffix.
fn first_line(raw: &str) -> String {
    let line = raw.lines().next().unwrap_or("invalid YAML").trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let line = match line.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((pos, rest)) if pos.contains("column") => rest,
        _ => line,
    };
    let line = match line.rsplit_once(" at line ") {
        Some((head, tail)) if tail.contains("column") => head,
        _ => line,
    };
    line.trim().to_string()
}

/// For "unknown field `x`, expected one of a, b": the closest allowed name and the whole list.
pub fn unknown_field_fix(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("unknown field `")?;
    let (wrong, rest) = rest.split_once('`')?;
    let list = rest
        .split_once("expected one of ")
        .map(|(_, l)| l)
        .or_else(|| rest.split_once("expected ").map(|(_, l)| l))?;
    let allowed: Vec<String> = list
        .split(',')
        .map(|s| s.trim().trim_matches('`').to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let close = closest(wrong, allowed.iter().map(String::as_str))
        .map(|c| format!("did you mean `{c}`? "))
        .unwrap_or_default();
    Some(format!("{close}allowed here: {}", allowed.join(", ")))
}

/// The candidate within a small edit distance of `wrong`, if any (for "did you mean").
pub fn closest<'a>(wrong: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(wrong, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            row.push((prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoding_error(bytes: &[u8]) -> String {
        decode_text("f.yaml", bytes.to_vec())
            .expect_err("not UTF-8")
            .to_string()
    }

    #[test]
    fn encodings_are_named_and_located() {
        let e = encoding_error(b"\xFF\xFEa\x00b\x00");
        assert!(
            e.starts_with("f.yaml:1:1: ")
                && e.contains("UTF-16")
                && e.contains("re-save the file as UTF-8"),
            "{e}"
        );
        let e = encoding_error(b"a\x00b\x00c\x00d\x00e\x00");
        assert!(e.contains("UTF-16 without a byte-order mark"), "{e}");
        let e = encoding_error(b"name: x\ncity: Z\xFCrich\n");
        assert!(e.starts_with("f.yaml:2:8: ") && e.contains("0xFC"), "{e}");
        let e = encoding_error(b"PAR1\x15\x00\x15\x1c\x15\x00\x15");
        assert!(e.contains("binary"), "{e}");
        let e =
            encoding_error(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00");
        assert!(e.contains("binary"), "{e}");
        assert_eq!(
            decode_text("f", b"\xEF\xBB\xBFok".to_vec()).ok().as_deref(),
            Some("ok")
        );
    }

    fn yaml(text: &str) -> YamlProblem {
        let e = crate::config::from_yaml::<serde_json::Value>(text).expect_err("bad yaml");
        yaml_problem(&e)
    }

    #[test]
    fn parser_jargon_becomes_a_message_and_a_fix() {
        let p = yaml("a: 1\nb: 2\na: 3\n");
        assert_eq!(p.line_column.map(|l| l.0), Some(3));
        assert!(p.message.contains("key `a` appears twice"), "{p:?}");
        assert!(!p.message.contains("DuplicateKeyPolicy"), "{p:?}");
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (prev, next) in ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("{next}: &{next} [{refs}]\n"));
        }
        let p = yaml(&bomb);
        assert!(p.message.starts_with("YAML too large"), "{p:?}");
        assert!(
            p.fix.as_deref().is_some_and(|f| f.contains("alias")),
            "{p:?}"
        );
        assert!(!p.message.contains("Nodes {"), "{p:?}");
    }

    #[test]
    fn json_array_elements_are_found_past_strings_and_nesting() {
        let text = "[\n  {\"a\": \"x],{\\\"\"},\n  [1, [2]],\n  3\n]";
        let starts: Vec<(u64, u64)> = json_array_offsets(text)
            .into_iter()
            .map(|o| line_column(text.as_bytes(), o))
            .collect();
        assert_eq!(starts, [(2, 3), (3, 3), (4, 3)]);
        assert!(json_array_offsets("{\"a\": 1}").is_empty());
        assert!(json_array_offsets("[]").is_empty());
    }

    #[test]
    fn csv_rows_with_the_wrong_cell_count_are_located() {
        let p = csv_problem("a,b,c\n1,2,3\n4,5\n").expect("short row");
        assert_eq!((p.row, p.line, p.column.as_deref()), (3, 3, Some("c")));
        assert!(p.message.contains("2 cells, but the header has 3"), "{p}");
        let p = csv_problem("a,b\n\"x\ny\",2\n1,2,3\n").expect("long row");
        assert_eq!((p.row, p.line), (3, 4));
        assert!(p.message.contains("must be quoted"), "{p}");
        assert_eq!(csv_problem("a,b\n1,2\n"), None);
    }

    #[test]
    fn unknown_fields_suggest_the_closest_allowed_one() {
        let fix = unknown_field_fix(
            "unknown field `stage`, expected one of `pipeline`, `params`, `stages`",
        );
        assert_eq!(
            fix.as_deref(),
            Some("did you mean `stages`? allowed here: pipeline, params, stages")
        );
        assert_eq!(
            first_line("error: line 2 column 1: unknown field `x` at line 2, column 1"),
            "unknown field `x`"
        );
    }
}

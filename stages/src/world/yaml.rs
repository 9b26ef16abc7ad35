//! Reading authored files: YAML parsing with located errors, and the small helpers that turn
//! `serde_saphyr` locations into [`Loc`]s.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_saphyr::{Location, Spanned};

use super::error::{Loc, Result, WorldError};

/// Reads a whole text file, naming the path on failure; a file that is not UTF-8 text is a
/// located [`WorldError::Syntax`] that says what it is and to re-save it as UTF-8.
pub(crate) fn read(path: &Path) -> Result<String> {
    let shown = path.display().to_string();
    prefflow_engine::input::read_text(path, &shown).map_err(|e| text_error(shown, e))
}

/// A [`prefflow_engine::input::TextError`] as a world error.
pub(crate) fn text_error(shown: String, e: prefflow_engine::input::TextError) -> WorldError {
    match e {
        prefflow_engine::input::TextError::Io { source, .. } => WorldError::Read {
            path: shown,
            source,
        },
        prefflow_engine::input::TextError::Encoding { at, what } => WorldError::Syntax {
            at: Loc {
                file: at.file,
                line: at.line as u32,
                column: at.column as u32,
            },
            message: format!("{what} (fix: re-save the file as UTF-8)"),
        },
    }
}

/// Parses YAML text into `T`; a parse or schema error becomes [`WorldError::Syntax`] at the
/// parser's location in `file`, in the user's words (see [`prefflow_engine::input::yaml_problem`]).
pub(crate) fn parse<T: DeserializeOwned>(file: &str, text: &str) -> Result<T> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let problem = prefflow_engine::input::yaml_problem(&e);
        let at = match problem.line_column {
            Some((line, column)) => Loc {
                file: file.to_string(),
                line: line as u32,
                column: column as u32,
            },
            None => Loc::file(file),
        };
        WorldError::Syntax {
            at,
            message: problem.text(),
        }
    })
}

/// Converts a parser location into a [`Loc`] in `file`.
pub(crate) fn loc(file: &str, l: &Location) -> Loc {
    Loc {
        file: file.to_string(),
        line: l.line() as u32,
        column: l.column() as u32,
    }
}

/// The [`Loc`] where a spanned value was written.
pub(crate) fn at<T>(file: &str, s: &Spanned<T>) -> Loc {
    loc(file, &s.referenced)
}

/// Lists the `*.yaml`/`*.yml` files of a directory in name order, so loading is deterministic.
pub(crate) fn yaml_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let read_err = |source| WorldError::Read {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let ext = path.extension().and_then(|e| e.to_str());
        if matches!(ext, Some("yaml" | "yml")) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Small {
        name: String,
    }

    #[test]
    fn syntax_errors_carry_file_line_and_column() {
        let err = parse::<Small>("a.yaml", "name: x\nnmae: y\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("a.yaml:2:1: "), "{text}");
        assert!(text.contains("unknown field `nmae`"), "{text}");
        assert!(
            !text.contains("line 2 column 1"),
            "position said twice: {text}"
        );
    }
}

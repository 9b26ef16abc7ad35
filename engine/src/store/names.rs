//! Names are names: pipeline, stage and variant names become parts of store keys, file names
//! and table labels, so they are checked once, where they are written, before anything runs.

/// Which rule a name follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// A pipeline's name: a store key segment (`runs/<pipeline>/…`). Letters, digits, `_`,
    /// `-` and `.`, starting with a letter or digit, no `..`.
    Pipeline,
    /// A stage's name: letters, digits, `_` and `-` (`.` separates `stage.table`).
    Stage,
    /// A variant's name, derived from sweep values (`agent=oracle,history=all`). It never
    /// becomes a key segment (records hold it as data), but it must not look like a path
    /// either: no `\`, no `..`, no control characters. A `/` stays allowed so model names such
    /// as `Qwen/Qwen3-8B` can be swept.
    Variant,
}

/// Longest pipeline or stage name accepted (a key segment well under every filesystem's
/// limit); variant names may be eight times as long.
pub const MAX_NAME_LEN: usize = 128;

/// Checks `name` against `rule`; the error says what is wrong (the caller adds where).
pub fn check_name(rule: NameRule, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    let limit = match rule {
        NameRule::Variant => 8 * MAX_NAME_LEN,
        _ => MAX_NAME_LEN,
    };
    if name.len() > limit {
        return Err(format!(
            "is {} bytes long; the limit is {limit}",
            name.len()
        ));
    }
    if name.contains("..") {
        return Err("must not contain `..`".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("must not contain control characters ({c:?})"));
    }
    if name.contains('\\') {
        return Err("must not contain `\\` (a path separator)".into());
    }
    let allowed = |c: char| match rule {
        NameRule::Pipeline => c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'),
        NameRule::Stage => c.is_ascii_alphanumeric() || matches!(c, '_' | '-'),
        NameRule::Variant => true,
    };
    if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        let what = if c == '/' {
            "`/` (a path separator)".to_string()
        } else {
            format!("`{c}`")
        };
        return Err(format!("must not contain {what}"));
    }
    if rule == NameRule::Pipeline && !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("must start with a letter or digit".into());
    }
    Ok(())
}

/// The hint shown with a rejected name.
pub fn hint(rule: NameRule) -> &'static str {
    match rule {
        NameRule::Pipeline => {
            "a pipeline name is a plain name: letters, digits, `_`, `-` and `.` (e.g. `iprefbench`)"
        }
        NameRule::Stage => "use letters, digits, `_` or `-`",
        NameRule::Variant => {
            "sweep values become variant names; use plain values (no `..`, `\\` or control characters)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_like_names_are_rejected() {
        for bad in ["../../escaped", "a/b", "..", "a\\b", "", ".hidden", "a\nb"] {
            assert!(check_name(NameRule::Pipeline, bad).is_err(), "{bad:?}");
        }
        for good in ["iprefbench", "knowu-memory", "v1.2_test"] {
            assert!(check_name(NameRule::Pipeline, good).is_ok(), "{good:?}");
        }
        assert!(check_name(NameRule::Stage, "a.b").is_err());
        assert!(check_name(NameRule::Stage, "judge_2").is_ok());
        assert!(check_name(NameRule::Variant, "model=Qwen/Qwen3-8B,history=all").is_ok());
        assert!(check_name(NameRule::Variant, "x=../../etc").is_err());
        assert!(check_name(NameRule::Variant, &"x".repeat(2000)).is_err());
    }
}

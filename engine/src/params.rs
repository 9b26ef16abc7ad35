//! Parameter resolution: `${params.NAME}` references and `--set KEY=VALUE` overrides.
//!
//! Resolution is pure: it maps the user's loose values to the concrete JSON each stage kind
//! receives, so the same inputs always give the same resolved parameters (and cache keys).

use serde_json::Value;

/// A `--set KEY=VALUE` override from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted path as written (`seed`, `params.seed`, `world.events`).
    pub path: Vec<String>,
    /// The value, parsed as a YAML scalar (so `3` is a number and `true` a boolean).
    pub value: Value,
    /// The original argument, for error messages.
    pub raw: String,
}

impl Override {
    /// Parses `a.b=value`; the value is read as YAML so types come out right.
    pub fn parse(arg: &str) -> Result<Self, String> {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("--set `{arg}`: expected KEY=VALUE, e.g. --set seed=7"))?;
        let path: Vec<String> = key.trim().split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            return Err(format!(
                "--set `{arg}`: empty segment in `{key}`; write e.g. seed=7 or world.events=100"
            ));
        }
        let value = parse_scalar(value);
        Ok(Self {
            path,
            value,
            raw: arg.to_string(),
        })
    }
}

/// Reads a command-line value as YAML (numbers, booleans, lists), falling back to a string.
pub fn parse_scalar(text: &str) -> Value {
    if text.is_empty() {
        return Value::String(String::new());
    }
    crate::config::from_yaml::<Value>(text)
        .ok()
        .filter(|v| !v.is_null() || text == "null" || text == "~")
        .unwrap_or_else(|| Value::String(text.to_string()))
}

/// Sets `path` inside `target`, creating objects on the way.
pub fn set_path(target: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        *target = value;
        return;
    };
    let mut cursor = target;
    for key in parents {
        if !cursor.is_object() {
            *cursor = Value::Object(Default::default());
        }
        let Value::Object(map) = cursor else { return };
        cursor = map
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    if !cursor.is_object() {
        *cursor = Value::Object(Default::default());
    }
    if let Value::Object(map) = cursor {
        map.insert(last.clone(), value);
    }
}

/// Replaces every `${params.NAME}` in `value` with the pipeline parameter. A string that is
/// exactly one reference takes the parameter's type (`"${params.seed}"` → `7`); otherwise the
/// parameter is formatted into the string. Returns the names that were not found.
pub fn interpolate(value: &Value, lookup: &dyn Fn(&str) -> Option<Value>) -> Result<Value, String> {
    match value {
        Value::String(s) => interpolate_str(s, lookup),
        Value::Array(items) => items
            .iter()
            .map(|v| interpolate(v, lookup))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(k.clone(), interpolate(v, lookup)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

fn interpolate_str(s: &str, lookup: &dyn Fn(&str) -> Option<Value>) -> Result<Value, String> {
    if !s.contains("${") {
        return Ok(Value::String(s.to_string()));
    }
    let trimmed = s.trim();
    if let Some(name) = whole_reference(trimmed) {
        return lookup(name).ok_or_else(|| name.to_string());
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed `${{` in `{s}`"))?;
        let reference = &after[..end];
        let name = reference
            .strip_prefix("params.")
            .ok_or_else(|| reference.to_string())?;
        let value = lookup(name).ok_or_else(|| name.to_string())?;
        match value {
            Value::String(v) => out.push_str(&v),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

fn whole_reference(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("${")?.strip_suffix('}')?;
    if inner.contains("${") || inner.contains('}') {
        return None;
    }
    inner.strip_prefix("params.")
}

/// Reads a dotted path (`a.b`) from a JSON object.
pub fn get_path<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A compact human form of a value, used in variant names (`top_k=50`, `agent=oracle`).
pub fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lookup(name: &str) -> Option<Value> {
        match name {
            "seed" => Some(json!(7)),
            "who" => Some(json!("maya")),
            _ => None,
        }
    }

    #[test]
    fn whole_reference_keeps_the_parameter_type() {
        assert_eq!(interpolate(&json!("${params.seed}"), &lookup), Ok(json!(7)));
    }

    #[test]
    fn embedded_references_are_formatted_into_the_string() {
        let v = interpolate(
            &json!({"p": ["data/${params.who}-${params.seed}.csv"]}),
            &lookup,
        );
        assert_eq!(v, Ok(json!({"p": ["data/maya-7.csv"]})));
    }

    #[test]
    fn unknown_reference_is_reported_by_name() {
        assert_eq!(
            interpolate(&json!("x ${params.nope}"), &lookup),
            Err("nope".into())
        );
    }

    #[test]
    fn override_values_are_typed() {
        assert_eq!(Override::parse("seed=3").map(|o| o.value), Ok(json!(3)));
        assert_eq!(
            Override::parse("a.b=true").map(|o| o.value),
            Ok(json!(true))
        );
        assert_eq!(
            Override::parse("a=top_k:10").map(|o| o.value),
            Ok(json!("top_k:10"))
        );
        assert!(Override::parse("novalue").is_err());
        assert!(Override::parse("a..b=1").is_err());
    }

    #[test]
    fn set_path_creates_nested_objects() {
        let mut v = json!({"a": 1});
        set_path(&mut v, &["b".into(), "c".into()], json!(2));
        assert_eq!(v, json!({"a": 1, "b": {"c": 2}}));
    }
}

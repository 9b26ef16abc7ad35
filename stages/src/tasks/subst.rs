//! Placeholders in task templates: `{var}` takes a variant's value, `{slot.id}` a slot's.
//!
//! In checks and solutions a slot placeholder stays symbolic (`{$slot: id}` for a whole value,
//! `{$fmt: text}` inside text) so reviewed slot values flow into them; in instructions, rubrics
//! and facts it is filled with the slot's value at generation.

use indexmap::IndexMap;
use serde_json::{json, Value};

use super::model::Slot;
use crate::world::types::display;

/// A variant's values by name.
pub type Vars = IndexMap<String, Value>;

enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
    Slot(&'a str),
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Splits a text into literal pieces and placeholders; `Err` names a malformed placeholder.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("unclosed `{{` in \"{text}\""))?;
        let name = &after[..close];
        match name.strip_prefix("slot.") {
            Some(id) if is_ident(id) => out.push(Piece::Slot(id)),
            None if is_ident(name) => out.push(Piece::Var(name)),
            _ => return Err(format!("malformed placeholder `{{{name}}}` in \"{text}\"")),
        }
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

fn var<'v>(vars: &'v Vars, name: &str) -> Result<&'v Value, String> {
    vars.get(name).ok_or_else(|| {
        let known: Vec<&str> = vars.keys().map(String::as_str).collect();
        format!(
            "unknown variable `{{{name}}}`; the variant defines [{}]",
            known.join(", ")
        )
    })
}

/// Fills `{var}` and `{slot.id}` in a text with values (for instructions, rubrics, facts). A
/// variable's value may itself name variables (`ask_text: "Order the {item} …"`): they are
/// filled too, one level deep, so no instruction shows a raw `{item}`.
pub fn fill_text(text: &str, vars: &Vars, slots: &[Slot]) -> Result<String, String> {
    fill_depth(text, vars, slots, 1)
}

fn fill_depth(text: &str, vars: &Vars, slots: &[Slot], depth: u8) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for p in pieces(text)? {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => {
                let value = display(var(vars, name)?);
                if value.contains('{') && depth > 0 {
                    out.push_str(&fill_depth(&value, vars, slots, depth - 1)?);
                } else if value.contains('{') {
                    return Err(format!(
                        "variable `{{{name}}}` = \"{value}\" names variables more than one level deep"
                    ));
                } else {
                    out.push_str(&value);
                }
            }
            Piece::Slot(id) => {
                let slot = slots
                    .iter()
                    .find(|s| s.slot_id == id)
                    .ok_or_else(|| format!("unknown slot `{{slot.{id}}}`"))?;
                out.push_str(&display(&slot.value));
            }
        }
    }
    Ok(out)
}

/// Fills variables everywhere in a JSON value (map keys take variables only); slot placeholders become `{$slot: id}` (a whole
/// string) or `{$fmt: text}` (inside text). A string that is exactly `{var}` keeps the variable's
/// type, so numbers stay numbers.
pub fn fill_json(v: &Value, vars: &Vars) -> Result<Value, String> {
    match v {
        Value::String(s) => fill_string(s, vars),
        Value::Array(items) => items
            .iter()
            .map(|x| fill_json(x, vars))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| Ok((fill_text(k, vars, &[])?, fill_json(x, vars)?)))
            .collect::<Result<_, String>>()
            .map(Value::Object),
        _ => Ok(v.clone()),
    }
}

fn fill_string(s: &str, vars: &Vars) -> Result<Value, String> {
    let parts = pieces(s)?;
    match parts.as_slice() {
        [Piece::Var(name)] => return Ok(var(vars, name)?.clone()),
        [Piece::Slot(id)] => return Ok(json!({ "$slot": id })),
        _ => {}
    }
    let mut out = String::with_capacity(s.len());
    let mut symbolic = false;
    for p in parts {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => out.push_str(&display(var(vars, name)?)),
            Piece::Slot(id) => {
                symbolic = true;
                out.push_str(&format!("{{slot.{id}}}"));
            }
        }
    }
    Ok(if symbolic {
        json!({ "$fmt": out })
    } else {
        Value::String(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        [
            ("party".to_string(), json!(4)),
            ("day".to_string(), json!("Friday")),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn whole_placeholders_keep_types_and_slots_stay_symbolic() {
        let v = json!({ "a": "{party}", "b": "on {day}", "c": "{slot.seat}", "d": ["for {party}, {slot.seat}"] });
        assert_eq!(
            fill_json(&v, &vars()).unwrap(),
            json!({ "a": 4, "b": "on Friday", "c": { "$slot": "seat" }, "d": [{ "$fmt": "for 4, {slot.seat}" }] })
        );
    }

    #[test]
    fn a_variable_naming_variables_is_filled_in_turn() {
        // `instruction: "{ask_text}"` with `ask_text: "Order the {item} …"` showed a raw `{item}`.
        let mut v = vars();
        v.insert("ask_text".into(), json!("Book for {party} on {day}."));
        assert_eq!(
            fill_text("{ask_text}", &v, &[]).unwrap(),
            "Book for 4 on Friday."
        );
        v.insert("deeper".into(), json!("Say {ask_text}"));
        assert!(fill_text("{deeper}", &v, &[])
            .unwrap_err()
            .contains("more than one level deep"));
    }

    #[test]
    fn unknown_and_malformed_placeholders_are_errors() {
        assert!(fill_json(&json!("{when}"), &vars())
            .unwrap_err()
            .contains("unknown variable `{when}`"));
        assert!(fill_json(&json!("{Bad Name}"), &vars())
            .unwrap_err()
            .contains("malformed"));
        assert!(fill_text("x {", &vars(), &[])
            .unwrap_err()
            .contains("unclosed"));
        assert!(fill_text("{slot.nope}", &vars(), &[])
            .unwrap_err()
            .contains("unknown slot"));
    }
}

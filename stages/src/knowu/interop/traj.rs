//! `traj.json`: one KnowU-Bench episode's trajectory, read into plain structs and written back.
//!
//! Layout: `{"0": {"tools": …, "traj": [step…], "token_usage": {prompt_tokens, completion_tokens,
//! cached_tokens, total_tokens}}}`; each step carries `task_goal, step, prediction, action,
//! ask_user_response, tool_call`. KnowU logs the simulator's reply to an `ask_user` on the *next*
//! step (`ask_user_response`); both that alignment and prefflow's (reply on the asking step) are
//! kept by the importer.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::knowu::error::KnowuError;

/// One trajectory entry, with JSON-valued fields already rendered as text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrajStep {
    /// `action.action_type`; `""` when the entry has no action or no type (KnowU's scripts treat
    /// such an entry as neither engagement nor a stop violation).
    pub action_type: String,
    /// The action dict as JSON text (`{}` when absent).
    pub arguments: String,
    /// `tool_call`: strings as they are, other JSON as text; `None` when null or absent.
    pub tool_call: Option<String>,
    /// `prediction`, the model's raw output.
    pub prediction: Option<String>,
    /// `ask_user_response`: the simulator's reply to the previous step's `ask_user`.
    pub ask_user_response: Option<String>,
    /// `task_goal`.
    pub task_goal: Option<String>,
}

/// Token usage of the agent over the episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// `prompt_tokens`.
    pub prompt: u64,
    /// `completion_tokens`.
    pub completion: u64,
    /// `cached_tokens`.
    pub cached: u64,
}

/// A parsed `traj.json`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    /// The entries of `traj`, in order.
    pub steps: Vec<TrajStep>,
    /// `token_usage` (zeros when absent).
    pub tokens: TokenUsage,
}

/// Reads and checks the `traj.json` at `path`.
pub fn read(path: &Path) -> Result<Trajectory, KnowuError> {
    let bytes = std::fs::read(path).map_err(|e| KnowuError::read(path, e))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| KnowuError::json(path, &e))?;
    parse(path, &value)
}

/// Checks the shape of a parsed `traj.json` and extracts the trajectory, reading it as
/// KnowU-Bench's `calc_paper_metrics.py` does: no `"0"` record, or one that is not an object (a
/// run that failed at init leaves `{}`), is an empty trajectory; a missing or null `traj` too; an
/// entry's falsy `action` is no action; `token_usage` is optional and taken from the record or,
/// where KnowU's `log_token_usage` puts it, the top level. Shapes KnowU's script cannot read
/// (a non-object file, a non-array `traj`, a non-object entry or action, a non-string action
/// type) are errors naming the field.
pub fn parse(path: &Path, value: &Value) -> Result<Trajectory, KnowuError> {
    let root = value
        .as_object()
        .ok_or_else(|| KnowuError::shape(path, "(top level)", "an object keyed by \"0\"", value))?;
    let Some(run) = root.get("0").and_then(Value::as_object) else {
        return Ok(Trajectory {
            steps: Vec::new(),
            tokens: parse_tokens(root.get("token_usage")),
        });
    };
    let steps = match run.get("traj") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_step(path, i, item))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(KnowuError::shape(path, "0.traj", "an array", other)),
    };
    let usage = run
        .get("token_usage")
        .filter(|u| u.is_object())
        .or_else(|| root.get("token_usage"));
    Ok(Trajectory {
        steps,
        tokens: parse_tokens(usage),
    })
}

/// Python's truthiness, which KnowU's `x or {}` / `x or ""` rely on.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

fn parse_step(path: &Path, index: usize, item: &Value) -> Result<TrajStep, KnowuError> {
    let field = |name: &str| format!("0.traj[{index}].{name}");
    let entry = item
        .as_object()
        .ok_or_else(|| KnowuError::shape(path, format!("0.traj[{index}]"), "an object", item))?;
    let action = match entry.get("action") {
        None => Map::new(),
        Some(v) if is_falsy(v) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => return Err(KnowuError::shape(path, field("action"), "an object", other)),
    };
    let action_type = match action.get("action_type") {
        None => String::new(),
        Some(v) if is_falsy(v) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(KnowuError::shape(
                path,
                field("action.action_type"),
                "a string",
                other,
            ))
        }
    };
    Ok(TrajStep {
        action_type,
        arguments: Value::Object(action).to_string(),
        tool_call: text_of(entry.get("tool_call")),
        prediction: text_of(entry.get("prediction")),
        ask_user_response: text_of(entry.get("ask_user_response")),
        task_goal: text_of(entry.get("task_goal")),
    })
}

/// Strings as they are, other JSON values as JSON text, null or absent as `None`.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Token counts; KnowU's scripts never read them, so any other shape counts as zero.
fn parse_tokens(usage: Option<&Value>) -> TokenUsage {
    let Some(Value::Object(usage)) = usage else {
        return TokenUsage::default();
    };
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    TokenUsage {
        prompt: count("prompt_tokens"),
        completion: count("completion_tokens"),
        cached: count("cached_tokens"),
    }
}

/// Renders a trajectory as KnowU-Bench writes it. `arguments` that are not a JSON object and
/// `tool_call` text that is not a JSON object or array are written as strings.
pub fn render(traj: &Trajectory) -> Value {
    let steps: Vec<Value> = traj
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| render_step(i + 1, s))
        .collect();
    let t = traj.tokens;
    json!({
        "0": {
            "tools": null,
            "traj": steps,
            "token_usage": {
                "prompt_tokens": t.prompt,
                "completion_tokens": t.completion,
                "cached_tokens": t.cached,
                "total_tokens": t.prompt + t.completion,
            }
        }
    })
}

fn render_step(step: usize, s: &TrajStep) -> Value {
    let mut action = match serde_json::from_str::<Value>(&s.arguments) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if !s.action_type.is_empty() && !action.contains_key("action_type") {
        action.insert("action_type".into(), Value::String(s.action_type.clone()));
    }
    let tool_call = s
        .tool_call
        .as_ref()
        .map(|text| match serde_json::from_str::<Value>(text) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => Value::String(text.clone()),
        });
    json!({
        "task_goal": s.task_goal,
        "step": step,
        "prediction": s.prediction,
        "action": action,
        "ask_user_response": s.ask_user_response,
        "tool_call": tool_call,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> &'static Path {
        Path::new("run/TaskA/traj.json")
    }

    #[test]
    fn steps_tokens_and_missing_actions() {
        let v = json!({"0": {"traj": [
            {"step": 1, "prediction": "p1", "action": {"action_type": "ask_user", "text": "ok?"}},
            {"step": 2, "ask_user_response": "yes", "action": null, "tool_call": {"r": 1}},
        ], "token_usage": {"prompt_tokens": 10, "completion_tokens": 3}}});
        let t = parse(path(), &v).expect("valid");
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].action_type, "ask_user");
        assert_eq!(
            t.steps[0].arguments,
            r#"{"action_type":"ask_user","text":"ok?"}"#
        );
        assert_eq!(t.steps[1].action_type, "");
        assert_eq!(t.steps[1].arguments, "{}");
        assert_eq!(t.steps[1].tool_call.as_deref(), Some(r#"{"r":1}"#));
        assert_eq!(t.steps[1].ask_user_response.as_deref(), Some("yes"));
        assert_eq!(
            t.tokens,
            TokenUsage {
                prompt: 10,
                completion: 3,
                cached: 0
            }
        );
    }

    #[test]
    fn wrong_shapes_name_the_field() {
        let cases = [
            (json!([1]), "the top level"),
            (json!({"0": {"traj": {}}}), "`0.traj`"),
            (json!({"0": {"traj": "abc"}}), "`0.traj`"),
            (json!({"0": {"traj": [3]}}), "`0.traj[0]`"),
            (
                json!({"0": {"traj": [{"action": "tap"}]}}),
                "`0.traj[0].action`",
            ),
            (
                json!({"0": {"traj": [{}, {"action": {"action_type": 3}}]}}),
                "`0.traj[1].action.action_type`",
            ),
        ];
        for (value, field) in cases {
            let err = parse(path(), &value).expect_err("invalid").to_string();
            assert!(err.starts_with("run/TaskA/traj.json: "), "{err}");
            assert!(err.contains(field), "{field} in {err}");
        }
    }

    #[test]
    fn shapes_knowu_reads_as_empty_or_default() {
        // `{}` before the first step or after a failed init; a non-object record; no traj.
        for v in [
            json!({}),
            json!({"0": null}),
            json!({"0": 7}),
            json!({"0": {"tools": null}}),
            json!({"0": {"traj": null}}),
            json!({"1": {"traj": [{"action": {"action_type": "click"}}]}}),
        ] {
            let t = parse(path(), &v).expect("KnowU reads it");
            assert!(t.steps.is_empty(), "{v}");
        }
        // Falsy actions and types are "no action"; token_usage of any shape is tolerated, and
        // is found at the top level where `log_token_usage` writes it.
        let v = json!({"0": {"traj": [{"action": ""}, {"action": []}, {"action": {"action_type": 0}},
                                      {"action": {"action_type": ""}}],
                             "token_usage": "n/a"},
                      "token_usage": {"prompt_tokens": 9, "completion_tokens": -1}});
        let t = parse(path(), &v).expect("valid");
        assert_eq!(t.steps.len(), 4);
        assert!(
            t.steps.iter().all(|s| s.action_type.is_empty()),
            "{:?}",
            t.steps
        );
        assert_eq!(
            t.tokens,
            TokenUsage {
                prompt: 9,
                completion: 0,
                cached: 0
            }
        );
        let t = parse(path(), &json!({"token_usage": {"prompt_tokens": 4}})).expect("valid");
        assert_eq!(t.tokens.prompt, 4);
    }

    #[test]
    fn render_parses_back_to_the_same_trajectory() {
        let v = json!({"0": {"traj": [
            {"task_goal": "g", "prediction": "p", "action": {"action_type": "click", "x": 1}},
            {"task_goal": "g", "ask_user_response": "no", "tool_call": "plain text",
             "action": {"action_type": "answer", "text": "done"}},
        ], "token_usage": {"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 1}}});
        let t = parse(path(), &v).expect("valid");
        assert_eq!(parse(path(), &render(&t)).expect("rendered"), t);
    }
}

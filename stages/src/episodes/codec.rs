//! Phone actions as step rows and back. A step is stored as `action_type` plus an `arguments`
//! JSON object so tables stay readable (`notes.create_note {"title": …}`, `tap {"element": 3}`),
//! and decoding it gives the exact action again, which is what lets judges replay an episode.

use serde_json::{Map, Value};

use crate::world::phone::Action;

/// `action_type` of an action the agent produced but nobody could parse.
pub const UNKNOWN: &str = "unknown";

/// The step row spelling of an action: tool calls use the tool name and its arguments; every
/// other action uses its tag and its remaining fields.
pub fn encode(action: &Action) -> (String, Value) {
    if let Action::Call { tool, args } = action {
        return (tool.clone(), Value::Object(args.clone()));
    }
    let mut fields = match serde_json::to_value(action) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let tag = match fields.remove("action") {
        Some(Value::String(t)) => t,
        _ => UNKNOWN.to_string(),
    };
    (tag, Value::Object(fields))
}

/// Rebuilds the action a step row encodes; `Err` says why it cannot be replayed.
pub fn decode(action_type: &str, arguments: &Value) -> Result<Action, String> {
    if action_type == UNKNOWN {
        return Err("the agent's output was not a valid action".into());
    }
    let args = match arguments {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => return Err(format!("arguments must be a JSON object, got {other}")),
    };
    if is_tool_name(action_type) {
        return Ok(Action::Call {
            tool: action_type.to_string(),
            args,
        });
    }
    let mut tagged = args;
    tagged.insert("action".into(), Value::String(action_type.to_string()));
    serde_json::from_value(Value::Object(tagged))
        .map_err(|e| format!("`{action_type}` is not a phone action: {e}"))
}

/// Tools are `app.operation` (or `app__operation`); built-in actions have no separator.
fn is_tool_name(action_type: &str) -> bool {
    action_type.contains('.') || action_type.contains("__")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(a: Action) {
        let (t, args) = encode(&a);
        assert_eq!(decode(&t, &args).unwrap(), a, "{t} {args}");
    }

    #[test]
    fn every_action_shape_round_trips() {
        round_trip(Action::Call {
            tool: "notes.create_note".into(),
            args: json!({"title": "x", "pinned": true})
                .as_object()
                .unwrap()
                .clone(),
        });
        round_trip(Action::Tap { element: 3 });
        round_trip(Action::Type {
            element: 2,
            text: "hi".into(),
        });
        round_trip(Action::AskUser {
            text: "Which colour?".into(),
        });
        round_trip(Action::Answer { text: "42".into() });
        round_trip(Action::Finish);
        round_trip(Action::Back);
        round_trip(Action::OpenApp {
            app: "notes".into(),
        });
    }

    #[test]
    fn tool_calls_keep_their_name_and_arguments() {
        let (t, args) = encode(&Action::Call {
            tool: "shop.order".into(),
            args: json!({"size": "M"}).as_object().unwrap().clone(),
        });
        assert_eq!(t, "shop.order");
        assert_eq!(args, json!({"size": "M"}));
        let (t, args) = encode(&Action::Tap { element: 7 });
        assert_eq!((t.as_str(), args), ("tap", json!({"element": 7})));
    }

    #[test]
    fn unparseable_steps_are_refused_with_a_reason() {
        assert!(decode(UNKNOWN, &json!({})).is_err());
        let e = decode("tap", &json!({"elem": 1})).unwrap_err();
        assert!(e.contains("tap"), "{e}");
        assert!(decode("tap", &json!([1])).is_err());
    }
}

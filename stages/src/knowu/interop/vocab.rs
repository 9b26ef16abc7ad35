//! prefflow's step rows in KnowU-Bench's action vocabulary, for exports KnowU's scripts score as
//! prefflow does. KnowU's scripts treat any action type they do not list as an operation (an
//! engagement and a stop violation), so prefflow's `finish` written verbatim would cost an
//! oracle its Silent and Stop; every prefflow action has a KnowU spelling:
//!
//! | prefflow step | KnowU action |
//! |---|---|
//! | `finish` | `finished` |
//! | `ask_user {text}`, `answer {text}` | the same |
//! | `open_app {app}` | `open_app {app_name}` |
//! | `tap {element}` | `click {index}` |
//! | `type {element, text}` | `input_text {index, text}` |
//! | `select {element, option}` | `click {index, text}` |
//! | `scroll {direction}` | the same |
//! | `back`, `home` | `navigate_back`, `navigate_home` |
//! | `device.<type> {…}`, `<type>` a KnowU type (raw device action) | `<type> {…}` |
//! | a tool call `app.op {args}` | `mcp {action_name: app.op, action_json: args}` |
//!
//! Action types KnowU already uses (an imported run) pass through unchanged, so exporting an
//! imported run writes it back as it was.

use serde_json::{Map, Value};

/// KnowU-Bench's action types (`runtime/utils/models.py`, plus `error_env`).
pub const KNOWU_TYPES: [&str; 19] = [
    "click",
    "double_tap",
    "scroll",
    "swipe",
    "input_text",
    "navigate_home",
    "navigate_back",
    "keyboard_enter",
    "open_app",
    "status",
    "wait",
    "long_press",
    "answer",
    "finished",
    "unknown",
    "drag",
    "ask_user",
    "mcp",
    "error_env",
];

/// The KnowU action type and fields of a step with prefflow's `action_type` and `arguments`
/// (a JSON object; anything else counts as no fields).
pub fn to_knowu(action_type: &str, arguments: &Map<String, Value>) -> (String, Map<String, Value>) {
    let mut fields = arguments.clone();
    let rename = |fields: &mut Map<String, Value>, from: &str, to: &str| {
        if let Some(v) = fields.remove(from) {
            fields.insert(to.to_string(), v);
        }
    };
    let kind = match action_type {
        "" => String::new(),
        t if KNOWU_TYPES.contains(&t) => {
            if t == "open_app" {
                rename(&mut fields, "app", "app_name");
            }
            t.to_string()
        }
        "finish" => "finished".into(),
        "tap" => {
            rename(&mut fields, "element", "index");
            "click".into()
        }
        "type" => {
            rename(&mut fields, "element", "index");
            "input_text".into()
        }
        "select" => {
            rename(&mut fields, "element", "index");
            rename(&mut fields, "option", "text");
            "click".into()
        }
        "back" => "navigate_back".into(),
        "home" => "navigate_home".into(),
        t => match t
            .strip_prefix("device.")
            .or_else(|| t.strip_prefix("device__"))
        {
            // A raw device action of a remote run; `device.set_power_saving` is the simulated
            // phone's `device` app, a tool call like any other.
            Some(raw) if KNOWU_TYPES.contains(&raw) => raw.to_string(),
            _ if t.contains('.') || t.contains("__") => {
                let args = Value::Object(std::mem::take(&mut fields));
                fields.insert("action_name".into(), Value::String(t.to_string()));
                fields.insert("action_json".into(), args);
                "mcp".into()
            }
            // Not a prefflow action either: KnowU's scripts read it as an operation, as they
            // would read it in a KnowU run.
            _ => t.to_string(),
        },
    };
    (kind, fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn knowu(t: &str, args: Value) -> (String, Value) {
        let (k, f) = to_knowu(t, args.as_object().expect("object"));
        (k, Value::Object(f))
    }

    #[test]
    fn every_prefflow_action_has_its_knowu_spelling() {
        let cases = [
            ("finish", json!({}), "finished", json!({})),
            (
                "ask_user",
                json!({"text": "Which?"}),
                "ask_user",
                json!({"text": "Which?"}),
            ),
            (
                "answer",
                json!({"text": "3 km"}),
                "answer",
                json!({"text": "3 km"}),
            ),
            (
                "open_app",
                json!({"app": "maps"}),
                "open_app",
                json!({"app_name": "maps"}),
            ),
            ("tap", json!({"element": 3}), "click", json!({"index": 3})),
            (
                "type",
                json!({"element": 2, "text": "hi"}),
                "input_text",
                json!({"index": 2, "text": "hi"}),
            ),
            (
                "select",
                json!({"element": 4, "option": "patio"}),
                "click",
                json!({"index": 4, "text": "patio"}),
            ),
            (
                "scroll",
                json!({"direction": "down"}),
                "scroll",
                json!({"direction": "down"}),
            ),
            ("back", json!({}), "navigate_back", json!({})),
            ("home", json!({}), "navigate_home", json!({})),
            (
                "device.wait",
                json!({"seconds": 2}),
                "wait",
                json!({"seconds": 2}),
            ),
            (
                "device.set_power_saving",
                json!({"enabled": true}),
                "mcp",
                json!({"action_name": "device.set_power_saving", "action_json": {"enabled": true}}),
            ),
            (
                "food.place_order",
                json!({"dish": "Ramen"}),
                "mcp",
                json!({"action_name": "food.place_order", "action_json": {"dish": "Ramen"}}),
            ),
            (
                "food__place_order",
                json!({}),
                "mcp",
                json!({"action_name": "food__place_order", "action_json": {}}),
            ),
        ];
        for (t, args, kind, fields) in cases {
            assert_eq!(knowu(t, args), (kind.to_string(), fields), "{t}");
        }
    }

    #[test]
    fn knowu_actions_pass_through() {
        for t in KNOWU_TYPES {
            let args = json!({"x": 1, "app_name": "Chrome"});
            assert_eq!(knowu(t, args.clone()), (t.to_string(), args), "{t}");
        }
        assert_eq!(knowu("", json!({})), (String::new(), json!({})));
    }
}

//! prefflow actions as KnowU-Bench / MobileWorld action JSON (`{"action_type": …}`), the body of
//! `POST /step`. One agent action may become several device actions (`type` = click the field,
//! then `input_text`), or none (`finish` only ends the episode, as the upstream runner never
//! sends `finished` to the device). Device-only actions (`wait`, `long_press`, clicks by
//! coordinates…) pass through as the tool call `device.<action_type>` with their fields as
//! arguments. The table is in docs/remote-device.md.

use serde_json::{json, Map, Value};

use super::screen::Element;
use crate::world::phone::{Action, Direction};

/// Tool-name prefix that sends the rest of the name as a raw device `action_type`.
pub const DEVICE_PREFIX: &str = "device.";

/// The device actions one prefflow action becomes, or why it has no device equivalent (shown to
/// the agent as an error observation).
pub fn to_device(action: &Action, screen: &[Element]) -> Result<Vec<Value>, String> {
    Ok(match action {
        Action::OpenApp { app } => vec![json!({"action_type": "open_app", "app_name": app})],
        Action::Tap { element } => vec![click(*element, screen)?],
        Action::Type { element, text } => vec![
            click(*element, screen)?,
            json!({"action_type": "input_text", "text": text}),
        ],
        Action::Select { .. } => {
            return Err(
                "`select` has no device equivalent: tap the field, then tap the option".into(),
            )
        }
        Action::Scroll { direction } => {
            let d = match direction {
                Direction::Up => "up",
                Direction::Down => "down",
            };
            vec![json!({"action_type": "scroll", "direction": d})]
        }
        Action::Back => vec![json!({"action_type": "navigate_back"})],
        Action::Home => vec![json!({"action_type": "navigate_home"})],
        Action::AskUser { text } => vec![json!({"action_type": "ask_user", "text": text})],
        Action::Answer { text } => vec![json!({"action_type": "answer", "text": text})],
        Action::Finish => Vec::new(),
        Action::Call { tool, args } => vec![passthrough(tool, args)?],
    })
}

/// Whether the action ends the episode on a device (the upstream runner stops after `answer`
/// and `finished`).
pub fn ends_episode(action: &Action) -> bool {
    matches!(action, Action::Answer { .. } | Action::Finish)
}

fn click(element: u32, screen: &[Element]) -> Result<Value, String> {
    let e = screen
        .iter()
        .find(|e| e.index == element)
        .ok_or_else(|| format!("there is no element [{element}] on the current screen"))?;
    let (x, y) = e.center();
    Ok(json!({"action_type": "click", "x": x, "y": y}))
}

fn passthrough(tool: &str, args: &Map<String, Value>) -> Result<Value, String> {
    let kind = tool
        .strip_prefix(DEVICE_PREFIX)
        .or_else(|| tool.strip_prefix("device__"))
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            format!(
                "tool `{tool}` does not exist on a remote device; use GUI actions, or \
                 `{DEVICE_PREFIX}<action_type>` for a raw device action such as `device.wait`"
            )
        })?;
    let mut body = args.clone();
    body.insert("action_type".into(), Value::String(kind.to_string()));
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen() -> Vec<Element> {
        vec![Element {
            index: 2,
            text: "To".into(),
            class: None,
            bounds: [0, 100, 200, 140],
        }]
    }

    fn one(a: Action) -> Value {
        let mut v = to_device(&a, &screen()).unwrap();
        assert_eq!(v.len(), 1, "{a:?} → {v:?}");
        v.remove(0)
    }

    #[test]
    fn navigation_and_dialogue_map_to_their_knowu_types() {
        assert_eq!(
            one(Action::OpenApp {
                app: "Messages".into()
            }),
            json!({"action_type": "open_app", "app_name": "Messages"})
        );
        assert_eq!(one(Action::Back), json!({"action_type": "navigate_back"}));
        assert_eq!(one(Action::Home), json!({"action_type": "navigate_home"}));
        assert_eq!(
            one(Action::Scroll {
                direction: Direction::Down
            }),
            json!({"action_type": "scroll", "direction": "down"})
        );
        assert_eq!(
            one(Action::AskUser {
                text: "Which day?".into()
            }),
            json!({"action_type": "ask_user", "text": "Which day?"})
        );
        assert_eq!(
            one(Action::Answer {
                text: "3 km".into()
            }),
            json!({"action_type": "answer", "text": "3 km"})
        );
        assert!(to_device(&Action::Finish, &[]).unwrap().is_empty());
        assert!(
            ends_episode(&Action::Finish)
                && ends_episode(&Action::Answer {
                    text: String::new()
                })
        );
        assert!(!ends_episode(&Action::Back));
    }

    #[test]
    fn taps_and_typing_click_the_element_centre() {
        assert_eq!(
            one(Action::Tap { element: 2 }),
            json!({"action_type": "click", "x": 100, "y": 120})
        );
        let typed = to_device(
            &Action::Type {
                element: 2,
                text: "Mom".into(),
            },
            &screen(),
        )
        .unwrap();
        assert_eq!(
            typed,
            vec![
                json!({"action_type": "click", "x": 100, "y": 120}),
                json!({"action_type": "input_text", "text": "Mom"}),
            ]
        );
        let e = to_device(&Action::Tap { element: 9 }, &screen()).unwrap_err();
        assert!(e.contains("[9]"), "{e}");
    }

    #[test]
    fn device_tools_pass_through_and_other_tools_are_refused() {
        let args = json!({"x": 5, "y": 6}).as_object().unwrap().clone();
        assert_eq!(
            one(Action::Call {
                tool: "device.long_press".into(),
                args
            }),
            json!({"action_type": "long_press", "x": 5, "y": 6})
        );
        assert_eq!(
            one(Action::Call {
                tool: "device__wait".into(),
                args: Map::new()
            }),
            json!({"action_type": "wait"})
        );
        let e = to_device(
            &Action::Call {
                tool: "notes.create_note".into(),
                args: Map::new(),
            },
            &[],
        )
        .unwrap_err();
        assert!(e.contains("device.wait"), "{e}");
        assert!(to_device(
            &Action::Call {
                tool: "device.".into(),
                args: Map::new()
            },
            &[]
        )
        .is_err());
        let e = to_device(
            &Action::Select {
                element: 1,
                option: "x".into(),
            },
            &[],
        )
        .unwrap_err();
        assert!(e.contains("select"), "{e}");
    }
}

//! What an agent can do on the phone and what it sees back. Actions deserialize from JSON
//! (`{"action": "tap", "element": 3}`) so agents in any language can drive the phone.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which action space an episode uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSpace {
    /// Screens as text accessibility trees; open_app, tap, type, select, scroll, back, home.
    Gui,
    /// Each operation (and each table read) is a typed function call.
    Tools,
}

/// Scroll direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
}

/// One agent action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// GUI: open an app by id or name from anywhere.
    OpenApp {
        /// App id or display name.
        app: String,
    },
    /// GUI: tap an element of the current screen.
    Tap {
        /// Element id shown in brackets.
        element: u32,
    },
    /// GUI: type into a form field (replaces its value).
    Type {
        /// Element id of the field.
        element: u32,
        /// The text.
        text: String,
    },
    /// GUI: choose an option of a form field (enum, bool or ref).
    Select {
        /// Element id of the field.
        element: u32,
        /// The option, by value, label or id.
        option: String,
    },
    /// GUI: scroll the current list.
    Scroll {
        /// Which way.
        direction: Direction,
    },
    /// GUI: go back one screen.
    Back,
    /// GUI: go to the home screen.
    Home,
    /// Tools: call a tool (`app.operation`, `app.list_<table>`, `app.get_<table>`).
    Call {
        /// Tool name; `app__operation` is accepted too.
        tool: String,
        /// Named arguments.
        #[serde(default)]
        args: Map<String, Value>,
    },
    /// Both: ask the user something.
    AskUser {
        /// The question.
        text: String,
    },
    /// Both: give the user a final answer (for questions).
    Answer {
        /// The answer.
        text: String,
    },
    /// Both: end the episode.
    Finish,
}

/// How an action went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It worked; `text` is the new screen, tool result or user reply.
    Ok,
    /// It was invalid or failed; `text` says why. State is unchanged.
    Error,
    /// The episode has ended.
    Done,
}

/// What the agent sees after an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Outcome.
    pub status: Status,
    /// Screen text, tool result (JSON), user reply, or error message.
    pub text: String,
}

impl Observation {
    /// A successful observation.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            status: Status::Ok,
            text: text.into(),
        }
    }

    /// An error observation; never a panic.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            status: Status::Error,
            text: text.into(),
        }
    }

    /// Whether the action failed.
    pub fn is_error(&self) -> bool {
        self.status == Status::Error
    }
}

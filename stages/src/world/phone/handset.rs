//! The handset: the phone one episode acts on ([`Phone`]) — its overlay of the world, its
//! clock and action space, what it records of each operation and question — and the read-only
//! view a judge takes of its state ([`StateView`]). The GUI half of its actions is in `gui`.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::world::app::{Catalog, Record};
use crate::world::assemble::World;
use crate::world::clock::DateTime;
use crate::world::history::HistoryEvent;
use crate::world::tool_specs::ToolSpec;
use crate::world::types::TableId;

use super::action::{Action, ActionSpace, Observation, Status};
use super::diff::{self, WorldDiff};
use super::overlay::Overlay;
use super::overrides::{self, OverrideError, Overrides};
use super::screens::Screen;
use super::tools::{self, ToolRef};
use super::user::AskUser;
use super::{eval, exec};

/// How an episode starts.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpisodeConfig {
    /// GUI or tools.
    pub space: ActionSpace,
    /// The pinned clock (default: the persona's `now`).
    pub clock: Option<DateTime>,
    /// Task overrides.
    pub overrides: Overrides,
}

impl Default for EpisodeConfig {
    fn default() -> Self {
        Self {
            space: ActionSpace::Tools,
            clock: None,
            overrides: Overrides::default(),
        }
    }
}

/// A successful operation, for judges ("was the operation done").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRecord {
    /// `app.operation`.
    pub tool: String,
    /// Every field's submitted value, defaults included.
    pub args: Map<String, Value>,
    /// The result message shown.
    pub message: String,
    /// Records the operation inserted.
    pub inserted: Vec<RecordRef>,
}

/// Names one record: app, table and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordRef {
    /// App id.
    pub app: String,
    /// Table name.
    pub table: String,
    /// Record id.
    pub id: String,
}

/// The compact form an operation is logged in during an episode (no strings are built per step);
/// [`Phone::operations`] expands it for judges.
#[derive(Debug, Clone)]
struct LogEntry {
    app: usize,
    op: usize,
    values: Vec<Value>,
    message: String,
    inserted: Vec<(TableId, String)>,
}

/// A record reference borrowed from the catalog, for tool results.
#[derive(Serialize)]
struct InsertedRef<'a> {
    app: &'a str,
    table: &'a str,
    id: &'a str,
}

/// The JSON a successful operation call returns.
#[derive(Serialize)]
struct CallResult<'a> {
    ok: bool,
    message: &'a str,
    inserted: Vec<InsertedRef<'a>>,
}

/// One `ask_user` exchange.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskRecord {
    /// The agent's question.
    pub question: String,
    /// The user's reply.
    pub reply: String,
}

/// The first line of the tools-mode overview ([`Phone::observe`]); each app follows on its own
/// line as `- Name (id): description`.
pub const APPS_OVERVIEW_HEAD: &str = "Apps on this phone (their tools read and change their data):";

/// One episode's phone.
pub struct Phone<'w> {
    // `world`, `state` and `stack` are the GUI half's (`gui`) too.
    pub(super) world: &'w World,
    initial: Overlay,
    pub(super) state: Overlay,
    clock: DateTime,
    clock_text: eval::ClockText,
    space: ActionSpace,
    pub(super) stack: Vec<Screen>,
    user: Box<dyn AskUser + 'w>,
    log: Vec<LogEntry>,
    asks: Vec<AskRecord>,
    answer: Option<String>,
    finished: bool,
}

impl<'w> Phone<'w> {
    /// Starts an episode: applies the overrides to a fresh overlay and pins the clock.
    pub fn new(
        world: &'w World,
        config: EpisodeConfig,
        user: Box<dyn AskUser + 'w>,
    ) -> Result<Self, OverrideError> {
        let mut state = Overlay::default();
        overrides::apply(world, &config.overrides, &mut state)?;
        Ok(Phone {
            world,
            initial: state.clone(),
            state,
            clock: config.clock.unwrap_or(world.persona.now),
            clock_text: eval::ClockText::new(config.clock.unwrap_or(world.persona.now)),
            space: config.space,
            stack: vec![Screen::Home],
            user,
            log: Vec::new(),
            asks: Vec::new(),
            answer: None,
            finished: false,
        })
    }

    /// Performs one action. Invalid actions give an error observation and change nothing.
    pub fn step(&mut self, action: &Action) -> Observation {
        if self.finished {
            return Observation::error("the episode has finished");
        }
        match (action, self.space) {
            (Action::AskUser { text }, _) => self.ask(text),
            (Action::Answer { text }, _) => {
                self.answer = Some(text.clone());
                Observation::ok("answer recorded")
            }
            (Action::Finish, _) => {
                self.finished = true;
                Observation { status: Status::Done, text: "episode finished".into() }
            }
            (Action::Call { tool, args }, ActionSpace::Tools) => self.call(tool, args),
            (Action::Call { .. }, ActionSpace::Gui) => Observation::error("`call` is a tools action; this episode uses the GUI (open_app, tap, type, select, scroll, back, home)"),
            (_, ActionSpace::Gui) => self.gui(action),
            (_, ActionSpace::Tools) => Observation::error("GUI actions are not available in tools mode; use `call` with a tool name"),
        }
    }

    /// What the agent sees before acting: the current screen (GUI) or a tool overview (tools).
    pub fn observe(&self) -> Observation {
        match self.space {
            ActionSpace::Gui => Observation::ok(self.screen_text()),
            ActionSpace::Tools => Observation::ok(self.apps_overview()),
        }
    }

    /// The tools-mode counterpart of the home screen: each app with what it is for, so a model
    /// knows where to look before it reads the function list.
    fn apps_overview(&self) -> String {
        let mut out = String::from(APPS_OVERVIEW_HEAD);
        for a in &self.world.catalog.apps {
            out.push_str(&format!("\n- {} ({}): {}", a.name, a.id, a.description));
        }
        out
    }

    fn ask(&mut self, text: &str) -> Observation {
        if text.trim().is_empty() {
            return Observation::error("ask_user needs a question");
        }
        let reply = self.user.ask(text);
        self.asks.push(AskRecord {
            question: text.to_string(),
            reply: reply.clone(),
        });
        Observation::ok(reply)
    }

    fn call(&mut self, tool: &str, args: &Map<String, Value>) -> Observation {
        let cat = &self.world.catalog;
        let result = match tools::resolve(cat, tool) {
            None => Err(format!("unknown tool `{tool}`")),
            Some(ToolRef::List(t)) => tools::list(cat, &self.state, t, args),
            Some(ToolRef::Get(t)) => tools::get(cat, &self.state, t, args),
            Some(ToolRef::Op(a, o)) => {
                exec::bind_args(cat, &self.state, &cat.apps[a].operations[o], args)
                    .and_then(|values| self.execute(a, o, values))
                    .map(|()| self.last_result_json())
            }
        };
        match result {
            Ok(text) => Observation::ok(text),
            Err(e) => Observation::error(e),
        }
    }

    /// Runs a bound operation and logs it; shared by GUI submit and tool calls.
    pub(super) fn execute(
        &mut self,
        app: usize,
        op: usize,
        values: Vec<Value>,
    ) -> Result<(), String> {
        let cat = &self.world.catalog;
        let o = &cat.apps[app].operations[op];
        let out = exec::run(cat, &mut self.state, o, &values, &self.clock_text)?;
        self.log.push(LogEntry {
            app,
            op,
            values,
            message: out.message,
            inserted: out.inserted,
        });
        Ok(())
    }

    /// The message of the last logged operation.
    pub(super) fn last_message(&self) -> String {
        self.log
            .last()
            .map(|e| e.message.clone())
            .unwrap_or_default()
    }

    /// The tool-call result of the last logged operation.
    fn last_result_json(&self) -> String {
        let cat = &self.world.catalog;
        let Some(e) = self.log.last() else {
            return String::new();
        };
        let inserted = e
            .inserted
            .iter()
            .map(|(t, id)| InsertedRef {
                app: &cat.apps[t.app as usize].id,
                table: &cat.table(*t).name,
                id,
            })
            .collect();
        serde_json::to_string(&CallResult {
            ok: true,
            message: &e.message,
            inserted,
        })
        .unwrap_or_default()
    }

    /// Every tool of this world, with the ids of small fixed tables as the choices of the
    /// parameters that refer to them, read from this episode's state after its overrides.
    pub fn tools(&self) -> Arc<[ToolSpec]> {
        tools::with_choices(&self.world.catalog, &self.initial, &self.world.tools()).into()
    }

    /// Read access to the current (final, once finished) state.
    pub fn state(&self) -> StateView<'_> {
        StateView {
            cat: &self.world.catalog,
            overlay: &self.state,
        }
    }

    /// Read access to the state the episode started from (after overrides).
    pub fn initial_state(&self) -> StateView<'_> {
        StateView {
            cat: &self.world.catalog,
            overlay: &self.initial,
        }
    }

    /// What the agent changed since the episode started.
    pub fn diff(&self) -> WorldDiff {
        diff::diff(&self.world.catalog, &self.initial, &self.state)
    }

    /// Successful operations, in order, with every field's submitted value.
    pub fn operations(&self) -> Vec<OpRecord> {
        let cat = &self.world.catalog;
        self.log
            .iter()
            .map(|e| {
                let o = &cat.apps[e.app].operations[e.op];
                OpRecord {
                    tool: format!("{}.{}", cat.apps[e.app].id, o.name),
                    args: o
                        .fields
                        .iter()
                        .map(|f| f.name.clone())
                        .zip(e.values.iter().cloned())
                        .collect(),
                    message: e.message.clone(),
                    inserted: e
                        .inserted
                        .iter()
                        .map(|(t, id)| RecordRef {
                            app: cat.apps[t.app as usize].id.clone(),
                            table: cat.table(*t).name.clone(),
                            id: id.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// `ask_user` exchanges, in order.
    pub fn asks(&self) -> &[AskRecord] {
        &self.asks
    }

    /// The final answer, if one was given.
    pub fn answer(&self) -> Option<&str> {
        self.answer.as_deref()
    }

    /// Whether `finish` was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The pinned clock.
    pub fn clock(&self) -> DateTime {
        self.clock
    }

    /// The action space.
    pub fn space(&self) -> ActionSpace {
        self.space
    }

    /// The history this episode exposes: the world's plus events appended by overrides, by time.
    pub fn history(&self) -> Vec<&HistoryEvent> {
        let mut all: Vec<&HistoryEvent> = self
            .world
            .history
            .iter()
            .chain(&self.state.history)
            .collect();
        all.sort_by_key(|e| e.time);
        all
    }

    /// Events the task's overrides appended to the world's history (the rest is
    /// `World::history`), so callers can hold both without borrowing the phone.
    pub fn extra_history(&self) -> &[HistoryEvent] {
        &self.state.history
    }

    /// A profile entry's value for this episode (overridden or original).
    pub fn profile_value(&self, id: &str) -> Option<&Value> {
        self.state
            .profile
            .get(id)
            .or_else(|| self.world.persona.entry(id).map(|e| &e.value))
    }
}

/// Read-only access to one state of an episode.
#[derive(Clone, Copy)]
pub struct StateView<'a> {
    cat: &'a Catalog,
    overlay: &'a Overlay,
}

impl<'a> StateView<'a> {
    /// The current records of `app.table`, or `None` if the table does not exist.
    pub fn records(&self, app: &str, table: &str) -> Option<impl Iterator<Item = &'a Record> + 'a> {
        let t = self.cat.table_id(&format!("{app}.{table}"), None)?;
        Some(self.overlay.records(self.cat, t))
    }

    /// The current records of `app.table` as JSON objects.
    pub fn records_json(&self, app: &str, table: &str) -> Option<Vec<Value>> {
        let t = self.cat.table_id(&format!("{app}.{table}"), None)?;
        Some(
            self.overlay
                .records(self.cat, t)
                .map(|r| self.cat.table(t).record_json(r))
                .collect(),
        )
    }

    /// One current record.
    pub fn get(&self, app: &str, table: &str, id: &str) -> Option<&'a Record> {
        let t = self.cat.table_id(&format!("{app}.{table}"), None)?;
        self.overlay.get(self.cat, t, id)
    }

    /// The catalog, for field lookups.
    pub fn catalog(&self) -> &'a Catalog {
        self.cat
    }
}

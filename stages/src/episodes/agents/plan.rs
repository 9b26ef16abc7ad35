//! The operation plan the honest baselines follow, and its open fields.
//!
//! `ask_all` and `heuristic` measure *personalization*, not app navigation: they take the task's
//! `defaults_solution` as their action plan — which operations the instruction asks for, with
//! only the fields a form requires (what a user who said nothing more would get). They never
//! read slots, criteria, the reference solution or the hidden context. What they personalize
//! are the plan's *open fields*: the optional parameters of each planned operation that the
//! plan leaves unset (the app default applies unless the agent chooses a value).

use serde_json::{Map, Value};

use crate::world::phone::{Action, ParamSpec, ToolSpec};

/// One step of the plan.
#[derive(Debug, Clone)]
pub enum PlanStep {
    /// Played as is: answers, table reads.
    Act(Action),
    /// An operation call whose open fields the agent decides.
    Op(OpCall),
}

/// A planned operation call.
#[derive(Debug, Clone)]
pub struct OpCall {
    /// `app.operation`.
    pub tool: String,
    /// The operation's title, for questions and reports ("Reserve a table").
    pub title: String,
    /// The arguments the plan sets (required fields).
    pub args: Map<String, Value>,
    /// Optional parameters the plan leaves to the app default.
    pub open: Vec<ParamSpec>,
}

/// The operations the instruction asks for, in order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The steps, without the closing `finish`.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// Reads the plan from a task's defaults-only solution, looking operations up in `tools`.
    /// Steps that are not phone actions, `ask_user` and `finish` are dropped: the agent does
    /// its own asking and finishing.
    pub fn new(defaults_solution: &[Value], tools: &[ToolSpec]) -> Self {
        let steps = defaults_solution
            .iter()
            .filter_map(|raw| serde_json::from_value::<Action>(raw.clone()).ok())
            .filter_map(|action| match action {
                Action::Finish | Action::AskUser { .. } => None,
                Action::Call { tool, args } => Some(step_for_call(tool, args, tools)),
                other => Some(PlanStep::Act(other)),
            })
            .collect();
        Self { steps }
    }

    /// Every open field with the index of its step.
    pub fn open_fields(&self) -> impl Iterator<Item = (usize, &OpCall, &ParamSpec)> {
        self.steps.iter().enumerate().flat_map(|(i, s)| match s {
            PlanStep::Op(op) => op.open.iter().map(|p| (i, op, p)).collect::<Vec<_>>(),
            PlanStep::Act(_) => Vec::new(),
        })
    }
}

/// Table reads (`app.list_<table>`, `app.get_<table>`) have nothing to personalize.
fn is_read_tool(tool: &str) -> bool {
    let op = tool.split_once('.').map_or(tool, |(_, op)| op);
    op.starts_with("list_") || op.starts_with("get_")
}

fn step_for_call(tool: String, args: Map<String, Value>, tools: &[ToolSpec]) -> PlanStep {
    let spec = tools.iter().find(|t| t.name == tool);
    match spec {
        Some(spec) if !is_read_tool(&tool) => {
            let open = spec
                .params
                .iter()
                .filter(|p| !p.required && !args.contains_key(&p.name) && p.type_name != "object")
                .cloned()
                .collect();
            PlanStep::Op(OpCall {
                title: title_of(spec),
                tool,
                args,
                open,
            })
        }
        _ => PlanStep::Act(Action::Call { tool, args }),
    }
}

/// The operation title from a tool description `"App: Title. Description"`.
fn title_of(spec: &ToolSpec) -> String {
    let after_app = spec
        .description
        .split_once(": ")
        .map_or(spec.description.as_str(), |(_, rest)| rest);
    after_app
        .split_once(". ")
        .map_or(after_app, |(title, _)| title)
        .trim_end_matches('.')
        .to_string()
}

/// A field's name as words (`party_size` → `party size`).
pub fn words(name: &str) -> String {
    name.replace('_', " ")
}

/// The question an agent asks about an open field. It names the field, its description and its
/// options so a user (or the scripted simulator, which matches slot keywords) knows what is
/// being asked; the opening follows the field's type ("How many…", "What time…").
pub fn question(op: &OpCall, p: &ParamSpec) -> String {
    let field = words(&p.name);
    let head = match p.type_name {
        "int" | "float" => format!("How many ({field}) should I use"),
        "time" => format!("What time ({field}) should I use"),
        "date" => format!("Which date ({field}) should I use"),
        "bool" => format!("Should I turn on {field}"),
        "text" => format!("What should the {field} say"),
        _ => format!("Which {field} should I choose"),
    };
    let mut q = format!("{head} for \"{}\"?", op.title);
    if !p.description.is_empty() {
        q.push_str(&format!(" ({})", p.description));
    }
    if let Some(options) = &p.options {
        q.push_str(&format!(" Options: {}.", options.join(", ")));
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn param(name: &str, ty: &'static str, required: bool) -> ParamSpec {
        ParamSpec {
            name: name.into(),
            type_name: ty,
            required,
            default: None,
            options: None,
            range: None,
            refers_to: None,
            choices: None,
            description: String::new(),
        }
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "dinespot.book_table".into(),
                description: "DineSpot: Reserve a table. Book a table.".into(),
                irreversible: true,
                params: vec![
                    param("restaurant", "ref", true),
                    param("time", "time", false),
                    param("party_size", "int", false),
                    param("filters", "object", false),
                ],
            },
            ToolSpec {
                name: "dinespot.list_restaurants".into(),
                description: "DineSpot: list restaurants".into(),
                irreversible: false,
                params: vec![param("limit", "int", false)],
            },
        ]
    }

    #[test]
    fn open_fields_are_the_unset_optional_scalar_params_of_operations_only() {
        let plan = Plan::new(
            &[
                json!({"action": "call", "tool": "dinespot.list_restaurants", "args": {}}),
                json!({"action": "call", "tool": "dinespot.book_table", "args": {"restaurant": "x", "time": "18:00"}}),
                json!({"action": "answer", "text": "done"}),
                json!({"action": "finish"}),
            ],
            &tools(),
        );
        assert_eq!(plan.steps.len(), 3);
        let open: Vec<(usize, &str)> = plan
            .open_fields()
            .map(|(i, _, p)| (i, p.name.as_str()))
            .collect();
        assert_eq!(open, [(1, "party_size")]);
        let PlanStep::Op(op) = &plan.steps[1] else {
            panic!("step 1 is the booking")
        };
        assert_eq!(op.title, "Reserve a table");
        assert!(question(op, &op.open[0]).starts_with("How many (party size)"));
    }
}

//! The authoring format: task templates in `datasets/tasks/*.yaml`. A template is one task shape
//! (instruction, slots, criteria, reference solution, overrides) with `{placeholders}`; each of
//! its `variants` fills them to give one candidate task. The schema is documented in
//! `docs/tasks.md`; this module only parses it, with located errors.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::error::TaskError;
use super::model::{CriterionKind, Perturbation, TaskType};
use super::subst::Vars;

/// One template file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateFile {
    /// The templates, in authoring order.
    pub templates: Vec<Spanned<RawTemplate>>,
}

/// One task shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTemplate {
    /// Unique id; task ids are `<id>-<variant number>`.
    pub id: String,
    /// What the user says, with `{var}` placeholders; no slot values.
    pub instruction: String,
    /// Operation (default) or question.
    #[serde(default)]
    pub task_type: TaskType,
    /// The perturbation tested (default none).
    #[serde(default)]
    pub perturbation: Perturbation,
    /// The omitted user-dependent details, by slot id.
    pub slots: IndexMap<String, RawSlot>,
    /// Rubric lines.
    pub criteria: Vec<RawCriterion>,
    /// The reference solution.
    pub solution: Vec<RawStep>,
    /// Per-task environment changes (app data, extra history events, profile edits).
    #[serde(default)]
    pub overrides: Option<Value>,
    /// Situational facts for the user simulator (e.g. what to do if an option is gone).
    #[serde(default)]
    pub facts: Vec<String>,
    /// Options the overrides make unavailable: `{tool, arg, value}`.
    #[serde(default)]
    pub unavailable: Vec<Value>,
    /// The domain group whose apps an episode offers a model when its tool list is capped
    /// (`_domains.yaml`); defaults to the file's stem when that names a domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Values for the placeholders; one candidate task per variant.
    pub variants: Vec<Vars>,
}

/// Where a slot's value comes from: exactly one of `profile`, `situational`, `ask`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSlot {
    /// A profile entry id: inferable entries give inferable slots (evidence from history).
    #[serde(default)]
    pub profile: Option<String>,
    /// A persona situational fact id: an ask-only slot.
    #[serde(default)]
    pub situational: Option<String>,
    /// An ask-only value written in the template (may be `{var}`).
    #[serde(default)]
    pub ask: Option<Value>,
    /// Words that name the slot's field or subject; a question about the slot contains one.
    pub keywords: Vec<String>,
    /// One sentence saying what the slot is (required for `ask:` slots; profile and
    /// situational slots default to their entry's or fact's description).
    #[serde(default)]
    pub about: Option<String>,
    /// `app.operation.field` whose default the slot competes with.
    #[serde(default)]
    pub default: Option<String>,
}

/// One rubric line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCriterion {
    /// Unique within the template.
    pub id: String,
    /// Defaults to `personalization` when `slot` is given, else `action`.
    #[serde(default)]
    pub kind: Option<CriterionKind>,
    /// The slot a personalization criterion judges.
    #[serde(default)]
    pub slot: Option<String>,
    /// The natural-language line (placeholders filled at generation).
    pub rubric: String,
    /// The predicate (see `docs/tasks.md`).
    pub check: Value,
    /// Marks (or unmarks) a criterion on text the user dictated; by default a personalization
    /// criterion on an ask-only free-text slot checked with `contains` is marked.
    #[serde(default)]
    pub free_text: Option<bool>,
}

/// One step of a reference solution: exactly one of `call`, `ask`, `answer`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// `app.operation` (or a read tool) to call with `args`.
    #[serde(default)]
    pub call: Option<String>,
    /// Arguments of the call.
    #[serde(default)]
    pub args: Option<Value>,
    /// For a call: required arguments as an agent that never personalizes fills them; for an
    /// answer: that agent's answer.
    #[serde(default)]
    pub plain: Option<Value>,
    /// A question to the user.
    #[serde(default)]
    pub ask: Option<String>,
    /// A final answer.
    #[serde(default)]
    pub answer: Option<String>,
}

/// A parsed template file with the name used in messages.
pub struct LoadedFile {
    /// Path as shown to users (relative to the working directory when possible).
    pub name: String,
    /// Its templates.
    pub file: TemplateFile,
}

/// The file of domain groups beside the templates (files starting with `_` are not templates).
pub const DOMAINS_FILE: &str = "_domains.yaml";

/// The domain groups of a template directory: which apps' tools a task of each domain is offered
/// when an episode caps its tool list. A group is the `core` apps plus its own; it is chosen by
/// the task's theme (travel, food, …), never by the reference solution, so the offer says
/// nothing about how to solve the task.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domains {
    /// Apps every domain offers (messages, calendar, wallet, …).
    #[serde(default)]
    pub core: Vec<String>,
    /// Each domain's own apps, by name.
    #[serde(default)]
    pub domains: IndexMap<String, Vec<String>>,
}

impl Domains {
    /// The apps a domain offers (core first, then its own, without repeats), or `None` for an
    /// unknown domain.
    pub fn apps(&self, domain: &str) -> Option<Vec<String>> {
        let own = self.domains.get(domain)?;
        let mut out: Vec<String> = Vec::new();
        for a in self.core.iter().chain(own) {
            if !out.contains(a) {
                out.push(a.clone());
            }
        }
        Some(out)
    }
}

/// Reads `dir/_domains.yaml`; a directory without one has no domains (every task is offered
/// every tool).
pub fn load_domains(dir: &Path, shown: &str) -> Result<Domains, TaskError> {
    let path = dir.join(DOMAINS_FILE);
    if !path.exists() {
        return Ok(Domains::default());
    }
    let name = format!("{}/{DOMAINS_FILE}", shown.trim_end_matches('/'));
    let text = prefflow_engine::input::read_text(&path, &name).map_err(|e| TaskError::File {
        file: e.place().to_string(),
        message: e.to_string(),
    })?;
    prefflow_engine::config::from_yaml::<Domains>(&text).map_err(|e| {
        let problem = prefflow_engine::input::yaml_problem(&e);
        TaskError::Template {
            at: problem.place(&name),
            message: problem.text(),
        }
    })
}

/// Loads every `*.yaml` file of `dir` in name order (except `_`-prefixed ones such as
/// [`DOMAINS_FILE`]).
pub fn load_dir(dir: &Path, shown: &str) -> Result<Vec<LoadedFile>, TaskError> {
    let err = |message: String| TaskError::File {
        file: shown.to_string(),
        message,
    };
    let mut paths = crate::files::sorted_files(dir, &["yaml", "yml"])
        .map_err(|e| err(format!("cannot read the templates directory: {e}")))?;
    paths.retain(|p| {
        !p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('_'))
    });
    if paths.is_empty() {
        return Err(err("no *.yaml template files".into()));
    }
    paths
        .iter()
        .map(|p| {
            let name = format!(
                "{}/{}",
                shown.trim_end_matches('/'),
                p.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            );
            let text = prefflow_engine::input::read_text(p, &name).map_err(|e| {
                let at = e.place();
                TaskError::File {
                    file: at.to_string(),
                    message: match e {
                        prefflow_engine::input::TextError::Encoding { what, .. } => {
                            format!("{what}; re-save the file as UTF-8")
                        }
                        io => io.to_string(),
                    },
                }
            })?;
            parse(&name, &text).map(|file| LoadedFile { name, file })
        })
        .collect()
}

/// Parses one template file's text.
pub fn parse(name: &str, text: &str) -> Result<TemplateFile, TaskError> {
    prefflow_engine::config::from_yaml::<TemplateFile>(text).map_err(|e| {
        let problem = prefflow_engine::input::yaml_problem(&e);
        TaskError::Template {
            at: problem.place(name),
            message: problem.text(),
        }
    })
}

/// `file:line:column` of a spanned template, for messages.
pub fn place<T>(file: &str, t: &Spanned<T>) -> String {
    format!("{file}:{}:{}", t.referenced.line(), t.referenced.column())
}

//! The one template loader: minijinja templates compiled once and rendered by name, for every
//! model prompt — agents and simulators (a directory of files, `datasets/prompts/` by default),
//! the LLM judge's two prompts, `llm_complete`'s `prompt`/`system` — and the HTML report.
//! Prompts are data: editing one changes the stage's cache key (the directory is an external
//! input of `run_episodes`), so results always say which wording produced them. Every template
//! is parsed when loaded, so a syntax error stops the stage before any request is sent, with the
//! file and line in the message.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use prefflow_engine::StageError;

use super::agent::AgentError;

/// Agent system prompt in tools mode (function calling).
pub const AGENT_TOOLS: &str = "agent_system.j2";
/// Agent system prompt in GUI mode (one JSON action per turn).
pub const AGENT_GUI: &str = "agent_gui.j2";
/// The first user message of an episode: instruction, clock, history, clarifications, screen.
pub const AGENT_TASK: &str = "agent_task.j2";
/// How an observation is shown back to the agent.
pub const AGENT_OBSERVATION: &str = "agent_observation.j2";
/// The pre-execution clarification request (iPrefBench G.5).
pub const CLARIFY: &str = "clarify.j2";
/// The user simulator's system prompt (iPrefBench G.1).
pub const USER_SYSTEM: &str = "user_system.j2";
/// How an agent question is put to the user simulator.
pub const USER_QUESTION: &str = "user_question.j2";

/// The templates an LLM agent needs.
pub const AGENT_TEMPLATES: [&str; 5] = [
    AGENT_TOOLS,
    AGENT_GUI,
    AGENT_TASK,
    AGENT_OBSERVATION,
    CLARIFY,
];
/// The templates the LLM user simulator needs.
pub const USER_TEMPLATES: [&str; 2] = [USER_SYSTEM, USER_QUESTION];

/// The phone's clock as a person reads it on the lock screen — "Thursday, 2 October 2025,
/// 17:30" — so a model need not work out the weekday that "on Saturday" or "tomorrow" depends
/// on. Text that is not a `YYYY-MM-DDTHH:MM[:SS]` time (a remote device's own clock text) is
/// shown as it is.
pub fn clock_in_words(now: &str) -> String {
    let Some(t) = crate::world::clock::DateTime::parse(now.trim()) else {
        return now.to_string();
    };
    let (year, _, day) = t.date.ymd();
    let (weekday, month) = (t.date.weekday_name(), t.date.month_name());
    format!("{weekday}, {day} {month} {year}, {}", t.time.hhmm())
}

/// How a set of templates treats undefined variables and escaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Agent and simulator prompts: an undefined variable is an error (a typo in a template
    /// is not an empty string in the prompt).
    Strict,
    /// minijinja's defaults (undefined renders empty): the judge's and `llm_complete`'s.
    Lenient,
    /// Lenient, and every value HTML-escaped: the report.
    Html,
}

/// A loaded, syntax-checked set of templates.
#[derive(Debug, Clone)]
pub struct Prompts {
    /// The directory as configured (for messages).
    dir: String,
    /// File name → template text.
    sources: BTreeMap<String, String>,
    /// The templates compiled once (every agent turn renders one).
    env: Environment<'static>,
}

impl Prompts {
    /// Reads every `*.j2` file of `dir` (relative to `workdir`) and checks that `required` are
    /// among them and that every file parses.
    pub fn load(workdir: &Path, dir: &str, required: &[&str]) -> Result<Self, StageError> {
        let path = workdir.join(dir);
        let entries = std::fs::read_dir(&path).map_err(|e| {
            StageError::Input(format!(
                "prompts directory `{dir}`: {e}; set `prompts` to a directory of .j2 templates (see datasets/prompts/README.md)"
            ))
        })?;
        let mut sources = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".j2") {
                continue;
            }
            let text = std::fs::read_to_string(entry.path())
                .map_err(|e| StageError::Input(format!("prompt template `{dir}/{name}`: {e}")))?;
            sources.insert(name, text);
        }
        Self::compiled(dir, sources, required)
    }

    /// Templates from memory, compiled with `flavor`; the error is the template that does not
    /// parse, by name, for the caller to phrase.
    pub fn with_flavor(
        label: &str,
        sources: &[(&str, &str)],
        flavor: Flavor,
    ) -> Result<Self, (String, minijinja::Error)> {
        let mut env = Environment::new();
        match flavor {
            Flavor::Strict => env.set_undefined_behavior(UndefinedBehavior::Strict),
            Flavor::Lenient => {}
            Flavor::Html => env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html),
        }
        for (name, text) in sources {
            env.add_template_owned(name.to_string(), text.to_string())
                .map_err(|e| (name.to_string(), e))?;
        }
        Ok(Self {
            dir: label.to_string(),
            sources: sources
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            env,
        })
    }

    /// Renders template `name` with `context` as it comes out (untrimmed), the error as
    /// minijinja gives it, for callers that phrase their own messages.
    pub fn render_plain<C: serde::Serialize + ?Sized>(
        &self,
        name: &str,
        context: &C,
    ) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(context)
    }

    /// Templates from memory (tests).
    pub fn from_sources(dir: &str, sources: &[(&str, &str)]) -> Result<Self, StageError> {
        let sources = sources
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        Self::compiled(dir, sources, &[])
    }

    /// Checks that `required` are present and compiles every template once; strict about
    /// undefined variables so a typo in a template is an error, not an empty string in the
    /// prompt.
    fn compiled(
        dir: &str,
        sources: BTreeMap<String, String>,
        required: &[&str],
    ) -> Result<Self, StageError> {
        if let Some(missing) = required.iter().find(|n| !sources.contains_key(**n)) {
            return Err(StageError::Input(format!(
                "prompt template `{dir}/{missing}` is missing; copy it from datasets/prompts/ (see its README.md for the variables)"
            )));
        }
        let mut prompts = Self {
            dir: dir.to_string(),
            sources,
            env: Environment::new(),
        };
        prompts
            .env
            .set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, text) in prompts.sources.clone() {
            if let Err(e) = prompts.env.add_template_owned(name.clone(), text) {
                return Err(StageError::Input(prompts.error(&name, &e).to_string()));
            }
        }
        Ok(prompts)
    }

    /// Renders template `name` with `context` (a JSON value, or a [`minijinja::Value`] converted
    /// once and rendered into several templates); the error names the file and the fault.
    pub fn render<C: serde::Serialize + ?Sized>(
        &self,
        name: &str,
        context: &C,
    ) -> Result<String, AgentError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| self.error(name, &e))?;
        template
            .render(context)
            .map(|s| s.trim().to_string())
            .map_err(|e| self.error(name, &e))
    }

    fn error(&self, name: &str, e: &minijinja::Error) -> AgentError {
        let line = e.line().map(|l| format!(":{l}")).unwrap_or_default();
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            detail.push_str(&format!(": {s}"));
            source = s.source();
        }
        AgentError::Other(format!(
            "prompt template `{}/{name}{line}`: {detail}",
            self.dir
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn syntax_errors_and_missing_files_name_the_template() {
        let e = Prompts::from_sources("p", &[("a.j2", "line one\n{% if x %}never closed")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("p/a.j2:2"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agent_gui.j2"), "ok").unwrap();
        let e = Prompts::load(dir.path(), ".", &[AGENT_GUI, CLARIFY])
            .unwrap_err()
            .to_string();
        assert!(e.contains("clarify.j2") && e.contains("missing"), "{e}");
    }

    #[test]
    fn undefined_variables_are_errors_and_includes_work() {
        let p = Prompts::from_sources(
            "p",
            &[
                ("a.j2", "{% include 'b.j2' %} {{ who }}"),
                ("b.j2", "hello"),
            ],
        )
        .unwrap();
        assert_eq!(
            p.render("a.j2", &json!({"who": "Maya"})).unwrap(),
            "hello Maya"
        );
        let e = p.render("a.j2", &json!({})).unwrap_err().to_string();
        assert!(e.contains("p/a.j2") && e.contains("undefined"), "{e}");
    }

    #[test]
    fn the_clock_reads_in_words() {
        assert_eq!(
            clock_in_words("2025-10-02T17:30:00"),
            "Thursday, 2 October 2025, 17:30"
        );
        assert_eq!(
            clock_in_words("2024-02-29T07:05"),
            "Thursday, 29 February 2024, 07:05"
        );
        assert_eq!(
            clock_in_words("2025-10-05T00:00:00"),
            "Sunday, 5 October 2025, 00:00"
        );
        assert_eq!(clock_in_words("device time unknown"), "device time unknown");
    }

    #[test]
    fn the_shipped_prompts_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let all: Vec<&str> = AGENT_TEMPLATES
            .iter()
            .chain(&USER_TEMPLATES)
            .copied()
            .collect();
        Prompts::load(&root, "datasets/prompts", &all).unwrap();
    }
}

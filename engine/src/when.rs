//! `when:` — a stage's condition, e.g. `when: { env: PREFFLOW_LLM_BASE_URL }`.
//!
//! A stage whose condition does not hold is *disabled*: it does not run, writes nothing, is no
//! error, and `plan` says why. Stages that need it are disabled too, except `gather` stages,
//! which go on with the variants that remain. The condition is part of the stage's key, so a
//! result computed under one condition is never mistaken for one computed under another.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition of a stage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// Environment variables that must all be set and non-empty (one name or a list). Only
    /// their presence counts: values (URLs, keys) never enter keys or logs.
    #[serde(default)]
    pub env: Names,
}

/// One name or a list of names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Names {
    /// No name.
    #[default]
    None,
    /// A single name.
    One(String),
    /// Several names.
    Many(Vec<String>),
}

impl Names {
    /// The names, in order.
    pub fn list(&self) -> Vec<&str> {
        match self {
            Names::None => Vec::new(),
            Names::One(n) => vec![n.as_str()],
            Names::Many(ns) => ns.iter().map(String::as_str).collect(),
        }
    }
}

impl When {
    /// What must hold, as `plan` shows it and the key records it: `env A, B set`.
    pub fn describe(&self) -> String {
        format!("env {} set", self.env.list().join(", "))
    }

    /// Why the condition does not hold now, or `None` when it does.
    pub fn unmet(&self) -> Option<String> {
        let unset: Vec<&str> = self
            .env
            .list()
            .into_iter()
            .filter(|v| std::env::var_os(v).is_none_or(|value| value.is_empty()))
            .collect();
        (!unset.is_empty()).then(|| {
            format!(
                "when: env {} {} not set",
                unset.join(", "),
                if unset.len() == 1 { "is" } else { "are" }
            )
        })
    }

    /// A problem with the condition itself (checked by `Plan::build`), with its fix.
    pub fn problem(&self) -> Option<(String, String)> {
        let names = self.env.list();
        if names.is_empty() {
            return Some((
                "`when` names no condition".into(),
                "write e.g. `when: { env: PREFFLOW_LLM_BASE_URL }`".into(),
            ));
        }
        names.into_iter().find(|n| !is_env_name(n)).map(|bad| {
            (
                format!("`when: env` names `{bad}`, which is not an environment variable name"),
                "use letters, digits and `_`, not starting with a digit".into(),
            )
        })
    }
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_holds_only_when_every_variable_is_set_and_non_empty() {
        let var = format!("PREFFLOW_WHEN_TEST_{}", std::process::id());
        let when = When {
            env: Names::Many(vec!["PATH".into(), var.clone()]),
        };
        assert_eq!(when.describe(), format!("env PATH, {var} set"));
        assert_eq!(when.unmet(), Some(format!("when: env {var} is not set")));
        std::env::set_var(&var, "");
        assert!(when.unmet().is_some(), "an empty value counts as unset");
        std::env::set_var(&var, "http://127.0.0.1:1/v1");
        assert_eq!(when.unmet(), None);
        std::env::remove_var(&var);
    }

    #[test]
    fn bad_conditions_are_named() {
        let none = When { env: Names::None };
        assert!(none.problem().is_some());
        let bad = When {
            env: Names::One("1BAD-NAME".into()),
        };
        assert!(bad.problem().is_some_and(|(m, _)| m.contains("1BAD-NAME")));
        let good = When {
            env: Names::One("PREFFLOW_LLM_BASE_URL".into()),
        };
        assert_eq!(good.problem(), None);
    }
}

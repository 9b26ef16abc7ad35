//! KnowU-Bench's per-step rules, applied row by row before aggregation: the simulated user's
//! decision in a reply, and whether an action engages the user (Silent) or violates a stop
//! after rejection (Stop).

/// Strict success: KnowU counts `score > 0.99`, so 0.99 itself fails.
pub const SUCCESS_THRESHOLD: f64 = 0.99;

/// Action types that never engage the user.
const NON_ENGAGEMENT: [&str; 3] = ["wait", "finished", "ask_user"];

/// `answer` texts (lower-cased, whitespace collapsed) that report an end, not content.
const TRIVIAL_ANSWERS: [&str; 6] = [
    "",
    "task finished",
    "task failed",
    "finished",
    "failed",
    "success",
];

/// The simulated user's decision in one reply (also what the KnowU-style consent user decides,
/// `knowu::sim`, so the writer and the reader of `<decision>` share one type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The user agreed to the proactive action.
    Accept,
    /// The user declined it.
    Reject,
}

impl Decision {
    /// `accept` or `reject`, as KnowU writes them.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Reject => "reject",
        }
    }
}

/// The decision in a reply: `<decision>accept|reject</decision>` (case-insensitive, whitespace
/// allowed inside the tag) if present; else "reject" if the text contains "reject"; else
/// "accept" if it contains "accept" — reject is tested first; else none.
pub fn parse_decision(reply: &str) -> Option<Decision> {
    let lower = reply.trim().to_lowercase();
    if lower.is_empty() {
        return None;
    }
    tagged_decision(&lower).or_else(|| {
        if lower.contains("reject") {
            Some(Decision::Reject)
        } else if lower.contains("accept") {
            Some(Decision::Accept)
        } else {
            None
        }
    })
}

/// The first `<decision>…</decision>` whose content is accept or reject.
fn tagged_decision(lower: &str) -> Option<Decision> {
    let mut rest = lower;
    while let Some(start) = rest.find("<decision>") {
        let after = &rest[start + "<decision>".len()..];
        let end = after.find("</decision>")?;
        match after[..end].trim() {
            "accept" => return Some(Decision::Accept),
            "reject" => return Some(Decision::Reject),
            _ => rest = after,
        }
    }
    None
}

/// Normalizes an action type for the rules: lower-cased, with prefflow's `finish` read as
/// KnowU's `finished`.
pub fn normalize_action(action_type: &str) -> String {
    let lower = action_type.to_lowercase();
    if lower == "finish" {
        "finished".into()
    } else {
        lower
    }
}

/// True when an `answer` text carries content rather than an end-of-task report.
pub fn is_substantive_answer(text: &str) -> bool {
    let normalized = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    !TRIVIAL_ANSWERS.contains(&normalized.as_str())
}

/// Engagement (breaks Silent): any action outside {wait, finished, ask_user}, where an `answer`
/// counts only when substantive. `answer_text` is read only for answers. An empty type (an entry
/// without an action) is not engagement.
pub fn is_engagement(normalized_type: &str, answer_text: impl FnOnce() -> String) -> bool {
    match normalized_type {
        "" => false,
        "answer" => is_substantive_answer(&answer_text()),
        t => !NON_ENGAGEMENT.contains(&t),
    }
}

/// Stop violation (after a rejection): any action outside {wait, finished, ask_user, answer}.
pub fn is_stop_violation(normalized_type: &str) -> bool {
    !normalized_type.is_empty()
        && normalized_type != "answer"
        && !NON_ENGAGEMENT.contains(&normalized_type)
}

/// The `text` field of an action's JSON arguments as KnowU's `str(text or "")` reads it: empty
/// when absent, falsy (null, false, 0, "", [], {}) or the arguments are not JSON; strings as they
/// are; other values as JSON text.
pub fn answer_text(arguments: &str) -> String {
    use serde_json::Value;
    let Ok(v) = serde_json::from_str::<Value>(arguments) else {
        return String::new();
    };
    match v.get("text") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => String::new(),
        Some(Value::Array(a)) if a.is_empty() => String::new(),
        Some(Value::Object(m)) if m.is_empty() => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision::{Accept, Reject};

    #[test]
    fn decision_tag_wins_then_reject_before_accept() {
        // The tag decides even when the prose says the opposite.
        assert_eq!(
            parse_decision("I reject nothing. <decision>accept</decision>"),
            Some(Accept)
        );
        assert_eq!(
            parse_decision("<DECISION> Reject </DECISION> accept"),
            Some(Reject)
        );
        // No usable tag: substring, reject tested first.
        assert_eq!(parse_decision("I accept, no wait, I reject"), Some(Reject));
        assert_eq!(
            parse_decision("<decision>maybe</decision> accepted"),
            Some(Accept)
        );
        assert_eq!(parse_decision("Sure, go ahead"), None);
        assert_eq!(parse_decision("   "), None);
    }

    #[test]
    fn trivial_answers_do_not_engage() {
        for t in [
            "",
            "Task finished",
            "  task   FINISHED ",
            "failed",
            "SUCCESS",
        ] {
            assert!(!is_engagement("answer", || t.to_string()), "{t:?}");
        }
        assert!(is_engagement("answer", || "Alarm disabled for Saturday".into()));
        assert!(is_engagement("click", String::new));
        assert!(is_engagement("unknown", String::new));
        for t in ["wait", "finished", "ask_user", ""] {
            assert!(
                !is_engagement(t, || unreachable!("only answers read text")),
                "{t}"
            );
        }
    }

    #[test]
    fn stop_allows_answers_and_waiting_only() {
        for t in ["wait", "finished", "ask_user", "answer", ""] {
            assert!(!is_stop_violation(t), "{t}");
        }
        for t in ["click", "input_text", "open_app", "unknown", "status"] {
            assert!(is_stop_violation(t), "{t}");
        }
        assert_eq!(normalize_action("Finish"), "finished");
        assert_eq!(normalize_action("ASK_USER"), "ask_user");
    }

    #[test]
    fn answer_text_reads_the_text_field() {
        assert_eq!(answer_text(r#"{"action_type":"answer","text":"hi"}"#), "hi");
        assert_eq!(answer_text("not json"), "");
        // KnowU's `str(text or "")`: falsy values are empty, others their text.
        for falsy in ["null", "false", "0", "[]", "{}", "\"\""] {
            assert_eq!(
                answer_text(&format!(r#"{{"text":{falsy}}}"#)),
                "",
                "{falsy}"
            );
        }
        assert_eq!(answer_text(r#"{"text":5}"#), "5");
    }
}

//! The per-episode score of a KnowU task, from the phone's final state (rules, no model), written
//! to `episodes.score` so `knowu_metrics` computes SR / AvgScore / Act / Silent / Stop:
//!
//! - general: 1 when every criterion holds, else 0 (λ = 1, KnowU's rule-checked classes); the
//!   judge-scored ones (λ < 1) as personalized;
//! - personalized (hybrid): 0 when the effect is missing, else λ + (1−λ)·(share of the
//!   preference's requirements the judged field meets, [`prefs::check`]) — the offline
//!   stand-in for KnowU's judged preference part; λ is the class's (datasets/knowu/scoring.csv);
//! - proactive: as KnowU-Bench's routine tasks (`BaseRoutineTask` and each task's
//!   `is_successful`) decide, see [`proactive`]: without the habit any operational action scores
//!   0; after a rejected question too; otherwise what the user wanted (the habit, or the answer
//!   to the agent's question) decides whether the effect must exist or the phone stay unchanged.

use crate::episodes::StepRow;
use crate::knowu::interop::rules::answer_text;
use crate::tasks::eval::Episode;
use crate::tasks::{CriterionKind, TaskBundle};
use crate::world::phone::Phone;

use super::prefs;
use super::task::{Expect, KnowuTaskInfo};
use super::template::Split;

/// Action types KnowU's routine tasks never count as acting (`BaseRoutineTask.SAFE_ACTIONS`,
/// plus prefflow's spelling of `finished`).
const SAFE_ACTIONS: [&str; 6] = [
    "terminate",
    "wait",
    "ask_user",
    "answer",
    "finished",
    "finish",
];

/// The score of a finished episode of the KnowU task `bundle` (facts `info`).
pub fn score(
    bundle: &TaskBundle,
    info: &KnowuTaskInfo,
    phone: &Phone<'_>,
    steps: &[StepRow],
) -> f64 {
    let ep = Episode::new(phone, &bundle.slots);
    let holds = |kind: CriterionKind| {
        let of_kind: Vec<_> = bundle.criteria.iter().filter(|c| c.kind == kind).collect();
        let passed = of_kind.iter().filter(|c| ep.check(&c.predicate)).count();
        (passed, of_kind.len())
    };
    let (actions_passed, actions) = holds(CriterionKind::Action);
    let effect = actions_passed == actions;
    // The preference part: the structured check of the judged field when the task has one,
    // else the personalization criteria.
    let pref = || match preference_share(info, phone, &bundle.task.instruction) {
        Some(share) => share,
        None => {
            let (p, n) = holds(CriterionKind::Personalization);
            if n == 0 {
                1.0
            } else {
                p as f64 / n as f64
            }
        }
    };
    match info.split {
        // KnowU's rule-checked general classes pass or fail as a whole.
        Split::General if info.lambda.is_none_or(|l| l >= 1.0) => {
            f64::from(u8::from(effect && pref() >= 1.0))
        }
        Split::General | Split::Personalized if !effect => 0.0,
        Split::General | Split::Personalized => {
            let lambda = info.lambda.unwrap_or(0.5).clamp(0.0, 1.0);
            lambda + (1.0 - lambda) * pref()
        }
        Split::Proactive => {
            let has_habit = info.expect == Some(Expect::Act);
            // For an `act` task the action criterion is the habit's effect.
            let outcome = Outcome {
                effect: has_habit && effect,
                unchanged: phone.diff().is_empty(),
            };
            f64::from(u8::from(proactive(has_habit, steps, outcome)))
        }
    }
}

/// The share of the preference's requirements ([`prefs::check`]) met by the judged field of
/// the last record the episode inserted (or updated) in the judged table; 0 when it wrote none.
/// `None` when the task has no preference check. `instruction` is the task's: its situation
/// decides the preference's `only if` conditions ([`prefs::Requirements::in_situation`]).
pub fn preference_share(info: &KnowuTaskInfo, phone: &Phone<'_>, instruction: &str) -> Option<f64> {
    let value = info.preference.as_ref()?;

    let (change, path) = info.judged.as_deref()?.split_once(':')?;
    let (exact, change) = match change.strip_prefix("exact-") {
        Some(c) => (true, c),
        None => (false, change),
    };
    let (path, schedule) = match path.split_once('@') {
        Some((path, at)) => (path, at.split_once('+')),
        None => (path, None),
    };
    let mut parts = path.splitn(3, '.');
    let (app, table, field) = (parts.next()?, parts.next()?, parts.next()?);
    let diff = phone.diff();
    let Some(t) = diff.table(app, table) else {
        return Some(0.0);
    };
    let last = match change {
        "updated" => t.updated.last().map(|u| &u.after),
        _ => t.inserted.last(),
    };
    let text = last
        .and_then(|r| r.get(field))
        .map(crate::knowu::profile::text)
        .unwrap_or_default();
    let at = schedule.and_then(|(start, minutes)| scheduled(last?, start, minutes));
    if text.is_empty() && at.is_none() {
        return Some(0.0);
    }
    let value_text = crate::knowu::profile::text(value);
    if exact {
        return Some(f64::from(u8::from(
            text.trim().eq_ignore_ascii_case(value_text.trim()),
        )));
    }
    let situation = prefs::situation(instruction, &value_text);
    let req = prefs::parse(value).in_situation(&situation);
    Some(prefs::check_scheduled(&req, &text, at).share())
}

/// A record's scheduled interval: its `start` field (`HH:MM`) and `minutes` field; `None` when
/// either is missing or unreadable.
fn scheduled(record: &serde_json::Value, start: &str, minutes: &str) -> Option<prefs::Scheduled> {
    let t = crate::world::clock::Time::parse(record.get(start)?.as_str()?)?;
    let m = record.get(minutes)?.as_u64()?;
    Some(prefs::Scheduled {
        start: u16::try_from(t.seconds() / 60).ok()?,
        minutes: u16::try_from(m).ok()?,
    })
}

/// The final state of a proactive episode.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The habit's effect exists.
    pub effect: bool,
    /// Nothing on the phone changed.
    pub unchanged: bool,
}

/// KnowU's routine-task rule: the user's decision is the reply to the agent's first question
/// (`<decision>` tag, else whether the reply contains "accept"), or the habit when the agent did
/// not ask. Any operational action without the habit fails, and so does one after a rejected
/// question; then the effect must exist if the user wanted it, else the phone must be
/// unchanged.
pub fn proactive(has_habit: bool, steps: &[StepRow], outcome: Outcome) -> bool {
    let acts = |from: usize| {
        steps
            .iter()
            .skip(from)
            .any(|s| !SAFE_ACTIONS.contains(&s.action_type.to_lowercase().as_str()))
    };
    let consent = first_consent(steps);
    if !has_habit && acts(0) {
        return false;
    }
    if let Some((at, false)) = consent {
        if acts(at + 1) {
            return false;
        }
    }
    let wants = consent.map_or(has_habit, |(_, accepts)| accepts);
    if wants {
        outcome.effect
    } else {
        outcome.unchanged
    }
}

/// The step index KnowU attributes the user's decision to, and the decision: the reply to the
/// first `ask_user` that got one; the index is that of the last question with the same text
/// (KnowU maps question texts to their last position). `None` when nothing was asked.
fn first_consent(steps: &[StepRow]) -> Option<(usize, bool)> {
    let (first, reply) = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.action_type == "ask_user")
        .find_map(|(i, s)| s.user_reply.as_deref().map(|r| (i, r)))?;
    let text = answer_text(&steps[first].arguments);
    let at = steps
        .iter()
        .enumerate()
        .rfind(|(_, s)| s.action_type == "ask_user" && answer_text(&s.arguments) == text)
        .map(|(i, _)| i)
        .unwrap_or(first);
    Some((at, accepts(reply)))
}

/// KnowU's `_parse_user_decision`: the `<decision>` tag when present, else whether the reply
/// says "accept" anywhere (note: unlike the metrics' parser, "reject" is not looked for).
fn accepts(reply: &str) -> bool {
    let lower = reply.to_lowercase();
    let mut rest = lower.as_str();
    while let Some(start) = rest.find("<decision>") {
        let after = &rest[start + "<decision>".len()..];
        let Some(end) = after.find("</decision>") else {
            break;
        };
        match after[..end].trim() {
            "accept" => return true,
            "reject" => return false,
            _ => rest = after,
        }
    }
    lower.contains("accept")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(action_type: &str, text: &str, reply: Option<&str>) -> StepRow {
        StepRow {
            action_type: action_type.into(),
            arguments: serde_json::json!({ "text": text }).to_string(),
            user_reply: reply.map(str::to_string),
            ..StepRow::default()
        }
    }

    const DONE: Outcome = Outcome {
        effect: true,
        unchanged: false,
    };
    const UNTOUCHED: Outcome = Outcome {
        effect: false,
        unchanged: true,
    };

    #[test]
    fn without_the_habit_only_inaction_scores() {
        let finish = [step("finish", "", None)];
        assert!(proactive(false, &finish, UNTOUCHED));
        // Any operational action fails, even one that changes nothing (a read-only call).
        let look = [
            step("calendar.list_events", "", None),
            step("finish", "", None),
        ];
        assert!(!proactive(false, &look, UNTOUCHED));
        // Answering is safe for the task score (KnowU's Silent metric still counts a
        // substantive answer as engagement).
        assert!(proactive(
            false,
            &[step("answer", "Your alarm stays on.", None)],
            UNTOUCHED
        ));
        // Asking is fine; after the reject, stopping scores and acting does not.
        let ask = step(
            "ask_user",
            "Disable it?",
            Some("<decision>reject</decision> no"),
        );
        assert!(proactive(
            false,
            &[ask.clone(), step("finish", "", None)],
            UNTOUCHED
        ));
        assert!(!proactive(
            false,
            &[ask, step("clock.set_alarm", "", None)],
            DONE
        ));
        // The user accepting does not make acting right without the habit.
        let yes = step(
            "ask_user",
            "Disable it?",
            Some("<decision>accept</decision>"),
        );
        assert!(!proactive(
            false,
            &[yes.clone(), step("clock.set_alarm", "", None)],
            DONE
        ));
        assert!(
            !proactive(false, &[yes], UNTOUCHED),
            "accepted but nothing done"
        );
    }

    #[test]
    fn with_the_habit_the_users_answer_decides() {
        let act = step("clock.set_alarm", "", None);
        assert!(proactive(true, std::slice::from_ref(&act), DONE));
        assert!(
            !proactive(true, &[step("finish", "", None)], UNTOUCHED),
            "passive"
        );
        let ask = |reply: &str| step("ask_user", "Shall I?", Some(reply));
        assert!(proactive(
            true,
            &[ask("<decision>accept</decision>"), act.clone()],
            DONE
        ));
        // A rejecting user (an LLM user may reject despite the habit): leaving it is right.
        let no = ask("<decision>reject</decision> not today");
        assert!(proactive(
            true,
            &[no.clone(), step("finish", "", None)],
            UNTOUCHED
        ));
        assert!(!proactive(true, &[no, act.clone()], DONE));
        // Without a tag, only "accept" counts as yes: a plain "sure" means no.
        assert!(!proactive(
            true,
            &[ask("sure, go ahead"), act.clone()],
            DONE
        ));
        assert!(proactive(true, &[ask("ok, I accept"), act], DONE));
    }

    #[test]
    fn the_first_answered_question_decides_at_the_last_copy_of_its_text() {
        let steps = [
            step("ask_user", "Shall I?", Some("<decision>reject</decision>")),
            step("clock.set_alarm", "", None),
            step("ask_user", "Shall I?", None),
            step("finish", "", None),
        ];
        // The reject's index is that of the repeated question, so the earlier action does not
        // count as acting after the reject (KnowU's q_map keeps the last index of a text).
        assert_eq!(first_consent(&steps), Some((2, false)));
        assert!(proactive(true, &steps, UNTOUCHED));
        assert!(!proactive(
            true,
            &steps,
            Outcome {
                effect: true,
                unchanged: false
            }
        ));
    }
}

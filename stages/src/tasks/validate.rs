//! Execution-based validation (iPrefBench D.1): each task is run in the simulated phone. The
//! reference solution must pass every criterion; a defaults-only agent (the same operations with
//! only required fields, never asking) must fail every personalization criterion; and lints catch
//! evidence missing from history, ask-only values that leak into history, criteria that already
//! hold before the agent acts, and references that use an option the task made unavailable.

use serde_json::Value;

use super::eval::{resolve_json, Episode};
use super::lints::{self, SetView};
use super::model::{CriterionKind, Slot, Source, TaskBundle};
use super::rejection::reject;
pub use super::rejection::{Check, Rejection};
use super::user::SlotUser;
use super::world_index::WorldIndex;
use crate::world::history::HistoryEvent;
use crate::world::phone::{Action, ActionSpace, AskUser, EpisodeConfig, NoUser, Phone};
use crate::world::types::{display, value_matches};

/// Validates one task on its own (no sibling lint); an empty result means it passes.
pub fn validate(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    validate_in_set(ix, b, &SetView::default())
}

/// Validates one task of a reviewed set `set` (its slot sources for the
/// [`lints::source_mismatch`] check across a template's variants, its instructions for
/// [`lints::duplicate_instruction`]).
pub fn validate_in_set(ix: &WorldIndex<'_>, b: &TaskBundle, set: &SetView) -> Vec<Rejection> {
    let mut out = Vec::new();
    let initial = match start(ix, b, Box::new(NoUser)) {
        Ok(p) => p,
        Err(e) => {
            out.push(reject(Check::Overrides, None, e));
            return out;
        }
    };
    out.extend(reference(ix, b));
    out.extend(defaults(ix, b));
    out.extend(initial_state(ix, b));
    out.extend(evidence(ix, b));
    out.extend(leaks(ix, b));
    out.extend(unavailable(b));
    out.extend(lints::quantity(b));
    out.extend(lints::premise(ix, b, &initial));
    out.extend(lints::derivable(ix, b, &initial));
    out.extend(lints::artefacts(ix, b, &initial));
    out.extend(lints::source_mismatch(ix, b, &set.slots));
    out.extend(lints::guessable_count(b));
    out.extend(lints::visible_choice(ix, b, &initial));
    out.extend(lints::owned_dates(ix, b, &initial));
    out.extend(lints::duplicate_instruction(b, set));
    out.extend(lints::unscored_step(ix, b));
    out.extend(lints::unasked_own_value(b));
    out.extend(lints::weekday_date(
        b,
        &ix.world.catalog,
        initial.clock().date,
    ));
    out
}

fn start<'w>(
    ix: &WorldIndex<'w>,
    b: &TaskBundle,
    user: Box<dyn AskUser + 'w>,
) -> Result<Phone<'w>, String> {
    let config = EpisodeConfig {
        space: ActionSpace::Tools,
        clock: None,
        overrides: b.task.overrides.clone(),
    };
    Phone::new(ix.world, config, user).map_err(|e| format!("overrides do not apply: {e}"))
}

/// Runs a solution; `Err` says which step failed and why.
fn run(phone: &mut Phone<'_>, steps: &[Value], slots: &[Slot]) -> Result<(), String> {
    for (i, raw) in steps.iter().enumerate() {
        let resolved = resolve_json(raw, slots).map_err(|e| format!("step {}: {e}", i + 1))?;
        let action: Action = serde_json::from_value(resolved)
            .map_err(|e| format!("step {}: not a phone action: {e}", i + 1))?;
        let obs = phone.step(&action);
        if obs.is_error() {
            return Err(format!("step {} failed: {}", i + 1, obs.text));
        }
    }
    Ok(())
}

fn reference(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    let Ok(mut phone) = start(ix, b, Box::new(SlotUser::new(&b.slots))) else {
        return Vec::new();
    };
    if let Err(e) = run(&mut phone, &b.task.reference_solution, &b.slots) {
        return vec![reject(
            Check::Reference,
            None,
            format!("reference solution {e}"),
        )];
    }
    let episode = Episode::new(&phone, &b.slots);
    let mut out: Vec<Rejection> = b
        .criteria
        .iter()
        .filter(|c| !episode.check(&c.predicate))
        .map(|c| {
            reject(
                Check::Reference,
                Some(&c.criterion_id),
                format!(
                    "the reference solution fails criterion `{}`",
                    c.criterion_id
                ),
            )
        })
        .collect();
    let user = SlotUser::new(&b.slots);
    for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
        let asked = phone.asks().iter().any(|a| {
            user.matched(&a.question)
                .iter()
                .any(|m| m.slot_id == s.slot_id)
        });
        if !asked {
            out.push(reject(
                Check::ReferenceAsks,
                Some(&s.slot_id),
                format!("the reference never asks about ask-only slot `{}` (no question contains its keywords)", s.slot_id),
            ));
        }
    }
    out
}

fn defaults(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    if let Some(r) = defaults_shape(ix, b) {
        return vec![r];
    }
    let Ok(mut phone) = start(ix, b, Box::new(NoUser)) else {
        return Vec::new();
    };
    if let Err(e) = run(&mut phone, &b.task.defaults_solution, &b.slots) {
        return vec![reject(
            Check::Defaults,
            None,
            format!("defaults-only solution {e}"),
        )];
    }
    let episode = Episode::new(&phone, &b.slots);
    b.criteria
        .iter()
        .filter(|c| c.kind == CriterionKind::Personalization && episode.check(&c.predicate))
        .map(|c| {
            reject(
                Check::Defaults,
                Some(&c.criterion_id),
                format!(
                    "a defaults-only agent passes personalization criterion `{}`: it does not discriminate",
                    c.criterion_id
                ),
            )
        })
        .collect()
}

/// The defaults-only solution may only call operations with required fields and never ask.
fn defaults_shape(ix: &WorldIndex<'_>, b: &TaskBundle) -> Option<Rejection> {
    for step in &b.task.defaults_solution {
        match step.get("action").and_then(Value::as_str) {
            Some("ask_user") => {
                return Some(reject(
                    Check::Defaults,
                    None,
                    "the defaults-only solution asks the user".into(),
                ))
            }
            Some("call") => {
                let tool = step.get("tool").and_then(Value::as_str).unwrap_or_default();
                let Some(op) = ix.world.catalog.operation(tool) else {
                    continue;
                };
                let args = step.get("args").and_then(Value::as_object);
                let optional = args
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                    .find(|k| op.field_idx(k).is_none_or(|i| !op.fields[i].required));
                if let Some(k) = optional {
                    return Some(reject(
                        Check::Defaults,
                        None,
                        format!("the defaults-only solution sets optional field `{k}` of `{tool}`"),
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

fn initial_state(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    let Ok(phone) = start(ix, b, Box::new(NoUser)) else {
        return Vec::new();
    };
    let episode = Episode::new(&phone, &b.slots);
    b.criteria
        .iter()
        .filter(|c| episode.check(&c.predicate))
        .map(|c| {
            reject(
                Check::InitialState,
                Some(&c.criterion_id),
                format!(
                    "criterion `{}` already holds before the agent acts",
                    c.criterion_id
                ),
            )
        })
        .collect()
}

fn evidence(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    let extra = &b.task.overrides.history;
    b.slots
        .iter()
        .filter(|s| s.source == Source::Inferable)
        .filter_map(|s| {
            let missing: Vec<&str> = s
                .evidence
                .iter()
                .filter(|e| ix.event_app(e, extra).is_none())
                .map(String::as_str)
                .collect();
            let reason = if s.evidence.is_empty() {
                format!("inferable slot `{}` has no evidence events", s.slot_id)
            } else if !missing.is_empty() {
                format!(
                    "inferable slot `{}` cites events missing from history: {}",
                    s.slot_id,
                    missing.join(", ")
                )
            } else {
                return None;
            };
            Some(reject(Check::Evidence, Some(&s.slot_id), reason))
        })
        .collect()
}

fn leaks(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    let history: Vec<&HistoryEvent> = ix
        .world
        .history
        .iter()
        .chain(&b.task.overrides.history)
        .collect();
    b.slots
        .iter()
        .filter(|s| s.source == Source::AskOnly)
        .filter_map(|s| {
            let phrases = leak_phrases(ix, s);
            let hit = history.iter().find_map(|e| {
                let text = e.text.to_lowercase();
                phrases
                    .iter()
                    .find(|p| contains_words(&text, p))
                    .map(|p| (e, p))
            })?;
            Some(reject(
                Check::Leak,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}`: \"{}\" appears in history event {}",
                    s.slot_id, hit.1, hit.0.event_id
                ),
            ))
        })
        .collect()
}

/// Lower-cased phrases that would reveal an ask-only value: the leak phrases of its situational
/// fact, the mention of its profile entry, and the value itself when it is a phrase of two or
/// more words (single common words like "white" or "evening" would match unrelated events).
fn leak_phrases(ix: &WorldIndex<'_>, s: &Slot) -> Vec<String> {
    let persona = &ix.world.persona;
    let mut out = Vec::new();
    let text = display(&s.value);
    if text.split_whitespace().count() >= 2 {
        out.push(text.to_lowercase());
    }
    if let Some(id) = &s.profile_entry {
        if let Some(f) = persona.situational.iter().find(|f| &f.id == id) {
            out.extend(f.leaks.iter().map(|l| l.to_lowercase()));
        } else if let Some(e) = persona.entry(id) {
            out.push(e.mention.to_lowercase());
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Whether `phrase` occurs in `text` as whole words.
fn contains_words(text: &str, phrase: &str) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    text.match_indices(phrase).any(|(i, m)| {
        boundary(text[..i].chars().next_back()) && boundary(text[i + m.len()..].chars().next())
    })
}

fn unavailable(b: &TaskBundle) -> Vec<Rejection> {
    let mut out = Vec::new();
    for u in &b.task.hidden_context.unavailable {
        let used = b.task.reference_solution.iter().any(|step| {
            step.get("tool").and_then(Value::as_str) == Some(u.tool.as_str())
                && step
                    .get("args")
                    .and_then(|a| a.get(&u.arg))
                    .and_then(|v| resolve_json(v, &b.slots).ok())
                    .is_some_and(|v| value_matches(&v, &u.value))
        });
        if used {
            out.push(reject(
                Check::Unavailable,
                Some(&u.arg),
                format!(
                    "the reference solution calls `{}` with {} = {}, which the task made unavailable",
                    u.tool,
                    u.arg,
                    display(&u.value)
                ),
            ));
        }
    }
    out
}

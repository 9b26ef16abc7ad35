//! The per-episode score of a KnowU task, from the phone's final state (rules, no model), written
//! to `episodes.score` so `knowu_metrics` computes SR / AvgScore / Act / Silent / Stop:
//!
//! - general: 1 when every criterion holds, else 0;
//! - personalized (hybrid): 0 when the effect is missing, else λ + (1−λ)·(share of the
//!   preference's key terms found in the judged field) — the offline stand-in for KnowU's
//!   judged preference part;
//! - proactive, expected act: 1 when the habit's effect exists;
//! - proactive, expected silent or stop: 1 when nothing changed (asking is fine; any change,
//!   in particular after the user rejected, scores 0).

use crate::episodes::StepRow;
use crate::tasks::eval::Episode;
use crate::tasks::{CriterionKind, TaskBundle};
use crate::world::phone::Phone;

use super::{Expect, KnowuTaskInfo, Split};

/// The score of a finished episode of the KnowU task `bundle` (facts `info`).
pub fn score(
    bundle: &TaskBundle,
    info: &KnowuTaskInfo,
    phone: &Phone<'_>,
    _steps: &[StepRow],
) -> f64 {
    let ep = Episode::new(phone, &bundle.slots);
    let holds = |kind: CriterionKind| {
        let of_kind: Vec<_> = bundle.criteria.iter().filter(|c| c.kind == kind).collect();
        let passed = of_kind.iter().filter(|c| ep.check(&c.predicate)).count();
        (passed, of_kind.len())
    };
    let (actions_passed, actions) = holds(CriterionKind::Action);
    let effect = actions_passed == actions;
    match (info.split, info.expect) {
        (Split::General, _) => {
            let (p, n) = holds(CriterionKind::Personalization);
            f64::from(u8::from(effect && p == n))
        }
        (Split::Personalized, _) if !effect => 0.0,
        (Split::Personalized, _) => {
            let lambda = info.lambda.unwrap_or(0.5).clamp(0.0, 1.0);
            let (p, n) = holds(CriterionKind::Personalization);
            let pref = if n == 0 { 1.0 } else { p as f64 / n as f64 };
            lambda + (1.0 - lambda) * pref
        }
        (Split::Proactive, Some(Expect::Act)) => f64::from(u8::from(effect)),
        (Split::Proactive, _) => f64::from(u8::from(phone.diff().is_empty())),
    }
}

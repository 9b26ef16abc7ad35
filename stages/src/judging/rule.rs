//! `rule` verdicts: each criterion's predicate evaluated on the replayed phone (final state,
//! diff, operations, questions and final answer). Exact and free, so it is the default judge.

use std::collections::HashSet;

use super::verdict::Verdict;
use crate::tasks::eval::Episode;
use crate::tasks::TaskBundle;
use crate::world::phone::Phone;

/// One criterion's verdict with the judge's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The criterion.
    pub criterion_id: String,
    /// The decision.
    pub verdict: Verdict,
    /// Why, in words.
    pub reason: String,
}

/// Judges every criterion of `bundle` on `phone`, independently; `asked` holds the slots the
/// interaction judge matched requests to, which is what `asked:` predicates read.
pub fn judge(phone: &Phone<'_>, bundle: &TaskBundle, asked: &HashSet<String>) -> Vec<Judged> {
    let episode = Episode::with_asked(phone, &bundle.slots, asked.clone());
    bundle
        .criteria
        .iter()
        .map(|c| {
            let holds = episode.check(&c.predicate);
            let (verdict, word) = if holds {
                (Verdict::Pass, "holds")
            } else {
                (Verdict::Fail, "does not hold")
            };
            Judged {
                criterion_id: c.criterion_id.clone(),
                verdict,
                reason: format!("predicate {word}: {}", c.predicate.to_json()),
            }
        })
        .collect()
}

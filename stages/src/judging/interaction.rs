//! The interaction judge (iPrefBench §3.4, E.3, G.4): every `ask_user` message is decomposed into
//! separately answerable information requests (a choice among alternatives is one request), each
//! matched to a slot or to nothing; a request for a slot already asked about is a repeat. Recall
//! counts the distinct ask-only slots asked, precision the share of requests that newly ask for
//! an ask-only slot (inferable, irrelevant and repeated requests count against it). Where a
//! slot's options form a small closed set, the judge also checks the question offered them.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::replay::Ask;
pub use crate::tasks::matcher::{scripted_pieces, Piece};
use crate::tasks::{Slot, Source, TaskBundle};
use crate::world::types::FieldKind;
use crate::world::Catalog;

/// Options a field may have to count as a small closed set the question should offer.
pub const CLOSED_SET_MAX: usize = 6;

/// Who decomposes and matches requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatcherName {
    /// The task's slot keywords (default; free and exact).
    #[default]
    Scripted,
    /// An LLM following iPrefBench G.4.
    Llm,
}

/// One `requests` row.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The asking step.
    pub step: u32,
    /// The request's text.
    pub request: String,
    /// The matched slot.
    pub slot_id: Option<String>,
    /// The matched slot's source (null: irrelevant).
    pub slot_source: Option<Source>,
    /// The slot (or the same unmatched text) was asked before.
    pub repeat: bool,
    /// The slot's options form a small closed set.
    pub closed_set: bool,
    /// The question offered those options (null when not a closed set).
    pub offered_options: Option<bool>,
    /// Which matcher produced it (`scripted`, `llm`, or `scripted_fallback` after an unreadable
    /// LLM reply).
    pub matcher: &'static str,
}

/// One `interaction` row: the table's row struct; [`summarize`] fills the counts, the judge
/// the episode's identity and its label.
pub use crate::tables::judging::Interaction;

/// Whether `text` names the slot (one of its keywords as whole words).
pub fn mentions(text: &str, slot: &Slot) -> bool {
    crate::tasks::matcher::names_slot(text, slot)
}

/// Where each slot is used: the `(tool, argument)` of the reference solution's call that takes
/// its value.
pub fn bindings(bundle: &TaskBundle) -> HashMap<String, (String, String)> {
    bundle.slot_bindings()
}

/// The options of a slot's field when they form a small closed set.
pub fn closed_options(cat: &Catalog, binding: Option<&(String, String)>) -> Option<Vec<String>> {
    let (tool, arg) = binding?;
    let op = cat.operation(tool)?;
    let field = &op.fields[op.field_idx(arg)?];
    match &field.kind {
        FieldKind::Enum(options) if options.len() <= CLOSED_SET_MAX => Some(options.clone()),
        _ => None,
    }
}

/// Whether a question offers the options: it names at least two of them (all, if fewer).
pub fn offers(question: &str, options: &[String]) -> bool {
    let q = question.to_lowercase();
    let named = options
        .iter()
        .filter(|o| {
            let o = o.to_lowercase();
            q.contains(&o) || q.contains(&o.replace('_', " "))
        })
        .count();
    named >= options.len().min(2)
}

/// Turns matched pieces of every ask into `requests` rows: marks repeats, closed sets and
/// offered options. `pieces` gives each ask's pieces and the matcher that produced them.
pub fn requests(
    asks: &[Ask],
    bundle: &TaskBundle,
    cat: &Catalog,
    mut pieces: impl FnMut(&Ask) -> (Vec<Piece>, &'static str),
) -> Vec<Request> {
    let binds = bindings(bundle);
    let mut seen_slots: HashSet<String> = HashSet::new();
    let mut seen_texts: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for ask in asks {
        let (ps, matcher) = pieces(ask);
        for p in ps {
            let slot = p.slot_id.as_deref().and_then(|id| bundle.slot(id));
            let repeat = match slot {
                Some(s) => seen_slots.contains(&s.slot_id),
                None => seen_texts.contains(&p.text.to_lowercase()),
            };
            let options = slot.and_then(|s| closed_options(cat, binds.get(&s.slot_id)));
            out.push(Request {
                step: ask.step,
                request: p.text.clone(),
                slot_id: slot.map(|s| s.slot_id.clone()),
                slot_source: slot.map(|s| s.source),
                repeat,
                closed_set: options.is_some(),
                offered_options: options.map(|o| offers(&ask.question, &o)),
                matcher,
            });
            match slot {
                Some(s) => seen_slots.insert(s.slot_id.clone()),
                None => seen_texts.insert(p.text.to_lowercase()),
            };
        }
    }
    out
}

/// The episode's interaction counts.
pub fn summarize(requests: &[Request], bundle: &TaskBundle) -> Interaction {
    let ask_only_slots = bundle
        .slots
        .iter()
        .filter(|s| s.source == Source::AskOnly)
        .count() as u32;
    let matched: Vec<&Request> = requests
        .iter()
        .filter(|r| r.slot_source == Some(Source::AskOnly) && !r.repeat)
        .collect();
    let distinct: HashSet<&str> = matched
        .iter()
        .filter_map(|r| r.slot_id.as_deref())
        .collect();
    let n = requests.len() as u32;
    let ratio = |a: u32, b: u32| (b > 0).then(|| f64::from(a) / f64::from(b));
    Interaction {
        requests: n,
        matched_requests: matched.len() as u32,
        ask_only_slots,
        matched_ask_only: distinct.len() as u32,
        recall: ratio(distinct.len() as u32, ask_only_slots),
        precision: ratio(matched.len() as u32, n),
        closed_set_requests: requests.iter().filter(|r| r.closed_set).count() as u32,
        offered_options: requests
            .iter()
            .filter(|r| r.offered_options == Some(true))
            .count() as u32,
        ..Interaction::default()
    }
}

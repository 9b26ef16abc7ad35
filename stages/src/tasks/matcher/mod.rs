//! The one matcher of questions to slots (iPrefBench G.4), shared by the interaction judge,
//! `asked:` predicates and the scripted user, so the three never disagree.
//!
//! A message is split into separately answerable information pieces ([`split`]: sentences, an
//! abbreviation-aware splitter; coordinated questions; statements kept as context); each piece
//! is matched to at most one slot by what a question about the slot sounds like, derived from
//! the task's own data ([`profile`]: the slot's `about` sentence, its field's name and options,
//! synonyms from a general lexicon, the kind of its value against the question's form,
//! [`forms`]). Ask-only slots win ties over inferable ones; a piece that fits no slot clearly is
//! unmatched. A piece that joins two clearly named slots with "and" ("How many passengers and
//! bags?") is two pieces.

mod attribute;
pub mod forms;
mod head;
pub mod profile;
mod slot_subject;
pub mod split;
mod subject;
pub mod text;

use std::collections::HashSet;

pub use profile::TaskMatcher;
pub use text::{phrase_in, words};

use super::model::Slot;

/// Words that, alone, name no field or subject: a keyword made only of these is rejected at
/// generation (templates), and lints read them.
pub(crate) const GENERIC: &[&str] = &[
    "a",
    "about",
    "again",
    "an",
    "and",
    "another",
    "any",
    "anything",
    "are",
    "available",
    "be",
    "by",
    "can",
    "change",
    "choose",
    "do",
    "does",
    "else",
    "for",
    "from",
    "get",
    "give",
    "go",
    "had",
    "have",
    "her",
    "him",
    "how",
    "i",
    "in",
    "instead",
    "is",
    "it",
    "kind",
    "many",
    "me",
    "much",
    "my",
    "of",
    "on",
    "one",
    "or",
    "other",
    "pick",
    "put",
    "say",
    "send",
    "set",
    "should",
    "so",
    "some",
    "tell",
    "that",
    "the",
    "them",
    "there",
    "this",
    "to",
    "type",
    "use",
    "want",
    "we",
    "what",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "write",
    "you",
    "your",
];

/// Whether a keyword names nothing: all its words are generic.
pub fn generic_keyword(keyword: &str) -> bool {
    words(keyword).iter().all(|w| GENERIC.contains(&w.as_str()))
}

/// Whether a text names the slot by one of its keywords (used where a text must *mention* a
/// slot's subject, e.g. that the agent raised an unavailable option; questions go through
/// [`TaskMatcher`]).
pub fn names_slot(text: &str, slot: &Slot) -> bool {
    slot.keywords.iter().any(|k| phrase_in(text, k))
}

/// One information request of a message: its words and the slot it asks for (`None`: no slot
/// of the task).
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// The request's text.
    pub text: String,
    /// The slot it asks for, if any.
    pub slot_id: Option<String>,
}

impl TaskMatcher {
    /// The information pieces of a message, each matched to at most one slot. A piece that
    /// names no slot but follows a question about one in the same message, with a form that
    /// fits it ("How many tickets? Just one?", "Tell me the time — does 10 a.m. work?"), asks
    /// about that slot again: a repeat.
    pub fn pieces(&self, message: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut last: Option<usize> = None;
        for raw in split::pieces(message) {
            if let Some(parts) = self.conjoined(&raw).or_else(|| self.confirmed_values(&raw)) {
                last = parts
                    .last()
                    .and_then(|p| self.index_of(p.slot_id.as_deref()));
                out.extend(parts);
                continue;
            }
            // "What time works? Maybe 3?": a bare value after a question proposes its answer.
            let repeat = if bare_question(&raw.text) {
                // "Do you want a caption? If so, what?": the request said again, or nothing.
                last
            } else if quoted_proposal(&raw.text) {
                // "Any title in mind? Something like \"Best brunch in town\"?": a wording
                // proposed for the words just asked for.
                last.filter(|&i| self.takes_words(i))
                    .or_else(|| self.only_words_slot())
            } else {
                self.bare_value(&raw.text)
                    .then(|| self.follow_up(&raw, last))
                    .flatten()
            };
            let best = repeat
                .or_else(|| self.best(&raw.text, &raw.lead, &raw.context))
                .or_else(|| self.follow_up(&raw, last))
                .or_else(|| self.choice_from_context(&raw))
                .or_else(|| self.confirms_its_lead(&raw));
            let appositive = raw.soft && best.is_some() && best == last;
            if best.is_some() {
                last = best;
            }
            if appositive {
                // "Who else is joining you two, which guests?": one question said twice.
                if let Some(prev) = out.last_mut() {
                    prev.text = format!("{}, {}", prev.text, raw.text);
                }
                continue;
            }
            out.push(Piece {
                text: raw.text,
                slot_id: best.map(|i| self.profiles[i].slot_id.clone()),
            });
        }
        out
    }

    /// "Maybe 3?", "Six?", "$75?", "Two hours?": a short closed piece that names a value and no
    /// slot's subject.
    fn bare_value(&self, text: &str) -> bool {
        let f = forms::form(text, "", "");
        let short = text.split_whitespace().count() <= 3;
        let names_none = self.fits(text, "", "").iter().all(|fit| fit.own <= 0.0);
        short && f.closed && !f.mentioned.is_empty() && names_none
    }

    /// Whether slot `i` holds words to be written (a message, a caption, a title, a topic).
    fn takes_words(&self, i: usize) -> bool {
        self.profiles[i]
            .kinds
            .iter()
            .any(|(k, w)| matches!(k, forms::Kind::Text | forms::Kind::Topic) && *w > 0.0)
    }

    /// The task's one slot holding words to be written, if it has exactly one.
    fn only_words_slot(&self) -> Option<usize> {
        let mut words = (0..self.profiles.len()).filter(|&i| self.takes_words(i));
        let first = words.next()?;
        words.next().is_none().then_some(first)
    }

    fn index_of(&self, id: Option<&str>) -> Option<usize> {
        self.profiles
            .iter()
            .position(|p| Some(p.slot_id.as_str()) == id)
    }

    /// A follow-up of the previous question: it names no slot, and its form fits the slot
    /// asked before (or it only asks to be told: "tell me and I'll book it").
    fn follow_up(&self, raw: &split::RawPiece, last: Option<usize>) -> Option<usize> {
        let i = last?;
        // "How many loaves of sourdough, and how many bags of rice?": an attribute of another
        // thing of the task is not the slot asked again.
        if self.subject_rules_out(i, &raw.text, &forms::form(&raw.text, &raw.lead, ""))
            || attribute::attribute_rules_out(&self.profiles[i], &raw.text, &self.instruction)
        {
            return None;
        }
        let fits = self.fits(&raw.text, &raw.lead, "");
        if fits.iter().enumerate().any(|(j, f)| j != i && f.own >= 1.0) {
            return None;
        }
        let lower = raw.text.to_lowercase();
        let asks_to_be_told = ["tell me", "let me know", "send me"]
            .iter()
            .any(|p| lower.contains(p));
        // "What time works? Maybe 3?": a bare number after a question about a time is an hour.
        let f = forms::form(&raw.text, &raw.lead, "");
        let hour = f.mentioned == [forms::Kind::Count]
            && f.counted.is_none()
            && self.profiles[i]
                .kinds
                .iter()
                .any(|(k, w)| *k == forms::Kind::Time && *w >= 0.8);
        (asks_to_be_told || hour || self.kind_agrees(i, &raw.text, &raw.lead, &raw.context))
            .then_some(i)
    }

    /// "Thursday's class is full; Evening Vinyasa and Slow Flow have space. Which suits you?": a
    /// short choice that names nothing takes what it chooses among from the statements before
    /// it, read as its lead.
    fn choice_from_context(&self, raw: &split::RawPiece) -> Option<usize> {
        let short = raw.text.split_whitespace().count() <= 4 || which_names_nothing(&raw.text);
        let f = forms::form(&raw.text, "", "");
        let choice = f.kinds.contains(&forms::Kind::Choice)
            && f.kinds
                .iter()
                .all(|k| matches!(k, forms::Kind::Choice | forms::Kind::YesNo));
        if !short || !choice || !raw.lead.is_empty() || raw.context.is_empty() {
            return None;
        }
        self.best(&raw.text, &raw.context, "")
    }

    /// "For the title I could go with \"Not one for non-meat-eaters\" — want that, or something
    /// else?": a short yes/no that names nothing of its own asks about what its lead proposes.
    fn confirms_its_lead(&self, raw: &split::RawPiece) -> Option<usize> {
        const EMPTY: [&str; 14] = [
            "something",
            "anything",
            "sound",
            "sounds",
            "good",
            "right",
            "ok",
            "okay",
            "fine",
            "work",
            "works",
            "that",
            "this",
            "it",
        ];
        let own = words(&raw.text);
        let bare = own
            .iter()
            .all(|w| GENERIC.contains(&w.as_str()) || EMPTY.contains(&w.as_str()));
        if raw.lead.is_empty() || !bare || own.len() > 6 {
            return None;
        }
        self.best(&format!("{} {}", raw.lead, raw.text), "", &raw.context)
    }

    /// "How many passengers and bags?": a question whose short parts joined by "and" each
    /// clearly name a different slot is one piece per part.
    fn conjoined(&self, raw: &split::RawPiece) -> Option<Vec<Piece>> {
        let parts: Vec<&str> = raw
            .text
            .split(" and ")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let span = forms::names_a_span(&raw.text.to_lowercase());
        if span || parts.len() < 2 || parts[1..].iter().any(|p| p.split_whitespace().count() > 4) {
            return None;
        }
        let named: Vec<Option<usize>> = parts
            .iter()
            .map(|p| {
                let i = self.best(p, &raw.lead, &raw.context)?;
                (self.fits(p, "", "")[i].own >= 1.0).then_some(i)
            })
            .collect();
        let distinct: HashSet<usize> = named.iter().flatten().copied().collect();
        if distinct.len() < 2 {
            return None;
        }
        let mut out: Vec<Piece> = Vec::new();
        for (p, i) in parts.iter().zip(named) {
            let Some(i) = i else { continue };
            let id = self.profiles[i].slot_id.clone();
            if out
                .last()
                .is_some_and(|l| l.slot_id.as_deref() == Some(&id))
            {
                continue;
            }
            out.push(Piece {
                text: p.to_string(),
                slot_id: Some(id),
            });
        }
        Some(out)
    }

    /// "Same as before: size M, shipped to the locker?": a confirmation (no question word asking for a kind of value)
    /// whose parts — cut at commas, colons and "and" — each name a value of a different slot
    /// confirms each of them: one piece per slot, in the order named. Parts naming nothing
    /// ("Just to confirm") are no piece.
    fn confirmed_values(&self, raw: &split::RawPiece) -> Option<Vec<Piece>> {
        let f = forms::form(&raw.text, &raw.lead, "");
        // A question asking for a kind of value, or a choice among alternatives ("Weruva, or
        // hold off?"), is one piece.
        if raw.text.to_lowercase().contains(" or ")
            || f.kinds
                .iter()
                .any(|k| !matches!(k, forms::Kind::YesNo | forms::Kind::Choice))
        {
            return None;
        }
        let mut parts = vec![raw.text.as_str()];
        for sep in [": ", ", ", " and "] {
            parts = parts
                .into_iter()
                .flat_map(|p| p.split(sep))
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
        }
        let parts: Vec<String> = parts.into_iter().flat_map(day_and_time).collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        if parts.len() < 2 {
            return None;
        }
        let mut out: Vec<Piece> = Vec::new();
        // "Morning delivery, 10 to 12, as usual?": the whole is a re-confirmation, and each
        // part is read with it.
        let settled = Self::settles(&raw.text);
        for p in parts {
            let Some(i) = self.best(p, "", "") else {
                continue;
            };
            if settled && self.head_rules_out(i, &raw.text, &raw.lead, &raw.context, &f) {
                continue;
            }
            let id = self.profiles[i].slot_id.clone();
            match out.last_mut() {
                Some(l) if l.slot_id.as_deref() == Some(&id) => {
                    l.text = format!("{}, {p}", l.text);
                }
                _ => out.push(Piece {
                    text: p.to_string(),
                    slot_id: Some(id),
                }),
            }
        }
        let distinct: HashSet<&Option<String>> = out.iter().map(|p| &p.slot_id).collect();
        (distinct.len() >= 2).then_some(out)
    }

    /// Slot ids requested by any of `messages`.
    pub fn asked<'q>(&self, messages: impl IntoIterator<Item = &'q str>) -> HashSet<String> {
        messages
            .into_iter()
            .flat_map(|m| self.pieces(m))
            .filter_map(|p| p.slot_id)
            .collect()
    }

    /// The slots a question asks about, in the order asked, each once.
    pub fn slots_in<'a>(&self, question: &str, slots: &'a [Slot]) -> Vec<&'a Slot> {
        let mut out: Vec<&Slot> = Vec::new();
        for p in self.pieces(question) {
            if let Some(s) = p
                .slot_id
                .and_then(|id| slots.iter().find(|s| s.slot_id == id))
            {
                if !out.iter().any(|o| o.slot_id == s.slot_id) {
                    out.push(s);
                }
            }
        }
        out
    }
}

/// "Which would you like for the cleaning?", "Which should I send to Mia?", "Which slot should I
/// take?": a "which" whose next word is no noun (or only a kind of value's) chooses among things
/// named elsewhere, however long the rest.
fn which_names_nothing(text: &str) -> bool {
    const NOT_A_NOUN: [&str; 28] = [
        "should", "would", "do", "does", "did", "one", "ones", "of", "works", "work", "suits",
        "suit", "is", "are", "will", "can", "could", "sounds", "looks", "fits", "you", "option",
        // Nouns of a kind of value: what they choose among is listed before.
        "slot", "slots", "opening", "openings", "time", "times",
    ];
    let w = words(text);
    w.len() <= 8
        && w.first().is_some_and(|f| f == "which")
        && w.get(1).is_some_and(|n| NOT_A_NOUN.contains(&n.as_str()))
}

/// "What?", "If so, what?", "Sorry — which?": a question word alone (beside words that only
/// join it to what came before) asks nothing of its own — it repeats the request before it.
fn bare_question(text: &str) -> bool {
    const JOINERS: [&str; 11] = [
        "if", "so", "yes", "not", "no", "sorry", "then", "and", "ok", "okay", "exactly",
    ];
    let w: Vec<String> = words(text)
        .into_iter()
        .filter(|w| !JOINERS.contains(&w.as_str()))
        .collect();
    text.trim_end().ends_with('?')
        && matches!(
            w.iter().map(String::as_str).collect::<Vec<_>>()[..],
            ["what" | "which" | "who" | "when" | "where" | "how"]
        )
}

/// "Something like \"Best brunch in the Sunset\"?", "Maybe 'Lunch on me!'?": a quotation
/// offered with nothing of its own but words of proposing.
fn quoted_proposal(text: &str) -> bool {
    const PROPOSING: [&str; 21] = [
        "something",
        "like",
        "maybe",
        "perhaps",
        "how",
        "about",
        "e",
        "g",
        "eg",
        "say",
        "or",
        "similar",
        "along",
        "the",
        "lines",
        "of",
        "for",
        "example",
        "instance",
        "what",
        "so",
    ];
    // What the quotation holds, and the words around it (`split::quoted` decides which is which).
    let (inside, outside): (String, String) = text
        .char_indices()
        .map(|(i, c)| (split::quoted(text, i), c))
        .fold(
            (String::new(), String::new()),
            |(mut inside, mut outside), (q, c)| {
                if q {
                    inside.push(c)
                } else {
                    outside.push(c)
                }
                (inside, outside)
            },
        );
    !words(&inside).is_empty()
        && words(&outside)
            .iter()
            .all(|w| PROPOSING.contains(&w.as_str()))
}

/// "On Wednesday at 2?" → "On Wednesday", "at 2?"; "Does 2 p.m. on Wednesday work?" → "Does 2
/// p.m.", "on Wednesday work?": a day and a clock time are two values, the time keeping its
/// "at" — only when that part does name a clock time ("left at the door" is no time).
fn day_and_time(p: &str) -> Vec<String> {
    // The first part asks as the whole did ("Does 2 p.m.?").
    let ask = if p.ends_with('?') { "?" } else { "" };
    if let Some((day, time)) = p.rsplit_once(" at ") {
        let time = format!("at {time}");
        if !day.trim().is_empty() && forms::names_a_clock_time(&time) {
            return vec![format!("{day}{ask}"), time];
        }
    }
    if let Some((time, day)) = p.split_once(" on ") {
        let day = format!("on {day}");
        let names_day = forms::form(&day, "", "")
            .mentioned
            .contains(&forms::Kind::Date);
        if forms::names_a_clock_time(time) && names_day {
            return vec![format!("{time}{ask}"), day];
        }
    }
    vec![p.to_string()]
}

/// The pieces of a message matched against slots alone (no catalog: kinds from values and
/// `about` sentences).
pub fn scripted_pieces(message: &str, slots: &[Slot]) -> Vec<Piece> {
    TaskMatcher::from_slots(slots).pieces(message)
}

/// The slots a question asks about (slots alone).
pub fn slots_named<'a>(question: &str, slots: &'a [Slot]) -> Vec<&'a Slot> {
    TaskMatcher::from_slots(slots).slots_in(question, slots)
}

/// Slot ids asked by a sequence of `ask_user` messages (slots alone).
pub fn asked_slots<'q>(
    messages: impl IntoIterator<Item = &'q str>,
    slots: &[Slot],
) -> HashSet<String> {
    TaskMatcher::from_slots(slots).asked(messages)
}

#[cfg(test)]
mod tests;

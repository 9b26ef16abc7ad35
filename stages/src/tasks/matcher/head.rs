//! The head of a question — what it asks for — rules slots out whatever nouns stand beside it.
//!
//! A piece's subject words and its form may point at a slot while its head is about something
//! else: "Should the follow-up be in person or on Zoom?" names the follow-up whose *start time*
//! is a slot, but offers a choice between two things the task does not leave open; "What should
//! the description say?" asks for wording, and the task's topic slot is the title; "The usual
//! seats, right?" re-confirms something settled. Three heads are read here:
//!
//! - **a choice** ("A or B?", "… — which one?" after a list): it is about a slot only when one
//!   of its alternatives names a value of the slot — an option, a value of the kind the slot
//!   holds (a time, a day, a count, a duration), or the thing a count slot counts — or it is a
//!   question about an alternative and the slot is one. Free-text slots are not read this way
//!   (their values are not recognisable words).
//! - **wording** ("what should … say", "what to put in …", "should I mention …"): it is about a
//!   slot only when the message it names, if any, is the slot's own ("the caption", "the note"
//!   for a note's body; not "the group chat" for a photo's caption), and never about a slot
//!   holding a time, a day or a count unless it names such a value ("Should I tell Dana you'll
//!   be in by 10:30?").
//! - **a re-confirmation** ("Thai again?", "Still at 1.5x?", "The usual seats, right?", "… as
//!   always?"): what was settled before is an inferable detail or nothing — never an ask-only
//!   slot, unless the piece proposes a value of that slot ("$50, like last time?").
//!
//! A slot ruled out is never matched; a miss is better than the wrong slot.

use super::forms::{form, Form, Kind};
use super::profile::{SlotProfile, TaskMatcher};
use crate::tasks::model::Source;

/// Kinds whose values a question can name recognisably (a number, a time, a day).
const TYPED: [Kind; 5] = [
    Kind::Count,
    Kind::Duration,
    Kind::Time,
    Kind::Date,
    Kind::Dates,
];

/// Words that mark a re-confirmation of something settled before ("still" only before what
/// is settled: "Still at 1.5x?", not "Should calls still come through?").
const SETTLED: [&str; 26] = [
    " again",
    " still at ",
    " still the ",
    " still your ",
    " still using ",
    " still on the ",
    " still with ",
    " still in the ",
    " still want ",
    " still prefer ",
    "as usual",
    "like usual",
    "as always",
    "like always",
    "the usual",
    "your usual",
    "same as",
    "like last time",
    "as last time",
    "as before",
    "like before",
    "you usually",
    "your regular",
    "like your other",
    "as you always",
    "same one",
];

/// Verbs proposing to include something in a message.
const INCLUDE: [&str; 8] = [
    " mention",
    " include",
    " add ",
    " bring up",
    " leave out",
    " leave that out",
    " put in",
    " talk about",
];

/// Nouns of messages and the like a question may ask the wording of.
const MESSAGES: [&str; 22] = [
    "message",
    "text",
    "note",
    "email",
    "mail",
    "caption",
    "post",
    "invite",
    "invitation",
    "description",
    "subject",
    "title",
    "headline",
    "reminder",
    "card",
    "chat",
    "review",
    "reply",
    "dm",
    "event",
    "body",
    "notes",
];

fn holds(p: &SlotProfile, k: Kind, at_least: f64) -> bool {
    p.kinds.iter().any(|(x, w)| *x == k && *w >= at_least)
}

fn free_text(p: &SlotProfile) -> bool {
    holds(p, Kind::Text, 0.8) || holds(p, Kind::Topic, 0.8)
}

fn typed(p: &SlotProfile) -> bool {
    !free_text(p) && TYPED.iter().any(|k| holds(p, *k, 0.8))
}

/// The alternatives a choice offers: the parts of the piece joined by "or" (or, for a bare
/// "which one?", of the fragment before it that lists them).
fn alternatives(text: &str, lead: &str) -> Option<Vec<String>> {
    let lower = text.to_lowercase();
    if let Some(listed) = lower.split_once("options: ").map(|(_, l)| l) {
        // "Which occasion…? Options: none, birthday, anniversary.": a listed choice.
        let parts: Vec<String> = listed
            .split(", ")
            .map(|p| p.trim().trim_end_matches(['?', '.', '!']).to_string())
            .filter(|p| !p.is_empty())
            .collect();
        return (parts.len() >= 2).then_some(parts);
    }
    let source = if lower.contains(" or ") {
        lower
    } else if lower.split_whitespace().count() <= 4
        && lower.starts_with("which")
        && lead.to_lowercase().contains(" or ")
    {
        lead.to_lowercase()
    } else {
        return None;
    };
    let parts: Vec<String> = source
        .split(" or ")
        .flat_map(|p| p.split(", "))
        .map(|p| p.trim().trim_end_matches(['?', '.', '!']).to_string())
        .filter(|p| !p.is_empty() && !open_end(p))
        .collect();
    (parts.len() >= 2).then_some(parts)
}

/// "…, or something else?", "…, or do you have something in mind?": an alternative that
/// names nothing leaves the choice open; it is none of its alternatives.
fn open_end(part: &str) -> bool {
    const OPEN: [&str; 8] = [
        "something else",
        "anything else",
        "something different",
        "another one",
        "your own",
        "something in mind",
        "anything in mind",
        "other ideas",
    ];
    OPEN.iter().any(|o| part.contains(o))
}

/// Words after "which" that name no thing: nouns of a kind of value (the question's form
/// decides), the task's own object ("one"), and verbs ("which suits you?").
/// Nouns naming a part of something ("which *part* of the plan").
const PARTS: [&str; 6] = ["part", "parts", "aspect", "aspects", "bit", "bits"];

const KIND_NOUNS: [&str; 36] = [
    "time",
    "times",
    "day",
    "days",
    "date",
    "dates",
    "one",
    "ones",
    "option",
    "options",
    "kind",
    "type",
    "sort",
    "way",
    "night",
    "nights",
    "evening",
    "morning",
    "afternoon",
    "slot",
    "of",
    "number",
    "works",
    "work",
    "suits",
    "suit",
    "matters",
    "matter",
    "sounds",
    "fits",
    "feels",
    "looks",
    "appeals",
    "seems",
    "stands",
    "makes",
];

/// The noun phrase after "which" or "what kind/type/sort of" ("Which *seating
/// section* would you like?"), when it names something besides a kind of value; or the field a
/// question names in parentheses after its question words ("How many (*tip percent*)…", "What
/// time (*due time*)…"), then `true`.
fn head_noun(text: &str) -> Option<(String, bool)> {
    let lex = crate::tasks::language::lexicon();
    let lower = format!(" {} ", text.to_lowercase());
    for wh in [
        " how many (",
        " what time (",
        " which date (",
        " which day (",
    ] {
        if let Some(i) = lower.find(wh) {
            let inner = &lower[i + wh.len()..];
            let field = inner.split(')').next().unwrap_or_default().trim();
            let all_kind = field.split_whitespace().all(|w| KIND_NOUNS.contains(&w));
            return (!field.is_empty() && !all_kind).then(|| (field.to_string(), true));
        }
    }
    let lower = lower.replace(['(', ')'], " ");
    // "How many X" is read by the count's noun (`profile::counts_it`), which lets people stand
    // for portions or tickets.
    let at = [
        " which ",
        " what kind of ",
        " what type of ",
        " what sort of ",
    ]
    .iter()
    .filter_map(|w| lower.find(w).map(|i| i + w.len()))
    .min()?;
    let run: Vec<&str> = lower[at..]
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .take_while(|w| !lex.is_stop(w) && crate::tasks::values::number_word(w).is_none())
        .take(3)
        .collect();
    if run.is_empty() || run.iter().any(|w| KIND_NOUNS.contains(w)) {
        return None;
    }
    Some((run.join(" "), false))
}

/// "Should I *also check* Whole Foods?", "Want me to *compare* prices at Safeway?": a proposal to
/// look something up as well, not to take it in place of what was chosen.
fn looks_up(text: &str) -> bool {
    const LOOK: [&str; 10] = [
        " also ",
        " check ",
        " look at ",
        " look up ",
        " look into ",
        " compare ",
        " search ",
        " see if ",
        " see what ",
        " browse ",
    ];
    let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
    LOOK.iter().any(|w| lower.contains(w))
}

/// The field a question names as what it asks for: the noun after "which" / "what kind of", a
/// field in parentheses ("What time (*start*)…"), or what to switch ("Should I turn on *gift
/// wrap* for…"), as stems.
fn named_field(text: &str) -> Option<Vec<String>> {
    if let Some((noun, _)) = head_noun(text) {
        return Some(crate::tasks::language::content_stems(&noun));
    }
    let lower = text.to_lowercase();
    let at = ["turn on ", "turn off ", "switch on ", "switch off "]
        .iter()
        .find_map(|w| lower.find(w).map(|i| i + w.len()))?;
    let rest = &lower[at..];
    let end = [" for ", "?", ",", " on ", " in "]
        .iter()
        .filter_map(|w| rest.find(w))
        .min()
        .unwrap_or(rest.len());
    let stems = crate::tasks::language::content_stems(&rest[..end]);
    (!stems.is_empty()).then_some(stems)
}

/// "Which *seating* should I choose…" beside a party-size slot, "Should I turn on *breakfast*…"
/// beside a room-preference slot: a question naming another field of the slot's own operation as
/// what it asks for is about that field, not `p`'s.
fn foreign_field(p: &SlotProfile, text: &str) -> bool {
    // "Which *from account*…", "What time (*start*)…": a sibling named whole after the
    // question word.
    let lower = format!(" {} ", text.to_lowercase());
    if !p.field_said.is_empty() && super::text::phrase_in(&lower, &p.field_said) {
        // "Which room preference…" names the slot's own field, not its sibling "room".
        return false;
    }
    let said = p.sibling_names.iter().any(|n| {
        [" which ", " turn on ", " turn off "]
            .iter()
            .any(|w| lower.contains(&format!("{w}{n} ")))
            || lower.contains(&format!("({n})"))
    });
    if said {
        return true;
    }
    let Some(named) = named_field(text) else {
        return false;
    };
    fn set(v: &[String]) -> std::collections::HashSet<&String> {
        v.iter().collect()
    }
    let named_set = set(&named);
    named_set != set(&p.field_stems) && p.sibling_fields.iter().any(|s| set(s) == named_set)
}

/// What a wording question names as the thing to word: "What should *the cc* say?" → `cc`.
fn wording_target(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let after = [
        "should the ",
        "should my ",
        "should your ",
        "should her ",
        "should his ",
    ]
    .iter()
    .find_map(|w| lower.find(w).map(|i| &lower[i + w.len()..]))?;
    let end = [" say", " read"]
        .iter()
        .filter_map(|w| after.find(w))
        .min()?;
    let target = after[..end].trim();
    (!target.is_empty() && target.split_whitespace().count() <= 4).then(|| target.to_string())
}

/// Whether a piece, its lead or the statements before it speak of an alternative or of
/// something unavailable.
fn speaks_of_a_gap(lead: &str, context: &str, f: &Form) -> bool {
    let lex = crate::tasks::language::lexicon();
    f.alternative
        || f.alternative_in_context
        || lex.says_unavailable(lead)
        || lex.says_unavailable(context)
}

/// "When should it stop?", "Let me know when you'd like to meet": the question's head is
/// "when" — it opens the piece, or follows a request to be told — asking a time or a day.
fn asks_when(text: &str) -> bool {
    let lower = text.to_lowercase().replace('’', "'");
    let t = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    let opens = ["when ", "when's ", "and when ", "so when ", "then when "]
        .iter()
        .any(|w| t.starts_with(w));
    let told = [
        "let me know when ",
        "tell me when ",
        "say when ",
        "need to know when ",
        "know when ",
    ]
    .iter()
    .any(|w| t.contains(w));
    // "When you get a chance, which pharmacy?": a clause before the question.
    (opens || told) && !t.contains(',')
}

/// Whether a slot holds a kind "when" asks for: a time, a day, days, or how long (until when).
fn holds_a_when(p: &SlotProfile) -> bool {
    [
        Kind::Time,
        Kind::Date,
        Kind::Dates,
        Kind::When,
        Kind::Duration,
    ]
    .iter()
    .any(|k| holds(p, *k, 0.5))
}

/// A text without the nouns that name a count as a thing ("the amount you donate", "the
/// number on file"): in a yes/no question they ask nothing.
fn count_nouns_out(text: &str) -> String {
    let mut out = format!(" {} ", text.to_lowercase());
    for n in [
        " amount ",
        " amounts ",
        " number ",
        " quantity ",
        " headcount ",
        " head count ",
        " qty ",
    ] {
        out = out.replace(n, " ");
    }
    out
}

/// Nouns of the kinds of value a slot holds ("a *day*", "a *time*", "*how many*").
fn kind_words(p: &SlotProfile) -> Vec<&'static str> {
    let mut out = Vec::new();
    if holds(p, Kind::Time, 0.8) {
        out.extend(["time", "hour"]);
    }
    if holds(p, Kind::Date, 0.8) || holds(p, Kind::Dates, 0.8) {
        out.extend(["day", "days", "date", "dates", "night"]);
    }
    if holds(p, Kind::Count, 0.8) {
        out.extend([
            "number",
            "amount",
            "count",
            "size",
            "quantity",
            "qty",
            "headcount",
        ]);
    }
    if holds(p, Kind::Duration, 0.8) {
        out.extend(["length", "duration", "long"]);
    }
    out
}

/// "Do you have *a day* in mind?": the question's object is a noun of a kind of value `p`
/// holds — not inside a prepositional phrase ("a receipt *for the amount* you donate").
fn names_its_kind(p: &SlotProfile, text: &str) -> bool {
    const DETERMINERS: [&str; 8] = ["a", "an", "the", "any", "some", "your", "that", "this"];
    const PREPOSITIONS: [&str; 10] = [
        "for", "of", "to", "with", "about", "on", "in", "at", "after", "before",
    ];
    let kinds = kind_words(p);
    let words = super::text::words(text);
    words.iter().enumerate().any(|(j, w)| {
        if !kinds.contains(&w.as_str()) {
            return false;
        }
        let mut k = j;
        while k > 0 && DETERMINERS.contains(&words[k - 1].as_str()) {
            k -= 1;
        }
        k == 0 || !PREPOSITIONS.contains(&words[k - 1].as_str())
    })
}

/// Kinds of value a text names or asks for, besides yes/no and choice.
fn value_kinds(text: &str) -> Vec<Kind> {
    let f = form(text, "", "");
    f.kinds
        .into_iter()
        .chain(f.mentioned)
        .filter(|k| TYPED.contains(k) || *k == Kind::When)
        .collect()
}

impl TaskMatcher {
    /// Whether the head of a piece rules slot `i` out (module doc).
    pub(super) fn head_rules_out(
        &self,
        i: usize,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        let p = &self.profiles[i];
        self.foreign_choice(p, text, lead, context, f)
            || self.foreign_wording(p, text, f)
            || self.foreign_inclusion(p, text, f)
            || p.source == Source::AskOnly && self.settled_elsewhere(p, text, f)
            || self.not_about_an_alternative(p, text, lead, context, f)
            || self.foreign_head_noun(p, text)
            || foreign_field(p, text)
            || p.source == Source::AskOnly && self.names_only_whose(p, text, f)
            || self.subject_rules_out(i, text, f)
            || super::attribute::attribute_rules_out(p, text, &self.instruction)
            || asks_when(text) && !holds_a_when(p)
            || p.source == Source::AskOnly && self.closed_without_value(p, text, f)
    }

    /// "Should the sync with Dana be a video call?", "Do the passengers need any special
    /// meals?", "Do you want a receipt for the amount you donate?": a yes/no question answers a
    /// slot holding a time, a day, a count or a duration only by proposing such a value (or
    /// an option of it), asking for one ("is it just you and Sam?") or naming the kind of value
    /// it wants as its own object ("Do you have *a day* in mind?") — not by naming the slot's
    /// subject beside something else.
    fn closed_without_value(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        // A choice ("Thirty minutes or the whole episode?") is read by its alternatives
        // (`foreign_choice`).
        let choice = alternatives(text, "").is_some();
        if !f.closed || !typed(p) || p.alternative || choice || self.proposes_value(p, text) {
            return false;
        }
        let asks = form(&count_nouns_out(text), "", "")
            .kinds
            .iter()
            .any(|k| TYPED.contains(k) || *k == Kind::When);
        !asks && !names_its_kind(p, text)
    }

    /// Whether `text` proposes a value of slot `p`: its own value, a value of a kind it holds
    /// (a time, a day, a number), or an option all of whose words it says (or another name of
    /// one).
    fn proposes_value(&self, p: &SlotProfile, text: &str) -> bool {
        let toks = crate::tasks::language::tokens(text);
        let stems: Vec<String> = toks.iter().map(|t| t.stem.clone()).collect();
        let own = !p.own_value.is_empty()
            && stems
                .windows(p.own_value.len())
                .any(|w| w == p.own_value.as_slice());
        // "A 90-minute block or the whole morning?": each alternative's values.
        let held = text
            .split(" or ")
            .flat_map(|part| form(part, "", "").mentioned)
            .any(|k| p.kinds.iter().any(|(x, w)| *x == k && *w > 0.0));
        // "Do you want a sleep timer?": the question's last word is the slot's own name — it asks
        // about the thing itself, not about something beside it ("Do the passengers need any
        // special meals?").
        let named = |s: &String| p.head.contains(s) || p.field_stems.contains(s);
        // "Want a sleep timer on?", "…set up tonight?": particles after the name.
        const PARTICLES: [&str; 7] = ["on", "set", "up", "run", "again", "tonight", "too"];
        let switchable = stems
            .iter()
            .rev()
            .find(|s| !PARTICLES.contains(&s.as_str()))
            .is_some_and(named);
        let option = p
            .values
            .iter()
            .any(|v| !v.is_empty() && v.iter().all(|s| stems.contains(s)));
        let other_name = crate::tasks::language::word_concepts(text)
            .iter()
            .flatten()
            .any(|c| p.option_groups.contains(c));
        own || held || option || other_name || switchable
    }

    /// "Is Lena's address on file still right?" beside "The gift message for Lena's present": a
    /// closed question whose only words of ask-only slot `p` are the names in its `about`
    /// sentence (whose present, not what message), that asks for no wording, topic or typed
    /// value and names no value of `p`, is about a detail of that person or thing — never `p`.
    fn names_only_whose(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let asks_a_value = f.kinds.iter().any(|k| {
            TYPED.contains(k) || matches!(k, Kind::When | Kind::Text | Kind::Topic | Kind::Person)
        });
        let quotes = text.contains(['"', '“', '”']) || text.contains(" '") || text.contains(" ‘");
        if !f.closed || asks_a_value || quotes || p.names.is_empty() {
            return false;
        }
        let names_one = crate::tasks::language::tokens(text)
            .iter()
            .any(|t| p.names.contains(&t.stem));
        names_one
            && self.bare_subject(p, text) <= 0.0
            && !self.names_value(p, text)
            && !includes_its_kind(p, text)
            && !names_its_head(p, text)
    }

    /// "Which *store* should I choose?", "Which *delivery*…?", "How many (*tip percent*)…?": the
    /// noun a "which" / "what kind of" / "how many" question names is what it asks for. A slot
    /// none of whose words, synonyms or options that noun shares is ruled out — unless the noun
    /// only names a kind of value ("which day", "which one", "what time").
    fn foreign_head_noun(&self, p: &SlotProfile, text: &str) -> bool {
        let Some((noun, explicit)) = head_noun(text) else {
            return false;
        };
        // "Which part of the plan should the email stress?": a part of something is what a
        // free-text slot says (not where in a park to meet).
        if free_text(p) && PARTS.contains(&noun.as_str()) {
            return false;
        }
        let stems: Vec<String> = crate::tasks::language::content_stems(&noun);
        if stems.is_empty() {
            return false;
        }
        let own = |s: &String| {
            p.own_stems.contains(s) && !p.modifiers.contains(s)
                || p.distinctive.contains(s)
                || p.values.iter().any(|v| v.contains(s))
        };
        if explicit {
            // A field named in parentheses ("What time (due time)…") is the slot's only when
            // every word of it is the slot's own.
            return !stems.iter().all(own);
        }
        // Synonyms count only for what a count slot counts and for its options' other names
        // (a subject's synonym groups are too wide: "passengers" and "bags" both "travel").
        let concepts = crate::tasks::language::text_concepts(&noun);
        let shares = stems.iter().any(own)
            || concepts.iter().any(|c| {
                p.counted.contains(c) || p.option_groups.contains(c) || p.field_groups.contains(c)
            });
        !shares
    }

    /// "Should I keep the seat you picked?", "Should I also look at a later flight?": a closed
    /// question beside a fallback slot `p` that says nothing of an alternative (no "instead",
    /// "other", nothing unavailable, before or in it) and names no value of `p` is not about
    /// what to do if the first choice is gone.
    fn not_about_an_alternative(
        &self,
        p: &SlotProfile,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        // "Should I also check what 8:30 looks like?": a yes/no proposal to look, whatever
        // question word it holds.
        let proposal = f.closed || looks_up(text) && f.kinds.contains(&Kind::YesNo);
        p.alternative
            && proposal
            && !speaks_of_a_gap(lead, context, f)
            && (!self.names_value(p, text) || looks_up(text))
    }

    /// Whether `text` names a value of slot `p`: an option (or its other names), a value of a
    /// kind it holds, or — for a count — what it counts.
    fn names_value(&self, p: &SlotProfile, text: &str) -> bool {
        let stems: Vec<String> = crate::tasks::language::tokens(text)
            .into_iter()
            .map(|t| t.stem)
            .collect();
        // An alternative of a choice, or a value proposed, is offered.
        let f = Form {
            closed: true,
            ..form(text, "", "")
        };
        let own = !p.own_value.is_empty()
            && stems
                .windows(p.own_value.len())
                .any(|w| w == p.own_value.as_slice());
        if own || Self::named(p, text, &stems, &f) > 0.0 {
            return true;
        }
        let held = value_kinds(text)
            .iter()
            .any(|k| p.kinds.iter().any(|(x, w)| x == k && *w > 0.0));
        let counted = !p.counted.is_empty()
            && crate::tasks::language::text_concepts(text)
                .iter()
                .any(|c| p.counted.contains(c));
        held || counted
    }

    /// How strongly `text` names `p`'s subject, leaving out the names in its `about` sentence
    /// and the nouns of messages (which say whose or where, not what value) — unless the noun
    /// is the slot's own thing ("for the *title*" beside the headline of a review).
    fn bare_subject(&self, p: &SlotProfile, text: &str) -> f64 {
        let toks = crate::tasks::language::tokens(text);
        let own = head_concepts(p);
        let words: Vec<_> = crate::tasks::language::word_concepts(text)
            .into_iter()
            .zip(&toks)
            .map(|(mut c, t)| {
                if MESSAGES.contains(&t.word.as_str()) && !c.iter().any(|x| own.contains(x)) {
                    c.clear();
                }
                c.retain(|x| !p.names.contains(x));
                c
            })
            .collect();
        self.subject(p, &words)
    }

    /// A choice none of whose alternatives names a value of `p` (module doc); for a free-text
    /// slot, none names its subject or asks about content.
    fn foreign_choice(
        &self,
        p: &SlotProfile,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        let lex = crate::tasks::language::lexicon();
        // "Lotus Thai has nothing at 7:30 … Should I grab one of those, or leave it?": a
        // choice after something unavailable is about the alternative.
        if speaks_of_a_gap(lead, context, f) && p.alternative {
            return false;
        }
        let Some(alts) = alternatives(text, lead) else {
            return false;
        };
        // "Is it you, Sam and the kids, or more?": a choice among how many come is a count.
        let company = f.kinds.contains(&Kind::Count) && f.counted.as_deref() == Some("people");
        if company && p.kinds.iter().any(|(k, w)| *k == Kind::Count && *w > 0.0) {
            return false;
        }
        let recognisable = typed(p) || !p.values.is_empty() || !p.counted.is_empty();
        // "Which size, S or M?": the question word's own noun names the slot.
        let wh = |a: &str| {
            let w = format!(" {a} ");
            [" which ", " what ", " what's ", " how "]
                .iter()
                .any(|x| w.contains(x))
        };
        !alts.iter().any(|a| {
            self.names_value(p, a)
                || wh(a) && self.bare_subject(p, a) > 0.0
                || !recognisable && self.bare_subject(p, a) > 0.0
                || free_text(p) && lex.names_content(a)
        })
    }

    /// "Should I mention the pancakes?": a proposal to include something in a message is about
    /// free-text slot `p` only when `p` is itself about what to mention (its subject is the
    /// verb's: "the point she wants to highlight") or the proposal names the head of its
    /// `about` sentence ("the cake *flavour*") or its id ("Any *occasion* I should mention?").
    fn foreign_inclusion(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
        let Some(verb) = INCLUDE.iter().find(|v| lower.contains(*v)) else {
            return false;
        };
        if !f.closed || !free_text(p) {
            return false;
        }
        let verb_is_its_subject = crate::tasks::language::text_concepts(verb)
            .iter()
            .any(|c| p.terms.contains(c));
        let id_stems: Vec<String> = crate::tasks::language::tokens(&p.slot_id.replace('_', " "))
            .into_iter()
            .map(|t| t.stem)
            .collect();
        let names_head = crate::tasks::language::tokens(text).iter().any(|t| {
            !t.stop
                && (p.head.contains(&t.stem) || id_stems.contains(&t.stem))
                && !p.names.contains(&t.stem)
        });
        !(verb_is_its_subject || names_head || includes_its_kind(p, text))
    }

    /// Whether a piece re-confirms something settled (module doc).
    pub(super) fn settles(text: &str) -> bool {
        let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
        lower.trim_start().starts_with("still ") || SETTLED.iter().any(|m| lower.contains(m))
    }

    /// A re-confirmation of something settled that proposes no value of ask-only slot `p`.
    fn settled_elsewhere(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let wh = f
            .kinds
            .iter()
            .any(|k| !matches!(k, Kind::YesNo | Kind::Choice));
        // Free text proposed again ("Is it the Q4 review again?") is still its content.
        !wh && !free_text(p) && Self::settles(text) && !self.names_value(p, text)
    }
}

impl TaskMatcher {
    /// A wording question about a message that is not `p`'s, or whose words name no value
    /// (nor, for a slot without typed values, the subject) of a slot that is no free text
    /// (module doc).
    fn foreign_wording(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let wording = f.kinds.contains(&Kind::Text)
            && !f
                .kinds
                .iter()
                .any(|k| TYPED.contains(k) || matches!(k, Kind::When | Kind::Person | Kind::Place));
        // "What should the *cc* say?", "What should the *location* read?": the thing whose
        // wording is asked is named between "the" and "say" — whatever kind the words ask.
        if let Some(target) = wording_target(text) {
            let concepts = crate::tasks::language::text_concepts(&target);
            let own = crate::tasks::language::content_stems(&target)
                .iter()
                .any(|s| p.own_stems.contains(s))
                || concepts.iter().any(|c| p.terms.contains(c));
            if !own {
                return true;
            }
        }
        if !wording {
            return false;
        }
        // "The main message" is content, not a message named.
        let toks = crate::tasks::language::tokens(text);
        // The first message named is the one asked about ("the body of the review").
        let named = toks.iter().enumerate().find(|(i, t)| {
            MESSAGES.contains(&t.word.as_str())
                && !(*i > 0
                    && ["main", "key", "whole", "overall"].contains(&toks[i - 1].word.as_str()))
        });
        if named
            .is_some_and(|(_, t)| !p.own_stems.contains(&t.stem) && !names_its_field(p, &t.word))
        {
            return true;
        }
        if free_text(p) {
            return false;
        }
        let evidence = self.names_value(p, text) || !typed(p) && self.bare_subject(p, text) > 0.0;
        !evidence
    }
}

/// "Want me to add a note with the $100?", "Would you like to include a note for Lena?": the
/// object of an including verb, a word the lexicon groups with the head of free-text slot `p`'s
/// `about` sentence or its id ("note" with the gift *message*), proposes the slot's content.
fn includes_its_kind(p: &SlotProfile, text: &str) -> bool {
    use crate::tasks::language::text_concepts;
    if !free_text(p) {
        return false;
    }
    let Some(object) = super::forms::included_object(text) else {
        return false;
    };
    let own = head_concepts(p);
    text_concepts(&object)
        .iter()
        .any(|c| own.contains(c) && !p.names.contains(c))
}

/// "What should I put as the *subject*?" beside the topic of a meeting: a message's part named
/// by a word the lexicon groups with the head of the slot's `about` sentence or its id, outside
/// the wide group of messages themselves (a caption is no note to a chat).
fn names_its_field(p: &SlotProfile, word: &str) -> bool {
    use crate::tasks::language::text_concepts;
    let messages = text_concepts("message");
    let own = head_concepts(p);
    text_concepts(word)
        .iter()
        .any(|c| c.starts_with('#') && !messages.contains(c) && own.contains(c))
}

/// The stems and synonym groups of the head nouns of slot `p`'s `about` sentence and of its id:
/// what a word must be grouped with to name the slot's own thing.
fn head_concepts(p: &SlotProfile) -> std::collections::HashSet<String> {
    use crate::tasks::language::{concepts, tokens};
    let id_stems = tokens(&p.slot_id.replace('_', " "))
        .into_iter()
        .map(|t| t.stem);
    let own: Vec<String> = p.head.iter().cloned().chain(id_stems).collect();
    concepts(&own)
}

/// "Any *message* for Lena?" beside the gift message for Lena's present: a piece naming the
/// head of the slot's `about` sentence or its id (or a word grouped with them) names the slot's
/// own thing, not only whose it is.
fn names_its_head(p: &SlotProfile, text: &str) -> bool {
    let own = head_concepts(p);
    crate::tasks::language::tokens(text)
        .iter()
        .filter(|t| !t.stop && !p.names.contains(&t.stem))
        .any(|t| {
            crate::tasks::language::text_concepts(&t.word)
                .iter()
                .any(|c| own.contains(c))
        })
}

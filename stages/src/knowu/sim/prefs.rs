//! A preference value as structured requirements, and the check of an agent's text against them:
//! the offline, deterministic stand-in for KnowU's LLM-judged preference part.
//!
//! A value (a sentence, a list, a mapping) becomes:
//! - **wanted** terms, each a group of alternatives (`shared bike or walk`): one must be there;
//! - **avoided** terms (`no black clothes`, `never drinks coffee`, the Y of `X over Y`,
//!   `X rather than Y`, `compared with Y, … prefer X`, keys such as `avoid` / `disliked_…`):
//!   none may be there, unless the text itself negates it (`sugar-free`, `no peanuts`);
//! - **time windows** (`avoids meetings between 9:00 - 11:30`, `only after 14:00`, `before
//!   12:00`): a time in the text must fall outside an avoided window, inside a wanted one;
//! - **bounds** (`below 150 CNY`, `nothing over 400 EUR`, `30 min max`, `8000-12000 CNY`): no
//!   amount of that unit in the text outside them.
//!
//! Clauses split on punctuation with or without a space (`less oil,less salt`), dashes, `and`
//! before a new negation; `X only if Y` is a **condition** on the situation: X is wanted when the
//! task's situation says Y — in place of the value's other wanted terms, as an exception
//! overrides the default (`Shared bike or walk. Subway only if raining.` in the rain wants the
//! subway) — and nothing is required of X otherwise ([`Requirements::in_situation`]); `X if Y` /
//! `X unless Y` want X; parenthesised asides add only what they rule out (`(preferred over
//! Chilemei)`, `(Absolutely no Pepsi)`), never their reasons. Words match by a light stem, so
//! a paraphrase that keeps the content words passes; a term of three or more words needs a
//! third of them, at least two.

use serde_json::Value;

/// The requirements of one preference value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requirements {
    /// Each group: one of its alternatives must be in the text.
    pub want: Vec<Vec<Term>>,
    /// None of these may be in the text (negated mentions are fine).
    pub avoid: Vec<Term>,
    /// Time windows (minutes of the day).
    pub windows: Vec<Window>,
    /// Amount bounds.
    pub bounds: Vec<Bound>,
    /// `X only if Y`: wanted only in a situation that says Y (see [`Requirements::in_situation`]).
    pub conditional: Vec<Conditional>,
}

/// `X only if Y` (`Takes taxi only if carrying grandson or heavy rain`): X is what the persona
/// wants when the situation says one of Y's alternatives, and no requirement otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditional {
    /// X's alternatives.
    pub then: Vec<Term>,
    /// Y's alternatives (any one holding is enough).
    pub when: Vec<Term>,
}

impl Requirements {
    /// The requirements in a task's situation (its instruction): each `X only if Y` whose Y the
    /// situation says becomes a wanted group in place of the value's other wanted terms (the
    /// exception overrides the default); one whose Y it does not say requires nothing — X is
    /// neither wanted nor held against the action.
    pub fn in_situation(mut self, situation: &str) -> Requirements {
        let (ws, negated) = tokens(situation);
        let stems: Vec<String> = ws.iter().map(|w| stem(w)).collect();
        let active: Vec<Vec<Term>> = std::mem::take(&mut self.conditional)
            .into_iter()
            .filter(|c| c.when.iter().any(|t| present(t, &stems, &negated)))
            .map(|c| c.then)
            .collect();
        if !active.is_empty() {
            self.want = active;
        }
        self
    }

    /// Nothing to check.
    pub fn is_empty(&self) -> bool {
        self.want.is_empty()
            && self.avoid.is_empty()
            && self.windows.is_empty()
            && self.bounds.is_empty()
    }
}

/// The situation a task's text describes: its instruction without the preference value a
/// general twin spells out (the value's own `only if Y` must not make Y hold).
pub fn situation(instruction: &str, value_text: &str) -> String {
    if value_text.is_empty() {
        instruction.to_string()
    } else {
        instruction.replace(value_text, " ")
    }
}

/// A term: content words (stemmed), and whether a quantity word goes with it (`less oil`).
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The words as written (for messages and rubrics).
    pub text: String,
    /// Stemmed content words.
    pub words: Vec<String>,
    /// `Some(false)` for less / low / light, `Some(true)` for more / extra / heavy.
    pub more: Option<bool>,
}

/// A time window `[from, to]` in minutes after midnight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start.
    pub from: u16,
    /// End.
    pub to: u16,
    /// True: a time must fall inside; false: none may.
    pub inside: bool,
}

/// Amounts of `unit` must lie within `[min, max]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Normalized unit (`cny`, `eur`, `usd`, `min`, `gb`, …).
    pub unit: String,
}

/// How a text fares against requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Requirements met.
    pub met: usize,
    /// Requirements in all.
    pub total: usize,
    /// The ones not met, in words.
    pub failed: Vec<String>,
}

impl Outcome {
    /// Share met (1 when there is nothing to meet).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.met as f64 / self.total as f64
        }
    }
}

/// How a clause counts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Polarity {
    Want,
    Avoid,
    /// Only what it rules out counts (parenthesised asides, fallbacks).
    Aside,
}

const NEGATIONS: &[&str] = &[
    "no",
    "not",
    "never",
    "without",
    "avoid",
    "avoids",
    "avoiding",
    "dislike",
    "dislikes",
    "hate",
    "hates",
    "nothing",
    "don't",
    "doesn't",
    "refuses",
    "forbidden",
    "excluding",
];
const STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "at",
    "with",
    "by",
    "from",
    "as",
    "is",
    "are",
    "was",
    "be",
    "been",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "she",
    "he",
    "they",
    "her",
    "his",
    "their",
    "them",
    "i",
    "me",
    "my",
    "we",
    "our",
    "you",
    "your",
    "user",
    "users",
    "always",
    "usually",
    "mostly",
    "often",
    "also",
    "too",
    "very",
    "really",
    "just",
    "only",
    "prefer",
    "prefers",
    "preferred",
    "preference",
    "like",
    "likes",
    "liked",
    "love",
    "loves",
    "want",
    "wants",
    "enjoy",
    "enjoys",
    "would",
    "will",
    "can",
    "could",
    "should",
    "please",
    "use",
    "uses",
    "using",
    "eat",
    "eats",
    "drink",
    "drinks",
    "buy",
    "buys",
    "order",
    "orders",
    "wear",
    "wears",
    "take",
    "takes",
    "get",
    "gets",
    "go",
    "goes",
    "make",
    "makes",
    "has",
    "have",
    "does",
    "do",
    "any",
    "all",
    "every",
    "some",
    "per",
    "via",
    "pick",
    "picks",
    "choose",
    "chooses",
    "well",
    "absolutely",
    "almost",
    "strictly",
    "definitely",
    "generally",
    "own",
    "books",
    "writes",
    "follows",
    "posts",
    "texts",
    "adds",
    "add",
    "pays",
    "shops",
    "craves",
    "needs",
    "checks",
    "share",
    "shares",
    "sharing",
    "posting",
    "promoting",
    "ships",
    "signs",
    "meets",
    "first",
    "choice",
    "there",
    "there's",
    "that's",
    "who",
    "off",
    "opens",
    "closes",
    "starts",
    "ends",
    "calls",
];
const GENERIC: &[&str] = &[
    "food",
    "foods",
    "meal",
    "meals",
    "clothes",
    "clothing",
    "outfit",
    "outfits",
    "item",
    "items",
    "thing",
    "things",
    "product",
    "products",
    "option",
    "options",
    "stuff",
    "version",
    "versions",
    "flavors",
    "flavour",
    "flavours",
    "anything",
    "something",
    "ones",
    "message",
    "messages",
];
const LESS: &[&str] = &["less", "low", "light", "little", "reduced", "fewer"];
const MORE: &[&str] = &["more", "extra", "heavy", "lots", "double"];
/// Words that start a condition: what follows is not a requirement.
const CONDITIONS: &[&str] = &["if", "unless", "when", "whenever", "because", "since"];
/// Words that make a clause a fallback or a reason: not a requirement.
/// The words that make `only … Y` a condition on the situation.
const ONLY_CONDITIONS: &[&str] = &["if", "when", "whenever"];
/// Verbs of a habit before its object (`takes taxi`, `uses Didi Express`): not content.
const HABIT_VERBS: &[&str] = &[
    "take", "takes", "use", "uses", "ride", "rides", "go", "goes", "get", "gets", "choose",
    "chooses", "pick", "picks", "book", "books",
];
const FALLBACKS: &[&str] = &[
    "backup",
    "fallback",
    "alternative",
    "secondary",
    "second",
    "willing",
];
/// Subjects: words before one are context (`Late at night she …`).
const SUBJECTS: &[&str] = &["she", "he", "they", "i", "we"];
/// Keys whose value is ruled out.
const AVOID_KEYS: &[&str] = &[
    "avoid",
    "dislike",
    "blacklist",
    "no_buy",
    "forbidden",
    "never",
    "no_",
];
/// Keys whose value is a fallback, not what the user wants.
const FALLBACK_KEYS: &[&str] = &["secondary", "backup", "alternative", "fallback"];

/// The requirements of a preference value.
pub fn parse(value: &Value) -> Requirements {
    let mut out = Requirements::default();
    collect(value, Polarity::Want, &mut out);
    out
}

fn collect(value: &Value, polarity: Polarity, out: &mut Requirements) {
    match value {
        // A list's items are alternatives (cuisines, brands, topics): one of their wanted terms
        // must be there; what any item rules out stays ruled out.
        Value::Array(items) => {
            let mut each = Requirements::default();
            items.iter().for_each(|v| collect(v, polarity, &mut each));
            let any: Vec<Term> = each.want.into_iter().flatten().collect();
            if !any.is_empty() {
                out.want.push(any);
            }
            out.avoid.extend(each.avoid);
            out.windows.extend(each.windows);
            out.bounds.extend(each.bounds);
        }
        Value::Object(map) => {
            for (key, v) in map {
                let k = key.to_lowercase();
                let p = if AVOID_KEYS
                    .iter()
                    .any(|a| k.starts_with(a) || k.contains(&format!("_{a}")))
                {
                    Polarity::Avoid
                } else if FALLBACK_KEYS.iter().any(|f| k.contains(f)) {
                    Polarity::Aside
                } else {
                    polarity
                };
                collect(v, p, out);
            }
        }
        Value::Null => {}
        Value::String(s) => text(s, polarity, out),
        other => text(&other.to_string(), polarity, out),
    }
}

/// One text: its parenthesised asides, then its clauses.
fn text(s: &str, polarity: Polarity, out: &mut Requirements) {
    let (main, asides) = split_parens(s);
    for a in asides {
        for c in clauses(&a) {
            clause(&c, Polarity::Aside, out);
        }
    }
    for c in clauses(&main) {
        clause(&c, polarity, out);
    }
}

/// The text without parentheses, and what they held.
fn split_parens(s: &str) -> (String, Vec<String>) {
    let (mut main, mut asides, mut cur, mut depth) = (String::new(), Vec::new(), String::new(), 0);
    for ch in s.chars() {
        match ch {
            '(' | '（' | '[' => {
                depth += 1;
                main.push(' ');
            }
            ')' | '）' | ']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    asides.push(std::mem::take(&mut cur));
                }
            }
            _ if depth > 0 => cur.push(ch),
            _ => main.push(ch),
        }
    }
    if !cur.is_empty() {
        asides.push(cur);
    }
    (main, asides)
}

/// Splits into sentences on `; . ! — –` (a `.` between digits is kept), with or without
/// spaces, then each sentence on `,` and ` but ` — except a list ending `, or C`, whose commas
/// are alternatives.
fn clauses(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut sentences = Vec::new();
    let mut cur = String::new();
    for (i, &ch) in chars.iter().enumerate() {
        let digit = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_ascii_digit())
        };
        let split = match ch {
            ';' | '!' | '—' | '–' | '；' | '。' | '\n' => true,
            '.' => !(digit(i.checked_sub(1)) && digit(Some(i + 1))),
            _ => false,
        };
        if split {
            sentences.push(std::mem::take(&mut cur));
        } else {
            cur.push(ch);
        }
    }
    sentences.push(cur);
    let mut out = Vec::new();
    for sentence in sentences {
        let lower = sentence.to_lowercase();
        if lower.contains(", or ") || lower.contains(",or ") {
            out.push(sentence.replace([',', '，'], " or "));
            continue;
        }
        for part in sentence.split([',', '，']) {
            out.extend(part.split(" but ").map(str::to_string));
        }
    }
    out.into_iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Lower-cased words: letters and digits, `:` inside times, `no-`/`non-` compounds kept whole;
/// other hyphens split, `/` becomes `or`, comparison signs and currency symbols stand alone,
/// and a number is cut from its unit (`32GB` → `32 gb`).
fn words(s: &str) -> Vec<String> {
    let mut spaced = String::new();
    // Whether the word so far is a number (so a letter after it starts its unit).
    let mut numeric = false;
    for ch in s.to_lowercase().chars() {
        let was_numeric = numeric;
        numeric = if ch.is_ascii_digit() || (ch == '.' && numeric) {
            numeric || !spaced.chars().last().is_some_and(char::is_alphanumeric)
        } else {
            false
        };
        match ch {
            '/' => spaced.push_str(" or "),
            '≥' | '≤' | '>' | '<' | '¥' | '€' | '$' | '~' => {
                spaced.push(' ');
                spaced.push(ch);
                spaced.push(' ');
            }
            c if c.is_alphabetic() && was_numeric => {
                spaced.push(' ');
                spaced.push(c);
            }
            c => spaced.push(c),
        }
    }
    let mut out = Vec::new();
    for raw in spaced.split(|c: char| !(c.is_alphanumeric() || "':-≥≤><¥€$.".contains(c))) {
        let w = raw.trim_matches(|c: char| "':-.".contains(c));
        if w.is_empty() {
            continue;
        }
        let keep_whole = w.starts_with("no-") || w.starts_with("non-");
        if keep_whole || !w.contains('-') {
            out.push(w.to_string());
        } else {
            out.extend(w.split('-').filter(|p| !p.is_empty()).map(str::to_string));
        }
    }
    out
}

/// A light stem: possessive, plural and `-ing` endings off.
pub fn stem(w: &str) -> String {
    let w = w.trim_end_matches("'s");
    if w.chars().any(|c| c.is_ascii_digit()) || w.chars().count() <= 3 {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("ies") {
        return format!("{s}y");
    }
    if w.len() > 5 {
        if let Some(s) = w.strip_suffix("ing") {
            return s.to_string();
        }
    }
    for suffix in ["ches", "shes", "xes", "sses"] {
        if w.ends_with(suffix) {
            return w[..w.len() - 2].to_string();
        }
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

fn clause(c: &str, polarity: Polarity, out: &mut Requirements) {
    if words(c).iter().any(|w| FALLBACKS.contains(&w.as_str())) {
        return; // a fallback (`Second choice: …`, `… as backup`)
    }
    // `Label: value` — the label is not a requirement (a time's colon is not a label).
    let c = match c.split_once(": ") {
        Some((_, rest)) => rest,
        None => c,
    };
    let mut ws = words(c);
    if only_if(&ws, polarity, out) || fallback_or_reason(&ws) {
        return;
    }
    drop_context(&mut ws);
    take_free_of(c, &mut ws, out);
    let negated = ws.iter().position(|w| NEGATIONS.contains(&w.as_str()));
    if quantities(&ws, polarity, negated, out) || not_required(&ws, negated) {
        return;
    }
    if let Some(i) = ws.iter().position(|w| w == "compared") {
        // `compared with Y` (the other side, preferred, is its own clause).
        add_avoid(&ws[i + 1..], out);
        return;
    }
    if comparison(&ws, polarity, out) {
        return;
    }
    if let Some(i) = negated {
        negation(&ws, i, polarity, out);
        return;
    }
    match polarity {
        Polarity::Want => {
            for part in split_on(&ws, "and") {
                add_want(&part, out);
            }
        }
        Polarity::Avoid => add_avoid(&ws, out),
        Polarity::Aside => {}
    }
}

/// `X only if Y` / `Only X if Y`: a condition on the situation, wanted ones kept as such;
/// whether the clause was one.
fn only_if(ws: &[String], polarity: Polarity, out: &mut Requirements) -> bool {
    if !ws.iter().any(|w| w == "only") {
        return false;
    }
    let Some(i) = ws
        .iter()
        .position(|w| ONLY_CONDITIONS.contains(&w.as_str()))
    else {
        return false;
    };
    if polarity == Polarity::Want {
        conditional(&ws[..i], &ws[i + 1..], out);
    }
    true
}

/// A fallback (`… as backup`) or a reason (`because …`, `so …`): no requirement.
fn fallback_or_reason(ws: &[String]) -> bool {
    FALLBACKS.iter().any(|k| ws.iter().any(|x| x == k))
        || ws
            .first()
            .is_some_and(|w| ["too", "because", "since", "so"].contains(&w.as_str()))
}

/// Drops context before the subject (`Late at night she …`, `When it rains she …`) and a
/// condition after the requirement (`X if Y`, `X unless Y`; one before it with no subject to
/// follow, `If Y`, leaves nothing).
fn drop_context(ws: &mut Vec<String>) {
    let starts_with_subject = ws.first().is_some_and(|w| SUBJECTS.contains(&w.as_str()));
    if let Some(i) = ws
        .iter()
        .skip(1)
        .position(|w| SUBJECTS.contains(&w.as_str()))
    {
        if !starts_with_subject {
            ws.drain(..=i);
        }
    }
    if let Some(i) = ws.iter().position(|w| CONDITIONS.contains(&w.as_str())) {
        ws.truncate(i);
    }
}

/// `X-free`: X is ruled out (written `X-free` or `X free` in `c`, not `card = free rides`);
/// taken out of `ws`.
fn take_free_of(c: &str, ws: &mut Vec<String>, out: &mut Requirements) {
    while let Some(i) = ws
        .iter()
        .position(|w| w == "free")
        .filter(|&i| i > 0 && free_of(c, &ws[i - 1]))
    {
        let w = ws[i - 1].clone();
        ws.drain(i - 1..=i);
        add_avoid(&[w], out);
    }
}

/// Times and amounts: bounds wanted or ruled out (a positive aside adds none); whether the
/// clause held any.
fn quantities(
    ws: &[String],
    polarity: Polarity,
    negated: Option<usize>,
    out: &mut Requirements,
) -> bool {
    let avoid = negated.is_some() || polarity == Polarity::Avoid;
    let aside_positive = polarity == Polarity::Aside && negated.is_none();
    if !times(ws).is_empty() {
        if !aside_positive {
            take_times(ws, avoid, out);
        }
        return true;
    }
    if !amounts(ws).is_empty() {
        if !aside_positive {
            take_bounds(ws, avoid, out);
        }
        return true;
    }
    false
}

/// `X not required`: optional, no requirement.
fn not_required(ws: &[String], negated: Option<usize>) -> bool {
    negated.is_some_and(|i| {
        ws[i + 1..]
            .iter()
            .all(|w| ["required", "needed", "necessary", "needs"].contains(&w.as_str()))
    })
}

/// `X rather than Y`, `X instead of Y`, `X over Y`, `X > Y`, `X not Y`: X wanted (when the
/// clause is), Y ruled out up to the next negation; whether the clause was one.
fn comparison(ws: &[String], polarity: Polarity, out: &mut Requirements) -> bool {
    let comparisons: [&[&str]; 5] = [
        &["rather", "than"],
        &["instead", "of"],
        &["over"],
        &[">"],
        &["not"],
    ];
    for marker in comparisons {
        if let Some(i) = find_seq(ws, marker).filter(|&i| i > 0) {
            if polarity == Polarity::Aside && marker[0] == "not" {
                continue;
            }
            if polarity == Polarity::Want {
                add_want(&ws[..i], out);
            }
            let rest = &ws[i + marker.len()..];
            let end = rest
                .iter()
                .position(|w| NEGATIONS.contains(&w.as_str()))
                .unwrap_or(rest.len());
            add_avoid(&rest[..end], out);
            return true;
        }
    }
    false
}

/// A clause negated at word `i`: what precedes wanted (when the clause is), and `no X and no
/// Y` each its own ruled-out term, the object ending at the next negation (`not buy anything
/// that ships with Windows without …`).
fn negation(ws: &[String], i: usize, polarity: Polarity, out: &mut Requirements) {
    if polarity == Polarity::Want && i > 0 {
        add_want(&ws[..i], out);
    }
    let rest = &ws[i + 1..];
    for part in split_on(rest, "and") {
        let lead = part
            .iter()
            .take_while(|w| NEGATIONS.contains(&w.as_str()))
            .count();
        let part = &part[lead..];
        let end = part
            .iter()
            .position(|w| NEGATIONS.contains(&w.as_str()))
            .unwrap_or(part.len());
        add_avoid(&part[..end], out);
    }
}

/// `X only if Y`: X (without the habit's verb: `takes taxi` is `taxi`) wanted when Y holds.
fn conditional(x: &[String], y: &[String], out: &mut Requirements) {
    let x: Vec<String> = x
        .iter()
        .filter(|w| !HABIT_VERBS.contains(&w.as_str()))
        .cloned()
        .collect();
    let then: Vec<Term> = split_on(&x, "or").iter().filter_map(|a| term(a)).collect();
    let when: Vec<Term> = split_on(y, "or").iter().filter_map(|a| term(a)).collect();
    if !then.is_empty() && !when.is_empty() {
        out.conditional.push(Conditional { then, when });
    }
}

fn find_seq(ws: &[String], seq: &[&str]) -> Option<usize> {
    (0..ws.len()).find(|&i| {
        seq.iter()
            .enumerate()
            .all(|(k, s)| ws.get(i + k).is_some_and(|w| w == s))
    })
}

fn split_on(ws: &[String], sep: &str) -> Vec<Vec<String>> {
    ws.split(|w| w == sep)
        .map(<[String]>::to_vec)
        .filter(|p| !p.is_empty())
        .collect()
}

fn add_want(ws: &[String], out: &mut Requirements) {
    let alts: Vec<Term> = split_on(ws, "or").iter().filter_map(|a| term(a)).collect();
    if !alts.is_empty() {
        out.want.push(alts);
    }
}

fn add_avoid(ws: &[String], out: &mut Requirements) {
    for alt in split_on(ws, "or") {
        if let Some(t) = term(&alt) {
            out.avoid.push(t);
        }
    }
}

/// The content words of a span, as a term (None when nothing is left). A purpose (`for …`)
/// or a reason (`as a …`) after the head is cut.
fn term(ws: &[String]) -> Option<Term> {
    let end = ws
        .iter()
        .enumerate()
        .position(|(i, w)| {
            i > 0
                && (w == "for"
                    || (w == "as" && ws.get(i + 1).is_some_and(|n| n == "a" || n == "an")))
        })
        .unwrap_or(ws.len());
    let ws = &ws[..end];
    let more = ws.iter().find_map(|w| {
        if LESS.contains(&w.as_str()) {
            Some(false)
        } else if MORE.contains(&w.as_str()) {
            Some(true)
        } else {
            None
        }
    });
    let skip = |w: &str| {
        STOP.contains(&w)
            || LESS.contains(&w)
            || MORE.contains(&w)
            || NEGATIONS.contains(&w)
            || [
                "for", "than", "over", "rather", "instead", "then", "so", "also", "~", ">", "<",
            ]
            .contains(&w)
    };
    let content: Vec<&String> = ws.iter().filter(|w| !skip(w)).collect();
    let specific: Vec<&String> = content
        .iter()
        .copied()
        .filter(|w| !GENERIC.contains(&w.as_str()))
        .collect();
    let kept = if specific.is_empty() {
        content
    } else {
        specific
    };
    if kept.is_empty() {
        return None;
    }
    Some(Term {
        text: kept
            .iter()
            .map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        words: kept.iter().map(|w| stem(w)).collect(),
        more,
    })
}

/// A time of day at word `i` (`9:00`, `14:30`, `11 am`), and how many words it takes.
fn time_at(ws: &[String], i: usize) -> Option<(u16, usize)> {
    let w = ws.get(i)?;
    let next = ws.get(i + 1).map(String::as_str);
    let meridiem = next.filter(|n| *n == "am" || *n == "pm");
    let (h, m) = match w.split_once(':') {
        Some((h, m)) => (h.parse::<u16>().ok()?, m.parse::<u16>().ok()?),
        None if meridiem.is_some() => (w.parse::<u16>().ok()?, 0),
        None => return None,
    };
    if h > 24 || m > 59 {
        return None;
    }
    let h = match meridiem {
        Some("pm") if h < 12 => h + 12,
        Some("am") if h == 12 => 0,
        _ => h,
    };
    Some((h * 60 + m, if meridiem.is_some() { 2 } else { 1 }))
}

/// Every time of day in `ws`, in order, with its word index.
fn times(ws: &[String]) -> Vec<(usize, u16)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        match time_at(ws, i) {
            Some((t, used)) => {
                out.push((i, t));
                i += used;
            }
            None => i += 1,
        }
    }
    out
}

/// The window a clause's times state: two times are a range; one after `before` / `until`,
/// `after` / `from`, else a half hour either side.
fn take_times(ws: &[String], avoid: bool, out: &mut Requirements) {
    let ts = times(ws);
    let Some(&(first_at, first)) = ts.first() else {
        return;
    };
    let before = |i: usize| i.checked_sub(1).and_then(|j| ws.get(j)).map(String::as_str);
    let (from, to) = if let Some(&(_, second)) = ts.get(1) {
        (first.min(second), first.max(second))
    } else {
        match before(first_at) {
            Some("before" | "until" | "till") => (0, first),
            Some("after" | "from" | "since") => (first, 24 * 60),
            _ => (first.saturating_sub(30), (first + 30).min(24 * 60)),
        }
    };
    out.windows.push(Window {
        from,
        to,
        inside: !avoid,
    });
}

/// A unit word, normalized, with its factor to the base unit.
fn unit(w: &str) -> Option<(&'static str, f64)> {
    Some(match w {
        "cny" | "yuan" | "rmb" | "¥" | "元" => ("cny", 1.0),
        "eur" | "euro" | "euros" | "€" => ("eur", 1.0),
        "usd" | "dollars" | "dollar" | "$" => ("usd", 1.0),
        "min" | "mins" | "minute" | "minutes" => ("min", 1.0),
        "hour" | "hours" | "hr" | "hrs" | "h" => ("min", 60.0),
        "gb" => ("gb", 1.0),
        "tb" => ("gb", 1024.0),
        "kg" => ("kg", 1.0),
        "mm" => ("mm", 1.0),
        _ => return None,
    })
}

/// Every amount with a unit in `ws`: (word index, value in the base unit, unit). The unit is
/// the next word, the one after a second number (`8000-12000 CNY`), or a symbol before it.
fn amounts(ws: &[String]) -> Vec<(usize, f64, &'static str)> {
    let number = |i: usize| ws.get(i).and_then(|w| w.parse::<f64>().ok());
    let mut out = Vec::new();
    for i in 0..ws.len() {
        let Some(value) = number(i) else { continue };
        let u = ws
            .get(i + 1)
            .and_then(|n| unit(n))
            .or_else(|| number(i + 1).and(ws.get(i + 2)).and_then(|n| unit(n)))
            .or_else(|| i.checked_sub(1).and_then(|j| unit(&ws[j])));
        if let Some((name, factor)) = u {
            out.push((i, value * factor, name));
        }
    }
    out
}

/// The bounds a clause's amounts state: two amounts of one unit are a range; one after
/// `under` / `below` / `max` / `less than` an upper bound, after `over` / `above` / `at least` /
/// `more than` / `≥` a lower one — flipped in a negated clause (`nothing over 400 EUR`).
fn take_bounds(ws: &[String], avoid: bool, out: &mut Requirements) {
    let found = amounts(ws);
    if let [(_, a, u), (_, b, v)] = found[..] {
        if u == v {
            out.bounds.push(Bound {
                min: Some(a.min(b)),
                max: Some(a.max(b)),
                unit: u.into(),
            });
            return;
        }
    }
    let word = |i: usize, back: usize| {
        i.checked_sub(back)
            .and_then(|j| ws.get(j))
            .map(String::as_str)
    };
    for &(i, value, u) in &found {
        let after = |k: usize| ws.get(i + k).map(String::as_str);
        let upper = matches!(
            word(i, 1),
            Some("under" | "below" | "max" | "maximum" | "within" | "<" | "≤")
        ) || matches!(after(2), Some("max" | "maximum"))
            || matches!(after(1), Some("max" | "maximum"))
            || (word(i, 1) == Some("most"))
            || (word(i, 2) == Some("up") && word(i, 1) == Some("to"))
            || (word(i, 1) == Some("than") && word(i, 2) == Some("less"));
        let lower = matches!(
            word(i, 1),
            Some("over" | "above" | "least" | ">" | "≥" | "min" | "minimum" | "exceeding")
        ) || (word(i, 1) == Some("than") && word(i, 2) == Some("more"));
        let is_max = match (upper, lower) {
            (true, false) => !avoid,
            (false, true) => avoid,
            _ => continue,
        };
        out.bounds.push(if is_max {
            Bound {
                min: None,
                max: Some(value),
                unit: u.into(),
            }
        } else {
            Bound {
                min: Some(value),
                max: None,
                unit: u.into(),
            }
        });
    }
}

/// When a record is scheduled: `[start, start + minutes)` in minutes after midnight (a calendar
/// event's start and duration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// Start.
    pub start: u16,
    /// Length in minutes.
    pub minutes: u16,
}

impl Scheduled {
    fn end(self) -> u16 {
        self.start.saturating_add(self.minutes)
    }

    /// Whether the interval meets a window: inside it whole, or not overlapping it.
    fn meets(self, w: &Window) -> bool {
        if w.inside {
            self.start >= w.from && self.end() <= w.to
        } else {
            self.end() <= w.from || self.start >= w.to
        }
    }
}

/// Checks `text` (what the agent wrote) against `req`.
pub fn check(req: &Requirements, text: &str) -> Outcome {
    check_scheduled(req, text, None)
}

/// A time a record can be scheduled at that meets every window of `req` as an interval, and
/// its length: the longest the `min` bounds allow, at most `usual` minutes. Tried: the start of
/// each wanted window, the end of each avoided one, then 14:00, 10:00 and 16:00.
pub fn slot(req: &Requirements, usual: u16) -> Scheduled {
    let minutes = req
        .bounds
        .iter()
        .filter(|b| b.unit == "min")
        .fold(f64::from(usual), |m, b| {
            let m = b.max.map_or(m, |x| m.min(x));
            b.min.map_or(m, |x| m.max(x))
        })
        .clamp(5.0, 24.0 * 60.0) as u16;
    let inside = req.windows.iter().filter(|w| w.inside).map(|w| w.from);
    let after = req.windows.iter().filter(|w| !w.inside).map(|w| w.to);
    inside
        .chain(after)
        .chain([14 * 60, 10 * 60, 16 * 60])
        .map(|start| Scheduled { start, minutes })
        .find(|s| s.end() < 24 * 60 && req.windows.iter().all(|w| s.meets(w)))
        .unwrap_or(Scheduled {
            start: 14 * 60,
            minutes,
        })
}

/// [`check`] for a record scheduled `at` (a calendar event): the windows are checked against
/// that interval — inside a wanted one whole, clear of an avoided one — instead of the times
/// the text mentions, and its length counts as an amount of minutes for the bounds.
pub fn check_scheduled(req: &Requirements, text: &str, at: Option<Scheduled>) -> Outcome {
    let (ws, spans) = tokens(text);
    let stems: Vec<String> = ws.iter().map(|w| stem(w)).collect();
    let mut out = Outcome {
        met: 0,
        total: 0,
        failed: Vec::new(),
    };
    let mut record = |ok: bool, what: String| {
        out.total += 1;
        if ok {
            out.met += 1;
        } else {
            out.failed.push(what);
        }
    };
    for group in &req.want {
        let ok = group.iter().any(|t| present(t, &stems, &spans));
        let names: Vec<&str> = group.iter().map(|t| t.text.as_str()).collect();
        record(ok, format!("wanted: {}", names.join(" or ")));
    }
    for t in &req.avoid {
        record(
            !present(t, &stems, &spans),
            format!("ruled out: {}", t.text),
        );
    }
    let found: Vec<u16> = times(&ws).into_iter().map(|(_, t)| t).collect();
    for w in &req.windows {
        let ok = if let Some(at) = at {
            at.meets(w)
        } else if w.inside {
            !found.is_empty() && found.iter().all(|t| (w.from..=w.to).contains(t))
        } else {
            !found.iter().any(|t| (w.from..w.to).contains(t))
        };
        record(
            ok,
            format!(
                "time {} {}–{}",
                if w.inside { "within" } else { "outside" },
                hhmm(w.from),
                hhmm(w.to)
            ),
        );
    }
    let mut amounts = amounts(&ws);
    if let Some(at) = at {
        amounts.push((0, f64::from(at.minutes), "min"));
    }
    for b in &req.bounds {
        let ok = amounts
            .iter()
            .filter(|a| a.2 == b.unit)
            .all(|&(_, v, _)| b.min.is_none_or(|m| v >= m) && b.max.is_none_or(|m| v <= m));
        record(ok, format!("{} within {:?}–{:?}", b.unit, b.min, b.max));
    }
    out
}

/// Whether `text` says "`word`-free" or "`word` free" (`sugar-free`), the word right before
/// "free": in "Senior card = free rides" the card is not ruled out.
fn free_of(text: &str, word: &str) -> bool {
    let text = text.to_lowercase();
    ["-", "\u{2011}", " "]
        .map(|joint| format!("{word}{joint}free"))
        .iter()
        .any(|compound| text.contains(compound.as_str()))
}

/// `HH:MM` of minutes after midnight.
pub fn hhmm(t: u16) -> String {
    format!("{:02}:{:02}", t / 60, t % 60)
}

/// The words of `text`, clause by clause, and whether a negation covers each: from a
/// negation word to the end of its clause, and a word followed by `free` (`sugar-free`).
fn tokens(text: &str) -> (Vec<String>, Vec<bool>) {
    let (mut all, mut flags) = (Vec::new(), Vec::new());
    for c in clauses(text) {
        let ws = words(&c);
        let mut on = false;
        for (i, w) in ws.iter().enumerate() {
            if NEGATIONS.contains(&w.as_str()) {
                on = true;
            }
            let free = ws.get(i + 1).is_some_and(|n| n == "free") && free_of(&c, w);
            flags.push(on || free);
        }
        all.extend(ws);
    }
    (all, flags)
}

/// Whether `t` occurs in `stems`; for an avoided term, only an occurrence no negation covers
/// counts; for a wanted one, a negated occurrence does not count, nor one with the opposite
/// quantity word before it.
fn present(t: &Term, stems: &[String], negated: &[bool]) -> bool {
    let hits = t
        .words
        .iter()
        .filter(|w| {
            stems.iter().enumerate().any(|(i, s)| {
                s == *w && !negated.get(i).copied().unwrap_or(false) && !opposite(t, stems, i)
            })
        })
        .count();
    let need = if t.words.len() <= 2 {
        t.words.len()
    } else {
        t.words.len().div_ceil(3).max(2)
    };
    hits >= need
}

/// The quantity word right before position `i` says the opposite of the term's.
fn opposite(t: &Term, stems: &[String], i: usize) -> bool {
    let Some(more) = t.more else { return false };
    let before = &stems[i.saturating_sub(2)..i];
    let against: &[&str] = if more { LESS } else { MORE };
    before.iter().any(|w| against.contains(&w.as_str()))
}

/// The rubric sentence for a judge model: the whole preference, and what it requires.
pub fn rubric(field: &str, value_text: &str, req: &Requirements) -> String {
    let mut parts = Vec::new();
    if !req.want.is_empty() {
        let w: Vec<String> = req
            .want
            .iter()
            .map(|g| {
                g.iter()
                    .map(|t| t.text.clone())
                    .collect::<Vec<_>>()
                    .join(" or ")
            })
            .collect();
        parts.push(format!("it must include {}", w.join("; ")));
    }
    if !req.avoid.is_empty() {
        let a: Vec<&str> = req.avoid.iter().map(|t| t.text.as_str()).collect();
        parts.push(format!("it must not include {}", a.join("; ")));
    }
    for w in &req.windows {
        parts.push(format!(
            "times {} {}–{}",
            if w.inside { "within" } else { "outside" },
            hhmm(w.from),
            hhmm(w.to)
        ));
    }
    for b in &req.bounds {
        let range = match (b.min, b.max) {
            (Some(a), Some(z)) => format!("between {a} and {z}"),
            (None, Some(z)) => format!("at most {z}"),
            (Some(a), None) => format!("at least {a}"),
            (None, None) => String::new(),
        };
        parts.push(format!("amounts in {} {range}", b.unit));
    }
    format!(
        "The {field} follows the user's whole preference \"{value_text}\"{}.",
        if parts.is_empty() {
            String::new()
        } else {
            format!(": {}", parts.join(", "))
        }
    )
}

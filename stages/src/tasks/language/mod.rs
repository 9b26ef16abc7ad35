//! The words of a message as the offline matcher and the free-text criteria compare them:
//! lower-cased, abbreviations expanded, stemmed (Porter2, so "ordering" meets "order" and
//! "portions" meets "portion"), with the general-English lexicon (`lexicon.yaml` beside this
//! file: words that name the same thing, stop words) that lets a paraphrase meet a slot's own
//! words. Nothing here knows any task.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Deserialize)]
struct LexiconFile {
    synonyms: Vec<Vec<String>>,
    places: Vec<String>,
    classes: HashMap<String, Vec<String>>,
    abbreviations: HashMap<String, String>,
    /// British spellings read as the American one the slots' data use.
    #[serde(default)]
    spellings: HashMap<String, String>,
    stop_words: Vec<String>,
    unavailable: Vec<String>,
    content: Vec<String>,
    time_units: Vec<String>,
}

/// The lexicon, stemmed.
pub struct Lexicon {
    /// Stemmed word sequence → the synonym groups it belongs to.
    groups: HashMap<Vec<String>, Vec<u32>>,
    /// The longest phrase of a group, in words.
    longest: usize,
    abbreviations: HashMap<String, String>,
    stop: HashSet<String>,
    places: HashSet<String>,
    classes: HashMap<String, Vec<String>>,
    unavailable: Vec<String>,
    /// Stemmed phrases that ask about content (what something says or is about).
    content: Vec<Vec<String>>,
    /// Stems of units of time.
    time_units: HashSet<String>,
}

/// The lexicon shipped with the crate.
pub fn lexicon() -> &'static Lexicon {
    static LEX: OnceLock<Lexicon> = OnceLock::new();
    LEX.get_or_init(|| {
        let file: LexiconFile = serde_saphyr::from_str(include_str!("lexicon.yaml"))
            .unwrap_or_else(|e| panic!("stages/src/tasks/language/lexicon.yaml: {e}"));
        Lexicon::new(file)
    })
}

impl Lexicon {
    fn new(file: LexiconFile) -> Self {
        let mut abbreviations = file.abbreviations;
        abbreviations.extend(file.spellings);
        let stop: HashSet<String> = file
            .stop_words
            .iter()
            .map(|w| w.to_lowercase().replace('’', "'"))
            .collect();
        let mut groups: HashMap<Vec<String>, Vec<u32>> = HashMap::new();
        let mut longest = 1;
        for (g, words) in file.synonyms.iter().enumerate() {
            for w in words {
                let key: Vec<String> = raw_words(w).iter().map(|t| stem(t)).collect();
                longest = longest.max(key.len());
                groups.entry(key).or_default().push(g as u32);
            }
        }
        let places = file.places.iter().map(|p| stem(p)).collect();
        let classes = file
            .classes
            .into_iter()
            .map(|(k, v)| (stem(&k), v))
            .collect();
        let unavailable = file
            .unavailable
            .iter()
            .map(|p| p.to_lowercase().replace('’', "'"))
            .collect();
        let content = file
            .content
            .iter()
            .map(|p| raw_words(p).iter().map(|w| stem(w)).collect())
            .collect();
        let time_units = file.time_units.iter().map(|w| stem(w)).collect();
        Self {
            content,
            time_units,
            unavailable,
            classes,
            groups,
            longest,
            abbreviations,
            stop,
            places,
        }
    }

    /// Whether a text says that something cannot be had: one of the lexicon's `unavailable`
    /// phrases as whole words, or "available" / "in stock" within four words after a negation
    /// ("doesn't seem to be available", "not in stock").
    pub fn says_unavailable(&self, text: &str) -> bool {
        let lower = format!(
            " {} ",
            text.to_lowercase()
                .replace('’', "'")
                .replace(
                    |c: char| !(c.is_alphanumeric() || c == '\'' || c == ':'),
                    " "
                )
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
        if self.unavailable.iter().any(|p| {
            let p = p.replace(|c: char| !(c.is_alphanumeric() || c == '\''), " ");
            let p = p.split_whitespace().collect::<Vec<_>>().join(" ");
            lower.contains(&format!(" {p} ")) || p.starts_with('\'') && lower.contains(&p)
        }) {
            return true;
        }
        let words: Vec<&str> = lower.split_whitespace().collect();
        let negator =
            |w: &str| matches!(w, "not" | "no" | "never" | "cannot") || w.ends_with("n't");
        words.iter().enumerate().any(|(i, w)| {
            let target = *w == "available" || *w == "stock" && i > 0 && words[i - 1] == "in";
            target && words[i.saturating_sub(5)..i].iter().any(|x| negator(x))
        })
    }

    /// Whether a text holds a word or phrase asking about content (what something says or is
    /// about: "gist", "stood out", "words"); "let me know" is a request, not content.
    pub fn names_content(&self, text: &str) -> bool {
        let mut lower = text
            .to_lowercase()
            .replace('’', "'")
            .replace("let me know", " ");
        // "Just say which class…", "tell me what time…": a request, not content.
        for wh in [
            "which", "what", "how", "when", "where", "who", "whether", "if",
        ] {
            for verb in ["say", "tell me"] {
                lower = lower.replace(&format!("{verb} {wh} "), &format!(" {wh} "));
            }
        }
        let stems: Vec<String> = raw_words(&lower).iter().map(|w| stem(w)).collect();
        self.content
            .iter()
            .any(|p| !p.is_empty() && stems.windows(p.len()).any(|w| w == p.as_slice()))
    }

    /// Whether a (lower-cased) word is a unit of time ("hours", "nights").
    pub fn is_time_unit(&self, word: &str) -> bool {
        self.time_units.contains(&stem(word))
    }

    /// Whether a (lower-cased) word names nothing by itself.
    pub fn is_stop(&self, word: &str) -> bool {
        self.stop.contains(word)
    }
}

/// The values of the kinds of thing a text names ("colour" → black, white, navy, …).
pub fn class_values(text: &str) -> Vec<String> {
    let lex = lexicon();
    let mut out = Vec::new();
    for t in tokens(text) {
        let key = if t.stem == "colour" {
            "color".to_string()
        } else {
            t.stem
        };
        if let Some(v) = lex.classes.get(&key) {
            out.extend(v.iter().cloned());
        }
    }
    out
}

/// Whether a text names a kind of place (a pharmacy, a store, a restaurant): what "where"
/// asks about.
pub fn names_a_place(text: &str) -> bool {
    let lex = lexicon();
    tokens(text).iter().any(|t| lex.places.contains(&t.stem))
}

/// Lower-cased words (letters, digits, `:` inside times, `'` inside words, `%`).
pub fn raw_words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == ':' || c == '%' || c == '&'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == ':'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// A word's stem (English Porter2), with possessive `'s` dropped.
pub fn stem(word: &str) -> String {
    static STEMMER: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    let s =
        STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    let w = word.strip_suffix("'s").unwrap_or(word);
    if w.chars().any(|c| c.is_ascii_digit()) {
        return w.to_string();
    }
    s.stem(w).into_owned()
}

/// One word of a text as compared: its stem, and whether it names nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The lower-cased word (abbreviation expanded).
    pub word: String,
    /// Its stem.
    pub stem: String,
    /// A stop word.
    pub stop: bool,
}

/// The tokens of a text.
pub fn tokens(text: &str) -> Vec<Token> {
    let lex = lexicon();
    raw_words(text)
        .into_iter()
        .map(|w| {
            let word = lex.abbreviations.get(&w).cloned().unwrap_or(w);
            Token {
                stop: lex.is_stop(&word),
                stem: stem(&word),
                word,
            }
        })
        .collect()
}

/// The content stems of a text (stop words dropped).
pub fn content_stems(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !t.stop)
        .map(|t| t.stem)
        .collect()
}

/// The concepts a sequence of stems mentions: each stem itself, and every synonym group a
/// stem or phrase (up to the lexicon's longest) belongs to, as `#<group>`.
pub fn concepts(stems: &[String]) -> HashSet<String> {
    let lex = lexicon();
    let mut out: HashSet<String> = stems.iter().cloned().collect();
    for len in 1..=lex.longest.min(stems.len()) {
        for window in stems.windows(len) {
            if let Some(gs) = lex.groups.get(window) {
                out.extend(gs.iter().map(|g| format!("#{g}")));
            }
        }
    }
    out
}

/// The synonym groups a whole phrase belongs to (`#<group>`): "no one" → the group of "nobody",
/// "business" → the group of "work"; used to read an option's other names.
pub fn phrase_groups(text: &str) -> Vec<String> {
    let stems: Vec<String> = raw_words(text).iter().map(|w| stem(w)).collect();
    lexicon()
        .groups
        .get(&stems)
        .map(|gs| gs.iter().map(|g| format!("#{g}")).collect())
        .unwrap_or_default()
}

/// The concepts of a text: all its stems (stop words included, for phrases such as "how
/// long"), with groups.
pub fn text_concepts(text: &str) -> HashSet<String> {
    let stems: Vec<String> = tokens(text).into_iter().map(|t| t.stem).collect();
    let mut c = concepts(&stems);
    let lex = lexicon();
    for t in tokens(text).iter().filter(|t| t.stop) {
        // A stop word alone names nothing; its groups stay only through phrases.
        if !lex.groups.contains_key(std::slice::from_ref(&t.stem)) {
            c.remove(&t.stem);
        }
    }
    c
}

/// The concepts of each word of a text, by position: a content word's stem and its synonym
/// groups; a phrase of the lexicon ("how long", "check out") adds its groups to its first word.
/// A stop word outside any phrase names nothing (an empty set).
pub fn word_concepts(text: &str) -> Vec<HashSet<String>> {
    let lex = lexicon();
    let toks = tokens(text);
    let stems: Vec<String> = toks.iter().map(|t| t.stem.clone()).collect();
    let mut out: Vec<HashSet<String>> = toks
        .iter()
        .map(|t| {
            let mut c = HashSet::new();
            if !t.stop {
                c.insert(t.stem.clone());
            }
            c
        })
        .collect();
    for len in 1..=lex.longest.min(stems.len()) {
        for (i, window) in stems.windows(len).enumerate() {
            if len == 1 && toks[i].stop {
                continue;
            }
            if let Some(gs) = lex.groups.get(window) {
                out[i].extend(gs.iter().map(|g| format!("#{g}")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections_and_synonyms_meet() {
        assert_eq!(stem("ordering"), stem("order"));
        assert_eq!(stem("portions"), stem("portion"));
        let a = text_concepts("How many guests?");
        let b = concepts(&content_stems("people"));
        assert!(
            a.intersection(&b).any(|c| c.starts_with('#')),
            "{a:?} {b:?}"
        );
        assert!(tokens("15 min").iter().any(|t| t.word == "minute"));
    }
}

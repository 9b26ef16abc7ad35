//! Lexical checks used to prove history properties: whether a phrase is mentioned in a text,
//! and the words that mark a one-off occasion (which persona loading and the rules share).

/// Phrases that mark an occasion that happens once in the history window; one app recording
/// the same occasion twice is a one-off repeated. Persona templates that name one must be
/// marked `once: true`.
pub const ONE_OFF_MARKERS: &[&str] = &[
    "birthday",
    "anniversary",
    "annual membership",
    "wedding",
    "graduation",
    "housewarming",
];

/// Whether `phrase` occurs in `text`, ignoring case, as a whole word or words: a match may not
/// continue a word at either end (only checked where the phrase itself starts or ends with a
/// letter or digit). An empty phrase is never mentioned.
pub fn mentions(text: &str, phrase: &str) -> bool {
    mentions_lowered(&text.to_lowercase(), &phrase.to_lowercase())
}

/// [`mentions`] for a text and phrase that are already lower-case (avoids re-allocating when
/// one text is tested against many phrases).
pub fn mentions_lowered(text: &str, phrase: &str) -> bool {
    let phrase = phrase.trim();
    if phrase.is_empty() {
        return false;
    }
    let starts_word = phrase.chars().next().is_some_and(char::is_alphanumeric);
    let ends_word = phrase.chars().last().is_some_and(char::is_alphanumeric);
    let mut from = 0;
    while let Some(pos) = text[from..].find(phrase) {
        let start = from + pos;
        let end = start + phrase.len();
        let before_ok = !starts_word
            || !text[..start]
                .chars()
                .last()
                .is_some_and(char::is_alphanumeric);
        let after_ok = !ends_word
            || !text[end..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric);
        if before_ok && after_ok {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn whole_words_only_and_case_insensitive() {
        assert!(mentions("Booked Baan Thai (Thai)", "thai"));
        assert!(!mentions("Thailand trip", "thai"));
        assert!(!mentions("Samsung phone", "Sam"));
        assert!(mentions("Split dinner with Sam.", "Sam"));
        assert!(mentions("price $$ here", "$$"));
        assert!(mentions("at 19:30 tonight", "19:30"));
        assert!(!mentions("at 19:300", "19:30"));
        assert!(!mentions("anything", ""));
    }
}

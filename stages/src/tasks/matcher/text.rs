//! Words of a text as the matcher compares them: lower-cased words and whole-word phrases
//! (plurals tolerated). A sibling of the modules that read them, so none imports its parent.

/// Lower-cased words of a text (letters, digits, `:` inside times, apostrophes inside words).
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == ':' || c == '%'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == ':'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// `word` equals `key`, or is `key` with a plural ending.
fn same_word(word: &str, key: &str) -> bool {
    word == key
        || word
            .strip_prefix(key)
            .is_some_and(|rest| rest == "s" || rest == "es")
        || key
            .strip_prefix(word)
            .is_some_and(|rest| rest == "s" || rest == "es")
}

/// Whether `phrase` occurs in `text` as whole words (plurals tolerated).
pub fn phrase_in(text: &str, phrase: &str) -> bool {
    let (text_words, key) = (words(text), words(phrase));
    if key.is_empty() || key.len() > text_words.len() {
        return false;
    }
    text_words
        .windows(key.len())
        .any(|w| w.iter().zip(&key).all(|(a, b)| same_word(a, b)))
}

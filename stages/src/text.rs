//! Plain-text helpers shared by layers that must not import each other: the world's audit
//! measures its own history with the same words that retrieval indexes, without the world
//! knowing who acts in it.

/// Lower-cased alphanumeric words of at least two characters: the terms BM25 retrieval
/// (`episodes::retrieval`) indexes and the world audit (`world::audit`) counts.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 2)
        .map(str::to_lowercase)
}

//! Lexical retrieval over history events (Okapi BM25). The `top_k:N` history exposure and the
//! `heuristic` agent use it to pick the events relevant to a query; it is deterministic (ties
//! broken by event order) so the same query always shows the same events.
//!
//! Only what an agent is shown of an event is indexed: its time, app and text. The hidden columns
//! (`label`, `category`, `supports`, `counters`) and the `location` describe how the world was made and must
//! never decide what an agent retrieves.

use std::collections::HashMap;

use crate::text::tokens;
use crate::world::history::HistoryEvent;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A BM25 index over a slice of events (time, app and text are indexed; see [`visible_text`]).
pub struct Bm25<'s, 'e> {
    events: &'s [&'e HistoryEvent],
    index: std::sync::Arc<TextIndex>,
}

/// BM25 over plain texts: the scoring behind [`Bm25`], reusable for anything with text (e.g.
/// choosing which tools to offer a model).
pub struct TextIndex {
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    avg_len: f64,
    doc_freq: HashMap<String, u32>,
}

impl TextIndex {
    /// Indexes one document per text.
    pub fn new<S: AsRef<str>>(texts: impl Iterator<Item = S>) -> Self {
        let mut doc_freq: HashMap<String, u32> = HashMap::new();
        let mut docs = Vec::new();
        let mut lengths = Vec::new();
        for text in texts {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let mut len = 0u32;
            for w in tokens(text.as_ref()) {
                *tf.entry(w).or_default() += 1;
                len += 1;
            }
            for w in tf.keys() {
                *doc_freq.entry(w.clone()).or_default() += 1;
            }
            docs.push(tf);
            lengths.push(len as f64);
        }
        let avg_len = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        Self {
            docs,
            lengths,
            avg_len,
            doc_freq,
        }
    }

    /// The score of every document for `query`.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let mut terms: Vec<String> = tokens(query).collect();
        terms.sort();
        terms.dedup();
        let idf: Vec<(String, f64)> = terms
            .into_iter()
            .filter_map(|t| {
                let df = *self.doc_freq.get(&t)? as f64;
                Some((t, ((n - df + 0.5) / (df + 0.5) + 1.0).ln()))
            })
            .collect();
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(tf, len)| {
                idf.iter()
                    .map(|(t, idf)| {
                        let f = *tf.get(t).unwrap_or(&0) as f64;
                        if f == 0.0 {
                            return 0.0;
                        }
                        let norm = K1 * (1.0 - B + B * len / self.avg_len.max(1e-9));
                        idf * f * (K1 + 1.0) / (f + norm)
                    })
                    .sum()
            })
            .collect()
    }

    /// Indices of the `k` best-scoring documents with a positive score, best first (ties: lower
    /// index first).
    pub fn top_k(&self, query: &str, k: usize) -> Vec<usize> {
        let scores = self.scores(query);
        let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        order.truncate(k);
        order
    }
}

impl<'s, 'e> Bm25<'s, 'e> {
    /// Indexes `events` on its own (tests, one-off queries).
    pub fn new(events: &'s [&'e HistoryEvent]) -> Self {
        Self {
            events,
            index: std::sync::Arc::new(index_of(events)),
        }
    }

    /// Indexes `events` through `cache`: the episodes of one stage instance see the same
    /// history, so its index is built once per distinct event list and shared.
    pub fn cached(events: &'s [&'e HistoryEvent], cache: &IndexCache) -> Self {
        Self {
            events,
            index: cache.index(events),
        }
    }

    /// The score of every event for `query`.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        self.index.scores(query)
    }

    /// The `k` best-scoring events with a positive score, best first (ties: earlier event first).
    pub fn top_k(&self, query: &str, k: usize) -> Vec<&'e HistoryEvent> {
        self.index
            .top_k(query, k)
            .into_iter()
            .map(|i| self.events[i])
            .collect()
    }
}

/// The document an event is indexed as: what the agent sees of it (date, clock time, app, text),
/// nothing of how it was labelled.
pub fn visible_text(e: &HistoryEvent) -> String {
    format!("{} {} {} {}", e.time.date, e.time.time, e.app, e.text)
}

/// Distinct event lists whose index an [`IndexCache`] keeps.
const CACHE_CAPACITY: usize = 8;

fn index_of(events: &[&HistoryEvent]) -> TextIndex {
    let texts: Vec<String> = events.iter().map(|e| visible_text(e)).collect();
    TextIndex::new(texts.iter())
}

/// The BM25 indexes of one stage instance's event lists, keyed by their content (event id and
/// visible text), so the episodes of an instance build each index once. It lives in the
/// instance's prepared state: nothing survives the instance, and two instances never share.
#[derive(Default)]
pub struct IndexCache(std::sync::Mutex<Vec<(String, std::sync::Arc<TextIndex>)>>);

impl std::fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map(|k| k.len()).unwrap_or(0);
        write!(f, "IndexCache({kept} indexes)")
    }
}

impl IndexCache {
    /// The index of `events`, built at most once per content.
    pub fn index(&self, events: &[&HistoryEvent]) -> std::sync::Arc<TextIndex> {
        let key = content_key(events);
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, ix)) = kept.iter().find(|(k, _)| *k == key) {
            return ix.clone();
        }
        let ix = std::sync::Arc::new(index_of(events));
        if kept.len() >= CACHE_CAPACITY {
            kept.remove(0);
        }
        kept.push((key, ix.clone()));
        ix
    }
}

/// A hash of what indexing `events` reads: their ids and visible texts.
fn content_key(events: &[&HistoryEvent]) -> String {
    let mut bytes = Vec::new();
    for e in events {
        bytes.extend_from_slice(e.event_id.as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(visible_text(e).as_bytes());
        bytes.push(0x1e);
    }
    prefflow_engine::keys::hash_bytes(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::history::Label;

    fn event(id: &str, text: &str) -> HistoryEvent {
        HistoryEvent {
            event_id: id.into(),
            time: crate::world::clock::DateTime::parse("2025-01-01T10:00").unwrap(),
            utc_offset_minutes: None,
            app: "notes".into(),
            location: "home".into(),
            text: text.into(),
            label: Label::Signal,
            category: "x".into(),
            supports: vec![],
            counters: Vec::new(),
        }
    }

    #[test]
    fn the_matching_event_ranks_first_and_non_matches_are_dropped() {
        let evs = [
            event("a", "bought oat milk latte"),
            event("b", "booked a window seat on the train"),
            event("c", "ordered an oat milk flat white, oat again"),
        ];
        let refs: Vec<&HistoryEvent> = evs.iter().collect();
        let ix = Bm25::new(&refs);
        let top: Vec<&str> = ix
            .top_k("oat milk", 5)
            .iter()
            .map(|e| e.event_id.as_str())
            .collect();
        assert_eq!(top.len(), 2);
        assert!(top.contains(&"a") && top.contains(&"c"));
        let seat: Vec<&str> = ix
            .top_k("window seat", 1)
            .iter()
            .map(|e| e.event_id.as_str())
            .collect();
        assert_eq!(seat, ["b"]);
        assert!(ix.top_k("zebra", 3).is_empty());
    }

    /// Retrieval over `events` for a few queries a field or an instruction would make.
    fn retrieved(events: &[HistoryEvent]) -> Vec<Vec<String>> {
        let refs: Vec<&HistoryEvent> = events.iter().collect();
        let ix = Bm25::new(&refs);
        [
            "cuisine dinner restaurant dinespot book a table",
            "seating patio indoor bar",
            "noise dining travel",
            "home work commute Inner Sunset SoMa",
            "window seat skyway flight",
            "milk freshcart groceries",
        ]
        .iter()
        .map(|q| ix.top_k(q, 25).iter().map(|e| e.event_id.clone()).collect())
        .collect()
    }

    #[test]
    fn hidden_columns_cannot_change_what_is_retrieved() {
        let world = crate::world::dataset_tests::default_world();
        let original = retrieved(&world.history);
        assert!(original.iter().all(|ids| !ids.is_empty()));
        // Blank every hidden column.
        let mut blank = world.history.clone();
        for e in &mut blank {
            e.label = Label::Noise;
            e.category = String::new();
            e.supports.clear();
            e.counters.clear();
            e.location = String::new();
        }
        // Rotate them across events: each event carries another's label, topic and place.
        let mut rotated = world.history.clone();
        let n = rotated.len();
        for (i, e) in rotated.iter_mut().enumerate() {
            let other = &world.history[(i + n / 2) % n];
            e.label = other.label;
            e.category = other.category.clone();
            e.supports = other.supports.clone();
            e.counters = other.counters.clone();
            e.location = other.location.clone();
        }
        assert_eq!(retrieved(&blank), original);
        assert_eq!(retrieved(&rotated), original);
        // The visible columns do matter: the test would see a change.
        let mut retexted = world.history.clone();
        for e in &mut retexted {
            e.text = e.text.replace("patio", "terrace");
        }
        assert_ne!(retrieved(&retexted), original);
    }

    #[test]
    fn the_indexed_document_is_the_visible_part_of_an_event() {
        let mut e = event("a", "Booked a table");
        e.category = "dining".into();
        e.location = "Irving St".into();
        let doc = visible_text(&e);
        assert_eq!(doc, "2025-01-01 10:00:00 notes Booked a table");
    }

    #[test]
    fn an_index_cache_builds_once_per_content() {
        let evs = [event("a", "oat milk latte"), event("b", "window seat")];
        let same = [event("a", "oat milk latte"), event("b", "window seat")];
        let other = [event("a", "oat milk latte"), event("b", "aisle seat")];
        let cache = IndexCache::default();
        let (r1, r2, r3): (Vec<&HistoryEvent>, Vec<&HistoryEvent>, Vec<&HistoryEvent>) = (
            evs.iter().collect(),
            same.iter().collect(),
            other.iter().collect(),
        );
        let first = cache.index(&r1);
        assert!(
            std::sync::Arc::ptr_eq(&first, &cache.index(&r2)),
            "same content, one index"
        );
        assert!(
            !std::sync::Arc::ptr_eq(&first, &cache.index(&r3)),
            "other text, another index"
        );
        let cached = Bm25::cached(&r3, &cache);
        assert_eq!(cached.top_k("aisle", 1)[0].event_id, "b");
    }
}

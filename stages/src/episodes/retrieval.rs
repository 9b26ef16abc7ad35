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
/// choosing which tools to offer a model). Stored as postings (term → the documents holding it,
/// in document order, with the term's count), so a query touches only the documents that share
/// a term with it.
pub struct TextIndex {
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<f64>,
    avg_len: f64,
}

impl TextIndex {
    /// Indexes one document per text.
    pub fn new<S: AsRef<str>>(texts: impl Iterator<Item = S>) -> Self {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (doc, text) in texts.enumerate() {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let mut len = 0u32;
            for w in tokens(text.as_ref()) {
                *tf.entry(w).or_default() += 1;
                len += 1;
            }
            for (w, f) in tf {
                postings.entry(w).or_default().push((doc as u32, f));
            }
            lengths.push(len as f64);
        }
        let avg_len = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        Self {
            postings,
            lengths,
            avg_len,
        }
    }

    /// The score of every document for `query`: per document, the sum over the query's
    /// distinct terms, in sorted order, of each term's BM25 weight (0 for a document without
    /// any of them).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.lengths.len() as f64;
        let mut terms: Vec<String> = tokens(query).collect();
        terms.sort();
        terms.dedup();
        let mut scores = vec![0.0; self.lengths.len()];
        for t in &terms {
            let Some(docs) = self.postings.get(t) else {
                continue;
            };
            let df = docs.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, f) in docs {
                let (f, len) = (f as f64, self.lengths[doc as usize]);
                let norm = K1 * (1.0 - B + B * len / self.avg_len.max(1e-9));
                scores[doc as usize] += idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        scores
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

/// A hash of what indexing `events` reads: their ids and the parts of their visible texts
/// (date, time of day, app, text), each length-prefixed. The date and time enter as numbers,
/// not formatted (the key is taken once per episode): finer than the text, never coarser.
fn content_key(events: &[&HistoryEvent]) -> String {
    let mut bytes = Vec::new();
    let mut part = |b: &[u8]| {
        bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
        bytes.extend_from_slice(b);
    };
    for e in events {
        let (y, m, d) = e.time.date.ymd();
        part(e.event_id.as_bytes());
        part(&y.to_le_bytes());
        part(&[m as u8, d as u8]);
        part(&e.time.time.seconds().to_le_bytes());
        part(e.app.as_bytes());
        part(e.text.as_bytes());
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

    /// BM25 as the formula reads, document by document: each document's sum over the query's
    /// sorted distinct terms, a term it lacks adding 0.
    fn reference_scores(texts: &[&str], query: &str) -> Vec<f64> {
        let docs: Vec<Vec<String>> = texts.iter().map(|t| tokens(t).collect()).collect();
        let n = docs.len() as f64;
        let avg = docs.iter().map(|d| d.len() as f64).sum::<f64>() / n;
        let mut terms: Vec<String> = tokens(query).collect();
        terms.sort();
        terms.dedup();
        let df = |t: &String| docs.iter().filter(|d| d.contains(t)).count() as f64;
        let terms: Vec<(String, f64)> = terms
            .into_iter()
            .filter(|t| df(t) > 0.0)
            .map(|t| {
                let idf = ((n - df(&t) + 0.5) / (df(&t) + 0.5) + 1.0).ln();
                (t, idf)
            })
            .collect();
        docs.iter()
            .map(|d| {
                let len = d.len() as f64;
                let mut sum = 0.0;
                for (t, idf) in &terms {
                    let f = d.iter().filter(|w| *w == t).count() as f64;
                    let norm = K1 * (1.0 - B + B * len / avg.max(1e-9));
                    sum += if f == 0.0 {
                        0.0
                    } else {
                        idf * f * (K1 + 1.0) / (f + norm)
                    };
                }
                sum
            })
            .collect()
    }

    /// The postings index gives every document the very score the formula does (same bits: the
    /// same terms added in the same order), so rankings and ties cannot move.
    #[test]
    fn scores_are_the_formulas_to_the_bit() {
        let texts = [
            "2025-10-01 08:05 cafe oat milk latte, oat again",
            "2025-10-02 19:30 trains booked a window seat on the 7:10 train",
            "2025-10-03 12:00 notes milk for the window box",
            "",
            "2025-10-04 09:00 cafe flat white",
        ];
        let ix = TextIndex::new(texts.iter());
        for query in [
            "oat milk window",
            "train seat cafe 2025",
            "zebra",
            "",
            "milk milk",
        ] {
            let got: Vec<u64> = ix.scores(query).iter().map(|s| s.to_bits()).collect();
            let want: Vec<u64> = reference_scores(&texts, query)
                .iter()
                .map(|s| s.to_bits())
                .collect();
            assert_eq!(got, want, "query {query:?}");
        }
        assert_eq!(ix.top_k("oat milk window", 5), [0, 2, 1]);
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
        let mut later = [event("a", "oat milk latte"), event("b", "window seat")];
        later[1].time = crate::world::clock::DateTime::parse("2025-01-02T10:00").unwrap();
        let later: Vec<&HistoryEvent> = later.iter().collect();
        assert!(
            !std::sync::Arc::ptr_eq(&first, &cache.index(&later)),
            "another day, another index"
        );
        let mut elsewhere = [event("a", "oat milk latte"), event("b", "window seat")];
        elsewhere[0].app = "cafe".into();
        let elsewhere: Vec<&HistoryEvent> = elsewhere.iter().collect();
        assert!(
            !std::sync::Arc::ptr_eq(&first, &cache.index(&elsewhere)),
            "another app, another index"
        );
        assert!(std::sync::Arc::ptr_eq(&first, &cache.index(&r2)));
    }
}

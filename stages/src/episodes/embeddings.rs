//! Embedding retrieval for history exposure (KnowU-Bench's `rag_backend: embedding`): the
//! history events and the instruction are embedded through an OpenAI-compatible
//! `/v1/embeddings` endpoint and the `k` events nearest the instruction (cosine) are shown.
//! The calls go through the one model client ([`LlmClient::embed`]): recorded in the store under
//! `embeddings/` keyed by endpoint, model and input (never the API key), so a finished run
//! replays with no network; `--offline` makes a missing recording an error; provider faults are
//! retried by the client's one retry layer.

use prefflow_engine::store::Store;

use super::exposure::{Exposure, LogKind};
use crate::llm::{LlmClient, LlmConfig, LlmError};
use crate::world::history::HistoryEvent;

/// The role embedding calls are counted under in manifests and `prefflow show runs`.
pub const USAGE_ROLE: &str = "embedding";

/// An embeddings endpoint with record/replay.
pub struct Embedder<'a> {
    client: LlmClient<'a>,
}

impl<'a> Embedder<'a> {
    /// An embedder for `config` (`base_url` or `base_url_env`, `model`, `api_key_env`,
    /// `timeout_s`, `max_retries`, `backoff_ms`, `concurrency` are used).
    pub fn new(config: &LlmConfig, cache: &'a dyn Store, offline: bool) -> Result<Self, LlmError> {
        Ok(Self {
            client: LlmClient::new(config.clone(), cache, offline)?,
        })
    }

    /// This embedder with its calls counted in `meter` as role [`USAGE_ROLE`] (see
    /// [`LlmClient::metered`]).
    pub fn metered(mut self, meter: Option<&'a prefflow_engine::usage::UsageMeter>) -> Self {
        self.client = self.client.metered(meter, USAGE_ROLE);
        self
    }

    /// The `k` events of `pool` nearest `query`, in time order.
    pub async fn top_k<'e>(
        &self,
        pool: &[&'e HistoryEvent],
        query: &str,
        k: usize,
    ) -> Result<Vec<&'e HistoryEvent>, LlmError> {
        if pool.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let texts: Vec<String> = pool.iter().map(|e| e.text.clone()).collect();
        let vectors = self.embed(&texts).await?;
        let q = self.embed(&[query.to_string()]).await?;
        let q = q.first().ok_or_else(|| LlmError::Malformed {
            endpoint: self.client.config().model.clone(),
            detail: "no vector for the query".into(),
            excerpt: String::new(),
        })?;
        let mut order: Vec<(f64, usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (cosine(q, v), i))
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut top: Vec<&HistoryEvent> = order.iter().take(k).map(|(_, i)| pool[*i]).collect();
        top.sort_by(|a, b| a.time.cmp(&b.time).then(a.event_id.cmp(&b.event_id)));
        Ok(top)
    }

    /// One vector per text, replayed from the store when recorded.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f64>>, LlmError> {
        self.client.embed(texts).await
    }
}

/// The exposure of `top_k:N` / `rag:N` through embeddings: the log filter of
/// [`super::exposure::select`], then the `k` nearest events; other exposures are unchanged.
pub async fn select<'e>(
    embedder: &Embedder<'_>,
    history: &[&'e HistoryEvent],
    exposure: Exposure,
    log: LogKind,
    query: &str,
    indexes: &super::retrieval::IndexCache,
) -> Result<Vec<&'e HistoryEvent>, LlmError> {
    let Exposure::TopK(k) = exposure else {
        return Ok(super::exposure::select(
            history, exposure, log, query, indexes,
        ));
    };
    let pool = super::exposure::select(history, Exposure::All, log, query, indexes);
    embedder.top_k(&pool, query, k).await
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let d = norm(a) * norm(b);
    if d == 0.0 {
        0.0
    } else {
        dot / d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::mock::{Behavior, ScriptedServer};
    use crate::tasks::testkit::block_on;
    use crate::world::clock::DateTime;
    use crate::world::history::Label;
    use serde_json::{json, Value};

    fn event(id: &str, time: &str, text: &str) -> HistoryEvent {
        HistoryEvent {
            event_id: id.into(),
            time: DateTime::parse(time).unwrap(),
            utc_offset_minutes: None,
            app: String::new(),
            location: String::new(),
            text: text.into(),
            label: Label::Signal,
            category: String::new(),
            supports: Vec::new(),
            counters: Vec::new(),
        }
    }

    fn vectors(vs: &[[f64; 2]]) -> String {
        let data: Vec<Value> = vs
            .iter()
            .enumerate()
            .map(|(i, v)| json!({ "object": "embedding", "index": i, "embedding": v }))
            .collect();
        json!({ "object": "list", "data": data }).to_string()
    }

    fn config(url: &str) -> LlmConfig {
        serde_json::from_value(
            json!({ "base_url": url, "model": "emb", "max_retries": 2, "backoff_ms": 1 }),
        )
        .unwrap()
    }

    #[test]
    fn nearest_events_by_cosine_recorded_and_replayed() {
        let server = ScriptedServer::start(
            vec![
                Behavior::status(503),
                Behavior::ok(vectors(&[[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])),
                Behavior::ok(vectors(&[[0.1, 1.0]])),
            ],
            Behavior::status(500),
        );
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let cfg = config(&server.url);
        let evs = [
            event("a", "2026-01-01T09:00", "ordered ramen"),
            event("b", "2026-01-02T09:00", "took the subway"),
            event("c", "2026-01-03T09:00", "subway then ramen"),
        ];
        let pool: Vec<&HistoryEvent> = evs.iter().collect();
        let top = block_on(Embedder::new(&cfg, &store, false).unwrap().top_k(
            &pool,
            "how do I commute",
            2,
        ))
        .unwrap();
        let ids: Vec<&str> = top.iter().map(|e| e.event_id.as_str()).collect();
        assert_eq!(ids, ["b", "c"], "the two nearest the query, in time order");
        let seen = server.requests();
        assert_eq!(seen.len(), 3, "one retried 503, then pool and query");
        assert!(seen.iter().all(|r| r.path.ends_with("/v1/embeddings")));
        assert!(
            seen[1].body.contains("took the subway") && seen[2].body.contains("how do I commute")
        );
        // Replayed offline from the store: no more requests.
        let again = block_on(Embedder::new(&cfg, &store, true).unwrap().top_k(
            &pool,
            "how do I commute",
            2,
        ))
        .unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!(server.requests().len(), 3);
        // A query never recorded is an offline miss, not a call.
        let miss = block_on(Embedder::new(&cfg, &store, true).unwrap().top_k(
            &pool,
            "something else",
            2,
        ));
        assert!(
            matches!(miss, Err(LlmError::OfflineMiss { .. })),
            "{miss:?}"
        );
    }

    #[test]
    fn unusable_and_short_replies_are_retried_then_typed_errors() {
        let server = ScriptedServer::start(
            vec![Behavior::ok("{\"data\": 3}")],
            Behavior::ok(vectors(&[[1.0, 0.0]])),
        );
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let cfg = config(&server.url);
        let v = block_on(
            Embedder::new(&cfg, &store, false)
                .unwrap()
                .embed(&["x".into()]),
        )
        .unwrap();
        assert_eq!(v, [[1.0, 0.0]]);
        assert_eq!(server.requests().len(), 2, "the unusable body was retried");
        let e = block_on(
            Embedder::new(&cfg, &store, false)
                .unwrap()
                .embed(&["x".into(), "y".into()]),
        )
        .unwrap_err();
        assert!(
            matches!(e, LlmError::Exhausted { attempts: 3, .. })
                && e.to_string().contains("expected 2 embeddings"),
            "{e}"
        );
    }

    /// Embedding calls count like chat calls under role `embedding`: a live call is a request
    /// with the response's prompt tokens (0 when it reports none), a recorded one is replayed.
    #[test]
    fn embedding_calls_are_metered_live_and_replayed() {
        let server = ScriptedServer::start(vec![], Behavior::Embed);
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let cfg = config(&server.url);
        let meter = prefflow_engine::usage::UsageMeter::new();
        let texts = [
            "ordered ramen twice".to_string(),
            "took the subway".to_string(),
        ];
        let embed = |offline| {
            let embedder = Embedder::new(&cfg, &store, offline)
                .unwrap()
                .metered(Some(&meter));
            block_on(embedder.embed(&texts)).unwrap()
        };
        let live = embed(false);
        let counted = meter.snapshot().0[USAGE_ROLE]["emb"];
        assert_eq!((counted.requests, counted.replayed), (1, 0));
        assert_eq!(
            counted.prompt_tokens, 6,
            "the server's usage: one token per word"
        );
        assert_eq!(embed(false), live);
        assert_eq!(embed(true), live);
        let counted = meter.snapshot().0[USAGE_ROLE]["emb"];
        assert_eq!((counted.requests, counted.replayed), (1, 2));
        assert_eq!(counted.prompt_tokens, 6, "replays cost nothing");
        assert_eq!(server.requests().len(), 1);

        // A server that reports no usage: the request is counted, with no tokens.
        let bare = ScriptedServer::start(vec![], Behavior::ok(vectors(&[[1.0, 0.0]])));
        let meter = prefflow_engine::usage::UsageMeter::new();
        let embedder = Embedder::new(&config(&bare.url), &store, false)
            .unwrap()
            .metered(Some(&meter));
        block_on(embedder.embed(&["x".into()])).unwrap();
        let counted = meter.snapshot().0[USAGE_ROLE]["emb"];
        assert_eq!((counted.requests, counted.prompt_tokens), (1, 0));
    }
}

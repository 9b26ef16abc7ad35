//! Embedding retrieval for history exposure (KnowU-Bench's `rag_backend: embedding`): the
//! history events and the instruction are embedded through an OpenAI-compatible
//! `/v1/embeddings` endpoint and the `k` events nearest the instruction (cosine) are shown.
//! Requests are recorded in the store under `embeddings/` keyed by endpoint, model and input
//! (never the API key), so a finished run replays with no network; `--offline` makes a missing
//! recording an error. 429 / 5xx / connection failures are retried with doubling backoff.

use std::sync::OnceLock;
use std::time::Duration;

use prefflow_engine::keys::hash_json;
use prefflow_engine::store::Store;
use serde_json::{json, Value};

use crate::llm::{LlmConfig, LlmError};
use crate::world::history::HistoryEvent;

/// An embeddings endpoint with record/replay.
pub struct Embedder<'a> {
    config: &'a LlmConfig,
    endpoint: String,
    cache: &'a dyn Store,
    offline: bool,
}

impl<'a> Embedder<'a> {
    /// An embedder for `config` (`base_url`, `model`, `api_key_env`, `timeout_s`,
    /// `max_retries`, `backoff_ms` are used).
    pub fn new(config: &'a LlmConfig, cache: &'a dyn Store, offline: bool) -> Self {
        let endpoint = format!("{}/embeddings", config.base_url.trim_end_matches('/'));
        Self {
            config,
            endpoint,
            cache,
            offline,
        }
    }

    /// The `k` events of `pool` nearest `query`, in time order.
    pub fn top_k<'e>(
        &self,
        pool: &[&'e HistoryEvent],
        query: &str,
        k: usize,
    ) -> Result<Vec<&'e HistoryEvent>, LlmError> {
        if pool.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let texts: Vec<String> = pool.iter().map(|e| e.text.clone()).collect();
        let vectors = self.embed(&texts)?;
        let q = self.embed(&[query.to_string()])?;
        let q = q
            .first()
            .ok_or_else(|| self.malformed("no vector for the query", ""))?;
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
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f64>>, LlmError> {
        let body = json!({ "model": self.config.model, "input": texts });
        let key = hash_json(&json!({ "endpoint": self.endpoint, "body": body }));
        let path = format!("embeddings/{}/{key}.json", &key[..2]);
        let cached = self
            .cache
            .get(&path)
            .map_err(|e| LlmError::Cache(e.to_string()))?;
        if let Some(v) = cached.and_then(|b| serde_json::from_slice::<Vec<Vec<f64>>>(&b).ok()) {
            return Ok(v);
        }
        if self.offline {
            return Err(LlmError::OfflineMiss {
                model: self.config.model.clone(),
                key,
            });
        }
        let text = self.call(&body)?;
        let vectors = self.parse(&text, texts.len())?;
        let bytes = serde_json::to_vec(&vectors).map_err(|e| LlmError::Cache(e.to_string()))?;
        self.cache
            .put(&path, &bytes)
            .map_err(|e| LlmError::Cache(e.to_string()))?;
        Ok(vectors)
    }

    /// The live request with retries; the response body.
    fn call(&self, body: &Value) -> Result<String, LlmError> {
        let key = match &self.config.api_key_env {
            None => None,
            Some(var) => {
                Some(std::env::var(var).map_err(|_| LlmError::MissingKey { var: var.clone() })?)
            }
        };
        let mut last = String::new();
        for attempt in 0..=self.config.max_retries {
            let mut req = http(self.config.timeout_s).post(&self.endpoint).json(body);
            if let Some(k) = &key {
                req = req.bearer_auth(k);
            }
            match req.send() {
                Ok(resp) if resp.status().is_success() => {
                    return resp.text().map_err(|e| self.malformed(&e.to_string(), ""))
                }
                Ok(resp) if resp.status().as_u16() == 429 || resp.status().is_server_error() => {
                    last = format!("HTTP {}", resp.status().as_u16());
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.text().unwrap_or_default();
                    return Err(LlmError::Http {
                        endpoint: self.endpoint.clone(),
                        status,
                        body: text.chars().take(200).collect(),
                    });
                }
                Err(e) => last = e.to_string(),
            }
            if attempt < self.config.max_retries {
                let ms = self
                    .config
                    .backoff_ms
                    .saturating_mul(1u64 << attempt.min(16));
                std::thread::sleep(Duration::from_millis(ms).min(Duration::from_secs(60)));
            }
        }
        Err(LlmError::Exhausted {
            endpoint: self.endpoint.clone(),
            attempts: self.config.max_retries + 1,
            last,
        })
    }

    /// `{"data": [{"index": i, "embedding": [...]}, …]}` → vectors in input order.
    fn parse(&self, text: &str, n: usize) -> Result<Vec<Vec<f64>>, LlmError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| self.malformed(&e.to_string(), text))?;
        let data = v["data"]
            .as_array()
            .ok_or_else(|| self.malformed("no `data` list", text))?;
        let mut out = vec![Vec::new(); n];
        for (pos, item) in data.iter().enumerate() {
            let i = item["index"].as_u64().map_or(pos, |i| i as usize);
            let vector: Option<Vec<f64>> = item["embedding"]
                .as_array()
                .and_then(|a| a.iter().map(Value::as_f64).collect());
            match (out.get_mut(i), vector) {
                (Some(slot), Some(vec)) => *slot = vec,
                _ => return Err(self.malformed(&format!("bad item {pos}"), text)),
            }
        }
        if out.iter().any(Vec::is_empty) {
            return Err(self.malformed(&format!("expected {n} embeddings"), text));
        }
        Ok(out)
    }

    fn malformed(&self, detail: &str, body: &str) -> LlmError {
        LlmError::Malformed {
            endpoint: self.endpoint.clone(),
            detail: detail.to_string(),
            excerpt: body.chars().take(200).collect(),
        }
    }
}

/// The exposure of `top_k:N` / `rag:N` through embeddings: the log filter of
/// [`super::exposure::select`], then the `k` nearest events; other exposures are unchanged.
pub fn select<'e>(
    embedder: &Embedder<'_>,
    history: &[&'e HistoryEvent],
    exposure: super::Exposure,
    log: super::LogKind,
    query: &str,
) -> Result<Vec<&'e HistoryEvent>, LlmError> {
    let super::Exposure::TopK(k) = exposure else {
        return Ok(super::exposure::select(history, exposure, log, query));
    };
    let pool = super::exposure::select(history, super::Exposure::All, log, query);
    embedder.top_k(&pool, query, k)
}

/// One blocking client for the process (the first caller's timeout): clients are costly to
/// build and share their connection pool.
fn http(timeout_s: f64) -> &'static reqwest::blocking::Client {
    static CLIENT: OnceLock<reqwest::blocking::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs_f64(timeout_s.max(0.001)))
            .build()
            .unwrap_or_default()
    })
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
    use crate::world::clock::DateTime;
    use crate::world::history::Label;

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
        let top = Embedder::new(&cfg, &store, false)
            .top_k(&pool, "how do I commute", 2)
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
        let again = Embedder::new(&cfg, &store, true)
            .top_k(&pool, "how do I commute", 2)
            .unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!(server.requests().len(), 3);
        // A query never recorded is an offline miss, not a call.
        let miss = Embedder::new(&cfg, &store, true).top_k(&pool, "something else", 2);
        assert!(
            matches!(miss, Err(LlmError::OfflineMiss { .. })),
            "{miss:?}"
        );
    }

    #[test]
    fn malformed_and_short_replies_are_typed_errors() {
        let server = ScriptedServer::start(
            vec![Behavior::ok("{\"data\": 3}")],
            Behavior::ok(vectors(&[[1.0, 0.0]])),
        );
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let cfg = config(&server.url);
        let e = Embedder::new(&cfg, &store, false)
            .embed(&["x".into()])
            .unwrap_err();
        assert!(e.to_string().contains("no `data` list"), "{e}");
        let e = Embedder::new(&cfg, &store, false)
            .embed(&["x".into(), "y".into()])
            .unwrap_err();
        assert!(e.to_string().contains("expected 2 embeddings"), "{e}");
    }
}

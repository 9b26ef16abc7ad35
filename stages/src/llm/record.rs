//! How answered chat requests are recorded in the store, so runs replay them: compressed, with
//! the parts many requests share stored once.
//!
//! An agent request carries the whole conversation so far, and under `history: all` its system
//! prompt holds the user's whole activity log (~340 KB) — the same text in every request of
//! every episode. Recording each body as it is sent took ~170 MB per model and epoch of
//! iPrefBench. Here a record is `llm/<k2>/<key>.zst`: zstd-compressed JSON `{"v": 2, "request":
//! …, "reply": …}` in which every long message content and the tool list (≥ [`PART_MIN`] bytes)
//! is replaced by `{"$part": "<hash>"}` (`{"$json": …}` for the tools), the text itself stored once, content-addressed and
//! compressed, at `llm/parts/<h2>/<hash>.zst`. A replay reads only the record (the reply); the
//! request can be rebuilt whole from its parts ([`request`]). Records written before this format
//! (`llm/<k2>/<key>.json`, plain JSON) are still read. The record's key is the hash of the body
//! as sent (see the client), so the format changes no key.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use prefflow_engine::keys::hash_bytes;
use prefflow_engine::store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::LlmError;
use super::types::Reply;

/// Strings (message contents) and tool lists at least this long are stored once as parts.
pub const PART_MIN: usize = 1024;

/// zstd level of records and parts: fast, and still ~5× on prompts.
const LEVEL: i32 = 3;

/// Where the record of request `key` is.
pub fn record_path(key: &str) -> String {
    format!("llm/{}/{key}.zst", &key[..2.min(key.len())])
}

/// Where records were written before this format.
fn legacy_path(key: &str) -> String {
    format!("llm/{}/{key}.json", &key[..2.min(key.len())])
}

fn part_path(hash: &str) -> String {
    format!("llm/parts/{}/{hash}.zst", &hash[..2.min(hash.len())])
}

fn cache_error(e: impl std::fmt::Display) -> LlmError {
    LlmError::Cache(e.to_string())
}

/// The parts this process has stored or seen stored (by store and hash), so a shared prefix
/// costs one compression and write per process, not one per request.
fn known_parts() -> &'static Mutex<HashSet<(String, String)>> {
    static KNOWN: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    KNOWN.get_or_init(Mutex::default)
}

/// Stores `bytes` as a part (unless it is there) and returns its reference: `{"$part": hash}`
/// for a message's text, `{"$json": hash}` for a JSON value (the tool list).
fn put_part(cache: &dyn Store, bytes: &[u8], json: bool) -> Result<Value, LlmError> {
    let hash = hash_bytes(bytes);
    // Keyed by where the store is, not by the object: another store of the same process (a
    // test's) must get its own copy.
    let known = (cache.describe(), hash.clone());
    let lock = || known_parts().lock().unwrap_or_else(|p| p.into_inner());
    if !lock().contains(&known) {
        let packed = zstd::encode_all(bytes, LEVEL).map_err(cache_error)?;
        cache
            .put_content(&part_path(&hash), &packed)
            .map_err(cache_error)?;
        lock().insert(known);
    }
    Ok(if json {
        json!({ "$json": hash })
    } else {
        json!({ "$part": hash })
    })
}

/// The body with its long message contents and its tool list replaced by part references.
fn split(cache: &dyn Store, body: &[u8]) -> Result<Value, LlmError> {
    let mut body: Value = serde_json::from_slice(body).map_err(cache_error)?;
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages {
            let Some(content) = message.get_mut("content") else {
                continue;
            };
            if let Some(text) = content.as_str().filter(|t| t.len() >= PART_MIN) {
                *content = put_part(cache, text.as_bytes(), false)?;
            }
        }
    }
    if let Some(tools) = body.get_mut("tools") {
        let text = serde_json::to_vec(tools).map_err(cache_error)?;
        if text.len() >= PART_MIN {
            *tools = put_part(cache, &text, true)?;
        }
    }
    Ok(body)
}

/// The record of one exchange, in the current format.
#[derive(Serialize)]
struct Record<'a> {
    v: u32,
    request: Value,
    reply: &'a Reply,
}

/// A record as read: only the reply matters for a replay.
#[derive(Deserialize)]
struct Stored {
    reply: Reply,
}

/// Records the exchange of `key`: the request `body` (as sent) and the `reply`.
pub fn store(cache: &dyn Store, key: &str, body: &[u8], reply: &Reply) -> Result<(), LlmError> {
    let record = Record {
        v: 2,
        request: split(cache, body)?,
        reply,
    };
    let json = serde_json::to_vec(&record).map_err(cache_error)?;
    let packed = zstd::encode_all(json.as_slice(), LEVEL).map_err(cache_error)?;
    cache.put(&record_path(key), &packed).map_err(cache_error)
}

/// The recorded reply of `key`, in either format; `None` when there is none (an unreadable
/// record counts as none and is recorded again).
pub fn load(cache: &dyn Store, key: &str) -> Result<Option<Reply>, LlmError> {
    if let Some(packed) = cache.get(&record_path(key)).map_err(cache_error)? {
        let json = zstd::decode_all(packed.as_slice()).ok();
        if let Some(stored) = json.and_then(|j| serde_json::from_slice::<Stored>(&j).ok()) {
            return Ok(Some(stored.reply));
        }
    }
    Ok(cache
        .get(&legacy_path(key))
        .map_err(cache_error)?
        .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
        .map(|s| s.reply))
}

/// Whether a reply to `key` is recorded (in either format).
pub fn exists(cache: &dyn Store, key: &str) -> bool {
    cache.exists(&record_path(key)).unwrap_or(false)
        || cache.exists(&legacy_path(key)).unwrap_or(false)
}

/// The recorded request of `key` as it was sent, its parts put back; `None` when not recorded
/// in the current format or a part is missing.
pub fn request(cache: &dyn Store, key: &str) -> Result<Option<Value>, LlmError> {
    let Some(packed) = cache.get(&record_path(key)).map_err(cache_error)? else {
        return Ok(None);
    };
    let json = zstd::decode_all(packed.as_slice()).map_err(cache_error)?;
    let mut record: Value = serde_json::from_slice(&json).map_err(cache_error)?;
    let Some(mut request) = record.get_mut("request").map(Value::take) else {
        return Ok(None);
    };
    if resolve(cache, &mut request)? {
        Ok(Some(request))
    } else {
        Ok(None)
    }
}

/// Replaces every part reference in `v` by its content; false when a part is missing.
fn resolve(cache: &dyn Store, v: &mut Value) -> Result<bool, LlmError> {
    let reference = ["$part", "$json"]
        .into_iter()
        .find_map(|k| Some((k, v.get(k)?.as_str()?.to_string())));
    if let Some((kind, hash)) = reference {
        let Some(packed) = cache.get(&part_path(&hash)).map_err(cache_error)? else {
            return Ok(false);
        };
        let bytes = zstd::decode_all(packed.as_slice()).map_err(cache_error)?;
        *v = if kind == "$json" {
            serde_json::from_slice(&bytes).map_err(cache_error)?
        } else {
            Value::String(String::from_utf8(bytes).map_err(cache_error)?)
        };
        return Ok(true);
    }
    match v {
        Value::Array(items) => {
            for item in items {
                if !resolve(cache, item)? {
                    return Ok(false);
                }
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                if !resolve(cache, item)? {
                    return Ok(false);
                }
            }
        }
        _ => {}
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;
    use prefflow_engine::store::FsStore;

    fn reply(text: &str) -> Reply {
        Reply {
            content: Some(text.into()),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 5,
                cached_prompt_tokens: 64,
            },
            from_cache: false,
            attempts: 0,
            cache_key: String::new(),
        }
    }

    /// Many requests sharing a long system prompt store it once; each record is small; replies
    /// and whole requests come back as they were; old plain-JSON records still replay.
    #[test]
    fn the_shared_prefix_is_stored_once_and_every_request_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FsStore::new(dir.path());
        let log: String = (0..3000)
            .map(|i| {
                format!(
                    "- 2025-09-{:02} [app] event {i} happened somewhere\n",
                    i % 28 + 1
                )
            })
            .collect();
        let tools = json!([{ "type": "function", "function": { "name": "x", "description": "d".repeat(2000) } }]);
        let mut bodies = Vec::new();
        for task in 0..20 {
            let body = json!({
                "model": "m",
                "messages": [
                    { "role": "system", "content": log },
                    { "role": "user", "content": format!("Request: task {task}") },
                ],
                "tools": tools,
            });
            let bytes = serde_json::to_vec(&body).unwrap();
            let key = hash_bytes(&bytes);
            store(&fs, &key, &bytes, &reply(&format!("r{task}"))).unwrap();
            bodies.push((key, body, bytes.len()));
        }
        let size =
            |prefix: &str| -> u64 { fs.list_meta(prefix).unwrap().iter().map(|m| m.size).sum() };
        let parts = fs.list("llm/parts").unwrap();
        assert_eq!(
            parts.len(),
            2,
            "the log and the tool list, once each: {parts:?}"
        );
        let sent: usize = bodies.iter().map(|b| b.2).sum();
        let kept = size("llm");
        assert!(
            kept * 50 < sent as u64,
            "{kept} bytes kept for {sent} bytes sent"
        );
        for (i, (key, body, _)) in bodies.iter().enumerate() {
            let back = load(&fs, key).unwrap().unwrap();
            assert_eq!(back.content.as_deref(), Some(format!("r{i}").as_str()));
            assert_eq!(back.usage.cached_prompt_tokens, 64);
            assert_eq!(&request(&fs, key).unwrap().unwrap(), body);
            assert!(exists(&fs, key));
        }
        // A record of the earlier format.
        let old = json!({ "request": { "model": "m" }, "reply": reply("old") });
        fs.put(&legacy_path("abcdef"), &serde_json::to_vec(&old).unwrap())
            .unwrap();
        assert_eq!(
            load(&fs, "abcdef").unwrap().unwrap().content.as_deref(),
            Some("old")
        );
        assert!(load(&fs, "abcdee").unwrap().is_none());
    }
}

//! History exposure: which of the user's history events an agent is shown. `all` shows the whole
//! log, `top_k:N` the N events most relevant to the instruction (BM25), `none` nothing; the log
//! is `noisy` (as recorded) or `clean` (signal events only). The ids actually shown are logged
//! per episode so ablations can be audited.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::retrieval::{Bm25, IndexCache};
use crate::world::history::{HistoryEvent, Label};

/// How much history the agent sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Exposure {
    /// Every event.
    #[default]
    All,
    /// The N most relevant events.
    TopK(usize),
    /// No history.
    None,
}

impl FromStr for Exposure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "all" => Ok(Exposure::All),
            "none" => Ok(Exposure::None),
            // KnowU's memory modes: `rag` is retrieval of the 10 most relevant events.
            "rag" => Ok(Exposure::TopK(10)),
            other => other
                .strip_prefix("top_k:")
                .or_else(|| other.strip_prefix("rag:"))
                .and_then(|n| n.trim().parse().ok())
                .map(Exposure::TopK)
                .ok_or_else(|| format!("history exposure `{s}` is not `all`, `none`, `top_k:N` or `rag[:N]` (e.g. `top_k:10`)")),
        }
    }
}

impl TryFrom<String> for Exposure {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Exposure> for String {
    fn from(e: Exposure) -> String {
        e.to_string()
    }
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exposure::All => f.write_str("all"),
            Exposure::TopK(k) => write!(f, "top_k:{k}"),
            Exposure::None => f.write_str("none"),
        }
    }
}

/// Which log the exposure draws from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    /// The log as recorded, noise included.
    #[default]
    Noisy,
    /// Signal events only.
    Clean,
}

/// An episode's whole history in time order: the world's events and those its task's
/// overrides add (`extra`).
pub fn episode_history<'a>(
    world: &'a crate::world::World,
    extra: &'a [HistoryEvent],
) -> Vec<&'a HistoryEvent> {
    let mut history: Vec<&HistoryEvent> = world.history.iter().chain(extra).collect();
    history.sort_by_key(|e| e.time);
    history
}

/// The events of `history` an agent is shown for `query`, in time order.
pub fn select<'a>(
    history: &[&'a HistoryEvent],
    exposure: Exposure,
    log: LogKind,
    query: &str,
    indexes: &IndexCache,
) -> Vec<&'a HistoryEvent> {
    let pool: Vec<&HistoryEvent> = history
        .iter()
        .copied()
        .filter(|e| log == LogKind::Noisy || e.label == Label::Signal)
        .collect();
    match exposure {
        Exposure::All => pool,
        Exposure::None => Vec::new(),
        Exposure::TopK(k) => {
            let ix = Bm25::cached(&pool, indexes);
            let mut top = ix.top_k(query, k);
            top.sort_by(|a, b| a.time.cmp(&b.time).then(a.event_id.cmp(&b.event_id)));
            top
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_spellings_parse_and_print_back() {
        for s in ["all", "none", "top_k:10", "top_k:0"] {
            assert_eq!(s.parse::<Exposure>().unwrap().to_string(), s);
        }
        let e = "top_k:ten".parse::<Exposure>().unwrap_err();
        assert!(e.contains("top_k:N"), "{e}");
        assert!("some".parse::<Exposure>().is_err());
        assert_eq!("rag".parse::<Exposure>().unwrap(), Exposure::TopK(10));
        assert_eq!("rag:5".parse::<Exposure>().unwrap(), Exposure::TopK(5));
    }
}

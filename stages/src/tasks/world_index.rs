//! Lookups over the world that task generation and validation need: which app each history
//! event happened in, and which events support each profile entry.

use std::collections::HashMap;

use super::model::{Slot, Source};
use crate::world::history::HistoryEvent;
use crate::world::World;

/// The world plus indexes over its history.
pub struct WorldIndex<'w> {
    /// The world.
    pub world: &'w World,
    event_app: HashMap<&'w str, &'w str>,
    support: HashMap<&'w str, Vec<&'w str>>,
}

impl<'w> WorldIndex<'w> {
    /// Indexes `world`'s history.
    pub fn new(world: &'w World) -> Self {
        let mut event_app = HashMap::with_capacity(world.history.len());
        let mut support: HashMap<&str, Vec<&str>> = HashMap::new();
        for e in &world.history {
            event_app.insert(e.event_id.as_str(), e.app.as_str());
            for s in &e.supports {
                support
                    .entry(s.as_str())
                    .or_default()
                    .push(e.event_id.as_str());
            }
        }
        Self {
            world,
            event_app,
            support,
        }
    }

    /// Ids of the history events supporting a profile entry, in time order, followed by those of
    /// `extra` events (a task's override history).
    pub fn evidence(&self, entry: &str, extra: &[HistoryEvent]) -> Vec<String> {
        let mut ids: Vec<String> = self
            .support
            .get(entry)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        ids.extend(
            extra
                .iter()
                .filter(|e| e.supports.iter().any(|s| s == entry))
                .map(|e| e.event_id.clone()),
        );
        ids
    }

    /// The app an event happened in, looking in `extra` (override events) too.
    pub fn event_app<'a>(&'a self, id: &str, extra: &'a [HistoryEvent]) -> Option<&'a str> {
        self.event_app.get(id).copied().or_else(|| {
            extra
                .iter()
                .find(|e| e.event_id == id)
                .map(|e| e.app.as_str())
        })
    }

    /// True when some inferable slot is evidenced only in apps the task does not use: the
    /// preference must transfer across apps (iPrefBench D.2).
    pub fn cross_app(&self, extra: &[HistoryEvent], apps: &[String], slots: &[Slot]) -> bool {
        slots
            .iter()
            .filter(|s| s.source == Source::Inferable && !s.evidence.is_empty())
            .any(|s| {
                s.evidence.iter().all(|e| {
                    self.event_app(e, extra)
                        .is_some_and(|a| !apps.iter().any(|x| x == a))
                })
            })
    }
}

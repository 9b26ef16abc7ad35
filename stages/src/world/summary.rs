//! A compact description of a world (counts per app, month, dimension and label), for
//! `prefflow show world.*` and for eyeballing a build.

use std::collections::BTreeMap;
use std::fmt;

use polars::prelude::DataFrame;
use serde::Serialize;

use super::assemble::World;
use super::history::{HistoryEvent, Label};
use super::persona::ProfileEntry;
use crate::tables::world::SummaryRow;

/// Counts that describe a world.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorldSummary {
    /// Number of apps.
    pub apps: usize,
    /// Seed records over all apps.
    pub records: usize,
    /// Seed records per app.
    pub records_per_app: BTreeMap<String, usize>,
    /// History events.
    pub events: usize,
    /// Signal events.
    pub signal: usize,
    /// Noise events.
    pub noise: usize,
    /// Events per app.
    pub events_per_app: BTreeMap<String, usize>,
    /// Events per month (`YYYY-MM`).
    pub events_per_month: BTreeMap<String, usize>,
    /// Profile entries.
    pub entries: usize,
    /// Profile entries per dimension.
    pub entries_per_dimension: BTreeMap<String, usize>,
    /// Ask-only situational facts.
    pub situational: usize,
}

/// Summarizes a built world.
pub fn summary(world: &World) -> WorldSummary {
    let mut s = summarize(&world.persona.profile, &world.history);
    s.apps = world.catalog.apps.len();
    s.records = world.catalog.record_count();
    s.records_per_app = world
        .catalog
        .apps
        .iter()
        .map(|a| (a.id.clone(), a.tables.iter().map(|t| t.records.len()).sum()))
        .collect();
    s.situational = world.persona.situational.len();
    s
}

/// Summarizes profile entries and history alone (e.g. an imported KnowU persona).
pub fn summarize(entries: &[ProfileEntry], history: &[HistoryEvent]) -> WorldSummary {
    let mut s = WorldSummary {
        events: history.len(),
        entries: entries.len(),
        ..WorldSummary::default()
    };
    for e in history {
        *s.events_per_app.entry(e.app.clone()).or_default() += 1;
        *s.events_per_month
            .entry(e.time.date.month_key())
            .or_default() += 1;
        match e.label {
            Label::Signal => s.signal += 1,
            Label::Noise => s.noise += 1,
        }
    }
    for e in entries {
        *s.entries_per_dimension
            .entry(e.dimension.clone())
            .or_default() += 1;
    }
    s
}

fn write_counts(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    m: &BTreeMap<String, usize>,
) -> fmt::Result {
    write!(f, "\n{title}:")?;
    for (k, v) in m {
        write!(f, "\n  {k:<16} {v:>5}")?;
    }
    Ok(())
}

impl fmt::Display for WorldSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "apps: {}   records: {}   events: {} (signal {}, noise {})   profile entries: {}   situational facts: {}", self.apps, self.records, self.events, self.signal, self.noise, self.entries, self.situational)?;
        write_counts(f, "entries per dimension", &self.entries_per_dimension)?;
        write_counts(f, "events per month", &self.events_per_month)?;
        write_counts(f, "events per app", &self.events_per_app)?;
        write_counts(f, "records per app", &self.records_per_app)
    }
}

/// Renders a `summary` table (columns `section`, `key`, `count`, as `build_world` and
/// `import_persona` write it) as grouped text like the papers' statistics tables, so
/// `prefflow show world.summary` reads at a glance. `None` when the columns do not fit.
pub fn render_table(df: &DataFrame) -> Option<String> {
    let rows = SummaryRow::from_frame(df).ok()?;
    let mut out = String::new();
    let mut current = None;
    for row in &rows {
        let s = row.section.as_str();
        if current != Some(s) {
            out.push_str(&format!("{}:\n", s.replace('_', " ")));
            current = Some(s);
        }
        out.push_str(&format!("  {:<24} {:>6}\n", row.key, row.count));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::dataset_tests::default_world;

    #[test]
    fn summary_counts_add_up() {
        let s = summary(default_world());
        assert_eq!((s.apps, s.events, s.signal + s.noise), (26, 3051, 3051));
        assert_eq!(s.noise, 610);
        assert_eq!(s.events_per_app.values().sum::<usize>(), 3051);
        assert_eq!(s.events_per_month.len(), 7);
        assert_eq!(s.entries_per_dimension.len(), 13);
        assert_eq!(s.records_per_app.values().sum::<usize>(), s.records);
        let text = s.to_string();
        assert!(
            text.contains("events per month:") && text.contains("2025-03"),
            "{text}"
        );
    }

    #[test]
    fn summary_tables_render_grouped_and_other_tables_do_not() {
        let row = |section: &str, key: &str, count: u64| SummaryRow {
            section: section.into(),
            key: key.into(),
            count,
        };
        let df = SummaryRow::to_frame(&[
            row("total", "apps", 26),
            row("total", "events", 3051),
            row("events_per_month", "2025-03", 400),
        ])
        .unwrap();
        let text = render_table(&df).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "total:");
        assert!(lines[2].starts_with("  events") && lines[2].ends_with("3051"));
        assert_eq!(lines[3], "events per month:");
        assert_eq!(lines.len(), 5);
        let other = polars::df!("a" => [1u64]).unwrap();
        assert!(render_table(&other).is_none());
    }
}

//! `prefflow bench world`: the world's performance figures (issue 3) — building the default
//! world, tool-mode step throughput on one core, and the cost of starting an episode's overlay
//! as a function of its overrides (O(changes), not O(world)).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prefflow_stages::world::phone::{Action, DataEdit, EpisodeConfig, NoUser, Overrides, Phone};
use prefflow_stages::world::{tables, HistoryParams, World};
use serde_json::{json, Map, Value};

use crate::bench::Figure;

/// Measures the world figures on the datasets under `datasets` (usually `./datasets`).
pub fn world(datasets: &Path) -> Result<Vec<Figure>> {
    let apps = datasets.join("apps");
    let persona = datasets.join("personas/maya.yaml");
    let build = |events| {
        let params = HistoryParams {
            events,
            ..HistoryParams::default()
        };
        World::build(&apps, &persona, &params)
            .with_context(|| format!("building the world from {}", datasets.display()))
    };
    let world = build(3051)?;
    let build_time = median(10, || {
        build(3051).and_then(|w| Ok(tables::history_events(&w.history)?.height()))
    });
    let mut figures = vec![Figure {
        name: "build_world, 3,051 events (load + validate 26 apps and the persona, synthesize, history table)".into(),
        value: format!("{:.0} ms (median of 10)", ms(build_time)),
        target: "< 1 s".into(),
    }];
    figures.push(tool_steps(&world)?);
    figures.extend(overlays(&world, &tenfold(&world))?);
    Ok(figures)
}

/// The default world with its history repeated ten times (30,510 events, fresh ids): episode
/// start is measured against world size, and the synthesis cannot draw 30,510 events from the
/// persona's templates any more (one-off acts are told once, records bought once).
fn tenfold(world: &World) -> World {
    let history = (0..10)
        .flat_map(|copy| {
            world.history.iter().map(move |event| {
                let mut event = event.clone();
                event.event_id = format!("{}_{copy}", event.event_id);
                event
            })
        })
        .collect();
    World::new(world.catalog.clone(), world.persona.clone(), history)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// A mix of writes with cross-app effects and reads, in episodes of 50 steps, on this thread.
fn tool_steps(world: &World) -> Result<Figure> {
    let calls: Vec<Action> = [
        ("dinespot.book_table", json!({ "restaurant": "baan-thai", "date": "2025-10-03", "time": "19:30", "seating": "patio" })),
        ("dashbite.place_order", json!({ "dish": "d-green-curry", "spice": "hot" })),
        ("notes.create_note", json!({ "title": "bench" })),
        ("settings.set_theme", json!({ "theme": "dark" })),
        ("dinespot.get_restaurants", json!({ "id": "lucca-osteria" })),
        ("calendar.create_event", json!({ "title": "Focus block", "date": "2025-10-07" })),
        ("clock.set_alarm", json!({ "time": "06:45", "repeat": "weekdays" })),
        ("dinespot.list_restaurants", json!({ "where": { "cuisine": "thai" } })),
    ]
    .into_iter()
    .map(|(t, a)| Action::Call { tool: t.into(), args: args(a) })
    .collect();
    let steps = 200_000;
    let mut errors = 0;
    let start = Instant::now();
    let mut phone = Phone::new(world, EpisodeConfig::default(), Box::new(NoUser))?;
    for i in 0..steps {
        if i % 50 == 0 {
            phone = Phone::new(world, EpisodeConfig::default(), Box::new(NoUser))?;
        }
        errors += usize::from(black_box(phone.step(&calls[i % calls.len()])).is_error());
    }
    let seconds = start.elapsed().as_secs_f64();
    anyhow::ensure!(errors == 0, "{errors} of the benchmark's tool calls failed");
    Ok(Figure {
        name: format!("tools mode, {steps} steps on one thread (8-call mix incl. booking + calendar, episodes of 50)"),
        value: format!("{:.0} steps/s", steps as f64 / seconds),
        target: "≥ 100,000 steps/s".into(),
    })
}

/// `n` inserted notes, as a task override.
fn edits(n: usize) -> EpisodeConfig {
    let app_data = (0..n)
        .map(|i| DataEdit::Insert {
            table: "notes.notes".into(),
            id: format!("bench-{i}"),
            values: args(
                json!({ "title": "x", "folder": "fo-personal", "updated": "2025-09-01T10:00" }),
            ),
        })
        .collect();
    EpisodeConfig {
        overrides: Overrides {
            app_data,
            ..Overrides::default()
        },
        ..EpisodeConfig::default()
    }
}

/// Episode start time against override count and against world size.
fn overlays(world: &World, big: &World) -> Result<Vec<Figure>> {
    let start = |w: &World, n: usize| -> Result<Duration> {
        let config = edits(n);
        Phone::new(w, config.clone(), Box::new(NoUser))?;
        Ok(median(2001, || {
            Phone::new(w, config.clone(), Box::new(NoUser)).is_ok()
        }))
    };
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut by_changes = Vec::new();
    for n in [0, 10, 100, 1000] {
        by_changes.push(format!("{n}: {:.1} µs", us(start(world, n)?)));
    }
    Ok(vec![
        Figure {
            name: "episode start (Phone::new) by override count, 3,051-event world".into(),
            value: by_changes.join(", "),
            target: "O(changes)".into(),
        },
        Figure {
            name: "episode start, no overrides: 3,051- vs 30,510-event world".into(),
            value: format!(
                "{:.1} µs vs {:.1} µs",
                us(start(world, 0)?),
                us(start(big, 0)?)
            ),
            target: "independent of world size".into(),
        },
    ])
}

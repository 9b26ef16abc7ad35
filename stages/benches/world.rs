//! Speed of the world library, measured (never asserted): `cargo bench -p prefflow-stages --bench
//! world`. Prints loading, history synthesis, overlay creation, tool-mode and GUI step rates, and
//! table conversion times for the default world.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use prefflow_stages::world::history::{synthesize, HistoryParams};
use prefflow_stages::world::phone::{Action, ActionSpace, EpisodeConfig, NoUser, Phone, Status};
use prefflow_stages::world::{tables, Catalog, Persona, World};
use serde_json::{json, Map, Value};

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Runs the sections whose name contains the first non-flag argument (all when none is given),
/// e.g. `cargo bench -p prefflow-stages --bench world -- tools`.
fn main() {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_default();
    let on = |name: &str| name.contains(filter.as_str());
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../datasets");
    let (apps, persona) = (d.join("apps"), d.join("personas/maya.yaml"));
    let world = World::build(&apps, &persona, &HistoryParams::default()).expect("world builds");
    if on("load") {
        load_and_synthesize(&apps, &persona, &world);
    }
    if on("tools") {
        tool_steps(&world);
    }
    if on("gui") {
        gui_steps(&world);
    }
    if on("tables") {
        table_times(&world);
    }
}

fn load_and_synthesize(apps: &std::path::Path, persona: &std::path::Path, world: &World) {
    let load = time(20, || {
        let cat = Catalog::load_dir(apps).expect("apps load");
        Persona::load(persona, &cat).expect("persona loads")
    });
    println!("load 26 apps + persona (validated):   {load:>10.2?}");
    let synth = time(20, || {
        synthesize(&world.catalog, &world.persona, &HistoryParams::default()).expect("synthesizes")
    });
    println!("synthesize 3,051 history events:       {synth:>10.2?}");
    let new = time(1000, || {
        Phone::new(world, EpisodeConfig::default(), Box::new(NoUser)).map(|p| p.is_finished())
    });
    println!("Phone::new (empty overlay):            {new:>10.2?}");
}

fn table_times(world: &World) {
    for (name, secs) in [
        (
            "profile_entries",
            time(20, || tables::profile_entries(world).map(|t| t.height())).as_secs_f64(),
        ),
        (
            "history_events",
            time(20, || {
                tables::history_events(&world.history).map(|t| t.height())
            })
            .as_secs_f64(),
        ),
        (
            "app_records",
            time(20, || {
                tables::app_records(&world.catalog).map(|t| t.height())
            })
            .as_secs_f64(),
        ),
    ] {
        println!(
            "table {name:<16}                  {:>10.2?}",
            Duration::from_secs_f64(secs)
        );
    }
}

/// A mix of writes (booking with cross-app effects, an order paying via Wallet, a note, a
/// setting) and reads, in episodes of 50 steps each.
fn tool_steps(world: &World) {
    let calls: Vec<Action> = [
        ("dinespot.book_table", json!({ "restaurant": "baan-thai", "date": "2025-10-03", "time": "19:30", "seating": "patio" })),
        ("dashbite.place_order", json!({ "dish": "d-green-curry", "spice": "hot" })),
        ("notes.create_note", json!({ "title": "bench" })),
        ("settings.set_theme", json!({ "theme": "dark" })),
        ("dinespot.get_restaurants", json!({ "id": "lucca-osteria" })),
        ("skyway.book_flight", json!({ "flight": "fl-as1211", "seat": "window", "bags": 0 })),
        ("calendar.create_event", json!({ "title": "Focus block", "date": "2025-10-07" })),
        ("clock.set_alarm", json!({ "time": "06:45", "repeat": "weekdays" })),
    ]
    .into_iter()
    .map(|(t, a)| Action::Call { tool: t.into(), args: args(a) })
    .collect();
    let steps = 200_000;
    let start = Instant::now();
    let mut phone = Phone::new(world, EpisodeConfig::default(), Box::new(NoUser)).expect("phone");
    for i in 0..steps {
        if i % 50 == 0 {
            phone = Phone::new(world, EpisodeConfig::default(), Box::new(NoUser)).expect("phone");
        }
        let o = phone.step(&calls[i % calls.len()]);
        debug_assert_eq!(o.status, Status::Ok);
        black_box(o);
    }
    let e = start.elapsed();
    println!(
        "tools mode: {steps} steps (episodes of 50) {e:>10.2?}  = {:>9.0} steps/s",
        steps as f64 / e.as_secs_f64()
    );
    let long = 20_000;
    let start = Instant::now();
    let mut phone = Phone::new(world, EpisodeConfig::default(), Box::new(NoUser)).expect("phone");
    for i in 0..long {
        black_box(phone.step(&calls[i % calls.len()]));
    }
    let e = start.elapsed();
    println!(
        "tools mode: one {long}-step episode     {e:>10.2?}  = {:>9.0} steps/s",
        long as f64 / e.as_secs_f64()
    );
}

/// Open an app, a list, a record, a form, edit, submit, dismiss — repeated.
fn gui_steps(world: &World) {
    let config = EpisodeConfig {
        space: ActionSpace::Gui,
        ..EpisodeConfig::default()
    };
    let script = [
        Action::OpenApp {
            app: "dinespot".into(),
        },
        Action::Tap { element: 1 },
        Action::Tap { element: 1 },
        Action::Tap { element: 1 },
        Action::Type {
            element: 2,
            text: "2025-10-03".into(),
        },
        Action::Select {
            element: 5,
            option: "patio".into(),
        },
        Action::Tap { element: 8 },
        Action::Tap { element: 1 },
        Action::Home,
    ];
    let rounds = 5_000;
    let start = Instant::now();
    for _ in 0..rounds / 10 {
        let mut phone = Phone::new(world, config.clone(), Box::new(NoUser)).expect("phone");
        for _ in 0..10 {
            for a in &script {
                let o = phone.step(a);
                debug_assert_eq!(o.status, Status::Ok, "{a:?}: {}", o.text);
                black_box(o);
            }
        }
    }
    let e = start.elapsed();
    let steps = rounds * script.len();
    println!(
        "gui mode:   {steps} steps                  {e:>10.2?}  = {:>9.0} steps/s",
        steps as f64 / e.as_secs_f64()
    );
}

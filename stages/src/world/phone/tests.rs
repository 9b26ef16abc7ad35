//! Phone tests on the default world: tool calls, GUI flows, invalid actions, overrides, diffs.

use serde_json::{json, Map, Value};

use super::*;
use crate::world::dataset_tests::default_world;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn tools_phone() -> Phone<'static> {
    Phone::new(default_world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap()
}

fn call(p: &mut Phone, tool: &str, a: Value) -> Observation {
    p.step(&Action::Call {
        tool: tool.into(),
        args: args(a),
    })
}

#[test]
fn silent_defaults_are_submitted_and_cross_app_effects_apply() {
    let mut p = tools_phone();
    let o = call(
        &mut p,
        "dinespot.book_table",
        json!({ "restaurant": "baan-thai", "date": "2025-10-03" }),
    );
    assert_eq!(o.status, Status::Ok, "{}", o.text);
    let d = p.diff();
    let res = d.table("dinespot", "reservations").unwrap();
    assert_eq!(res.inserted.len(), 1);
    let r = &res.inserted[0];
    assert_eq!(
        (
            r["party_size"].clone(),
            r["seating"].clone(),
            r["time"].clone()
        ),
        (json!(2), json!("indoor"), json!("19:00"))
    );
    let ev = &d.table("calendar", "events").unwrap().inserted[0];
    assert_eq!(ev["title"], json!("Dinner at Baan Thai"));
    assert_eq!(ev["location"], json!("1235 9th Ave"));
    assert_eq!(p.operations()[0].args["party_size"], json!(2));
    // The world itself is untouched.
    assert_eq!(
        default_world()
            .catalog
            .app("dinespot")
            .unwrap()
            .table("reservations")
            .unwrap()
            .records
            .len(),
        1
    );
}

#[test]
fn failed_checks_and_bad_arguments_change_nothing() {
    let mut p = tools_phone();
    let cases = [
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "time": "16:00" }),
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "seating": "bar" }),
        json!({ "restaurant": "baan-thai" }),
        json!({ "restaurant": "nowhere", "date": "2025-10-03" }),
        json!({ "restaurant": "baan-thai", "date": "2025-13-01" }),
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "party_size": 40 }),
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "party_size": "four" }),
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "seating": "roof" }),
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "guests": 4 }),
    ];
    for c in cases {
        let o = call(&mut p, "dinespot.book_table", c.clone());
        assert!(o.is_error(), "{c} should fail");
    }
    assert!(call(
        &mut p,
        "dinespot.book_table",
        json!({ "restaurant": "baan-thai", "date": "2025-10-03", "time": "16:00" })
    )
    .text
    .contains("no table at 16:00"));
    assert!(call(&mut p, "dinespot.teleport", json!({})).is_error());
    assert!(p.step(&Action::Tap { element: 1 }).is_error());
    assert!(p.diff().is_empty() && p.operations().is_empty());
}

#[test]
fn reads_list_and_get_with_filters() {
    let mut p = tools_phone();
    let o = call(
        &mut p,
        "dinespot.list_restaurants",
        json!({ "where": { "cuisine": "thai", "seating": "patio" } }),
    );
    let v: Value = serde_json::from_str(&o.text).unwrap();
    assert_eq!(v["total"], json!(2));
    let o = call(
        &mut p,
        "dinespot__get_restaurants",
        json!({ "id": "lucca-osteria" }),
    );
    assert!(o.text.contains("North Beach"), "{}", o.text);
    assert!(call(&mut p, "dinespot.get_restaurants", json!({ "id": "nope" })).is_error());
    assert!(call(
        &mut p,
        "dinespot.list_restaurants",
        json!({ "where": { "stars": 5 } })
    )
    .is_error());
    let page: Value = serde_json::from_str(
        &call(
            &mut p,
            "dinespot.list_restaurants",
            json!({ "limit": 5, "offset": 18 }),
        )
        .text,
    )
    .unwrap();
    assert_eq!(page["records"].as_array().map(Vec::len), Some(2));
}

/// `list` and `get` write records straight from the table; the text must stay exactly what the
/// JSON-value rendering gave (`{"total", "records"}`, fields in schema order), since it reaches
/// model prompts and so the keys of recorded model calls.
#[test]
fn list_and_get_text_is_the_json_value_rendering_for_every_table() {
    let world = default_world();
    let mut p = tools_phone();
    for app in &world.catalog.apps {
        for table in &app.tables {
            let listed = call(
                &mut p,
                &format!("{}.list_{}", app.id, table.name),
                json!({ "limit": 100 }),
            );
            let records: Vec<Value> = table
                .records
                .iter()
                .take(100)
                .map(|r| table.record_json(r))
                .collect();
            let expected = json!({ "total": table.records.len(), "records": records });
            assert_eq!(
                listed.text,
                expected.to_string(),
                "{}.{}",
                app.id,
                table.name
            );
            if let Some(first) = table.records.first() {
                let got = call(
                    &mut p,
                    &format!("{}.get_{}", app.id, table.name),
                    json!({ "id": first.id }),
                );
                assert_eq!(got.text, table.record_json(first).to_string());
            }
        }
    }
}

#[test]
fn update_delete_and_inserted_references() {
    let mut p = tools_phone();
    assert_eq!(
        call(
            &mut p,
            "dinespot.cancel_reservation",
            json!({ "reservation": "res-0920" })
        )
        .status,
        Status::Ok
    );
    assert_eq!(
        call(
            &mut p,
            "calendar.delete_event",
            json!({ "event": "ev-focus" })
        )
        .status,
        Status::Ok
    );
    let o = call(
        &mut p,
        "messages.new_conversation",
        json!({ "person": "p-kai", "text": "Thanks for feeding Miso!" }),
    );
    assert_eq!(o.status, Status::Ok, "{}", o.text);
    let d = p.diff();
    assert_eq!(
        d.table("dinespot", "reservations").unwrap().updated[0].fields,
        vec!["status".to_string()]
    );
    assert_eq!(
        d.table("calendar", "events").unwrap().deleted[0]["id"],
        json!("ev-focus")
    );
    let thread = &d.table("messages", "threads").unwrap().inserted[0];
    let msg = &d.table("messages", "messages").unwrap().inserted[0];
    assert_eq!(msg["thread"], thread["id"]);
    assert_eq!(msg["time"], json!("2025-10-02T17:30"));
    assert!(p.state().get("calendar", "events", "ev-focus").is_none());
    assert!(p
        .initial_state()
        .get("calendar", "events", "ev-focus")
        .is_some());
    // Deleted records are gone for later calls too.
    assert!(call(
        &mut p,
        "calendar.move_event",
        json!({ "event": "ev-focus", "date": "2025-10-08", "start": "10:00" })
    )
    .is_error());
}

#[test]
fn cross_app_payment_and_singleton_settings() {
    let mut p = tools_phone();
    let o = call(
        &mut p,
        "dashbite.place_order",
        json!({ "dish": "d-green-curry", "spice": "hot", "card": "card-sapphire" }),
    );
    assert_eq!(o.status, Status::Ok, "{}", o.text);
    let d = p.diff();
    let tx = &d.table("wallet", "transactions").unwrap().inserted[0];
    assert_eq!(
        (
            tx["merchant"].clone(),
            tx["amount"].clone(),
            tx["card"].clone()
        ),
        (json!("Baan Thai"), json!(19.0), json!("card-sapphire"))
    );
    assert_eq!(
        call(&mut p, "settings.set_theme", json!({ "theme": "dark" })).status,
        Status::Ok
    );
    assert_eq!(
        p.state().records_json("settings", "display").unwrap()[0]["theme"],
        json!("dark")
    );
    assert!(call(
        &mut p,
        "tixly.buy_tickets",
        json!({ "event": "tx-chapel-comedy-2" })
    )
    .text
    .contains("sold out"));
}

#[test]
fn overrides_apply_to_the_episode_only() {
    let w = default_world();
    let overrides: Overrides = serde_json::from_value(json!({
        "app_data": [
            { "op": "delete", "table": "dinespot.restaurants", "id": "baan-thai" },
            { "op": "update", "table": "dinespot.restaurants", "id": "lotus-thai", "values": { "slots": ["19:30"] } },
            { "op": "insert", "table": "dinespot.restaurants", "id": "new-thai", "values": { "name": "New Thai", "cuisine": "thai", "price": "$$", "neighbourhood": "Sunset", "address": "1 Irving St", "seating": ["patio"], "slots": ["19:30"], "rating": 4.0 } }
        ],
        "history": [{ "event_id": "ov_1", "time": "2025-10-01T12:00:00", "app": "dinespot", "location": "Home", "text": "Booked New Thai", "label": "signal", "category": "dining", "supports": ["din_cuisine"] }],
        "profile": [{ "id": "din_cuisine", "value": "vietnamese" }]
    }))
    .unwrap();
    let mut p = Phone::new(
        w,
        EpisodeConfig {
            overrides,
            ..EpisodeConfig::default()
        },
        Box::new(NoUser),
    )
    .unwrap();
    assert!(call(
        &mut p,
        "dinespot.book_table",
        json!({ "restaurant": "baan-thai", "date": "2025-10-03" })
    )
    .is_error());
    assert!(call(
        &mut p,
        "dinespot.book_table",
        json!({ "restaurant": "lotus-thai", "date": "2025-10-03" })
    )
    .is_error());
    assert_eq!(call(&mut p, "dinespot.book_table", json!({ "restaurant": "new-thai", "date": "2025-10-03", "time": "19:30", "seating": "patio" })).status, Status::Ok);
    assert_eq!(p.history().len(), w.history.len() + 1);
    assert_eq!(p.profile_value("din_cuisine"), Some(&json!("vietnamese")));
    // Overrides are the starting point, not agent changes.
    let d = p.diff();
    assert_eq!(
        d.tables
            .iter()
            .map(|t| format!("{}.{}", t.app, t.table))
            .collect::<Vec<_>>(),
        vec!["calendar.events", "dinespot.reservations"]
    );
    // A fresh episode sees the untouched world.
    let q = tools_phone();
    assert!(q
        .state()
        .get("dinespot", "restaurants", "baan-thai")
        .is_some());
    assert_eq!(q.profile_value("din_cuisine"), Some(&json!("thai")));
}

#[test]
fn invalid_overrides_are_typed_errors() {
    let w = default_world();
    let bad = |v: Value| {
        let overrides: Overrides = serde_json::from_value(v).unwrap();
        Phone::new(
            w,
            EpisodeConfig {
                overrides,
                ..EpisodeConfig::default()
            },
            Box::new(NoUser),
        )
        .err()
    };
    assert!(matches!(
        bad(json!({ "app_data": [{ "op": "delete", "table": "dinespot.nothing", "id": "x" }] })),
        Some(OverrideError::UnknownTable { .. })
    ));
    assert!(matches!(
        bad(
            json!({ "app_data": [{ "op": "delete", "table": "dinespot.restaurants", "id": "x" }] })
        ),
        Some(OverrideError::BadRecord { .. })
    ));
    assert!(matches!(
        bad(
            json!({ "app_data": [{ "op": "update", "table": "dinespot.restaurants", "id": "baan-thai", "values": { "cuisine": "martian" } }] })
        ),
        Some(OverrideError::BadValue { .. })
    ));
    assert!(matches!(
        bad(
            json!({ "app_data": [{ "op": "insert", "table": "dinespot.restaurants", "id": "half", "values": { "name": "Half" } }] })
        ),
        Some(OverrideError::BadValue { .. })
    ));
    assert!(matches!(
        bad(json!({ "profile": [{ "id": "nope", "value": 1 }] })),
        Some(OverrideError::UnknownEntry(_))
    ));
}

fn gui_phone() -> Phone<'static> {
    Phone::new(
        default_world(),
        EpisodeConfig {
            space: ActionSpace::Gui,
            ..EpisodeConfig::default()
        },
        Box::new(NoUser),
    )
    .unwrap()
}

/// The id of the first element whose line contains `needle`.
fn find(screen: &str, needle: &str) -> u32 {
    let line = screen
        .lines()
        .find(|l| l.contains(needle) && l.contains('['))
        .unwrap_or_else(|| panic!("{needle} not on screen:\n{screen}"));
    let inner = &line[line.find('[').unwrap_or(0) + 1..line.find(']').unwrap_or(0)];
    inner.parse().unwrap_or_else(|_| panic!("no id in {line}"))
}

fn ok(p: &mut Phone, a: Action) -> String {
    let o = p.step(&a);
    assert_eq!(o.status, Status::Ok, "{a:?}: {}", o.text);
    o.text
}

#[test]
fn gui_booking_flow_shows_defaults_and_submits_them() {
    let mut p = gui_phone();
    assert!(p.observe().text.contains("app \"DineSpot\""));
    let s = ok(
        &mut p,
        Action::OpenApp {
            app: "DineSpot".into(),
        },
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "tab \"restaurants\""),
        },
    );
    assert!(s.contains("1–8 of 20"), "{s}");
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "Baan Thai"),
        },
    );
    assert!(s.contains("seating: indoor, patio"), "{s}");
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "button \"Reserve a table\""),
        },
    );
    assert!(s.contains("field \"party size\" [number 1–20]: 2"), "{s}");
    assert!(
        s.contains("field \"restaurant\"") && s.contains("Baan Thai"),
        "{s}"
    );
    assert!(s.contains("cannot be undone"), "{s}");
    let date = find(&s, "field \"date\"");
    let seating = find(&s, "field \"seating\"");
    let submit = find(&s, "(submits");
    assert!(p
        .step(&Action::Tap { element: submit })
        .text
        .contains("fill in `date`"));
    ok(
        &mut p,
        Action::Type {
            element: date,
            text: "2025-10-03".into(),
        },
    );
    let s = ok(
        &mut p,
        Action::Select {
            element: seating,
            option: "Patio".into(),
        },
    );
    assert!(
        s.contains("field \"seating\" [choose: indoor | patio | bar | counter]: patio"),
        "{s}"
    );
    let s = ok(&mut p, Action::Tap { element: submit });
    assert!(
        s.contains("Table for 2 at Baan Thai on 2025-10-03 at 19:00 (patio)"),
        "{s}"
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "OK"),
        },
    );
    assert!(s.contains("Baan Thai"), "back on the detail page: {s}");
    let d = p.diff();
    let r = &d.table("dinespot", "reservations").unwrap().inserted[0];
    assert_eq!(
        (r["seating"].clone(), r["party_size"].clone()),
        (json!("patio"), json!(2))
    );
}

#[test]
fn gui_rejects_invalid_actions_without_panicking() {
    let mut p = gui_phone();
    assert!(p.step(&Action::Tap { element: 999 }).is_error());
    assert!(p.step(&Action::Tap { element: 0 }).is_error());
    assert!(p.step(&Action::Back).is_error());
    assert!(p
        .step(&Action::Scroll {
            direction: Direction::Down
        })
        .is_error());
    assert!(p
        .step(&Action::Type {
            element: 1,
            text: "x".into()
        })
        .is_error());
    assert!(p.step(&Action::OpenApp { app: "Nope".into() }).is_error());
    assert!(p
        .step(&Action::Call {
            tool: "dinespot.book_table".into(),
            args: Map::new()
        })
        .is_error());
    let s = ok(
        &mut p,
        Action::OpenApp {
            app: "clock".into(),
        },
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "button \"New alarm\""),
        },
    );
    let label = find(&s, "field \"label\"");
    let time = find(&s, "field \"time\"");
    assert!(p
        .step(&Action::Select {
            element: label,
            option: "x".into()
        })
        .is_error());
    assert!(p
        .step(&Action::Type {
            element: time,
            text: "25:00".into()
        })
        .is_error());
    assert!(p.step(&Action::Tap { element: label }).is_error());
    assert!(p.diff().is_empty());
    let s = ok(&mut p, Action::Home);
    assert!(s.starts_with("screen: Home"));
}

#[test]
fn gui_scrolls_lists_and_follows_links_across_apps() {
    let mut p = gui_phone();
    let s = ok(
        &mut p,
        Action::OpenApp {
            app: "tasterank".into(),
        },
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "tab \"reviews\""),
        },
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "Heavy and loud"),
        },
    );
    let s = ok(
        &mut p,
        Action::Tap {
            element: find(&s, "link \"restaurant: Ironwood Steakhouse\""),
        },
    );
    assert!(
        s.contains("button \"Write a review\""),
        "TasteRank offers its op on DineSpot records: {s}"
    );
    let mut p = gui_phone();
    let s = ok(
        &mut p,
        Action::OpenApp {
            app: "shopnest".into(),
        },
    );
    ok(
        &mut p,
        Action::Tap {
            element: find(&s, "tab \"products\""),
        },
    );
    let s = ok(
        &mut p,
        Action::Scroll {
            direction: Direction::Down,
        },
    );
    assert!(s.contains("9–16 of 26"), "{s}");
    let s = ok(
        &mut p,
        Action::Scroll {
            direction: Direction::Up,
        },
    );
    assert!(s.contains("1–8 of 26"), "{s}");
}

#[test]
fn ask_user_answer_and_finish() {
    let mut asked = Vec::new();
    let user = |q: &str| {
        asked.push(q.to_string());
        "Four of us.".to_string()
    };
    let mut p = Phone::new(default_world(), EpisodeConfig::default(), Box::new(user)).unwrap();
    assert_eq!(
        p.step(&Action::AskUser {
            text: "How many people?".into()
        })
        .text,
        "Four of us."
    );
    assert!(p.step(&Action::AskUser { text: "  ".into() }).is_error());
    ok(
        &mut p,
        Action::Answer {
            text: "Booked.".into(),
        },
    );
    assert_eq!(p.step(&Action::Finish).status, Status::Done);
    assert!(p.step(&Action::Finish).is_error());
    assert_eq!(p.asks()[0].reply, "Four of us.");
    assert_eq!(p.answer(), Some("Booked."));
    assert!(p.is_finished());
    drop(p);
    assert_eq!(asked, vec!["How many people?".to_string()]);
}

#[test]
fn actions_parse_from_json_and_clock_is_pinned() {
    let a: Action = serde_json::from_str(r#"{"action":"tap","element":3}"#).unwrap();
    assert_eq!(a, Action::Tap { element: 3 });
    let a: Action = serde_json::from_str(
        r#"{"action":"call","tool":"clock.set_alarm","args":{"time":"06:30"}}"#,
    )
    .unwrap();
    let clock = crate::world::clock::DateTime::parse("2025-12-24T08:00").unwrap();
    let mut p = Phone::new(
        default_world(),
        EpisodeConfig {
            clock: Some(clock),
            ..EpisodeConfig::default()
        },
        Box::new(NoUser),
    )
    .unwrap();
    assert_eq!(p.step(&a).status, Status::Ok);
    ok(
        &mut p,
        Action::Call {
            tool: "newsly.save_article".into(),
            args: args(json!({ "article": "a-01" })),
        },
    );
    assert_eq!(
        p.diff().table("newsly", "saved").unwrap().inserted[0]["date"],
        json!("2025-12-24")
    );
    assert!(serde_json::from_str::<Action>(r#"{"action":"fly"}"#).is_err());
}

#[test]
fn tool_specs_describe_types_defaults_and_options() {
    let p = tools_phone();
    let specs = p.tools();
    let cat = &default_world().catalog;
    let expected: usize = cat
        .apps
        .iter()
        .map(|a| 2 * a.tables.len() + a.operations.len())
        .sum();
    assert_eq!(specs.len(), expected);
    let book = specs
        .iter()
        .find(|s| s.name == "dinespot.book_table")
        .unwrap();
    assert!(book.irreversible);
    let schema = book.json_schema();
    assert_eq!(schema["required"], json!(["restaurant", "date"]));
    assert_eq!(schema["properties"]["party_size"]["default"], json!(2));
    assert_eq!(
        schema["properties"]["seating"]["enum"],
        json!(["indoor", "patio", "bar", "counter"])
    );
    assert_eq!(book.function_name(), "dinespot__book_table");
}

#[test]
fn overlay_stores_only_changes() {
    let mut p = tools_phone();
    assert_eq!(p.state.change_count(), 0);
    for i in 0..50 {
        let o = call(
            &mut p,
            "notes.create_note",
            json!({ "title": format!("n{i}") }),
        );
        assert_eq!(o.status, Status::Ok);
    }
    assert_eq!(p.state.change_count(), 50);
    assert_eq!(p.state().records("notes", "notes").unwrap().count(), 57);
    let ids: std::collections::BTreeSet<String> = p
        .state()
        .records("notes", "notes")
        .unwrap()
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(ids.len(), 57, "generated ids are unique");
}

#[test]
fn counts_stay_right_through_inserts_and_deletes() {
    let mut p = tools_phone();
    let base = p.state().records("calendar", "events").unwrap().count();
    call(
        &mut p,
        "calendar.create_event",
        json!({ "title": "A", "date": "2025-10-09" }),
    );
    let id = p.operations()[0].inserted[0].id.clone();
    call(
        &mut p,
        "calendar.delete_event",
        json!({ "event": "ev-focus" }),
    );
    call(&mut p, "calendar.delete_event", json!({ "event": id }));
    let t = default_world()
        .catalog
        .table_id("calendar.events", None)
        .unwrap();
    assert_eq!(p.state.count(&default_world().catalog, t), base - 1);
    assert_eq!(
        p.state().records("calendar", "events").unwrap().count(),
        base - 1
    );
    let d = p.diff();
    let ev = d.table("calendar", "events").unwrap();
    assert!(
        ev.inserted.is_empty() && ev.deleted.len() == 1,
        "insert-then-delete leaves no trace: {ev:?}"
    );
}

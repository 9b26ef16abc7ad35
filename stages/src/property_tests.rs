//! Property tests of everything that decodes outside input into behaviour: model replies and
//! HTTP bodies into phone actions (and those actions on a real phone), step rows back into
//! actions, and JSON into predicates (and predicates judged on a real phone). None may panic,
//! whatever they are given, and what decodes must round-trip.
//!
//! Bounded and reproducible: a fixed seed and a fixed number of cases per property, so `cargo
//! test` runs the same inputs every time; raise `PROPTEST_CASES` locally to search longer.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{json, Map, Value};

use crate::episodes::agents::llm::parse_json_action;
use crate::episodes::codec;
use crate::tasks::eval::Episode;
use crate::tasks::model::{Slot, Source};
use crate::tasks::predicate::Predicate;
use crate::tasks::testkit::world;
use crate::world::phone::{Action, ActionSpace, EpisodeConfig, NoUser, Phone};

fn config(cases: u32) -> Config {
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        rng_seed: RngSeed::Fixed(0x5eed_f10e),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Words the decoders care about, so generated input reaches deep into them, not only their
/// first "unknown key" check.
const WORDS: &[&str] = &[
    "action",
    "call",
    "tool",
    "args",
    "tap",
    "type",
    "element",
    "text",
    "scroll",
    "direction",
    "up",
    "down",
    "open_app",
    "app",
    "back",
    "home",
    "ask_user",
    "answer",
    "finish",
    "submit",
    "dinespot",
    "dinespot.book_table",
    "notes.create_note",
    "calendar.create_event",
    "dinespot.reservations",
    "calendar.events",
    "notes.notes",
    "restaurant",
    "restaurant.cuisine",
    "party_size",
    "date",
    "time",
    "seating",
    "title",
    "body",
    "thai",
    "patio",
    "2025-10-03",
    "19:30",
    "where",
    "field",
    "$slot",
    "$fmt",
    "eq",
    "ne",
    "one_of",
    "contains",
    "min",
    "max",
    "party",
    "{slot.party}",
    "count",
    "last",
    "__",
];

/// The predicate language's operator keys.
const OPERATORS: &[&str] = &[
    "inserted",
    "updated",
    "deleted",
    "exists",
    "not",
    "any",
    "all",
    "called",
    "asked",
    "answer_contains",
    "answer_mentions",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_string),
        1 => proptest::sample::select(OPERATORS).prop_map(str::to_string),
        1 => "\\PC{0,12}",
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..40).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        word().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((word(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// JSON shaped like an action: half well-formed (each action's own fields, with values that
/// may still be out of range), half a known tag with arbitrary fields.
fn action_json() -> impl Strategy<Value = Value> {
    let element = prop_oneof![(0u32..40).prop_map(Value::from), json()];
    let text = prop_oneof![word().prop_map(Value::from), json()];
    let well_formed = prop_oneof![
        proptest::sample::select(&["home", "back", "finish", "submit"][..])
            .prop_map(|a| json!({ "action": a })),
        element
            .clone()
            .prop_map(|e| json!({ "action": "tap", "element": e })),
        (element, text.clone())
            .prop_map(|(e, t)| json!({ "action": "type", "element": e, "text": t })),
        proptest::sample::select(&["up", "down", "sideways"][..])
            .prop_map(|d| json!({ "action": "scroll", "direction": d })),
        word().prop_map(|a| json!({ "action": "open_app", "app": a })),
        text.clone()
            .prop_map(|t| json!({ "action": "ask_user", "text": t })),
        text.prop_map(|t| json!({ "action": "answer", "text": t })),
        (word(), proptest::collection::vec((word(), json()), 0..4)).prop_map(|(tool, args)| {
            let args: Map<String, Value> = args.into_iter().collect();
            json!({ "action": "call", "tool": tool, "args": args })
        }),
    ];
    let loose =
        (word(), proptest::collection::vec((word(), json()), 0..4)).prop_map(|(tag, fields)| {
            let mut m: Map<String, Value> = fields.into_iter().collect();
            m.insert("action".into(), Value::String(tag));
            Value::Object(m)
        });
    prop_oneof![well_formed, loose]
}

/// A condition's test value: a literal, a slot, a text with slots, or an operator.
fn test_value() -> impl Strategy<Value = Value> {
    let literal = prop_oneof![
        word().prop_map(Value::from),
        (-3i64..40).prop_map(Value::from)
    ];
    prop_oneof![
        literal.clone(),
        proptest::sample::select(&["party", "cuisine", "nope"][..])
            .prop_map(|s| json!({ "$slot": s })),
        word().prop_map(|t| json!({ "$fmt": format!("{t} {{slot.party}}") })),
        literal.clone().prop_map(|v| json!({ "eq": v })),
        literal.clone().prop_map(|v| json!({ "ne": v })),
        proptest::collection::vec(literal, 0..3).prop_map(|v| json!({ "one_of": v })),
        word().prop_map(|v| json!({ "contains": v })),
        (-3i64..40).prop_map(|v| json!({ "min": v })),
        (-3i64..40).prop_map(|v| json!({ "max": v })),
        json(),
    ]
}

fn conditions() -> impl Strategy<Value = Value> {
    const PATHS: &[&str] = &[
        "date",
        "time",
        "party_size",
        "seating",
        "restaurant",
        "restaurant.cuisine",
        "title",
        "body",
        "folder.name",
        "nope",
    ];
    proptest::collection::vec((proptest::sample::select(PATHS), test_value()), 0..3)
        .prop_map(|c| Value::Object(c.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

/// Predicates as the language spells them (with unknown names and odd values mixed in), nested
/// through `not`, `any` and `all`.
fn predicate_json() -> impl Strategy<Value = Value> {
    const TABLES: &[&str] = &[
        "dinespot.reservations",
        "dinespot.restaurants",
        "calendar.events",
        "notes.notes",
        "nope.things",
        "dinespot",
    ];
    const TOOLS: &[&str] = &["dinespot.book_table", "notes.create_note", "nope.op"];
    let table = proptest::sample::select(TABLES);
    let leaf = prop_oneof![
        (
            proptest::sample::select(&["inserted", "updated", "deleted", "exists"][..]),
            table.clone(),
            conditions()
        )
            .prop_map(|(op, t, w)| json!({ op: t, "where": w })),
        (proptest::sample::select(TOOLS), conditions())
            .prop_map(|(t, a)| json!({ "called": t, "args": a })),
        word().prop_map(|w| json!({ "asked": w })),
        proptest::collection::vec(word(), 1..3).prop_map(|w| json!({ "answer_contains": w })),
        (table, word(), conditions())
            .prop_map(|(t, f, w)| json!({ "answer_mentions": t, "field": f, "where": w })),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|p| json!({ "not": p })),
            proptest::collection::vec(inner.clone(), 1..3).prop_map(|p| json!({ "any": p })),
            proptest::collection::vec(inner, 1..3).prop_map(|p| json!({ "all": p })),
        ]
    })
}

/// JSON shaped like a predicate: half as the language spells them, half one operator key with
/// an arbitrary value plus other keys.
fn operator_json() -> impl Strategy<Value = Value> {
    let loose = (
        proptest::sample::select(OPERATORS),
        json(),
        proptest::collection::vec((word(), json()), 0..3),
    )
        .prop_map(|(op, target, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            m.insert(op.to_string(), target);
            Value::Object(m)
        });
    prop_oneof![predicate_json(), loose]
}

fn phone(space: ActionSpace) -> Phone<'static> {
    let config = EpisodeConfig {
        space,
        ..EpisodeConfig::default()
    };
    Phone::new(world(), config, Box::new(NoUser)).expect("default phone")
}

fn slots() -> Vec<Slot> {
    let slot = |id: &str, value: Value| Slot {
        slot_id: id.into(),
        source: Source::AskOnly,
        evidence: vec![],
        value,
        keywords: vec!["how many".into()],
        app_default: None,
        profile_entry: None,
        about: format!("the {id} of the booking"),
    };
    vec![slot("party", json!(4)), slot("cuisine", json!("thai"))]
}

proptest! {
    #![proptest_config(config(256))]

    /// Whatever a model replies, decoding it answers Ok or Err.
    #[test]
    fn model_replies_decode_without_panicking(
        before in "\\PC{0,20}",
        value in action_json(),
        after in "\\PC{0,20}",
        cut in 0usize..200,
    ) {
        let body = value.to_string();
        let _ = parse_json_action(&format!("{before}{body}{after}"));
        let cut = body.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(body.len());
        let _ = parse_json_action(&body[..cut]);
    }

    /// Any sequence of decodable actions plays on a real phone, in both action spaces,
    /// without a panic, and the phone can still be observed and diffed afterwards.
    #[test]
    fn any_actions_play_on_a_real_phone(
        actions in proptest::collection::vec(action_json(), 1..8),
        gui in any::<bool>(),
    ) {
        let mut p = phone(if gui { ActionSpace::Gui } else { ActionSpace::Tools });
        for v in actions {
            if let Ok(a) = serde_json::from_value::<Action>(v) {
                let _ = p.step(&a);
            }
        }
        let _ = p.observe();
        let _ = p.diff();
        let _ = p.operations();
    }

    /// Step rows decode without panicking, and whatever decodes encodes back to itself.
    #[test]
    fn step_rows_decode_and_round_trip(tag in word(), args in json()) {
        if let Ok(action) = codec::decode(&tag, &args) {
            let (t, a) = codec::encode(&action);
            prop_assert_eq!(codec::decode(&t, &a), Ok(action));
        }
    }

    /// Any JSON parses to a predicate or an error; a parsed predicate round-trips through its
    /// canonical JSON and can be judged on a phone that has done things.
    #[test]
    fn predicates_parse_round_trip_and_judge_without_panicking(
        v in prop_oneof![json(), operator_json()],
        actions in proptest::collection::vec(action_json(), 0..4),
    ) {
        let Ok(p) = Predicate::parse(&v) else { return Ok(()) };
        let again = Predicate::parse(&p.to_json());
        prop_assert_eq!(again.as_ref(), Ok(&p));
        let mut ph = phone(ActionSpace::Tools);
        for v in actions {
            if let Ok(a) = serde_json::from_value::<Action>(v) {
                let _ = ph.step(&a);
            }
        }
        let slots = slots();
        let _ = Episode::new(&ph, &slots).check(&p);
    }

    /// Predicates built from operator words (rather than any JSON) reach the deep branches.
    #[test]
    fn operator_shaped_predicates_never_panic(v in operator_json()) {
        if let Ok(p) = Predicate::parse(&v) {
            let ph = phone(ActionSpace::Tools);
            let slots = slots();
            let _ = Episode::new(&ph, &slots).check(&p);
        }
    }
}

/// The generators are worth their cases: a fair share of what they produce decodes, so the
/// properties above exercise the decoders' success paths too, not only their first rejection.
#[test]
fn the_generators_reach_valid_actions_and_predicates() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::new(config(1));
    let (mut actions, mut predicates) = (0, 0);
    for _ in 0..400 {
        let a = action_json().new_tree(&mut runner).expect("tree").current();
        actions += usize::from(serde_json::from_value::<Action>(a).is_ok());
        let p = operator_json()
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        predicates += usize::from(Predicate::parse(&p).is_ok());
    }
    assert!(
        actions >= 20,
        "only {actions} of 400 generated actions decode"
    );
    assert!(
        predicates >= 20,
        "only {predicates} of 400 generated predicates parse"
    );
}

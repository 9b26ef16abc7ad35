//! Loader tests: one per failure kind, each checking the kind and the reported line.

use super::*;
use crate::world::error::ProblemKind as K;

const BASE: &str = r#"app: dinespot
name: DineSpot
category: dining
entities:
  restaurants:
    title: name
    summary: [cuisine]
    fields:
      name: { type: text }
      cuisine: { type: enum, options: [thai, italian] }
      slots: { type: time, many: true }
    records:
      - { id: baan, name: Baan, cuisine: thai, slots: ["18:00", "19:00"] }
  reservations:
    fields:
      restaurant: { type: ref, to: restaurants }
      party_size: { type: int, range: [1, 12] }
      note: { type: text, default: "" }
operations:
  book_table:
    entity: restaurants
    irreversible: true
    fields:
      restaurant: { type: ref, to: restaurants, required: true }
      time: { type: time, default: "19:00" }
      party_size: { type: int, range: [1, 12], default: 2 }
    checks:
      - { value: $time, in: $restaurant.slots, message: "{restaurant.name} is full at {time}" }
    effects:
      - insert: reservations
        values: { restaurant: $restaurant, party_size: $party_size }
      - insert: calendar.events
        values: { title: "Dinner at {restaurant.name}", start: $time }
    result: "Booked {restaurant.name}"
"#;

const CAL: &str = r#"app: calendar
name: Calendar
category: schedule
entities:
  events:
    fields:
      title: { type: text }
      start: { type: time }
"#;

fn load(dinespot: &str) -> Result<Catalog> {
    Catalog::from_sources(&[
        ("dinespot.yaml".into(), dinespot.into()),
        ("calendar.yaml".into(), CAL.into()),
    ])
}

/// Replaces the first occurrence of `from` (which must exist) in the base app.
fn variant(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "test bug: {from:?} not in BASE");
    BASE.replacen(from, to, 1)
}

/// Loads a broken variant and returns the (kind, line) of every problem.
fn problems(yaml: &str) -> Vec<(K, u32)> {
    match load(yaml) {
        Err(WorldError::Invalid(p)) => p.0.iter().map(|p| (p.kind, p.at.line)).collect(),
        other => panic!("expected validation problems, got {other:?}"),
    }
}

fn line_of(yaml: &str, needle: &str) -> u32 {
    yaml.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("{needle} not found"))
}

#[test]
fn base_app_loads_with_cross_app_effect() {
    let cat = load(BASE).unwrap();
    let app = cat.app("dinespot").unwrap();
    let op = app.operation("book_table").unwrap();
    assert!(op.irreversible);
    assert_eq!(
        op.entity.map(|t| cat.table_name(t)).as_deref(),
        Some("dinespot.restaurants")
    );
    assert_eq!(op.effects.len(), 2);
    let Effect::Insert { table, .. } = &op.effects[1] else {
        panic!("insert expected")
    };
    assert_eq!(cat.table_name(*table), "calendar.events");
    let r = app.table("restaurants").unwrap().record("baan").unwrap();
    assert_eq!(r.values[2], serde_json::json!(["18:00", "19:00"]));
    assert_eq!(op.fields[2].default, Some(serde_json::json!(2)));
}

#[test]
fn unknown_ref_target_is_located() {
    let y = variant("to: restaurants, required", "to: restorants, required");
    assert_eq!(
        problems(&y),
        vec![(K::UnknownRefTarget, line_of(&y, "restorants"))]
    );
}

#[test]
fn default_not_among_options_is_located() {
    let y = variant("      party_size: { type: int, range: [1, 12], default: 2 }", "      party_size: { type: int, range: [1, 12], default: 2 }\n      seating: { type: enum, options: [indoor, patio], default: roof }");
    assert_eq!(
        problems(&y),
        vec![(K::DefaultNotInOptions, line_of(&y, "roof"))]
    );
}

#[test]
fn default_out_of_range_is_located() {
    let y = variant("range: [1, 12], default: 2", "range: [1, 12], default: 20");
    assert_eq!(
        problems(&y),
        vec![(K::DefaultOutOfRange, line_of(&y, "default: 20"))]
    );
}

#[test]
fn optional_without_default_and_required_with_default() {
    let y = variant(
        "time: { type: time, default: \"19:00\" }",
        "time: { type: time }",
    );
    assert_eq!(
        problems(&y),
        vec![(K::MissingDefault, line_of(&y, "time: { type: time }"))]
    );
    let y = variant(
        "to: restaurants, required: true }",
        "to: restaurants, required: true, default: baan }",
    );
    assert_eq!(
        problems(&y),
        vec![(K::RequiredHasDefault, line_of(&y, "default: baan"))]
    );
}

#[test]
fn effect_naming_unknown_table_or_field() {
    let y = variant("insert: calendar.events", "insert: calendar.evnts");
    assert_eq!(
        problems(&y),
        vec![(K::UnknownEffectTable, line_of(&y, "calendar.evnts"))]
    );
    let y = variant(
        "party_size: $party_size }",
        "party_size: $party_size, seats: 2 }",
    );
    assert_eq!(
        problems(&y),
        vec![(K::UnknownEffectField, line_of(&y, "seats: 2"))]
    );
    let y = variant(
        "values: { restaurant: $restaurant, party_size: $party_size }",
        "values: { restaurant: $restaurant }",
    );
    assert_eq!(
        problems(&y),
        vec![(K::UnknownEffectField, line_of(&y, "insert: reservations"))]
    );
}

#[test]
fn expressions_are_typed() {
    let y = variant("party_size: $party_size }", "party_size: $time }");
    assert_eq!(
        problems(&y),
        vec![(K::ExpressionTypeMismatch, line_of(&y, "party_size: $time"))]
    );
    let y = variant("in: $restaurant.slots", "in: $restaurant.slotz");
    assert_eq!(problems(&y), vec![(K::BadExpression, line_of(&y, "slotz"))]);
    let y = variant(
        "result: \"Booked {restaurant.name}\"",
        "result: \"Booked {restaurant.nam}\"",
    );
    assert_eq!(
        problems(&y),
        vec![(K::BadTemplate, line_of(&y, "restaurant.nam}"))]
    );
}

#[test]
fn duplicate_record_ids_and_bad_records() {
    let y = variant(
        "      - { id: baan,",
        "      - { id: baan, name: B2, cuisine: thai, slots: [] }\n      - { id: baan,",
    );
    assert_eq!(
        problems(&y),
        vec![(K::DuplicateId, line_of(&y, "name: Baan,"))]
    );
    let y = variant("cuisine: thai, slots", "cuisine: thai, stars: 3, slots");
    assert_eq!(
        problems(&y),
        vec![(K::UnknownRecordField, line_of(&y, "stars: 3"))]
    );
    let y = variant("name: Baan, cuisine: thai,", "name: Baan,");
    assert_eq!(
        problems(&y),
        vec![(K::MissingValue, line_of(&y, "id: baan"))]
    );
    let y = variant("cuisine: thai, slots", "cuisine: korean, slots");
    assert_eq!(
        problems(&y),
        vec![(K::DefaultNotInOptions, line_of(&y, "korean"))]
    );
}

#[test]
fn dangling_ref_default_is_reported() {
    let y = variant("      party_size: { type: int, range: [1, 12], default: 2 }", "      party_size: { type: int, range: [1, 12], default: 2 }\n      fallback: { type: ref, to: restaurants, default: nowhere }");
    assert_eq!(problems(&y), vec![(K::DanglingRef, line_of(&y, "nowhere"))]);
}

#[test]
fn app_id_must_match_file_and_be_unique() {
    let y = variant("app: dinespot", "app: dinespott");
    assert_eq!(problems(&y), vec![(K::BadId, 1)]);
    let err = Catalog::from_sources(&[
        ("calendar.yaml".into(), CAL.into()),
        ("calendar.yml".into(), CAL.into()),
    ])
    .unwrap_err();
    assert!(
        err.problems().iter().any(|p| p.kind == K::DuplicateId),
        "{err}"
    );
}

#[test]
fn unknown_keys_are_syntax_errors_with_location() {
    let y = variant("    irreversible: true", "    irreversable: true");
    let err = load(&y).unwrap_err();
    let WorldError::Syntax { at, message } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (at.file.as_str(), at.line),
        ("dinespot.yaml", line_of(&y, "irreversable"))
    );
    assert!(message.contains("irreversable"), "{message}");
}

#[test]
fn all_problems_are_reported_together() {
    let y = variant("to: restaurants, required", "to: restorants, required").replacen(
        "default: 2 }",
        "default: 99 }",
        1,
    );
    let kinds: Vec<K> = problems(&y).into_iter().map(|(k, _)| k).collect();
    assert!(
        kinds.contains(&K::UnknownRefTarget) && kinds.contains(&K::DefaultOutOfRange),
        "{kinds:?}"
    );
    let text = load(&y).unwrap_err().to_string();
    assert!(
        text.contains("dinespot.yaml:") && text.contains("fix:"),
        "{text}"
    );
}

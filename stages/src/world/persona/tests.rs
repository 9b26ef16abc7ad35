//! Persona loader tests: a small valid persona, then one variant per failure kind with its line.

use crate::world::app::Catalog;
use crate::world::error::{ProblemKind as K, WorldError};
use crate::world::persona::Persona;

const APP: &str = r#"app: dinespot
name: DineSpot
category: dining
entities:
  restaurants:
    title: name
    fields:
      name: { type: text }
      cuisine: { type: enum, options: [thai, japanese, steakhouse] }
    records:
      - { id: baan, name: Baan, cuisine: thai }
      - { id: kaiyo, name: Kaiyo, cuisine: japanese }
"#;

const PERSONA: &str = r#"persona: test
name: Tess
age: 30
city: Springfield
occupation: tester
history: { start: "2025-03-01", end: "2025-09-30" }
now: "2025-10-02T17:30"
places:
  home: { label: "Home" }
profile:
  - id: cuisine
    dimension: dining
    key: favourite_cuisine
    value: thai
    mention: Thai
    shift: { from: japanese, from_mention: Japanese, changed: "2025-06-14" }
    bind: { r: { from: dinespot.restaurants, where: { cuisine: $value } } }
    evidence:
      - { app: dinespot, at: home, text: "Booked {r.name} ({mention})" }
      - { app: dinespot, at: "{r.name}", hours: [18, 22], text: "Ate {r.cuisine|cap} food at {r}" }
  - id: secret
    dimension: finance
    key: salary
    value: 100
    mention: "$100k"
    source: ask_only
situational:
  - { id: sit_party, key: party_size, value: 5, leaks: ["party of 5"] }
noise:
  - { app: dinespot, at: home, text: "Browsed photos" }
"#;

fn cat() -> Catalog {
    Catalog::from_sources(&[("dinespot.yaml".into(), APP.into())]).unwrap()
}

fn variant(from: &str, to: &str) -> String {
    assert!(PERSONA.contains(from), "test bug: {from:?} not in PERSONA");
    PERSONA.replacen(from, to, 1)
}

fn problems(yaml: &str) -> Vec<(K, u32)> {
    match Persona::from_source("test.yaml", yaml, &cat()) {
        Err(WorldError::Invalid(p)) => p.0.iter().map(|p| (p.kind, p.at.line)).collect(),
        Err(e) => panic!("expected validation problems, got {e}"),
        Ok(_) => panic!("expected validation problems, got a persona"),
    }
}

fn line_of(yaml: &str, needle: &str) -> u32 {
    yaml.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("{needle} not found"))
}

#[test]
fn valid_persona_loads() {
    let p = Persona::from_source("test.yaml", PERSONA, &cat()).unwrap();
    let e = p.entry("cuisine").unwrap();
    assert_eq!(e.evidence_template_count(), 2);
    let s = e.shift.as_ref().unwrap();
    assert_eq!(
        e.value_on(s.changed.add_days(-1)),
        &serde_json::json!("japanese")
    );
    assert_eq!(e.mention_on(s.changed), "Thai");
    assert_eq!(p.situational[0].leaks, vec!["party of 5".to_string()]);
}

#[test]
fn evidence_naming_unknown_app() {
    let y = variant(
        "{ app: dinespot, at: home, text: \"Booked",
        "{ app: dinespott, at: home, text: \"Booked",
    );
    assert_eq!(
        problems(&y),
        vec![(K::UnknownEvidenceApp, line_of(&y, "dinespott"))]
    );
}

#[test]
fn duplicate_ids_across_profile_and_situational() {
    let y = variant("{ id: sit_party,", "{ id: secret,");
    assert_eq!(
        problems(&y),
        vec![(K::DuplicateId, line_of(&y, "{ id: secret,"))]
    );
}

#[test]
fn unknown_dimension() {
    let y = variant("dimension: dining", "dimension: dinning");
    assert_eq!(
        problems(&y),
        vec![(K::UnknownDimension, line_of(&y, "dinning"))]
    );
}

#[test]
fn bindings_must_resolve_and_match() {
    let y = variant("from: dinespot.restaurants", "from: dinespot.restaurant");
    assert_eq!(
        problems(&y),
        vec![(K::BadBinding, line_of(&y, "dinespot.restaurant,"))]
    );
    let y = variant("where: { cuisine: $value }", "where: { cuisin: $value }");
    assert_eq!(problems(&y), vec![(K::BadBinding, line_of(&y, "cuisin:"))]);
    // A shifted value with no matching record: nothing is steakhouse.
    let y = variant(
        "from: japanese, from_mention: Japanese",
        "from: steakhouse, from_mention: Steakhouse",
    );
    let p = problems(&y);
    assert!(
        p.iter().all(|(k, _)| *k == K::BadBinding) && p.len() == 2,
        "{p:?}"
    );
}

#[test]
fn templates_must_name_known_placeholders_and_places() {
    let y = variant("Booked {r.name} ({mention})", "Booked {r.nam} ({mention})");
    assert_eq!(problems(&y), vec![(K::BadTemplate, line_of(&y, "{r.nam}"))]);
    let y = variant(
        "{ app: dinespot, at: home, text: \"Browsed",
        "{ app: dinespot, at: office, text: \"Browsed",
    );
    assert_eq!(
        problems(&y),
        vec![(K::UnknownPlace, line_of(&y, "at: office"))]
    );
}

#[test]
fn evidence_must_mention_its_value_and_not_the_other_side() {
    let y = variant("Booked {r.name} ({mention})", "Booked {r.name}");
    let p = problems(&y);
    assert_eq!(
        p,
        vec![(K::EvidenceMissesValue, line_of(&y, "Booked {r.name}\"")); 2]
    );
    let y = variant(
        "Booked {r.name} ({mention})",
        "Booked {r.name} ({mention}, not Japanese)",
    );
    assert_eq!(
        problems(&y),
        vec![(K::EvidenceMissesValue, line_of(&y, "not Japanese"))]
    );
}

#[test]
fn shift_date_must_lie_inside_history() {
    let y = variant("changed: \"2025-06-14\"", "changed: \"2025-12-01\"");
    assert_eq!(problems(&y), vec![(K::BadShift, line_of(&y, "2025-12-01"))]);
}

#[test]
fn inferable_entries_need_evidence_and_ask_only_must_have_none() {
    let y = variant("    evidence:\n      - { app: dinespot, at: home, text: \"Booked {r.name} ({mention})\" }\n      - { app: dinespot, at: \"{r.name}\", hours: [18, 22], text: \"Ate {r.cuisine|cap} food at {r}\" }\n", "");
    assert_eq!(
        problems(&y).iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![K::NoEvidence, K::NoEvidence]
    );
    let y = variant(
        "    source: ask_only\n",
        "    source: ask_only\n    evidence: [{ app: dinespot, at: home, text: \"$100k\" }]\n",
    );
    assert_eq!(
        problems(&y),
        vec![(K::NoEvidence, line_of(&y, "- id: secret"))]
    );
}

#[test]
fn noise_must_not_evidence_and_nothing_may_leak() {
    let y = variant("text: \"Browsed photos\"", "text: \"Browsed Thai photos\"");
    assert_eq!(
        problems(&y),
        vec![(K::NoiseEvidences, line_of(&y, "Browsed Thai"))]
    );
    let y = variant(
        "text: \"Browsed photos\"",
        "text: \"Browsed photos for a party of 5\"",
    );
    assert_eq!(
        problems(&y),
        vec![(K::LeakInTemplate, line_of(&y, "for a party of 5"))]
    );
    let y = variant(
        "Booked {r.name} ({mention})",
        "Booked {r.name} ({mention}), salary $100k",
    );
    assert_eq!(
        problems(&y),
        vec![(K::LeakInTemplate, line_of(&y, "salary")); 2]
    );
}

/// The test persona with one construction and a noise twin on its first evidence template.
fn with_twins(others: &str, twins: &str) -> String {
    let y = variant(
        "profile:\n",
        "constructions:\n  for_other:\n    noise: [\"For Tom: {event|uncap}\"]\n    signal: [\"For me: {event|uncap}\"]\nprofile:\n",
    );
    let y = y.replacen(
        "text: \"Booked {r.name} ({mention})\" }",
        &format!("text: \"Booked {{r.name}} ({{mention}})\", twins: {twins} }}"),
        1,
    );
    y.replacen("    evidence:\n", &format!("{others}    evidence:\n"), 1)
}

#[test]
fn noise_twins_need_other_values_known_constructions_and_forms_around_the_event() {
    let ok = with_twins("    others: [japanese]\n", "[for_other]");
    let p = Persona::from_source("t.yaml", &ok, &cat()).unwrap();
    let e = p.entry("cuisine").unwrap();
    assert_eq!(
        e.others[0].mention, "Japanese",
        "mention derived from the entry's"
    );
    let y = with_twins("", "[for_other]");
    assert_eq!(
        problems(&y),
        vec![(K::NoiseEvidences, line_of(&y, "- id: cuisine"))]
    );
    let y = with_twins("    others: [japanese]\n", "[for_others]");
    assert_eq!(
        problems(&y),
        vec![(K::NoiseEvidences, line_of(&y, "twins: [for_others]"))]
    );
    let y = ok.replacen(
        "noise: [\"For Tom: {event|uncap}\"]",
        "noise: [\"For Tom\"]",
        1,
    );
    assert_eq!(
        problems(&y),
        vec![(K::BadTemplate, line_of(&y, "noise: [\"For Tom\"]"))]
    );
    let y = ok.replacen(
        "text: \"Booked {r.name} ({mention})\"",
        "text: \"Booked {r.name} ({mention}), not Thai\"",
        1,
    );
    assert!(
        problems(&y).contains(&(K::NoiseEvidences, line_of(&y, "not Thai"))),
        "a twin that names her value is refused: {:?}",
        problems(&y)
    );
}

/// A companion phrase goes only where one fits: not on someone else's event, not after a text
/// that already says who was with whom, a comma clause, a quote or a parenthesis.
#[test]
fn a_companion_where_none_fits_is_a_located_problem() {
    let cat = crate::world::dataset_tests::default_world().catalog.clone();
    let y =
        std::fs::read_to_string(crate::world::dataset_tests::datasets().join("personas/maya.yaml"))
            .unwrap();
    let misfits = [
        (
            "Browsed {value} for Lena, who is a size 7{vocab.with}",
            "decoys",
        ),
        (
            "Planned a drive to {value} with the map open{vocab.with}",
            "evidence",
        ),
        ("Texted Sam: \\\"{value}\\\"{vocab.with}", "evidence"),
    ];
    for (text, _) in misfits {
        let bad = y.replacen(
            "\"Snoozed the {value} alarm once{vocab.when}\"",
            &format!("\"{text}\""),
            1,
        );
        assert_ne!(bad, y, "the fixture line moved");
        let e = Persona::from_source("maya.yaml", &bad, &cat)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("companion") || e.contains("someone else"),
            "{text}: {e}"
        );
    }
    // A companion after a plain act is fine.
    let ok = y.replacen(
        "\"Snoozed the {value} alarm once{vocab.when}\"",
        "\"Snoozed the {value} alarm once{vocab.with}\"",
        1,
    );
    assert!(Persona::from_source("maya.yaml", &ok, &cat).is_ok());
    // A context that names a profile value would go into every event of its app.
    let named = y.replacen("\" for a weeknight catch-up\"", "\" for a Thai dinner\"", 1);
    let e = Persona::from_source("maya.yaml", &named, &cat)
        .unwrap_err()
        .to_string();
    assert!(e.contains("context") && e.contains("Thai"), "{e}");
}

#[test]
fn days_must_name_days() {
    // A template, a place and a circumstance say which days their events fall on; a word that
    // is no set of days is a located problem, not a silent "any day".
    let y = variant(
        "text: \"Booked {r.name} ({mention})\" }",
        "text: \"Booked {r.name} ({mention})\", days: [mon, funday] }",
    );
    assert_eq!(problems(&y), vec![(K::BadTemplate, line_of(&y, "funday"))]);
    let y = variant(
        "home: { label: \"Home\" }",
        "home: { label: \"Home\", days: someday }",
    );
    assert_eq!(problems(&y), vec![(K::BadTemplate, line_of(&y, "someday"))]);
    let y = variant(
        "places:",
        "contexts:\n  dinespot: [\" after standup\", { text: \" after a long week\", days: [fri, sat] }]\nholidays: [\"2025-07-04\"]\nplaces:",
    );
    let p = Persona::from_source("test.yaml", &y, &cat()).expect("typed circumstances load");
    let typed = &p.contexts["dinespot"];
    assert_eq!(typed[0].days, super::model::Days::ANY);
    assert_eq!(typed[1].days.mask, 0b011_0000);
    assert_eq!(p.holidays.len(), 1);
    let y = variant(
        "places:",
        "contexts:\n  dinespot: [{ text: \" after standup\", days: never }]\nplaces:",
    );
    assert_eq!(problems(&y), vec![(K::BadTemplate, line_of(&y, "never"))]);
}

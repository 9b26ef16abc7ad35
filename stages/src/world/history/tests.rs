//! Proofs of the history guarantees, computed from the produced data of the default world.

use std::collections::{BTreeMap, BTreeSet};

use super::ask::{Ask, Role};
use super::context::people;
use super::draw::draw;
use super::plan::{side_window, windows};
use super::*;
use crate::world::dataset_tests::default_world;
use crate::world::error::WorldError;
use crate::world::persona::text::mentions;
use crate::world::template::Seg;

fn by_entry(events: &[HistoryEvent]) -> BTreeMap<&str, Vec<&HistoryEvent>> {
    let mut m: BTreeMap<&str, Vec<&HistoryEvent>> = BTreeMap::new();
    for e in events {
        for s in &e.supports {
            m.entry(s.as_str()).or_default().push(e);
        }
    }
    m
}

#[test]
fn size_span_order_and_ids() {
    let w = default_world();
    let h = &w.history;
    assert_eq!(h.len(), 3051);
    let (first, last) = (h[0].time.date, h[h.len() - 1].time.date);
    assert!(
        first.days_until(last) >= 182,
        "history spans only {first} … {last}"
    );
    assert!(
        h.windows(2).all(|p| p[0].time <= p[1].time),
        "not in time order"
    );
    let ids: BTreeSet<&str> = h.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids.len(), h.len());
    assert_eq!(h[0].event_id, "ev_0001");
    let months: BTreeSet<String> = h.iter().map(|e| e.time.date.month_key()).collect();
    assert!(months.len() >= 6, "{months:?}");
}

#[test]
fn every_inferable_entry_has_consistent_evidence() {
    let w = default_world();
    let ev = by_entry(&w.history);
    for e in w
        .persona
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable)
    {
        let events = ev
            .get(e.id.as_str())
            .unwrap_or_else(|| panic!("no evidence for {}", e.id));
        assert!(events.len() >= 3, "{} has {} events", e.id, events.len());
        for x in events {
            assert_eq!(x.label, Label::Signal);
            let m = e.mention_on(x.time.date);
            assert!(
                mentions(&x.text, m),
                "{}: \"{}\" lacks \"{m}\"",
                e.id,
                x.text
            );
        }
    }
    // Evidence often spans apps (cross-app transfer needs it).
    let multi_app = ev
        .values()
        .filter(|xs| xs.iter().map(|x| &x.app).collect::<BTreeSet<_>>().len() >= 2)
        .count();
    assert!(
        multi_app * 10 >= ev.len() * 8,
        "only {multi_app}/{} entries evidenced in ≥ 2 apps",
        ev.len()
    );
}

#[test]
fn shifted_entries_show_the_old_value_before_and_the_new_after() {
    let w = default_world();
    let ev = by_entry(&w.history);
    let shifted: Vec<_> = w
        .persona
        .profile
        .iter()
        .filter(|e| e.shift.is_some())
        .collect();
    assert!(shifted.len() >= 4);
    for e in shifted {
        let s = e.shift.as_ref().unwrap();
        let (before, after): (Vec<&&HistoryEvent>, Vec<_>) = ev[e.id.as_str()]
            .iter()
            .partition(|x| x.time.date < s.changed);
        assert!(
            before.len() >= 3 && after.len() >= 3,
            "{}: {} before, {} after",
            e.id,
            before.len(),
            after.len()
        );
        for x in &before {
            assert!(
                mentions(&x.text, &s.from_mention) && !mentions(&x.text, &e.mention),
                "{} before {}: {}",
                e.id,
                s.changed,
                x.text
            );
        }
        for x in &after {
            assert!(
                mentions(&x.text, &e.mention) && !mentions(&x.text, &s.from_mention),
                "{} after {}: {}",
                e.id,
                s.changed,
                x.text
            );
        }
    }
}

#[test]
fn noise_supports_nothing_but_looks_like_signal() {
    let w = default_world();
    let noise: Vec<_> = w
        .history
        .iter()
        .filter(|e| e.label == Label::Noise)
        .collect();
    assert_eq!(noise.len(), (3051.0f64 * 0.2).round() as usize);
    let phrases: Vec<&str> = w
        .persona
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable)
        .flat_map(|e| {
            std::iter::once(e.mention.as_str())
                .chain(e.shift.iter().map(|s| s.from_mention.as_str()))
        })
        .collect();
    let mut naming = 0;
    for n in &noise {
        assert!(n.supports.is_empty() && n.counters.is_empty() && n.category == "noise");
        if phrases.iter().any(|p| mentions(&n.text, p)) {
            naming += 1;
        }
    }
    // Decoys name profile values in someone else's or a non-preference context.
    assert!(
        naming * 3 >= noise.len(),
        "only {naming} of {} noise events name a profile value",
        noise.len()
    );
    assert!(w
        .history
        .iter()
        .filter(|e| e.label == Label::Signal)
        .all(|e| e.supports.len() + e.counters.len() == 1));
}

#[test]
fn counter_evidence_is_a_designed_minority_that_never_names_the_value() {
    let w = default_world();
    for e in w
        .persona
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable && e.counter_template_count() > 0)
    {
        let support = w.evidence_of(&e.id).count();
        let counters: Vec<_> = w
            .history
            .iter()
            .filter(|x| x.counters.iter().any(|c| c == &e.id))
            .collect();
        let share = counters.len() as f64 / (support + counters.len()) as f64;
        assert!(
            (0.10..=0.20).contains(&share),
            "{}: {} counter of {} events",
            e.id,
            counters.len(),
            support + counters.len()
        );
        for x in counters {
            assert_eq!(x.label, Label::Signal);
            let other = e.shift.as_ref().map(|s| s.from_mention.as_str());
            for m in std::iter::once(e.mention.as_str()).chain(other) {
                assert!(!mentions(&x.text, m), "{}: {}", e.id, x.text);
            }
        }
    }
}

#[test]
fn no_ask_only_value_appears_anywhere_in_history() {
    let w = default_world();
    let leaks = crate::world::persona::leak_phrases(&w.persona);
    assert!(leaks.len() >= 10);
    for e in &w.history {
        for l in &leaks {
            assert!(
                !mentions(&e.text, l) && !mentions(&e.location, l),
                "{} leaks \"{l}\": {}",
                e.event_id,
                e.text
            );
        }
    }
    let ask_only: Vec<_> = w
        .persona
        .profile
        .iter()
        .filter(|e| e.source == Source::AskOnly)
        .collect();
    assert!(!ask_only.is_empty());
    assert!(w.history.iter().all(|e| e
        .supports
        .iter()
        .all(|s| ask_only.iter().all(|a| &a.id != s))));
}

#[test]
fn evidence_names_real_app_records() {
    // din_cuisine events name a DineSpot restaurant whose cuisine is the value in effect.
    let w = default_world();
    let table = w
        .catalog
        .app("dinespot")
        .unwrap()
        .table("restaurants")
        .unwrap();
    let cuisine = table.field_idx("cuisine").unwrap();
    let entry = w.persona.entry("din_cuisine").unwrap();
    for x in w.evidence_of("din_cuisine") {
        let want = entry.value_on(x.time.date);
        let named: Vec<_> = table
            .records
            .iter()
            .filter(|r| x.text.contains(&table.label(r)))
            .collect();
        assert!(!named.is_empty(), "no restaurant named in {}", x.text);
        assert!(
            named.iter().any(|r| &r.values[cuisine] == want),
            "{} names no {want} restaurant",
            x.text
        );
    }
}

#[test]
fn same_seed_same_history_other_seed_different() {
    let w = default_world();
    let again = synthesize(&w.catalog, &w.persona, &HistoryParams::default()).unwrap();
    assert_eq!(again, w.history);
    let other = synthesize(
        &w.catalog,
        &w.persona,
        &HistoryParams {
            seed: 8,
            ..HistoryParams::default()
        },
    )
    .unwrap();
    assert_eq!(other.len(), again.len());
    assert_ne!(other, again);
}

#[test]
fn params_are_honoured_and_checked() {
    let w = default_world();
    let p = HistoryParams {
        events: 1000,
        noise: 0.5,
        seed: 1,
        min_per_entry: 2,
    };
    let h = synthesize(&w.catalog, &w.persona, &p).unwrap();
    assert_eq!(h.len(), 1000);
    assert_eq!(h.iter().filter(|e| e.label == Label::Noise).count(), 500);
    let too_few = HistoryParams {
        events: 100,
        ..HistoryParams::default()
    };
    assert!(
        matches!(synthesize(&w.catalog, &w.persona, &too_few), Err(WorldError::Synthesis(m)) if m.contains("needed"))
    );
    let bad_noise = HistoryParams {
        noise: 1.0,
        ..HistoryParams::default()
    };
    assert!(matches!(
        synthesize(&w.catalog, &w.persona, &bad_noise),
        Err(WorldError::Synthesis(_))
    ));
}

/// Draws `n` events of one kind for entry `id`'s first evidence template with twins.
fn draws(id: &str, role: Role, twin: bool, n: usize) -> Vec<String> {
    let w = default_world();
    let p = &w.persona;
    let e = p.entry(id).expect("entry");
    let t = e
        .evidence
        .iter()
        .find(|t| !t.twins.is_empty())
        .expect("a twinned template");
    let ctx = Ctx::new(&w.catalog, p);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    (0..n)
        .map(|_| {
            let window = side_window(&windows(p, e), t.period, &mut rng);
            let ask = Ask {
                t,
                entry: Some(e),
                role,
                window,
                twin,
            };
            draw(&ctx, &ask, &mut rng)
                .expect("draw")
                .expect("something to say")
                .text
        })
        .collect()
}

#[test]
fn noise_twins_carry_another_value_in_a_noise_construction() {
    let w = default_world();
    let e = w.persona.entry("shop_size").unwrap();
    let someone = ["Marco", "Aisha", "Tom", "Dev", "Jordan"];
    let (mut own, mut other) = (0, 0);
    for text in draws("shop_size", Role::Decoy, true, 60) {
        // Someone else's order, or a gift for someone: never hers.
        assert!(
            someone.iter().any(|p| text.starts_with(p)) || text.contains(", a gift for "),
            "unwrapped twin: {text}"
        );
        if mentions(&text, &e.mention) {
            own += 1;
        } else {
            assert!(
                e.others.iter().any(|o| mentions(&text, &o.mention)),
                "a twin carries no size: {text}"
            );
            other += 1;
        }
    }
    // About half carry her own size (someone else's size M says nothing of hers), half another.
    assert!(own >= 15 && other >= 15, "{own} own, {other} other");
}

#[test]
fn her_exceptions_made_from_her_usual_events_carry_another_value_too() {
    let e = default_world().persona.entry("din_time").unwrap();
    for text in draws("din_time", Role::Counter, true, 30) {
        assert!(
            !mentions(&text, &e.mention),
            "an exception names 19:30: {text}"
        );
    }
}

#[test]
fn the_people_of_noise_twins_occur_in_signal_too() {
    let h = &default_world().history;
    for name in ["Marco", "Aisha", "Tom", "Dev", "Jordan"] {
        for label in [Label::Signal, Label::Noise] {
            let n = h
                .iter()
                .filter(|e| e.label == label && mentions(&e.text, name))
                .count();
            assert!(n >= 30, "{name} occurs {n} times in {}", label.as_str());
        }
    }
    // No text names one of them twice ("Marco booked … after Marco's party").
    for e in h {
        for name in ["Marco", "Aisha", "Tom", "Dev", "Jordan"] {
            assert!(e.text.matches(name).count() <= 1, "{}", e.text);
        }
    }
}

#[test]
fn a_circumstance_that_brings_someone_along_takes_no_second_with() {
    // "… after karaoke with Dev with Sam", "… with Tom and Dev from work with Lena": a
    // circumstance that says "with" goes only to a text that says "with" nowhere else.
    let w = default_world();
    let with_someone: Vec<String> = w
        .persona
        .contexts
        .values()
        .flatten()
        .filter_map(|c| match &c.text.segs[..] {
            [Seg::Text(t)] if t.contains(" with ") => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(with_someone.len() >= 5, "{with_someone:?}");
    let doubled: Vec<&str> = w
        .history
        .iter()
        .map(|e| e.text.as_str())
        .filter(|t| {
            with_someone
                .iter()
                .any(|c| t.contains(c.as_str()) && t.replacen(c.as_str(), "", 1).contains(" with "))
        })
        .collect();
    assert!(
        doubled.is_empty(),
        "{} texts say \"with\" twice: {doubled:?}",
        doubled.len()
    );
}

#[test]
fn no_one_else_pays_or_refills_in_her_wallet_or_health_app() {
    // "Jordan paid Andytown Coffee $6.50 with tap to pay" in her Wallet: a phone that is not
    // hers. (Her Mail and work Calendar may show others' acts she receives or sees: "Jordan sent
    // his report to the whole research team".)
    let w = default_world();
    let people = people(&w.persona);
    assert!(people.len() >= 5, "{people:?}");
    let misplaced: Vec<&str> = w
        .history
        .iter()
        .filter(|e| ["wallet", "health"].contains(&e.app.as_str()))
        .filter(|e| {
            people.iter().any(|p| {
                e.text.starts_with(&format!("{p} ")) || e.text.contains(&format!(", {p} "))
            })
        })
        .map(|e| e.text.as_str())
        .collect();
    assert!(misplaced.is_empty(), "{misplaced:?}");
}

#[test]
fn a_circumstance_names_no_other_town_and_no_second_purpose() {
    // "Landed in PDX on Alaska Airlines AS 1205 to visit Aisha in Seattle" (a flight to Portland
    // with a Seattle circumstance); "Saved a cabin in Tahoe for a maybe-someday trip for Dev's
    // conference talk" (a purpose after a purpose).
    let w = default_world();
    let towns = &w.persona.towns;
    assert!(towns.len() >= 5, "{towns:?}");
    let placed: Vec<(String, Vec<usize>)> = w
        .catalog
        .apps
        .iter()
        .flat_map(|a| &a.tables)
        .flat_map(|t| t.records.iter().map(move |r| (t.label(r), r)))
        .map(|(l, r)| (l, crate::world::rules::record_towns(r, towns)))
        .filter(|(l, t)| !t.is_empty() && l.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        .collect();
    let (mut two_towns, mut two_purposes) = (Vec::new(), Vec::new());
    for e in &w.history {
        let mut here = crate::world::rules::towns_named(&e.text, towns);
        for (_, t) in placed.iter().filter(|(l, _)| mentions(&e.text, l)) {
            here.extend(t);
        }
        here.sort_unstable();
        here.dedup();
        if here.len() > 1 {
            two_towns.push(e.text.as_str());
        }
        if crate::world::rules::purposes(&e.text) > 1 {
            two_purposes.push(e.text.as_str());
        }
    }
    assert!(
        two_towns.is_empty(),
        "{} texts: {two_towns:?}",
        two_towns.len()
    );
    assert!(
        two_purposes.is_empty(),
        "{} texts: {two_purposes:?}",
        two_purposes.len()
    );
}

#[test]
fn a_flight_is_flown_on_its_day_and_the_words_keep_to_the_clock() {
    // "Flew out of SFO on AS 1205" a week after AS 1205 departed; "Sam stopped at Rainbow
    // Grocery on the way home from work on Tuesday morning"; "Liked Priya's post after a busy
    // day" at 11:41.
    let w = default_world();
    let a = crate::world::audit::audit(w, 7);
    let off_day: Vec<&str> = a
        .contradictions
        .iter()
        .filter(|c| c.rule == crate::world::audit::Rule::CompletedBeforeDate)
        .map(|c| c.detail.as_str())
        .collect();
    assert!(off_day.is_empty(), "{off_day:?}");
    let late = [
        "on the way home from work",
        "after a busy day",
        "while cooking dinner",
    ];
    for e in &w.history {
        let hour = e.time.time.seconds() / 3600;
        if late.iter().any(|p| e.text.contains(p)) {
            assert!(!(5..17).contains(&hour), "{} at {hour}:00", e.text);
        }
    }
}

#[test]
fn work_falls_on_workdays_and_a_weekday_phrase_on_its_own_day() {
    // "Rode the N Judah to work … on Sunday", "… once Jordan approved expenses" on a Venmo split:
    // places, templates and circumstances declare their days and scene, and synthesis keeps them.
    use crate::world::audit::days::calendar_findings;
    let w = default_world();
    for seed in [7, 31] {
        let h = synthesize(
            &w.catalog,
            &w.persona,
            &HistoryParams {
                seed,
                ..HistoryParams::default()
            },
        )
        .unwrap();
        let found: Vec<String> = calendar_findings(&w.persona, &h)
            .into_iter()
            .map(|c| c.detail)
            .collect();
        assert!(found.is_empty(), "seed {seed}: {found:#?}");
        // A circumstance of a scene joins only acts of that scene.
        let loose: Vec<&str> = h
            .iter()
            .map(|e| e.text.as_str())
            .filter(|t| t.contains("once Jordan approved expenses") && !t.contains("team lunch"))
            .collect();
        assert!(loose.is_empty(), "seed {seed}: {loose:#?}");
        let on_work_days = h
            .iter()
            .filter(|e| e.location == w.persona.places["work"])
            .count();
        assert!(
            on_work_days > 100,
            "seed {seed}: {on_work_days} events at work"
        );
    }
}

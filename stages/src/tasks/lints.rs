//! Content lints of `validate_tasks`: flaws a task can have although its reference passes and a
//! defaults-only agent fails — the six classes an audit of the first release found by hand
//! (issue 13). Each returns rejections with its own [`Check`]:
//!
//! - [`quantity`]: an ask-only count the instruction's wording already fixes ("get me a ticket"
//!   with 3 tickets in the hidden context, or "for two" stated outright);
//! - [`premise`]: the instruction's premise is already true in app data (the cleaning it asks to
//!   book is booked) or contradicted by the clock (a "Friday" that is a Saturday);
//! - [`derivable`]: an ask-only value the agent could read off app data about the task (the trip
//!   dates on the calendar);
//! - [`artefacts`]: a criterion on a habit that the user's own records fail (a signoff her sent
//!   mails never use);
//! - [`source_mismatch`]: one slot inferable in one variant of a template and ask-only in
//!   another, with nothing in the instruction to say why.
//!
//! Later audits added more classes below (issue 25), among them [`weekday_date`]: a weekday
//! whose natural reading on the world's today is another day than the one scored.

use std::collections::HashSet;

use serde_json::Value;

use super::eval::{normalize, Episode};
use super::matcher::{phrase_in, words};
use super::model::{CriterionKind, Slot, Source, TaskBundle};
use super::predicate::{Change, Predicate, Test, ValueRef};
use super::rejection::{reject, Check, Rejection};
use super::world_index::WorldIndex;
use crate::world::app::Catalog;
use crate::world::clock::{Date, MONTHS, WEEKDAYS};
use crate::world::phone::{Phone, StateView};
use crate::world::types::{display, FieldKind};

/// A slot's source in one task of the reviewed set (the `slots` table), for
/// [`source_mismatch`].
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSource {
    /// The task.
    pub task_id: String,
    /// The slot.
    pub slot_id: String,
    /// Its source there.
    pub source: Source,
}

/// Number words an instruction may use for a count.
const NUMBERS: [&str; 13] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

/// Words that, before a noun, make it one thing.
const SINGULAR: [&str; 5] = ["a", "an", "one", "single", "my"];

/// Keywords that mark a count of people (so "me" means one, "us" more than one).
const PEOPLE: [&str; 8] = [
    "people",
    "person",
    "guests",
    "party",
    "passengers",
    "travellers",
    "travelers",
    "headcount",
];

/// `word` without a plural ending.
fn singular(word: &str) -> &str {
    word.strip_suffix("es")
        .filter(|w| w.ends_with('s') || w.ends_with("sh") || w.ends_with("ch"))
        .or_else(|| word.strip_suffix('s').filter(|w| !w.ends_with('s')))
        .unwrap_or(word)
}

fn number_word(w: &str) -> Option<i64> {
    NUMBERS
        .iter()
        .position(|n| *n == w)
        .map(|i| i as i64)
        .or_else(|| w.parse().ok())
}

/// The count the instruction's wording gives a slot's nouns, if any: "a ticket" → 1,
/// "two tickets" → 2, "a table for four" → 4 (people counts), "book me" → 1 (people counts
/// without "us", "we", "our").
pub fn worded_count(instruction: &str, slot: &Slot) -> Option<(i64, String)> {
    let ws = words(instruction);
    let nouns: HashSet<String> = slot
        .keywords
        .iter()
        .flat_map(|k| words(k))
        .map(|w| singular(&w).to_string())
        .filter(|w| w.len() >= 3 && !SINGULAR.contains(&w.as_str()))
        .collect();
    let people = slot
        .keywords
        .iter()
        .flat_map(|k| words(k))
        .any(|w| PEOPLE.contains(&w.as_str()));
    for (i, w) in ws.iter().enumerate() {
        let noun = singular(w);
        // The noun must head its phrase: "my coffee place" counts places, not coffees.
        let heads = ws
            .get(i + 1)
            .is_none_or(|next| super::matcher::GENERIC.contains(&next.as_str()));
        if !nouns.contains(noun) || !heads {
            continue;
        }
        // Up to three words back: "a ticket", "my usual latte", "two more tickets", "the
        // Patagonia pocket tee".
        for back in 1..=3 {
            let Some(d) = i.checked_sub(back).map(|j| ws[j].as_str()) else {
                break;
            };
            if let Some(n) = number_word(d).filter(|_| back <= 2) {
                return Some((n, format!("{d} … {w}")));
            }
            let one = SINGULAR.contains(&d) || d == "the";
            if one && noun == w.as_str() {
                return Some((1, format!("{d} … {w}")));
            }
            if one || number_word(d).is_some() {
                break;
            }
        }
    }
    if people {
        if let Some(i) = ws.iter().position(|w| w == "for") {
            if let Some(n) = ws.get(i + 1).and_then(|w| number_word(w)) {
                return Some((n, format!("for {}", ws[i + 1])));
            }
        }
        let plural = ws
            .iter()
            .any(|w| matches!(w.as_str(), "us" | "we" | "our" | "everyone" | "family"));
        // "book me …", "get me …", "… for me": the booking is for her alone ("remind me" is not).
        let for_me = ws.windows(2).any(|w| {
            w[1] == "me"
                && matches!(
                    w[0].as_str(),
                    "book" | "get" | "reserve" | "find" | "order" | "for" | "buy"
                )
        });
        if !plural && for_me {
            return Some((1, "me".into()));
        }
    }
    None
}

/// Operation fields that count things (as opposed to amounts, minutes or percentages).
const COUNT_FIELDS: [&str; 10] = [
    "quantity",
    "party_size",
    "passengers",
    "tickets",
    "nights",
    "guests",
    "count",
    "seats",
    "servings",
    "portions",
];

/// Ask-only counts the instruction's wording contradicts or already states.
pub fn quantity(b: &TaskBundle) -> Vec<Rejection> {
    let bindings = b.slot_bindings();
    b.slots
        .iter()
        .filter(|s| s.source == Source::AskOnly)
        .filter(|s| {
            bindings
                .get(&s.slot_id)
                .is_some_and(|(_, arg)| COUNT_FIELDS.contains(&arg.as_str()))
        })
        .filter_map(|s| {
            let v = s.value.as_i64().filter(|_| s.value.is_number())?;
            let (n, said) = worded_count(&b.task.instruction, s)?;
            let reason = if n == v {
                format!(
                    "ask-only slot `{}`: the instruction already says how many (\"{said}\" = {v}); it is not the user's to supply",
                    s.slot_id
                )
            } else {
                format!(
                    "ask-only slot `{}` = {v}, but the instruction's wording says {n} (\"{said}\"); make the wording agree or pick another value",
                    s.slot_id
                )
            };
            Some(reject(Check::Quantity, Some(&s.slot_id), reason))
        })
        .collect()
}

/// Whether `table` belongs to the app of the reference's first operation call.
fn primary(b: &TaskBundle, table: &str) -> bool {
    b.task
        .reference_solution
        .iter()
        .filter_map(|s| s.get("tool").and_then(Value::as_str))
        .find(|t| !t.contains(".list_") && !t.contains(".get_"))
        .and_then(|t| t.split_once('.'))
        .is_some_and(|(app, _)| table.split_once('.').is_some_and(|(a, _)| a == app))
}

/// The first `date` field of a table, if any.
fn day_field(cat: &crate::world::Catalog, table: &str) -> Option<String> {
    let t = cat.table(cat.table_id(table, None)?);
    t.fields
        .iter()
        .find(|f| matches!(f.kind, FieldKind::Date))
        .map(|f| f.name.clone())
}

/// Records of `table` in the initial state that satisfy every condition (checked one at a time
/// with an `exists` predicate pinned to the record's id).
fn matching_records(
    episode: &Episode<'_, '_>,
    initial: &Phone<'_>,
    table: &str,
    conditions: &[super::predicate::Condition],
) -> Vec<Value> {
    let Some((app, name)) = table.split_once('.') else {
        return Vec::new();
    };
    initial
        .state()
        .records_json(app, name)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| {
            let Some(id) = r.get("id").cloned() else {
                return false;
            };
            let mut conds = conditions.to_vec();
            conds.push(super::predicate::Condition {
                path: vec!["id".into()],
                test: Test::Eq(ValueRef::Lit(id)),
            });
            episode.check(&Predicate::Record {
                change: Change::Exists,
                table: table.to_string(),
                conditions: conds,
            })
        })
        .collect()
}

/// Date-typed fields of a predicate's conditions or an operation's arguments are what pin a
/// record to the task ("a reservation on 10-03"); a check without one could hold for any old
/// record.
fn pins_a_day(cat: &crate::world::Catalog, table: &str, c: &super::predicate::Condition) -> bool {
    let Some(t) = cat.table_id(table, None) else {
        return false;
    };
    let t = cat.table(t);
    let first = &c.path[0];
    c.path.len() == 1
        && t.field_idx(first)
            .is_some_and(|i| matches!(t.fields[i].kind, FieldKind::Date | FieldKind::DateTime))
        && matches!(c.test, Test::Eq(_))
}

/// The instruction's premise is already satisfied (an action criterion's record, pinned to a
/// day, already exists before the agent acts) or contradicted by the clock (a weekday, "today"
/// or "tomorrow" the reference's dates do not fall on).
pub fn premise(ix: &WorldIndex<'_>, b: &TaskBundle, initial: &Phone<'_>) -> Vec<Rejection> {
    let cat = &ix.world.catalog;
    let episode = Episode::new(initial, &b.slots);
    let mut out = Vec::new();
    // What the instruction asks to create, per table: the conditions of every action criterion
    // that inserts into it, together ("a run" + "dated Sunday").
    let mut asked: Vec<(&str, Vec<super::predicate::Condition>, Vec<&str>)> = Vec::new();
    for c in b
        .criteria
        .iter()
        .filter(|c| c.kind == CriterionKind::Action)
    {
        if let Predicate::Record {
            change: Change::Inserted,
            table,
            conditions,
        } = &c.predicate
        {
            match asked.iter_mut().find(|(t, ..)| t == table) {
                Some((_, conds, ids)) => {
                    conds.extend(conditions.iter().cloned());
                    ids.push(&c.criterion_id);
                }
                None => asked.push((table, conditions.clone(), vec![&c.criterion_id])),
            }
        }
    }
    let today = initial.clock().date;
    for (table, conditions, ids) in asked {
        let pinned = conditions.iter().any(|x| pins_a_day(cat, table, x));
        let other = conditions.iter().any(|x| !pins_a_day(cat, table, x));
        if !other {
            continue;
        }
        // Unpinned ("book my next cleaning"): an upcoming record (dated today or later) that
        // matches is the thing the instruction asks for, already there.
        // Unpinned, only the task's own object counts (a booking in the app the reference acts
        // in first, not a side effect such as a calendar entry), and not when the instruction
        // itself refers to the existing record's day ("before the one on the 21st").
        if !pinned && (day_field(cat, table).is_none() || !primary(b, table)) {
            continue;
        }
        let upcoming = |r: &Value| -> bool {
            pinned
                || day_field(cat, table).is_some_and(|f| {
                    r.get(&f)
                        .and_then(Value::as_str)
                        .and_then(|d| Date::parse(d.get(..10).unwrap_or(d)))
                        .is_some_and(|d| d >= today)
                })
        };
        let mentioned = |r: &Value| {
            day_field(cat, table)
                .and_then(|f| r.get(&f).and_then(Value::as_str).and_then(Date::parse))
                .is_some_and(|d| {
                    let (_, _, day) = d.ymd();
                    let ws = words(&b.task.instruction);
                    ws.iter()
                        .any(|w| w.trim_end_matches(|c: char| c.is_alphabetic()) == day.to_string())
                })
        };
        let matching = matching_records(&episode, initial, table, &conditions);
        if matching
            .iter()
            .any(|r| upcoming(r) && (pinned || !mentioned(r)))
        {
            out.push(reject(
                Check::Premise,
                ids.first().copied(),
                format!(
                    "the instruction's premise already holds: `{table}` already has a record matching criteria {} before the agent acts",
                    ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(" + ")
                ),
            ));
        }
    }
    out.extend(day_words(b, cat, initial.clock().date));
    out
}

/// Days the action criteria demand: literal dates of `date`/`datetime` conditions (the day the
/// thing must be on). Fallbacks that move the day are personalization criteria, not these.
fn demanded_dates(b: &TaskBundle, cat: &crate::world::Catalog) -> Vec<Date> {
    let mut out = Vec::new();
    for c in b
        .criteria
        .iter()
        .filter(|c| c.kind == CriterionKind::Action)
    {
        c.predicate.visit(&mut |p| {
            let Predicate::Record {
                table, conditions, ..
            } = p
            else {
                return;
            };
            for cond in conditions.iter().filter(|x| pins_a_day(cat, table, x)) {
                if let Test::Eq(ValueRef::Lit(Value::String(d))) = &cond.test {
                    out.extend(Date::parse(d.get(..10).unwrap_or(d)));
                }
            }
        });
    }
    out
}

fn day_words(b: &TaskBundle, cat: &crate::world::Catalog, today: Date) -> Vec<Rejection> {
    let ws = words(&b.task.instruction);
    let dates = demanded_dates(b, cat);
    let Some(first) = dates.first().copied() else {
        return Vec::new();
    };
    let named: Vec<usize> = WEEKDAYS
        .iter()
        .enumerate()
        .filter(|(_, d)| ws.iter().any(|w| w == *d || w.strip_suffix('s') == Some(d)))
        .map(|(i, _)| i)
        .collect();
    let mut said = None;
    if let [one] = named.as_slice() {
        if first.weekday() as usize != *one {
            said = Some(format!(
                "\"{}\" but the criteria want {first}, a {}",
                WEEKDAYS[*one],
                WEEKDAYS[first.weekday() as usize]
            ));
        }
    }
    let relative = [("today", 0), ("tonight", 0), ("tomorrow", 1)];
    for (word, offset) in relative {
        if ws.iter().any(|w| w == word) && !dates.contains(&today.add_days(offset)) {
            said = Some(format!(
                "\"{word}\" is {} but the criteria want {first}",
                today.add_days(offset)
            ));
        }
    }
    said.map(|s| {
        vec![reject(
            Check::Premise,
            None,
            format!("the instruction's day contradicts the task: {s}"),
        )]
    })
    .unwrap_or_default()
}

/// Words before a weekday that say which week it is in ("this Friday", "next Friday").
const WEEK_WORDS: [&str; 4] = ["this", "coming", "next", "last"];

/// The day a weekday named on `today` means, by the rule `docs/tasks.md` states (weeks start on
/// Monday): "next Friday" is the Friday of next week, "last Friday" the Friday of last week, and
/// a bare "Friday" (or "this Friday", "Friday's") the nearest Friday after today — or before
/// it, when the task is about the past (`past`: the day scored is before today) — and "a week
/// from Friday" seven days after that.
pub fn weekday_reading(today: Date, weekday: usize, week_word: Option<&str>, past: bool) -> Date {
    let monday = today.add_days(-(today.weekday() as i32));
    let offset = weekday as i32 - today.weekday() as i32;
    match week_word {
        Some("a week from") => weekday_reading(today, weekday, None, past).add_days(7),
        Some("next") => monday.add_days(7 + weekday as i32),
        Some("last") => monday.add_days(weekday as i32 - 7),
        _ if past => today.add_days(if offset < 0 { offset } else { offset - 7 }),
        _ => today.add_days(if offset > 0 { offset } else { offset + 7 }),
    }
}

/// Each singular weekday an instruction names ("Friday", "Friday's"; not "Fridays"), with the
/// week word before it ("this", "this coming", "next", "last", "a week from"), in order.
fn named_weekdays(instruction: &str) -> Vec<(usize, Option<&'static str>)> {
    let ws = words(instruction);
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let bare = w.strip_suffix("'s").unwrap_or(w);
        let Some(day) = WEEKDAYS.iter().position(|d| *d == bare) else {
            continue;
        };
        let before = |k: usize| i.checked_sub(k).map(|j| ws[j].as_str());
        let a_week_from = before(2) == Some("week") && matches!(before(1), Some("from" | "on"));
        let word = if a_week_from {
            Some("a week from")
        } else {
            WEEK_WORDS
                .iter()
                .copied()
                .find(|x| before(1) == Some(*x))
                .map(|x| if x == "coming" { "this" } else { x })
        };
        out.push((day, word));
    }
    out
}

/// A weekday whose natural reading on the world's today is not the day the criteria score
/// ("on Friday", said on Thursday 2 October, while the criteria want Friday 10 October): a
/// careful agent books the day the words mean and is scored wrong. Only weekdays the scored
/// days include are read here (a weekday none of them has is [`premise`]'s finding).
pub fn weekday_date(b: &TaskBundle, cat: &crate::world::Catalog, today: Date) -> Vec<Rejection> {
    let dates = demanded_dates(b, cat);
    let mut out = Vec::new();
    for (day, word) in named_weekdays(&b.task.instruction) {
        let scored: Vec<Date> = dates
            .iter()
            .copied()
            .filter(|d| d.weekday() as usize == day)
            .collect();
        let Some(&first) = scored.first() else {
            continue;
        };
        if scored.contains(&today) && word.is_none() {
            continue;
        }
        let meant = weekday_reading(today, day, word, first < today);
        if scored.contains(&meant) {
            continue;
        }
        let said = word.map_or(WEEKDAYS[day].to_string(), |w| {
            format!("{w} {}", WEEKDAYS[day])
        });
        out.push(reject(
            Check::WeekdayDate,
            None,
            format!(
                "\"{said}\" said on {} {today} means {meant}, but the criteria score {first}: say the date, or \"{}\"",
                today.weekday_name(),
                if meant < first { format!("next {}", WEEKDAYS[day]) } else { WEEKDAYS[day].to_string() }
            ),
        ));
    }
    out
}

/// Capitalised words of a text that are not its first word, a weekday, a month or "I": the
/// names a task is about (Portland, Jordan, Ali Wong).
fn names(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && w.len() >= 3)
        .map(|w| w.trim_end_matches("'s").to_lowercase())
        .filter(|w| !WEEKDAYS.contains(&w.as_str()) && !MONTHS.contains(&w.as_str()))
        .collect()
}

/// The field type a slot is used as (the reference's argument), if any.
fn bound_kind<'c>(
    b: &TaskBundle,
    cat: &'c crate::world::Catalog,
    slot: &str,
) -> Option<&'c FieldKind> {
    let (tool, arg) = b.slot_bindings().remove(slot)?;
    let op = cat.operation(&tool)?;
    op.field_idx(&arg).map(|i| &op.fields[i].kind)
}

/// Ask-only values an agent could read off app data about the task: a record that names what
/// the instruction names (Portland, Jordan) and holds the value — on a day from today on, for
/// dated records, so a past booking's party size does not count. Values chosen from a list
/// (enum options, records) are options by nature and are not searched.
pub fn derivable(ix: &WorldIndex<'_>, b: &TaskBundle, initial: &Phone<'_>) -> Vec<Rejection> {
    let cat = &ix.world.catalog;
    let today = initial.clock().date;
    let mut subject = names(&b.task.instruction);
    subject.extend(b.task.hidden_context.facts.iter().flat_map(|f| names(f)));
    if subject.is_empty() {
        return Vec::new();
    }
    let state = initial.state();
    let mut out = Vec::new();
    for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
        if matches!(
            bound_kind(b, cat, &s.slot_id),
            Some(FieldKind::Enum(_) | FieldKind::Ref(_))
        ) {
            continue;
        }
        let value = display(&s.value);
        if value.trim().is_empty()
            || !(value.contains(char::is_numeric) || value.split_whitespace().count() >= 2)
        {
            continue;
        }
        // A bare number only counts where it is that number: the argument's own field, or
        // next to what it counts ("3 nights").
        let arg = b.slot_bindings().remove(&s.slot_id).map(|(_, a)| a);
        let nouns: Vec<String> = s
            .keywords
            .iter()
            .flat_map(|k| words(k))
            .filter(|w| w.len() >= 3)
            .collect();
        let want = Wanted {
            value: &value,
            number: s.value.is_number(),
            arg: arg.as_deref(),
            nouns: &nouns,
        };
        let hit = held_in_app_data(cat, &state, &subject, today, &want);
        if let Some(place) = hit {
            out.push(reject(
                Check::Derivable,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}` = {value} can be read off app data about the task ({place}); it is not only the user's to say",
                    s.slot_id
                ),
            ));
        }
    }
    out
}

/// What an ask-only value looks like in app data: the value, whether it is a bare number
/// (which counts only in the argument's own field or next to what it counts), and the nouns it
/// counts.
struct Wanted<'a> {
    value: &'a str,
    number: bool,
    arg: Option<&'a str>,
    nouns: &'a [String],
}

/// The first record (as `app.table id`) of the app data that is about the task's subject, not
/// dated in the past, and holds the wanted value.
fn held_in_app_data(
    cat: &Catalog,
    state: &StateView<'_>,
    subject: &[String],
    today: Date,
    want: &Wanted<'_>,
) -> Option<String> {
    cat.apps.iter().find_map(|app| {
        app.tables.iter().find_map(|t| {
            let records = state.records_json(&app.id, &t.name)?;
            records.into_iter().find_map(|r| {
                let obj = r.as_object()?;
                let texts: Vec<String> = obj
                    .values()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                let about = texts
                    .iter()
                    .any(|x| subject.iter().any(|n| phrase_in(x, n)));
                // A day the record is *for* (a booking's date), not when it was edited.
                let dated_past = t.fields.iter().any(|f| {
                    matches!(f.kind, FieldKind::Date)
                        && obj
                            .get(&f.name)
                            .and_then(Value::as_str)
                            .and_then(|d| Date::parse(d.get(..10).unwrap_or(d)))
                            .is_some_and(|d| d < today)
                });
                let title = t.title.map(|i| t.fields[i].name.as_str());
                let holds = obj.iter().any(|(k, v)| {
                    if k == "id" || Some(k.as_str()) == title {
                        return false;
                    }
                    if want.number {
                        return (Some(k.as_str()) == want.arg && display(v) == want.value)
                            || v.as_str().is_some_and(|x| {
                                want.nouns
                                    .iter()
                                    .any(|n| phrase_in(x, &format!("{} {n}", want.value)))
                            });
                    }
                    display(v) == want.value || v.as_str().is_some_and(|x| phrase_in(x, want.value))
                });
                (about && !dated_past && holds).then(|| {
                    format!(
                        "{}.{} {}",
                        app.id,
                        t.name,
                        obj.get("id").map(display).unwrap_or_default()
                    )
                })
            })
        })
    })
}

/// The user's identities: her name, first name and the values of profile entries about her
/// addresses and accounts, lower-cased.
fn identities(ix: &WorldIndex<'_>) -> Vec<String> {
    let p = &ix.world.persona;
    let mut out = vec![p.name.to_lowercase()];
    out.extend(p.name.split_whitespace().next().map(str::to_lowercase));
    out.extend(
        p.profile
            .iter()
            .filter(|e| e.key.contains("email") || e.key.contains("address"))
            .map(|e| display(&e.value).to_lowercase()),
    );
    out
}

/// Criteria on a habit (an inferable slot) that the user's own records fail: a text test that
/// none of her records of the same table passes, though she has some with that field ("Best,
/// Maya" demanded while her sent mails all sign "Cheers, Maya").
pub fn artefacts(ix: &WorldIndex<'_>, b: &TaskBundle, initial: &Phone<'_>) -> Vec<Rejection> {
    let me = identities(ix);
    let state = initial.state();
    let mut out = Vec::new();
    for c in &b.criteria {
        let Some(slot) = c.slot_id.as_deref().and_then(|id| b.slot(id)) else {
            continue;
        };
        if slot.source != Source::Inferable {
            continue;
        }
        let mut conflict = None;
        c.predicate.visit(&mut |p| {
            let Predicate::Record { table, conditions, .. } = p else {
                return;
            };
            let Some((app, name)) = table.split_once('.') else {
                return;
            };
            let mine: Vec<Value> = state
                .records_json(app, name)
                .unwrap_or_default()
                .into_iter()
                .filter(|r| {
                    r.as_object().is_some_and(|o| {
                        o.iter().any(|(k, v)| {
                            k != "id" && k != "to" && me.contains(&display(v).to_lowercase())
                        })
                    })
                })
                .collect();
            // A habit is demanded of any record of the kind (one condition: "the mail is signed
            // X"); a criterion that also says which record ("the mail to Lena names X") is about
            // content, which her earlier records need not share.
            if conditions.len() != 1 {
                return;
            }
            for cond in conditions.iter().filter(|x| x.path.len() == 1) {
                // Only her habit itself (the slot's value), not text the task spells out.
                let Test::Contains(want @ (ValueRef::Slot(_) | ValueRef::Fmt(_))) = &cond.test
                else {
                    continue;
                };
                let Some(want) = resolve_value(want, &b.slots) else {
                    continue;
                };
                let field = &cond.path[0];
                let with_field: Vec<String> = mine
                    .iter()
                    .filter_map(|r| r.get(field).map(display))
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                // Her style lives in prose (bodies, texts, captions), not in address fields.
                if !with_field.iter().any(|t| t.split_whitespace().count() >= 2) {
                    continue;
                }
                let want_n = normalize(&want);
                if !with_field.is_empty() && !with_field.iter().any(|t| normalize(t).contains(&want_n)) {
                    conflict = Some(format!(
                        "criterion `{}` wants `{table}.{field}` to contain \"{want}\", but none of her own {} records with that field does (e.g. \"{}\")",
                        c.criterion_id,
                        with_field.len(),
                        with_field[0].replace('\n', "\\n")
                    ));
                }
            }
        });
        if let Some(reason) = conflict {
            out.push(reject(Check::Artefacts, Some(&c.criterion_id), reason));
        }
    }
    out
}

fn resolve_value(v: &ValueRef, slots: &[Slot]) -> Option<String> {
    super::eval::resolve_ref(v, slots).map(|v| display(&v))
}

/// Words in an instruction that explain why a detail is handled differently this time.
const EXCEPTION_CUES: [&str; 7] = [
    "this time",
    "for once",
    "instead",
    "unlike",
    "different",
    "not my usual",
    "change",
];

/// A slot whose source differs from its natural one (the profile entry's, or ask-only for
/// `ask:`/situational slots) while a sibling variant of the same template keeps the natural
/// source, and nothing in this variant's instruction says why.
pub fn source_mismatch(ix: &WorldIndex<'_>, b: &TaskBundle, set: &[SlotSource]) -> Vec<Rejection> {
    let prefix = format!("{}-", b.task.template);
    let instruction = b.task.instruction.to_lowercase();
    let mut out = Vec::new();
    for s in &b.slots {
        let natural = s
            .profile_entry
            .as_deref()
            .and_then(|id| ix.world.persona.entry(id))
            .map(|e| match e.source {
                crate::world::persona::Source::Inferable => Source::Inferable,
                _ => Source::AskOnly,
            })
            .unwrap_or(Source::AskOnly);
        if s.source == natural {
            continue;
        }
        let sibling = set.iter().find(|x| {
            x.task_id != b.task.task_id
                && x.task_id.starts_with(&prefix)
                && x.slot_id == s.slot_id
                && x.source == natural
        });
        let Some(sibling) = sibling else { continue };
        let visible = EXCEPTION_CUES.iter().any(|c| instruction.contains(c))
            || s.keywords.iter().any(|k| phrase_in(&instruction, k));
        if !visible {
            out.push(reject(
                Check::SourceMismatch,
                Some(&s.slot_id),
                format!(
                    "slot `{}` is {} here but {} in sibling {}, and the instruction gives no reason; keep one source across the template's variants or say why in the instruction",
                    s.slot_id,
                    s.source.as_str(),
                    sibling.source.as_str(),
                    sibling.task_id
                ),
            ));
        }
    }
    out
}

/// The reviewed set a task is validated in: every task's slot sources (for
/// [`source_mismatch`]) and the instructions given twice (for [`duplicate_instruction`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetView {
    /// Slot sources of every task.
    pub slots: Vec<SlotSource>,
    /// `(task_id, same_as)`: a task whose instruction is that of an earlier one
    /// ([`repeated_instructions`]; `import_review`'s `repeats` table).
    pub repeats: Vec<(String, String)>,
}

impl SetView {
    /// The view of a set of bundles (how `validate_tasks` sees the reviewed set).
    pub fn of(bundles: &[TaskBundle]) -> Self {
        SetView {
            slots: bundles
                .iter()
                .flat_map(|b| {
                    b.slots.iter().map(|s| SlotSource {
                        task_id: b.task.task_id.clone(),
                        slot_id: s.slot_id.clone(),
                        source: s.source,
                    })
                })
                .collect(),
            repeats: repeated_instructions(
                &bundles
                    .iter()
                    .map(|b| (b.task.task_id.clone(), b.task.instruction.clone()))
                    .collect::<Vec<_>>(),
            ),
        }
    }
}

/// Words that make an instruction about more than the user ("book us …", "our usual …").
const PLURAL_WORDS: [&str; 7] = ["us", "we", "our", "ours", "ourselves", "everyone", "family"];

/// Words that bring other people into a request ("for the team", "the book club").
const GROUP_WORDS: [&str; 16] = [
    "team",
    "group",
    "everyone",
    "family",
    "friend",
    "guest",
    "party",
    "club",
    "crew",
    "cousin",
    "colleague",
    "people",
    "kid",
    "parent",
    "review",
    "session",
];

/// Words by which the user speaks of herself alone.
const FIRST_PERSON: [&str; 6] = ["i", "me", "my", "mine", "i'm", "i'd"];

/// Count fields of things each person has one of: a ticket, a seat, a portion.
const PER_PERSON_FIELDS: [&str; 6] = [
    "party_size",
    "passengers",
    "guests",
    "seats",
    "tickets",
    "servings",
];

/// Nouns that make a `quantity` a count of people's things (one each).
const PER_PERSON_NOUNS: [&str; 9] = [
    "ticket", "seat", "portion", "serving", "latte", "coffee", "drink", "meal", "person",
];

/// The count an instruction suggests without saying it: 2 for "a couple" / "a pair", 3 for "a
/// few", 2 for "us", "we", "our" ("book us a table", "our usual lattes"), and the user plus the
/// people named with "and me" / "and I" ("for Sam, Priya and me" → 3).
pub fn natural_guess(instruction: &str) -> Option<(i64, String)> {
    let raw: Vec<&str> = instruction
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    // Vague amounts read as their usual number: "a couple of tees" → 2, "a few tees" → 3.
    for (phrase, n) in [("couple", 2), ("pair", 2), ("few", 3)] {
        if raw
            .windows(2)
            .any(|w| w[0].eq_ignore_ascii_case("a") && w[1].eq_ignore_ascii_case(phrase))
        {
            return Some((n, format!("\"a {phrase}\" reads as {n}")));
        }
    }
    let and_me = raw.windows(2).position(|w| {
        w[0].eq_ignore_ascii_case("and") && (w[1].eq_ignore_ascii_case("me") || w[1] == "I")
    });
    if let Some(i) = and_me {
        // The names listed before "and me": "for Sam, Priya and me" → Sam, Priya.
        let named = raw[..i]
            .iter()
            .rev()
            .take_while(|w| w.chars().next().is_some_and(char::is_uppercase))
            .count();
        let n = named as i64 + 1;
        return Some((n, format!("\"… and me\" makes {n}")));
    }
    let ws = words(instruction);
    let plural = ws.iter().find(|w| PLURAL_WORDS.contains(&w.as_str()));
    // One more person joining: "his brother is joining us" makes three, "Priya's coming over"
    // two (her and the user).
    let guest = one_guest(&raw);
    match (plural, guest) {
        (Some(w), Some(g)) => Some((3, format!("\"{w}\" and \"{g}\" make three"))),
        (Some(w), None) => Some((2, format!("\"{w}\" suggests two"))),
        (None, Some(g)) => Some((2, format!("the user and \"{g}\" make two"))),
        (None, None) => None,
    }
}

/// The one person a request says is joining ("his brother is joining", "Priya's coming
/// over"): a name or "his/her/my <someone>" before "is/'s joining" or "is/'s coming over". A
/// plural guest ("his friends are joining") is no count to guess.
fn one_guest(raw: &[&str]) -> Option<String> {
    for (i, w) in raw.iter().enumerate() {
        let joins = w.eq_ignore_ascii_case("joining")
            || (w.eq_ignore_ascii_case("coming")
                && raw
                    .get(i + 1)
                    .is_some_and(|n| n.eq_ignore_ascii_case("over")));
        if !joins || i == 0 {
            continue;
        }
        let (subject, verb_is) = match raw[i - 1] {
            v if v.eq_ignore_ascii_case("is") => (i.checked_sub(2).map(|j| raw[j]), true),
            v => (v.strip_suffix("'s"), false),
        };
        let Some(subject) = subject else { continue };
        let named = subject.chars().next().is_some_and(char::is_uppercase);
        let owned =
            i >= 3 && verb_is && ["his", "her", "my"].contains(&raw[i - 3].to_lowercase().as_str());
        let owned_short = !verb_is
            && i >= 2
            && ["his", "her", "my"].contains(&raw[i - 2].to_lowercase().as_str());
        if (named || owned || owned_short) && !subject.ends_with('s') {
            return Some(format!("{subject} {}", raw[i]));
        }
    }
    None
}

/// Whether a count slot counts people or each person's things (tickets, seats, portions).
fn per_person(slot: &Slot, arg: &str) -> bool {
    PER_PERSON_FIELDS.contains(&arg)
        || (arg == "quantity"
            && slot
                .keywords
                .iter()
                .flat_map(|k| words(k))
                .any(|w| PER_PERSON_NOUNS.contains(&singular(&w))))
        || slot
            .keywords
            .iter()
            .flat_map(|k| words(k))
            .any(|w| PEOPLE.contains(&w.as_str()))
}

/// Ask-only counts a careful agent gets right by reading the instruction's pronouns: a plural
/// request ("get us box seats", "our usual lattes", "for Priya and me") whose count is the
/// natural guess, and a request only about the user ("my stomach is off", "get me …") whose
/// per-person count is more than one.
pub fn guessable_count(b: &TaskBundle) -> Vec<Rejection> {
    let bindings = b.slot_bindings();
    let ws = words(&b.task.instruction);
    let others = names(&b.task.instruction);
    let mut out = Vec::new();
    for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
        let Some((_, arg)) = bindings.get(&s.slot_id) else {
            continue;
        };
        if !COUNT_FIELDS.contains(&arg.as_str()) {
            continue;
        }
        let Some(v) = s.value.as_i64().filter(|_| s.value.is_number()) else {
            continue;
        };
        if let Some((n, why)) = natural_guess(&b.task.instruction) {
            if n == v {
                out.push(reject(
                    Check::GuessableCount,
                    Some(&s.slot_id),
                    format!(
                        "ask-only slot `{}` = {v} is what the wording suggests ({why}); an agent that guesses is scored right without asking — pick another count or reword",
                        s.slot_id
                    ),
                ));
            }
            continue;
        }
        let group = ws.iter().any(|w| GROUP_WORDS.contains(&singular(w)));
        let alone =
            ws.iter().any(|w| FIRST_PERSON.contains(&w.as_str())) && others.is_empty() && !group;
        if alone && v > 1 && per_person(s, arg) {
            out.push(reject(
                Check::GuessableCount,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}` = {v}, but the instruction speaks only of the user (\"I\", \"me\", \"my\") and names no one else, so one is the natural reading; make the wording plural or pick 1",
                    s.slot_id
                ),
            ));
        }
    }
    out
}

/// The table an operation's first insert writes, and the field that takes argument `arg`.
fn inserted_field(
    cat: &crate::world::Catalog,
    tool: &str,
    arg: &str,
) -> Option<(crate::world::types::TableId, usize)> {
    use crate::world::app::{Effect, Expr, Root};
    let (app, _) = tool.split_once('.')?;
    let op = cat.operation(tool)?;
    let ai = op.field_idx(arg)?;
    op.effects.iter().find_map(|e| match e {
        Effect::Insert { table, values } if cat.apps[table.app as usize].id == app => {
            values.iter().find_map(|(f, x)| match x {
                Expr::Path(p) if p.root == Root::Arg(ai) && p.steps.is_empty() => {
                    Some((*table, *f))
                }
                _ => None,
            })
        }
        _ => None,
    })
}

/// Ask-only choices (an enum option, a record) a careful agent picks right without asking: the
/// value of the same field in the user's latest record of the table the operation writes (her
/// only reservation is a date night), or the value's words in her history (the pharmacy she
/// always uses).
pub fn visible_choice(ix: &WorldIndex<'_>, b: &TaskBundle, initial: &Phone<'_>) -> Vec<Rejection> {
    let cat = &ix.world.catalog;
    let bindings = b.slot_bindings();
    let state = initial.state();
    let mut out = Vec::new();
    for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
        let Some((tool, arg)) = bindings.get(&s.slot_id) else {
            continue;
        };
        let Some(kind) = bound_kind(b, cat, &s.slot_id) else {
            continue;
        };
        if !matches!(kind, FieldKind::Enum(_) | FieldKind::Ref(_)) {
            continue;
        }
        let value = display(&s.value);
        // Her latest record of the table the operation writes.
        if let Some((table, name, id)) = latest_with(cat, &state, tool, arg, &value) {
            out.push(reject(
                Check::VisibleChoice,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}` = {value} is the {name} of her latest {table} record ({id}): an agent copying it is scored right without asking",
                    s.slot_id
                ),
            ));
            continue;
        }
        // The value's words (an option as words, a record by its title) in her history.
        let spoken = match kind {
            FieldKind::Ref(t) => cat
                .table(*t)
                .records
                .iter()
                .find(|r| r.id == value)
                .map(|r| cat.table(*t).label(r)),
            _ => Some(value.replace('_', " ")),
        };
        let Some(spoken) =
            spoken.filter(|p| p.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        else {
            continue;
        };
        // In the app she would choose it in, or where the slot's subject is named too (the
        // pharmacy she picks up at; not "favourites" on a map when the slot is who may call).
        let app = tool.split_once('.').map_or("", |(a, _)| a);
        let hit = ix
            .world
            .history
            .iter()
            .chain(&b.task.overrides.history)
            .filter(|e| e.app == app || s.keywords.iter().any(|k| phrase_in(&e.text, k)))
            .find(|e| phrase_in(&e.text, &spoken));
        if let Some(e) = hit {
            out.push(reject(
                Check::VisibleChoice,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}` = {value} is named in her history ({}: \"{}\"): an agent can pick it without asking",
                    s.slot_id, e.event_id, e.text
                ),
            ));
        }
    }
    out
}

/// The table, field and record id of her latest record of the table `tool` writes `arg` into,
/// when that record's field holds `value` (dated records by date, else the last one).
fn latest_with(
    cat: &Catalog,
    state: &StateView<'_>,
    tool: &str,
    arg: &str,
    value: &str,
) -> Option<(String, String, String)> {
    let (table, f) = inserted_field(cat, tool, arg)?;
    let t = cat.table(table);
    let name = &t.fields[f].name;
    let records = state
        .records_json(&cat.apps[table.app as usize].id, &t.name)
        .unwrap_or_default();
    let day = |r: &Value| {
        crate::world::rules::record_date(
            cat,
            table,
            &crate::world::app::Record {
                id: String::new(),
                values: t
                    .fields
                    .iter()
                    .map(|fd| r.get(&fd.name).cloned().unwrap_or(Value::Null))
                    .collect(),
            },
        )
    };
    let latest = records
        .iter()
        .enumerate()
        .max_by_key(|(i, r)| (day(r), *i))
        .map(|(_, r)| r)?;
    latest
        .get(name)
        .is_some_and(|v| display(v) == value)
        .then(|| {
            (
                cat.table_name(table),
                name.clone(),
                latest.get("id").map(display).unwrap_or_default(),
            )
        })
}

/// Ask-only dates a careful agent reads off what she owns or what her history names: a booking,
/// reservation or appointment on that day, or a flight or show her history mentions, about what
/// the instruction is about (Portland; a city's airport code counts, from the records that name
/// the city).
pub fn owned_dates(ix: &WorldIndex<'_>, b: &TaskBundle, initial: &Phone<'_>) -> Vec<Rejection> {
    let cat = &ix.world.catalog;
    let subject = subject_words(cat, b);
    if subject.is_empty() {
        return Vec::new();
    }
    let state = initial.state();
    let mut out = Vec::new();
    for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
        let days: Vec<Date> = display(&s.value)
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .filter_map(Date::parse)
            .collect();
        if days.is_empty() {
            continue;
        }
        let hit = dated_records(ix, &state)
            .into_iter()
            .find(|(table, id, day, text)| {
                days.contains(day)
                    && subject.iter().any(|w| words(text).contains(w))
                    && (crate::world::rules::choice_tables(cat).contains(table)
                        || crate::world::rules::owned(cat, *table, id)
                        || mentioned(ix, cat, *table, id))
            });
        if let Some((table, id, day, _)) = hit {
            out.push(reject(
                Check::Derivable,
                Some(&s.slot_id),
                format!(
                    "ask-only slot `{}` = {} falls on {day}, the day of {} {id}, which she owns or her history names: an agent can read the date off the phone",
                    s.slot_id,
                    display(&s.value),
                    cat.table_name(table)
                ),
            ));
        }
    }
    out
}

/// Lower-cased words the instruction is about (its names) with their codes: the id words of
/// records whose text is one of the names (`loc-pdx` for Portland gives `pdx`).
fn subject_words(cat: &crate::world::Catalog, b: &TaskBundle) -> Vec<String> {
    let mut out = names(&b.task.instruction);
    let base = out.clone();
    for t in cat.apps.iter().flat_map(|a| &a.tables) {
        for r in &t.records {
            let named = r
                .values
                .iter()
                .filter_map(Value::as_str)
                .any(|v| base.iter().any(|n| v.eq_ignore_ascii_case(n)));
            if named {
                out.extend(r.id.split('-').filter(|w| w.len() == 3).map(str::to_string));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every dated record of the initial state with its text (its own text fields and those of the
/// records its refs name), as `(table, id, day, text)`.
fn dated_records(
    ix: &WorldIndex<'_>,
    state: &crate::world::phone::StateView<'_>,
) -> Vec<(crate::world::types::TableId, String, Date, String)> {
    let cat = &ix.world.catalog;
    let mut out = Vec::new();
    for (ai, app) in cat.apps.iter().enumerate() {
        for (ti, t) in app.tables.iter().enumerate() {
            let id = crate::world::types::TableId {
                app: ai as u16,
                table: ti as u16,
            };
            for r in state.records_json(&app.id, &t.name).unwrap_or_default() {
                let mut day = None;
                let mut text = String::new();
                for f in &t.fields {
                    let Some(v) = r.get(&f.name) else { continue };
                    match &f.kind {
                        FieldKind::Date if day.is_none() => {
                            day = v
                                .as_str()
                                .and_then(|d| Date::parse(d.get(..10).unwrap_or(d)));
                        }
                        FieldKind::Ref(to) => {
                            let rt = cat.table(*to);
                            if let Some(target) = rt
                                .records
                                .iter()
                                .find(|x| Some(x.id.as_str()) == v.as_str())
                            {
                                for (fd, tv) in rt.fields.iter().zip(&target.values) {
                                    if matches!(fd.kind, FieldKind::Date) && day.is_none() {
                                        day = tv.as_str().and_then(Date::parse);
                                    }
                                    text.push(' ');
                                    text.push_str(&display(tv));
                                }
                            }
                        }
                        _ => {}
                    }
                    text.push(' ');
                    text.push_str(&display(v));
                }
                if let Some(day) = day {
                    let rid = r.get("id").map(display).unwrap_or_default();
                    out.push((id, rid, day, text));
                }
            }
        }
    }
    out
}

/// Whether some history event names the record (by its label).
fn mentioned(
    ix: &WorldIndex<'_>,
    cat: &crate::world::Catalog,
    table: crate::world::types::TableId,
    id: &str,
) -> bool {
    let t = cat.table(table);
    let Some(r) = t.records.iter().find(|r| r.id == id) else {
        return false;
    };
    let label = t.label(r);
    label.chars().filter(|c| c.is_alphanumeric()).count() >= 4
        && ix.world.history.iter().any(|e| phrase_in(&e.text, &label))
}

/// The instructions given twice in a set of `(task_id, instruction)`: `(task_id, same_as)` for
/// every task whose instruction — ignoring case, spacing and final punctuation — is that of a
/// task with a smaller id. Computed once per reviewed set (`import_review`'s `repeats` table),
/// so a per-task validation depends on this small table, not on every instruction.
pub fn repeated_instructions(tasks: &[(String, String)]) -> Vec<(String, String)> {
    let norm = |s: &str| normalize(s).trim_end_matches(['.', '!', '?']).to_string();
    let mut sorted: Vec<&(String, String)> = tasks.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut first: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (id, text) in sorted {
        match first.get(&norm(text)) {
            Some(earlier) => out.push((id.clone(), earlier.to_string())),
            None => {
                first.insert(norm(text), id);
            }
        }
    }
    out
}

/// One instruction given twice: a task whose instruction (ignoring case, spacing and final
/// punctuation) equals that of a task earlier in the set is the same task.
pub fn duplicate_instruction(b: &TaskBundle, set: &SetView) -> Vec<Rejection> {
    set.repeats
        .iter()
        .find(|(id, _)| *id == b.task.task_id)
        .map(|(_, earlier)| {
            vec![reject(
                Check::DuplicateInstruction,
                None,
                format!(
                    "the instruction is word for word that of {earlier}: two tasks the user cannot tell apart; give the variant its own wording (another dish, day or person)"
                ),
            )]
        })
        .unwrap_or_default()
}

/// The table an operation writes first in its own app (an insert or an update), if any.
fn written_table(cat: &crate::world::Catalog, tool: &str) -> Option<crate::world::types::TableId> {
    use crate::world::app::Effect;
    let (app, _) = tool.split_once('.')?;
    let op = cat.operation(tool)?;
    op.effects.iter().find_map(|e| match e {
        Effect::Insert { table, .. } | Effect::Update { table, .. }
            if cat.apps[table.app as usize].id == app =>
        {
            Some(*table)
        }
        _ => None,
    })
}

/// Steps after the first that nothing scores by what they say: every operation of the
/// reference after its first must have a criterion on the table it writes with a condition on
/// its content (a text, a date, a time, an amount — a field that is not a reference), not only
/// on where it went ("a text to Sam" passes with any text).
pub fn unscored_step(ix: &WorldIndex<'_>, b: &TaskBundle) -> Vec<Rejection> {
    let cat = &ix.world.catalog;
    let operations: Vec<&str> = b
        .task
        .reference_solution
        .iter()
        .filter_map(|s| s.get("tool").and_then(Value::as_str))
        .filter(|t| !t.contains(".list_") && !t.contains(".get_"))
        .collect();
    let mut out = Vec::new();
    for tool in operations.iter().skip(1) {
        let Some(table) = written_table(cat, tool) else {
            continue;
        };
        let name = cat.table_name(table);
        let t = cat.table(table);
        let mut scored = false;
        for c in &b.criteria {
            c.predicate.visit(&mut |p| {
                if let Predicate::Record {
                    table: pt,
                    conditions,
                    ..
                } = p
                {
                    if *pt == name {
                        scored |= conditions.iter().any(|cond| {
                            t.field_idx(&cond.path[0])
                                .is_some_and(|i| !matches!(t.fields[i].kind, FieldKind::Ref(_)))
                        });
                    }
                }
            });
        }
        if !scored {
            out.push(reject(
                Check::UnscoredStep,
                None,
                format!(
                    "the step `{tool}` is scored only by where it went: no criterion tests what it writes into `{name}` (its text, date, time or amount); add one tied to the first step's outcome"
                ),
            ));
        }
    }
    out
}

/// Rubric words saying the value came from her: the rubric is authoritative (iPrefBench G.3), so
/// such a criterion fails when she never said it.
const HERS: [&str; 8] = [
    "as she said",
    "she gave",
    "she asked",
    "she chose",
    "she named",
    "she said",
    "she can do",
    "when asked",
];

/// Whether a predicate requires that `slot` was asked (itself, or a conjunct of an `all`).
fn requires_asked(p: &Predicate, slot: &str) -> bool {
    match p {
        Predicate::Asked(s) => s == slot,
        Predicate::All(ps) => ps.iter().any(|p| requires_asked(p, slot)),
        _ => false,
    }
}

/// An ask-only criterion whose rubric says the value is hers ("as she said", "the time she
/// gave", "the one she gave") must require `asked: <slot>`: otherwise the rule judge passes a
/// value guessed right without asking, which its own rubric fails (docs/judging.md, "An
/// ask-only value guessed right without asking").
pub fn unasked_own_value(b: &TaskBundle) -> Vec<Rejection> {
    let mut out = Vec::new();
    for c in &b.criteria {
        let Some(slot) = c.slot_id.as_deref() else {
            continue;
        };
        if b.slot(slot).is_none_or(|s| s.source != Source::AskOnly) {
            continue;
        }
        let rubric = c.rubric.to_lowercase();
        let Some(phrase) = HERS.iter().find(|h| rubric.contains(*h)) else {
            continue;
        };
        if !requires_asked(&c.predicate, slot) {
            out.push(reject(
                Check::UnaskedOwnValue,
                Some(&c.criterion_id),
                format!(
                    "criterion `{}` says the value is hers (\"{phrase}\") but passes without her being asked; add `asked: {slot}` (check: {{ all: [{{ asked: {slot} }}, …] }}) or reword the rubric to the value alone",
                    c.criterion_id
                ),
            ));
        }
    }
    out
}

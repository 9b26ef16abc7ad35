//! The matcher on the released tasks' own slots.

use super::*;
use crate::tasks::testkit::candidates;
use crate::tasks::{Source, TaskBundle};

fn task(id: &str) -> &'static TaskBundle {
    candidates()
        .iter()
        .find(|b| b.task.task_id == id)
        .unwrap_or_else(|| panic!("no task {id}"))
}

fn matched(id: &str, message: &str) -> Vec<Option<String>> {
    let b = task(id);
    TaskMatcher::for_task(b, &crate::tasks::testkit::world().catalog)
        .pieces(message)
        .into_iter()
        .map(|p| p.slot_id)
        .collect()
}

fn one(id: &str, message: &str) -> Option<String> {
    let m = matched(id, message);
    assert_eq!(m.len(), 1, "{id}: {message}: {m:?}");
    m[0].clone()
}

#[test]
fn the_issue_s_natural_questions_reach_their_slots() {
    assert_eq!(
        one(
            "messages_cat_sitter-01",
            "When does your Portland trip start?"
        )
        .as_deref(),
        Some("dates")
    );
    assert_eq!(
        one("long_meeting_override-01", "What's the meeting about?").as_deref(),
        Some("topic")
    );
    assert_eq!(
        one("dashbite_dinner-02", "How many people am I ordering for?").as_deref(),
        Some("quantity")
    );
    assert_eq!(
        one(
            "health_time_gone-01",
            "Your usual 8:00 isn't available on Monday — is 8:30 OK?"
        )
        .as_deref(),
        Some("fallback_time")
    );
    assert_eq!(
        one(
            "zipride_shared_gone-02",
            "Shared rides aren't available. Would Comfort be OK?"
        )
        .as_deref(),
        Some("fallback_ride")
    );
}

#[test]
fn one_question_with_an_inferable_word_is_one_request() {
    assert_eq!(
        matched(
            "dinespot_sister_birthday-01",
            "How many people are coming to Lena's birthday dinner?"
        ),
        [Some("party_size".to_string())]
    );
    assert_eq!(
        matched(
            "health_checkup-01",
            "Which day should I book with Dr. Garcia?"
        ),
        [Some("day".to_string())]
    );
}

#[test]
fn coordinated_and_repeated_questions_are_separate_pieces() {
    let m = matched(
        "dinespot_dinner-03",
        "How many of you will there be, and would you rather sit inside or out on the patio?",
    );
    assert_eq!(
        m,
        [Some("party_size".to_string()), Some("seating".to_string())]
    );
    let m = matched(
        "dinespot_dinner-03",
        "How many people? Sorry — how many people again?",
    );
    assert_eq!(
        m,
        [
            Some("party_size".to_string()),
            Some("party_size".to_string())
        ]
    );
}

#[test]
fn a_confirmation_of_several_values_is_one_piece_per_value() {
    assert_eq!(
        matched(
            "shopnest_black_tee-01",
            "So that's size M, sent to the Irving St. locker?"
        ),
        [Some("size".to_string()), Some("shipping".to_string())]
    );
    // One value confirmed is one piece.
    assert_eq!(
        matched("shopnest_black_tee-01", "So that's size M, right?"),
        [Some("size".to_string())]
    );
}

#[test]
fn coordinated_questions_cut_before_their_question_mark_keep_their_form() {
    assert_eq!(
        matched(
            "calendar_jordan-01",
            "What is the meeting about, and when should it start?"
        ),
        [Some("topic".to_string()), Some("start".to_string())]
    );
    assert_eq!(
        matched(
            "dashbite_coffee-01",
            "How many lattes do you need — and oat milk as usual?"
        ),
        [Some("quantity".to_string()), Some("milk".to_string())]
    );
}

#[test]
fn subject_nouns_do_not_cross_slots() {
    // "section" is not the ticket count.
    assert_ne!(
        one("tixly_balcony_stop-01", "Which section would you like?").as_deref(),
        Some("quantity")
    );
    assert_eq!(one("dinespot_dinner-03", "Is it raining?"), None);
}

#[test]
fn a_count_in_units_of_the_value_reaches_the_task_s_only_count() {
    // A unit the lexicon does not know, with the slot's subject: the only count of the task.
    assert_eq!(
        one(
            "dashbite_noodles-02",
            "Let me know how many bowls of noodles to get."
        )
        .as_deref(),
        Some("quantity")
    );
    // Without the slot's subject, or beside another count (bags), no unit is assumed.
    assert_eq!(one("dashbite_dinner-01", "How many courses?"), None);
    assert_eq!(
        one("skyway_trip-01", "How many stops are you okay with?"),
        None
    );
}

#[test]
fn the_open_end_of_a_choice_is_no_alternative() {
    assert_eq!(
        one(
            "lena_birthday_reply-01",
            "Would Monday work, or another day?"
        )
        .as_deref(),
        Some("night")
    );
    assert_eq!(
        one("calendar_dinner_sam-02", "Who else will be there?").as_deref(),
        Some("guests")
    );
    assert_eq!(
        one(
            "zipride_shared_gone-02",
            "Shared is unavailable today. Green, XL, or something else?"
        )
        .as_deref(),
        Some("fallback_ride")
    );
}

#[test]
fn a_short_question_takes_its_subject_from_the_statements_before_it() {
    // The day is settled: "when" asks the time.
    assert_eq!(
        one(
            "one_on_one_prep-02",
            "The one-on-one with Tom is on Thursday. When that day?"
        )
        .as_deref(),
        Some("start")
    );
    // A bare choice among the values listed before it.
    assert_eq!(
        one(
            "health_checkup-01",
            "Dr. Garcia can see you on the 10th or the 13th. Which suits you?"
        )
        .as_deref(),
        Some("day")
    );
    assert_eq!(
        one(
            "freshcart_store_gone-02",
            "Rainbow isn't delivering. Whole Foods and Safeway both deliver today. Which works?"
        )
        .as_deref(),
        Some("fallback_store")
    );
}

#[test]
fn a_detail_of_a_named_person_and_a_look_up_reach_no_ask_only_slot() {
    // Lena is the inferable recipient; the gift message is not asked.
    let id = "shopnest_gift_sister-02";
    let got = one(id, "Is Lena's address on file still right?");
    assert!(
        got.as_deref().is_none_or(|s| task(id)
            .slot(s)
            .is_some_and(|s| s.source == Source::Inferable)),
        "{got:?}"
    );
    assert_eq!(
        one(
            "freshcart_store_gone-01",
            "Should I also check Whole Foods?"
        ),
        None
    );
    assert_eq!(
        one(
            "freshcart_store_gone-01",
            "Rainbow isn't delivering today. Should I check Whole Foods instead?"
        )
        .as_deref(),
        Some("fallback_store")
    );
}

#[test]
fn a_question_naming_another_field_of_the_operation_is_not_the_slot_s() {
    // "seating" and "occasion" are other fields of the reservation; "room" of the booking.
    assert_eq!(
        one(
            "dinespot_sister_birthday-01",
            "Which seating should I choose for \"Reserve a table\"? Options: indoor, patio, bar, counter."
        ),
        None
    );
    assert_eq!(
        one(
            "staywell_city-01",
            "Should I turn on breakfast for \"Book a room\"?"
        ),
        None
    );
    assert_eq!(
        one(
            "staywell_city-01",
            "Which room preference should I choose for \"Book a room\"?"
        )
        .as_deref(),
        Some("room")
    );
}

/// One row of the natural questions (tests/fixtures/questions/, written by someone who had not
/// seen this matcher; their README documents the columns).
struct Question {
    task_id: String,
    message: String,
    asked: Vec<String>,
    other: usize,
    style: String,
}

fn questions(file: &str) -> Vec<Question> {
    use crate::tables::aggregate::question_csv;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/questions")
        .join(file);
    use polars::prelude::SerReader;
    let df = polars::prelude::CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path))
        .and_then(|r| r.finish())
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    let col = |c: &str| -> Vec<String> {
        df.column(c)
            .expect(c)
            .str()
            .expect("str")
            .iter()
            .map(|v| v.unwrap_or_default().to_string())
            .collect()
    };
    let (t, m, a, o, s) = (
        col(question_csv::TASK_ID),
        col(question_csv::MESSAGE),
        col(question_csv::ASKED_SLOTS),
        col(question_csv::OTHER_PIECES),
        col(question_csv::STYLE),
    );
    (0..t.len())
        .map(|i| Question {
            task_id: t[i].clone(),
            message: m[i].clone(),
            asked: a[i]
                .split(';')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect(),
            other: o[i].trim().parse().unwrap_or(0),
            style: s[i].clone(),
        })
        .collect()
}

/// Figures of the matcher over the natural questions: ask-only requests credited to their
/// slot, ask-only matches to a slot the message does not ask, and messages whose other pieces
/// are counted exactly.
struct Figures {
    wanted: usize,
    credited: usize,
    wrong: usize,
    other_exact: usize,
    messages: usize,
    failures: Vec<String>,
}

fn measure(file: &str) -> Figures {
    let mut f = Figures {
        wanted: 0,
        credited: 0,
        wrong: 0,
        other_exact: 0,
        messages: 0,
        failures: Vec::new(),
    };
    for q in questions(file) {
        let Some(b) = candidates().iter().find(|b| b.task.task_id == q.task_id) else {
            continue;
        };
        let m = TaskMatcher::for_task(b, &crate::tasks::testkit::world().catalog);
        let pieces = m.pieces(&q.message);
        let ask_only = |id: &str| {
            b.slot(id)
                .is_some_and(|s| s.source == crate::tasks::Source::AskOnly)
        };
        let got: Vec<String> = pieces
            .iter()
            .filter_map(|p| p.slot_id.clone())
            .filter(|s| ask_only(s))
            .collect();
        let other = pieces.len() - got.len();
        f.messages += 1;
        f.wanted += q.asked.len();
        let mut remaining = got.clone();
        for w in &q.asked {
            if let Some(i) = remaining.iter().position(|g| g == w) {
                remaining.remove(i);
                f.credited += 1;
            }
        }
        let wrong: Vec<&String> = got.iter().filter(|g| !q.asked.contains(g)).collect();
        f.wrong += wrong.len();
        if other == q.other {
            f.other_exact += 1;
        }
        if !wrong.is_empty() || other != q.other || got.len() != q.asked.len() {
            f.failures.push(format!(
                "[{}] {}: {:?} → want {:?}+{} got {:?} ({:?})",
                q.style,
                q.task_id,
                q.message,
                q.asked,
                q.other,
                got,
                pieces
                    .iter()
                    .map(|p| (p.text.clone(), p.slot_id.clone()))
                    .collect::<Vec<_>>()
            ));
        }
    }
    f
}

/// Prints the figures (and, with `MATCHER_FAILURES` set, every row not matched exactly); the
/// share credited.
fn report(file: &str, f: &Figures) -> f64 {
    let share = f.credited as f64 / f.wanted.max(1) as f64;
    eprintln!(
        "{file}: {}/{} ask-only requests credited ({:.1}%), {} matched to another slot, {}/{} messages with other pieces counted exactly",
        f.credited, f.wanted, 100.0 * share, f.wrong, f.other_exact, f.messages
    );
    if std::env::var("MATCHER_FAILURES").is_ok() {
        for l in &f.failures {
            eprintln!("{l}");
        }
    }
    share
}

#[test]
fn natural_questions_are_credited_to_their_slots_and_never_to_another() {
    let f = measure("dev.csv");
    let share = report("dev.csv", &f);
    assert!(share >= 0.9, "credited {:.1}%", 100.0 * share);
    // 223/237 (94.1%) since the closed-question, count-noun and content-form rules (222 and 2
    // to another slot before: "should the pickup reminder go in Errands?" now goes to the
    // inferable list it proposes, "the one you used last time" no longer reads "time"); 224
    // with the head rules ("a 90-minute block" is a duration).
    assert_eq!(f.wrong, 0, "matched to another slot");
}

/// The outside check: natural questions kept outside the repository (never read by whoever
/// changes the matcher), measured without touching the fixtures:
/// `MATCHER_QUESTIONS=/abs/path.csv cargo test -p prefflow-stages --lib outside_questions -- --ignored --nocapture`
/// (add `MATCHER_FAILURES=1` to list what was missed or sent elsewhere).
#[test]
#[ignore]
fn outside_questions() {
    let Ok(path) = std::env::var("MATCHER_QUESTIONS") else {
        eprintln!("set MATCHER_QUESTIONS to an absolute path of a questions CSV");
        return;
    };
    let f = measure(&path);
    report(&path, &f);
}

#[test]
#[ignore]
fn debug_fits() {
    let id = std::env::var("T").unwrap_or_default();
    let msg = std::env::var("M").unwrap_or_default();
    let b = task(&id);
    let m = TaskMatcher::for_task(b, &crate::tasks::testkit::world().catalog);
    eprintln!("pieces {:?}", m.pieces(&msg));
    for raw in split::pieces(&msg) {
        eprintln!(
            "piece {:?} lead {:?} ctx {:?} form {:?}",
            raw.text,
            raw.lead,
            raw.context,
            forms::form(&raw.text, &raw.lead, &raw.context)
        );
        let (lead, ctx) = if std::env::var("AS_LEAD").is_ok() {
            (raw.context.clone(), String::new())
        } else {
            (raw.lead.clone(), raw.context.clone())
        };
        let raw = split::RawPiece {
            lead,
            context: ctx,
            ..raw
        };
        let form = forms::form(&raw.text, &raw.lead, &raw.context);
        eprintln!("best {:?}", m.best(&raw.text, &raw.lead, &raw.context));
        for (i, (p, f)) in m
            .profiles
            .iter()
            .zip(m.fits(&raw.text, &raw.lead, &raw.context))
            .enumerate()
        {
            eprintln!(
                "  {} {:?} own {:.2} total {:.2} ruled out {} kinds {:?} terms {:?}",
                p.slot_id,
                p.source,
                f.own,
                f.total,
                m.head_rules_out(i, &raw.text, &raw.lead, &raw.context, &form),
                p.kinds,
                p.terms
            );
        }
    }
}

/// Prints the released tasks' slots as the matcher sees them (for writing fresh questions).
#[test]
#[ignore]
fn dump_slots() {
    let world = crate::tasks::testkit::world();
    for b in candidates() {
        let fields = profile::fields(b, &world.catalog);
        for s in &b.slots {
            let f = fields.get(&s.slot_id);
            eprintln!(
                "{}\t{:?}\t{}\t{:?}\t{}\t{}\t{}\t{}",
                b.task.task_id,
                s.source,
                s.slot_id,
                s.about,
                s.value,
                f.map_or(String::new(), |f| f.name.clone()),
                f.map_or(String::new(), |f| f
                    .options
                    .iter()
                    .take(8)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("|")),
                b.task.instruction,
            );
        }
    }
}

/// Questions written for issue 24's failure classes after the dev set (choices among named
/// options with no slot word, yes/no proposals of a value, requests phrased as statements,
/// topic paraphrases of free-text slots, and traps where one slot's word sits in a question
/// about something else), across many released tasks: the matcher must hold on phrasings it
/// was not fitted to, and never send a piece to another ask-only slot.
#[test]
fn fresh_questions_are_credited_and_never_sent_to_another_slot() {
    let f = measure("fresh.csv");
    let share = report("fresh.csv", &f);
    // Before the closed-question, count-noun and content-form rules: 96/128 (75.0%), 4 to
    // another slot; after: 125/128 (97.7%), none.
    assert!(share >= 0.95, "credited {:.1}%", 100.0 * share);
    assert_eq!(f.wrong, 0, "matched to another slot");
}

/// Questions whose head is about something other than any ask-only slot (re-confirmations of
/// an inferable or settled detail: "Thai again?", "Still at 1.5x?"; choices between two things
/// the task does not leave open; what to put in a message that is not the slot's text), beside
/// positives of the classes the held-out set misses (indirect phrasings, confirmations that
/// propose a value, choices among named options), across many released tasks
/// (`tests/fixtures/questions/heads.csv`): a miss is acceptable, another slot never.
#[test]
fn head_questions_are_never_sent_to_another_slot() {
    let f = measure("heads.csv");
    let share = report("heads.csv", &f);
    // Before the head rules (`super::head`): 64/82 credited, 15 matched to another slot (of 192
    // rows). With them: 86/107 credited (80.4%), none to another slot, over these and a second
    // batch written after them (2 wrong found in it, both fixed: "the body of the review" is
    // not the headline; "10 to 12" is no count). Misses stay (indirect phrasings such as "Who's
    // eating tonight?"): a miss is better than another slot.
    assert!(share >= 0.78, "credited {:.1}%", 100.0 * share);
    assert_eq!(f.wrong, 0, "matched to another slot");
}

/// Questions for the classes issue 24's held-out set still got wrong
/// (`tests/fixtures/questions/gaps.csv`): re-checks of a named thing no slot holds, choices
/// between things no slot offers, proposals to include something that is not the slot's,
/// statements (quoting a request is none), yes/no about a saved or inferable detail, "keep" or
/// "also" beside a fallback slot — none may reach another slot — and indirect requests without
/// "?", confirmations proposing a value of the slot's kind, open choices and short questions
/// after a context sentence, which must be credited.
#[test]
fn gap_questions_are_credited_and_never_sent_to_another_slot() {
    holds("gaps.csv", 0.9, 0.9);
}

/// Measures `file` and asserts: at least `share` of its ask-only requests credited, none to
/// another slot, and at least `exact` of its messages with their other pieces counted exactly.
fn holds(file: &str, share: f64, exact: f64) {
    let f = measure(file);
    let credited = report(file, &f);
    assert!(credited >= share, "credited {:.1}%", 100.0 * credited);
    assert_eq!(f.wrong, 0, "matched to another slot");
    let counted = f.other_exact as f64 / f.messages.max(1) as f64;
    assert!(
        counted >= exact,
        "other pieces counted exactly in {:.1}%",
        100.0 * counted
    );
}

/// Questions written for the seven classes issue 24's held-out set still failed on
/// (`tests/fixtures/questions/classes.csv`, style per class): indirect requests naming a unit of
/// the value ("how many bowls", "class of service"), open choices ("A, B, or something else?"),
/// a proposed time or day beside a neighbouring time/day/range slot, a short question after a
/// context sentence ("… Which suits you?", "When that day?"), questions about an inferable
/// detail, statements quoting a draft, and "should I also check …" beside a fallback slot.
/// Written before the rules that pass them.
#[test]
fn class_questions_are_credited_and_never_sent_to_another_slot() {
    // The first batch (97 rows) before the rules for these classes: 51/61 credited (83.6%), 12
    // pieces to another slot, 77/97 messages with other pieces counted exactly; after: 61/61,
    // none, 97/97. Two batches written after the rules (83 rows): 54/58 credited and 1 to
    // another slot at first, 57/58 and none with the span, request and day-at-time rules; over
    // all 180 rows 118/119 (99.2%), none to another slot, 179/180 exact.
    holds("classes.csv", 0.95, 0.95);
}

/// The built-in agents (`ask_all`, `heuristic`) ask about an open field of a planned operation
/// with a question naming the field, its description and options
/// (`episodes::agents::plan::question`: "Which store should I choose for \"Place order\"?
/// (…) Options: …"). Such a question is about that field: it may be credited to the slot whose
/// value goes into that very field (the reference solution's argument), or to none — never to a
/// slot of another field, whatever words of the description or options it shares with it.
/// One call of a reference solution.
#[derive(serde::Deserialize)]
struct Step {
    tool: String,
    #[serde(default)]
    args: serde_json::Map<String, serde_json::Value>,
}

#[test]
fn built_in_agents_field_questions_reach_only_their_field_s_slot() {
    use crate::episodes::agents::plan::{question, Plan};
    let world = crate::tasks::testkit::world();
    let tools = crate::world::phone::tool_specs(&world.catalog);
    let (mut asked, mut credited, mut wrong) = (0, 0, Vec::new());
    for b in candidates() {
        let m = TaskMatcher::for_task(b, &world.catalog);
        let fields = profile::fields(b, &world.catalog);
        let plan = Plan::new(&b.task.defaults_solution, &tools);
        for (_, op, p) in plan.open_fields() {
            let q = question(op, p);
            // The slot bound to that argument, or a slot bound to none (its value fixed in
            // the reference) named like the field.
            let field_words = crate::tasks::language::content_stems(&p.name.replace('_', " "));
            // Slots whose value the reference solution puts into that very field (a lunch's
            // time is also its calendar event's start).
            let mut referenced = Vec::new();
            for step in &b.task.reference_solution {
                let Ok(step) = serde_json::from_value::<Step>(step.clone()) else {
                    continue;
                };
                if step.tool == op.tool {
                    if let Some(v) = step.args.get(&p.name) {
                        crate::tasks::predicate::slot_refs_in(v, &mut referenced);
                    }
                }
            }
            let own: Vec<&str> = b
                .slots
                .iter()
                .filter(|s| match fields.get(&s.slot_id) {
                    _ if referenced.contains(&s.slot_id) => true,
                    Some(f) => f.operation == op.tool && f.name == p.name,
                    None => {
                        let named = format!("{} {}", s.slot_id, s.keywords.join(" "));
                        let stems = crate::tasks::language::content_stems(&named.replace('_', " "));
                        field_words.iter().any(|w| stems.contains(w))
                    }
                })
                .map(|s| s.slot_id.as_str())
                .collect();
            asked += 1;
            let pieces = m.pieces(&q);
            if std::env::var("MATCHER_FAILURES").is_ok()
                && !own.is_empty()
                && !pieces
                    .iter()
                    .any(|p| p.slot_id.as_deref().is_some_and(|id| own.contains(&id)))
            {
                eprintln!("MISSED {} {q:?} (own {own:?})", b.task.task_id);
            }
            for piece in pieces {
                match piece.slot_id {
                    Some(id) if own.contains(&id.as_str()) => credited += 1,
                    Some(id) => {
                        wrong.push(format!("{} {q:?} -> {id} (own {own:?})", b.task.task_id))
                    }
                    None => {}
                }
            }
        }
    }
    eprintln!(
        "built-in field questions: {asked}, credited to their field's slot {credited}, to another {}",
        wrong.len()
    );
    for w in &wrong {
        eprintln!("WRONG {w}");
    }
    assert!(asked > 100, "{asked} questions");
    // Before the head-noun and wording-target rules (`super::head`): 266 of 966 credited to
    // another field's slot; after: 22 (20 once a slot whose value the reference puts into the
    // field counts as its own: a lunch's time is its event's start); none since a question
    // naming another field of the slot's operation ("Which seating…", "Should I turn on
    // breakfast…", "Which from account…") or an inferable slot's modifier ("Which occasion…"
    // beside "Maya's special occasion restaurant") is ruled out. 369 credited to their own.
    assert!(
        wrong.is_empty(),
        "{} credited to another field's slot",
        wrong.len()
    );
}

/// Prints, for every built-in agents' field question over the released tasks, the ask-only
/// slots it is credited to (for comparing two versions of the matcher on `ask_all`'s questions).
#[test]
#[ignore]
fn dump_built_in_credits() {
    use crate::episodes::agents::plan::{question, Plan};
    let world = crate::tasks::testkit::world();
    let tools = crate::world::phone::tool_specs(&world.catalog);
    for b in candidates() {
        let m = TaskMatcher::for_task(b, &world.catalog);
        let plan = Plan::new(&b.task.defaults_solution, &tools);
        for (_, op, p) in plan.open_fields() {
            let q = question(op, p);
            let got: Vec<String> = m
                .pieces(&q)
                .into_iter()
                .filter_map(|p| p.slot_id)
                .filter(|id| {
                    b.slot(id)
                        .is_some_and(|s| s.source == crate::tasks::Source::AskOnly)
                })
                .collect();
            eprintln!("CREDIT\t{}\t{q:?}\t{}", b.task.task_id, got.join(";"));
        }
    }
}

/// Questions whose form asks a slot's kind of value — a time, a count, an amount, a duration,
/// a day — about something that is not the user's decision the slot holds
/// (`tests/fixtures/questions/subjects.csv`): a third party's fact ("What time does the bakery
/// open?"), an item's property ("How long is the episode?"), another countable noun ("How many
/// bags?"), the past ("How much did you give last time?"), a question to put to someone else,
/// a value's name in a question about something else; beside positives of the same kinds
/// ("How many of you are going?", "How long should the block be?") guarding recall.
#[test]
fn subject_questions_are_never_sent_to_a_slot_they_do_not_ask() {
    holds("subjects.csv", 0.95, 0.0);
}

/// Questions for issue 24 item 2's remaining classes (`tests/fixtures/questions/proposals.csv`):
/// re-confirmations of a settled detail ("1.5x still what you want?"), off-topic questions that
/// hold a slot's word in a modifier or a subordinate clause, and traps — none may reach an
/// ask-only slot — beside a proposed time and day ("Does 4 p.m. Wednesday work?"), "when you'd
/// like to <verb>", yes/no proposals of a value of the slot's kind ("Is $50 enough?", "Three
/// people?"), a proposal after an abbreviation ("9 a.m. Saturday OK?"), a proposal repeating the
/// request before it ("What time works? Maybe 3?") and lexicon gaps (grocer, took away, ETA,
/// title, "when … stop"), which must be credited. Written before the rules that pass them.
#[test]
fn proposal_questions_are_credited_and_never_sent_to_another_slot() {
    // The first 138 rows before these rules: 76/95 credited (80.0%), 14 pieces to another slot,
    // 107/138 exact; after: 95/95, none, 138/138. A second batch (50 rows) written after the
    // rules: 34/36 and none to another slot straight away; 131/131 over all 188 rows now.
    holds("proposals.csv", 0.95, 0.9);
}

/// Questions for the classes issue 24's outside check still sent to another slot or missed
/// (`tests/fixtures/questions/outside_classes.csv`): "where" about an event beside a place slot,
/// a named business's hours, a count of a noun no slot names, nights beside dates, yes/no
/// questions about companions, a bare "what?" after a request, British spellings and synonyms.
#[test]
fn outside_class_questions_are_never_sent_to_another_slot() {
    // First batch (84 rows) before the rules: 32/48 credited, 18 pieces to another slot; after:
    // 43/48, none. Second batch (53 rows) written after them: 26/31 and 1 to another slot
    // straight away ("when check-in opens" beside a check-in reminder), 26/31 and none with the
    // embedded-subject fix (27/31 with the tie between two slots broken by the kind asked); over
    // all 137 rows 70/79 (88.6%), none, 128/137 exact.
    holds("outside_classes.csv", 0.85, 0.9);
}

/// Questions about a named one's attribute ("What's Lena's phone number?", "What's Dr.
/// Garcia's first name?"), re-confirmations phrased "Is X still your N?", and amounts of a thing
/// of the task no slot counts ("How much lemongrass?") beside positives of each
/// (`tests/fixtures/questions/attributes.csv`), written by the lead before the rules (and three
/// rows for a week proposed as a day, "Would sometime next week work?", after that rule).
#[test]
fn attribute_questions_are_never_sent_to_another_slot() {
    // Before attribute.rs: 11/12 credited, 3 to another slot; after: 11/11, none (27/28 and
    // 53/54 exact with the 24 rows written after the rules they test).
    holds("attributes.csv", 0.9, 0.9);
}

/// The classes an independent writer's blind outside batch (the seventh; 90.2% credited, none
/// to another slot) still missed, rephrased on other tasks by the lead before the rules
/// (`tests/fixtures/questions/seventh.csv`): announcements after a request ("…, and I'll send
/// the invite"), needs said with an adverb ("I'll also need a start time"), a bare "which"
/// after the values it chooses among, clock spans and a stay's last day proposing a length,
/// company ("Is it you and Sam, or more?"), a count of things beside a day ("one pack of tofu
/// to Sunday's order"), a single letter before a question ("sold out in M. Which…").
#[test]
fn seventh_batch_classes_are_credited() {
    // Before the rules: 23/34 credited, none to another slot, 23/35 exact.
    holds("seventh.csv", 0.95, 0.95);
}

/// The classes a second independent writer's blind outside batch (the eighth; 93.1% credited,
/// none to another slot, on the rules after `seventh.csv`) still missed, rephrased on other tasks
/// by the lead *after* the rules (`tests/fixtures/questions/eighth.csv`): embedded questions
/// ("which date you would prefer"), passives ("how many lattes are needed"), a count's noun at
/// the end of its run ("two floor tickets"), "departure", the verb "works" beside a business
/// option, a kind of value's noun after "which", a short yes/no confirming its lead's proposal,
/// a need without its "I", an open end in a choice.
#[test]
fn eighth_batch_classes_are_credited() {
    holds("eighth.csv", 0.95, 0.95);
}

/// The classes a fourth writer's blind outside batch (the tenth; 107/120 = 89.2% credited, none
/// to another slot, on 588e7e8) missed, rephrased on other tasks by the lead *after* the rules
/// (`tests/fixtures/questions/tenth.csv`; 11/19 before them): a number of you ("Is it four of
/// you going?"), who comes along ("Who's coming with you?"), one count of people beside a count
/// of things, a length in words proposed after the question ("A couple of nights?"), a quoted
/// draft proposing the words just asked for, "describe" as wording, a run's time, particles
/// after a slot's own name ("the sleep timer set?"), "work" as a verb in a proposal.
#[test]
fn tenth_batch_classes_are_credited() {
    holds("tenth.csv", 0.95, 0.95);
}

#[test]
fn a_quoted_draft_alone_proposes_wording() {
    assert!(quoted_proposal(
        "Something like \"Best brunch in the Sunset\"?"
    ));
    assert!(quoted_proposal("Maybe “Lunch on me!”?"));
    assert!(!quoted_proposal(
        "Should the title be \"Worth it\" or should I skip it?"
    ));
    assert!(!quoted_proposal("Something like that?"));
    assert!(quoted_proposal("Maybe 'Lunch on me!'?"));
}

#[test]
fn where_a_thing_is_and_a_business_s_hours_are_no_slot_s() {
    // The show is said beside the meeting place, not of it.
    assert_eq!(one("tickets_tell_priya-02", "Where's the show?"), None);
    assert_eq!(
        one(
            "tickets_tell_priya-02",
            "Where should I tell Priya to meet you?"
        )
        .as_deref(),
        Some("meet")
    );
    // A slot holding no place is no answer to "where" (the inferable restaurant may be).
    assert_ne!(
        one("lena_birthday_reply-01", "Where is the birthday dinner?").as_deref(),
        Some("night")
    );
    assert_eq!(
        one(
            "dinespot_time_gone-01",
            "Do you know when Baan Thai closes tonight?"
        ),
        None
    );
}

#[test]
fn a_count_of_time_takes_only_time_s_words_and_companions_are_a_count_of_people() {
    assert_eq!(
        one("staywell_city-02", "How many bags are you bringing?"),
        None
    );
    assert_eq!(
        one("staywell_city-02", "How many nights will you stay?").as_deref(),
        Some("nights")
    );
    assert_eq!(
        one(
            "dinespot_dinner-02",
            "Will anyone be joining you on Saturday?"
        )
        .as_deref(),
        Some("party_size")
    );
    // A count of nights takes no people.
    assert_eq!(one("staywell_city-02", "Is anyone staying with you?"), None);
}

#[test]
fn a_bare_question_word_repeats_the_request_before_it_or_asks_nothing() {
    assert_eq!(
        matched(
            "circle_photo-01",
            "Do you want a caption on it? If so, what?"
        ),
        [Some("caption".to_string()), Some("caption".to_string())]
    );
    assert_eq!(one("skyway_trip-02", "Sorry, what?"), None);
}

#[test]
fn both_ends_of_a_stay_ask_its_dates() {
    assert_eq!(
        one(
            "staywell_portland-02",
            "What are your check-in and check-out dates?"
        )
        .as_deref(),
        Some("dates")
    );
    assert_eq!(
        one(
            "staywell_portland-01",
            "Which nights do you need the room for — check-in and check-out?"
        )
        .as_deref(),
        Some("dates")
    );
}

//! Issue 24 item 7: the perfect scripted model asking every ask-only slot in three different
//! natural phrasings — not the slot's keywords, but general question frames chosen by the kind
//! of the slot's value (a count, a duration, a time, a day, a span of days, a choice among the
//! field's options, a place, people, a yes or no to an alternative, free text) — scores like the
//! oracle under the offline judge: every rate of its Table 1 column ≥ 99%, and the oracle's
//! precision 100%.
//!
//! The model is `llm_table1`'s reference server (the task's reference solution, one call per
//! turn), except that the reference's questions are replaced: where the reference first asks,
//! the model states what the reference stated (an unavailable option, say) and asks each ask-only
//! slot with frame `epoch` (three epochs, three phrasings). The scripted user answers through the
//! same matcher as the judge, so a phrasing the matcher misses costs recall and precision.

use std::collections::HashMap;

use prefflow_stages::episodes::seed::episode_seed;
use prefflow_stages::llm::mock::ScriptedServer;
use prefflow_stages::tasks::frames::bundles_from_table;
use prefflow_stages::tasks::matcher::profile::{fields, FieldInfo};
use prefflow_stages::tasks::matcher::split;
use prefflow_stages::tasks::values::{self, Value as Parsed};
use prefflow_stages::tasks::{Slot, Source, TaskBundle};
use serde_json::{json, Value};

use crate::common::*;
use crate::llm_table1::{calls_server, reference_calls, run, strs, Call, LLM, ORACLE, ROOT_SEED};

const PHRASINGS: u32 = 3;

/// The words of an option as said ("premium_economy" → "premium economy").
fn said(option: &str) -> String {
    option.replace('_', " ")
}

/// Three questions about `slot` from general frames by the kind of its value.
fn frames(slot: &Slot, field: Option<&FieldInfo>) -> [String; 3] {
    let about = slot.about.to_lowercase();
    let name = field.map_or("", |f| f.name.as_str());
    let text = slot.value.as_str().unwrap_or_default();
    let lower = text.to_lowercase();
    let options: Vec<String> = field
        .map(|f| {
            f.options
                .iter()
                .filter(|o| !f.unavailable.contains(o))
                .map(|o| said(o))
                .fold(Vec::new(), |mut v: Vec<String>, o| {
                    if !v.contains(&o) {
                        v.push(o);
                    }
                    v
                })
        })
        .unwrap_or_default();
    let s = |v: [&str; 3]| v.map(str::to_string);
    if lower.starts_with("no ") {
        return s([
            "Would something else work instead?",
            "Should I go ahead with a different one?",
            "Is a substitute fine with you, or should I hold off?",
        ]);
    }
    let parts_of_day = ["morning", "afternoon", "evening"];
    if parts_of_day.contains(&lower.as_str()) {
        return s([
            "Morning or evening?",
            "Do you want to go early in the day or later on?",
            "Which works better for you: morning, afternoon or evening?",
        ]);
    }
    if about.starts_with("which other") || about.contains(" if ") && about.starts_with("which") {
        // A fallback: a choice of an alternative.
        return s([
            "Which other one would you like?",
            "What would you like instead?",
            "Which should I get instead?",
        ]);
    }
    if options.len() >= 2 {
        let (a, b) = (&options[0], &options[1]);
        let listed = options.join(", ");
        return [
            format!("Which would you like: {listed}?"),
            format!("{a} or {b}?"),
            format!("Should I go with {b}?"),
        ];
    }
    let duration = ["minutes", "duration", "nights"].contains(&name)
        || about.starts_with("how long")
        || about.contains("nights");
    if slot.value.is_number() && duration {
        return s([
            "How long should it be?",
            "How much time should I put down?",
            "What length works for you?",
        ]);
    }
    if slot.value.is_number() {
        return s([
            "How many should I put down?",
            "What number should I go with?",
            "Just tell me the number.",
        ]);
    }
    match values::parse(text) {
        Some(Parsed::Time(_)) if about.starts_with("what time") || about.contains("time") => {
            return s([
                "What time works for you?",
                "Let me know the time you want.",
                "Is 9:00 good, or another time?",
            ]);
        }
        Some(Parsed::Range(..)) => {
            return s([
                "What are the dates?",
                "Which days will it be?",
                "Tell me the dates, from when to when.",
            ]);
        }
        _ if about.starts_with("which day") || about.starts_with("which night") => {
            return s([
                "Which day works best?",
                "What date should I go with?",
                "Would Monday work, or another day?",
            ]);
        }
        Some(Parsed::Date(_)) if !about.starts_with("when") => {
            return s([
                "Which day works best?",
                "What date should I go with?",
                "Would Monday work, or another day?",
            ]);
        }
        _ => {}
    }
    if about.starts_with("where") {
        return s([
            "Where should it be?",
            "Where exactly?",
            "Tell me the place.",
        ]);
    }
    if about.starts_with("who") {
        return s([
            "Who's coming?",
            "Who else will be there?",
            "Let me know who's joining.",
        ]);
    }
    if about.starts_with("when") {
        return s([
            "When works?",
            "By when should I say?",
            "What day and time should I give?",
        ]);
    }
    s([
        "What would you like it to say?",
        "What's the gist you want to get across?",
        "Tell me what to put in it.",
    ])
}

/// The model's calls for `bundle` with phrasing `k`: the reference, its questions replaced by
/// the statements of its first question and one question per ask-only slot.
fn paraphrased_calls(
    bundle: &TaskBundle,
    info: &HashMap<String, FieldInfo>,
    k: usize,
) -> Vec<Call> {
    let reference = reference_calls(bundle);
    let asks: Vec<usize> = (0..reference.len())
        .filter(|&i| reference[i].0 == "ask_user")
        .collect();
    let Some(&first) = asks.first() else {
        return reference;
    };
    let first_text = serde_json::from_str::<Value>(&reference[first].1).expect("args")["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let context: Vec<String> = split::sentences(&first_text)
        .into_iter()
        .filter(|s| !split::asks(s))
        .collect();
    let questions: Vec<Call> = bundle
        .slots
        .iter()
        .filter(|s| s.source == Source::AskOnly)
        .map(|s| {
            let q = &frames(s, info.get(&s.slot_id))[k];
            let text = format!("{} {q}", context.join(" ")).trim().to_string();
            ("ask_user".to_string(), json!({ "text": text }).to_string())
        })
        .collect();
    let mut out: Vec<Call> = Vec::new();
    for (i, c) in reference.into_iter().enumerate() {
        if i == first {
            out.extend(questions.iter().cloned());
        }
        if c.0 != "ask_user" {
            out.push(c);
        }
    }
    out
}

fn paraphrasing_server(bundles: &[TaskBundle]) -> (ScriptedServer, usize) {
    let d = repo("datasets");
    let d = std::path::Path::new(&d);
    let world = prefflow_stages::world::World::build(
        &d.join("apps"),
        &d.join("personas/maya.yaml"),
        &prefflow_stages::world::HistoryParams::default(),
    )
    .expect("the default world");
    let mut by_seed: HashMap<u64, (String, Vec<Call>)> = HashMap::new();
    let mut played = 0;
    for b in bundles {
        let info = fields(b, &world.catalog);
        let matcher = prefflow_stages::tasks::matcher::TaskMatcher::for_task(b, &world.catalog);
        for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
            for q in frames(s, info.get(&s.slot_id)) {
                let got: Vec<Option<String>> =
                    matcher.pieces(&q).into_iter().map(|p| p.slot_id).collect();
                if got != [Some(s.slot_id.clone())] {
                    eprintln!("MISS {} {}: {q:?} -> {got:?}", b.task.task_id, s.slot_id);
                }
            }
        }
        for k in 0..PHRASINGS {
            let seed = episode_seed(ROOT_SEED, &b.task.task_id, LLM, k) & 0x7fff_ffff;
            let calls = paraphrased_calls(b, &info, k as usize);
            played += calls.len();
            by_seed.insert(seed, (b.task.instruction.clone(), calls));
        }
    }
    let server = calls_server(by_seed);
    (server, played)
}

/// The rate metrics of a Table 1 column, by name.
fn rates(table1: &polars::prelude::DataFrame, variant: &str) -> HashMap<String, f64> {
    let [v, metric, value] = ["variant", "metric", "value"].map(|c| strs(table1, c));
    (0..table1.height())
        .filter(|&i| v[i] == variant)
        .filter(|&i| {
            [
                "success",
                "action",
                "personalization",
                "inferable",
                "ask_only",
                "recall",
                "precision",
            ]
            .contains(&metric[i].as_str())
        })
        .filter_map(|i| Some((metric[i].clone(), value[i].parse().ok()?)))
        .collect()
}

#[test]
fn the_perfect_model_asking_in_three_natural_phrasings_scores_like_the_oracle() {
    let ws = Workspace::new();
    link_repo(&ws, "datasets");
    ws.write(
        "iprefbench.yaml",
        &shipped_iprefbench("{ agent: [oracle, defaults], history: [all] }"),
    );
    run(&ws, None, None, &["--only", "validated"]);
    let bundles = bundles_from_table(&ws.table("validated.bundles", None)).expect("bundles");
    let (server, played) = paraphrasing_server(&bundles);
    if std::env::var("PARAPHRASE_ONLY").is_ok() {
        return;
    }
    let epochs = format!("episodes_llm.epochs={PHRASINGS}");
    run(
        &ws,
        Some(&server.url),
        None,
        &[
            "--only",
            "iprefbench",
            "--set",
            "episodes_llm.simulator=scripted",
            "--set",
            &epochs,
        ],
    );
    assert_eq!(server.requests().len(), played, "one request per step");
    let table1 = ws.table("iprefbench.table1", None);
    let oracle = rates(&table1, ORACLE);
    let model = rates(&table1, LLM);
    eprintln!("paraphrase_table1: oracle {oracle:?}\nmodel {model:?}");
    assert_eq!(oracle.get("precision"), Some(&1.0), "{oracle:?}");
    assert!(model.len() >= 7, "{table1}");
    // The target is ≥ 99% on every rate. Measured: 100% on every rate (recall and
    // precision were 98.2%, ask-only 98.7%, success 99.0% before the matcher read "Monday, or
    // another day?" as a choice's open end, "Who else will be there?" as more people, and "Tell
    // me what to put in it." as a topic's wording). The MISS lines above print frames that miss
    // without the message's statements ("What would you like instead?" needs the statement of
    // what is gone, which the episode's message carries).
    for (metric, value) in &model {
        let bound = 0.99;
        assert!(
            *value >= bound,
            "{metric}: {value} (oracle {:?})",
            oracle.get(metric)
        );
    }
}

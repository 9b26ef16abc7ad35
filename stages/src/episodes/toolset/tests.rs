use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::*;
use crate::episodes::{Environment, PhoneEnv};
use crate::tasks::eval::resolve_json;
use crate::tasks::generate::select;
use crate::tasks::lints::SetView;
use crate::tasks::review::apply_round;
use crate::tasks::sheet::{read_sheet, Round};
use crate::tasks::testkit::{candidates, datasets, world};
use crate::tasks::validate::validate_in_set;
use crate::tasks::world_index::WorldIndex;
use crate::world::phone::{Action, ActionSpace, EpisodeConfig, ParamSpec, Status};

/// The released task set rebuilt in process as `pipelines/taskset.yaml` builds it: the seeded
/// draw of 188 candidates, both review rounds, then validation.
fn released() -> &'static [TaskBundle] {
    static SET: std::sync::OnceLock<Vec<TaskBundle>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut bundles = select(candidates().to_vec(), 188, 7).expect("draw");
        for (round, dir) in [
            (Round::Refinement, "reviews/refinement"),
            (Round::Validation, "reviews/validation"),
        ] {
            let by_id: HashMap<&str, &TaskBundle> = bundles
                .iter()
                .map(|b| (b.task.task_id.as_str(), b))
                .collect();
            let files =
                crate::files::sorted_files(&datasets().join(dir), &["csv"]).expect("sheets");
            let mut rows = Vec::new();
            for f in files {
                let shown = f.display().to_string();
                rows.extend(read_sheet(&f, &shown, round, &by_id).expect("sheet"));
            }
            bundles = apply_round(bundles, &rows, round).expect("review").0;
        }
        let set = SetView::of(&bundles);
        let ix = WorldIndex::new(world());
        bundles
            .into_iter()
            .filter(|b| validate_in_set(&ix, b, &set).is_empty())
            .collect()
    })
}

fn param(name: &str, refers_to: Option<&str>) -> ParamSpec {
    ParamSpec {
        name: name.into(),
        type_name: if refers_to.is_some() { "ref" } else { "text" },
        required: true,
        default: None,
        options: None,
        range: None,
        refers_to: refers_to.map(str::to_string),
        choices: None,
        description: String::new(),
    }
}

fn spec(name: &str, params: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        irreversible: false,
        params,
    }
}

fn names(tools: &[ToolSpec]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// The phone's whole tool list, as an episode sees it.
fn catalog_tools() -> Arc<[ToolSpec]> {
    PhoneEnv::new(world(), EpisodeConfig::default())
        .expect("phone")
        .tools()
}

#[test]
fn a_domain_offers_its_apps_with_the_reads_their_ids_need() {
    let tools: Arc<[ToolSpec]> = Arc::new([
        spec("contacts.list_owner", vec![]),
        spec("contacts.get_owner", vec![]),
        spec("notes.list_notes", vec![]),
        spec("notes.get_notes", vec![]),
        spec("notes.create_note", vec![param("title", None)]),
        spec("wallet.list_cards", vec![]),
        spec("wallet.get_cards", vec![]),
        spec("wallet.pay", vec![param("card", Some("wallet.cards"))]),
        spec("shop.list_products", vec![]),
        spec("shop.get_products", vec![]),
        spec(
            "shop.buy_product",
            vec![
                param("product", Some("shop.products")),
                param("card", Some("wallet.cards")),
            ],
        ),
        spec("weather.get_forecast", vec![param("city", None)]),
    ]);
    let mut task = released()[0].clone();
    task.task.domain = "shopping".into();
    task.task.offered_apps = vec!["shop".into(), "notes".into()];
    let kept = offered(&tools, &task, Some(10));
    assert_eq!(
        names(&kept),
        [
            "contacts.list_owner",
            "contacts.get_owner",
            "notes.list_notes",
            "notes.get_notes",
            "notes.create_note",
            // The card the purchase takes is discoverable; paying is not offered.
            "wallet.list_cards",
            "wallet.get_cards",
            "shop.list_products",
            "shop.get_products",
            "shop.buy_product",
        ]
    );
    // Over the cap, the domain is still offered whole (a task must stay solvable).
    assert_eq!(offered(&tools, &task, Some(4)).len(), 10);
    // No cap, or a cap the catalog fits under: everything.
    assert_eq!(offered(&tools, &task, None).len(), tools.len());
    assert_eq!(offered(&tools, &task, Some(50)).len(), tools.len());
    // Without a domain (KnowU, remote tasks): whole apps in catalog order while they fit.
    task.task.offered_apps.clear();
    assert_eq!(
        names(&offered(&tools, &task, Some(5))),
        [
            "contacts.list_owner",
            "contacts.get_owner",
            "notes.list_notes",
            "notes.get_notes",
            "notes.create_note",
        ]
    );
}

/// The offer depends on the task's domain only: two tasks of one domain get the same tools, and
/// rewriting a task's reference solution (or dropping it) changes nothing.
#[test]
fn the_offer_never_depends_on_the_reference_solution() {
    let tools = catalog_tools();
    let mut by_domain: HashMap<&str, Vec<&TaskBundle>> = HashMap::new();
    for b in released() {
        by_domain.entry(b.task.domain.as_str()).or_default().push(b);
    }
    assert!(by_domain.len() >= 8, "{:?}", by_domain.keys());
    for (domain, tasks) in &by_domain {
        assert!(!domain.is_empty(), "a released task without a domain");
        let first = names(&offered(&tools, tasks[0], Some(120)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
        for t in &tasks[1..] {
            let offer = offered(&tools, t, Some(120));
            assert_eq!(
                names(&offer),
                first,
                "{} vs {}",
                t.task.task_id,
                tasks[0].task.task_id
            );
        }
        let mut blind = tasks[0].clone();
        blind.task.reference_solution = vec![json!({"action": "finish"})];
        blind.task.defaults_solution = Vec::new();
        blind.task.apps.clear();
        assert_eq!(names(&offered(&tools, &blind, Some(120))), first);
    }
    // The Portland weather question is a travel task: SkyWay (where her flight is) is offered,
    // though the reference never opens it.
    let weather = released()
        .iter()
        .find(|b| b.task.template == "weather_portland")
        .expect("weather_portland is released");
    let offer = names(&offered(&tools, weather, Some(120)))
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(offer.iter().any(|t| t.starts_with("skyway.")), "{offer:?}");
    assert!(!solution_tools(weather)
        .iter()
        .any(|t| t.starts_with("skyway.")));
}

/// Every domain group of `_domains.yaml` fits under the shipped pipelines' cap of 120 tools.
#[test]
fn every_domain_fits_under_the_shipped_cap() {
    let tools = catalog_tools();
    let dir = datasets().join("tasks");
    let domains = crate::tasks::template::load_domains(&dir, "datasets/tasks").expect("domains");
    assert!(domains.domains.len() >= 10);
    for name in domains.domains.keys() {
        let mut task = released()[0].clone();
        task.task.offered_apps = domains.apps(name).expect("apps");
        let offer = offered(&tools, &task, Some(120));
        assert!(offer.len() <= 120, "{name}: {} tools", offer.len());
        assert!(offer.len() >= 80, "{name}: only {} tools", offer.len());
    }
}

#[test]
fn the_released_set_is_the_one_the_pipeline_builds() {
    assert_eq!(released().len(), 130);
}

/// Every released task, capped as the shipped pipeline caps it: the reference solution's tools
/// are offered, and every record id the reference passes can be found with an offered read (or
/// is listed in the parameter's `enum`) at the moment it is passed.
#[test]
fn every_released_task_is_solvable_through_the_tools_it_is_offered() {
    let mut checked_ids = 0;
    for cap in [120, 64] {
        for b in released() {
            let config = EpisodeConfig {
                space: ActionSpace::Tools,
                clock: None,
                overrides: b.task.overrides.clone(),
            };
            let mut env = PhoneEnv::new(world(), config).expect("overrides");
            let all = env.tools();
            let offer = offered(&all, b, Some(cap));
            let id = &b.task.task_id;
            // Under the shipped cap the domain fits; under a tighter one it is offered whole.
            assert!(
                offer.len() <= cap.max(120),
                "{id}: {} tools over cap {cap}",
                offer.len()
            );
            let by_name: HashMap<&str, &ToolSpec> =
                offer.iter().map(|t| (t.name.as_str(), t)).collect();
            for t in OWNER_CARD {
                assert!(
                    by_name.contains_key(t),
                    "{id}: the owner card ({t}) is not offered"
                );
            }
            for app in &b.task.apps {
                assert!(
                    offer
                        .iter()
                        .any(|t| t.name.starts_with(&format!("{app}.list_"))),
                    "{id}: no read of app {app}"
                );
            }
            for step in &b.task.reference_solution {
                let action: Action =
                    serde_json::from_value(resolve_json(step, &b.slots).expect("slots"))
                        .expect("action");
                if let Action::Call { tool, args } = &action {
                    let spec = by_name.get(tool.as_str()).unwrap_or_else(|| {
                        panic!("{id}: reference tool {tool} not offered (cap {cap})")
                    });
                    checked_ids += check_ids_discoverable(id, spec, args, &by_name, &mut env);
                }
                let obs = env.step(&action);
                assert_ne!(
                    obs.status,
                    Status::Error,
                    "{id}: {step} failed: {}",
                    obs.text
                );
            }
        }
    }
    assert!(checked_ids > 200, "only {checked_ids} ids checked");
}

/// Checks that each id `args` passes to a ref parameter of `spec` is returned by the offered
/// `list_` read of its table (paging through it) or named by the parameter's `enum`; returns
/// how many ids it checked.
fn check_ids_discoverable(
    task: &str,
    spec: &ToolSpec,
    args: &Map<String, Value>,
    offered: &HashMap<&str, &ToolSpec>,
    env: &mut PhoneEnv<'_>,
) -> usize {
    let mut n = 0;
    for p in &spec.params {
        let (Some(table), Some(Value::String(want))) = (&p.refers_to, args.get(&p.name)) else {
            continue;
        };
        n += 1;
        if p.choices.as_ref().is_some_and(|c| c.contains(want)) {
            continue;
        }
        let (app, name) = table.split_once('.').expect("app.table");
        let list = format!("{app}.list_{name}");
        assert!(
            offered.contains_key(list.as_str()),
            "{task}: {} passes {want} of {table} but {list} is not offered",
            spec.name
        );
        assert!(
            listed_ids(env, &list).contains(want),
            "{task}: {want} is not among the records {list} returns"
        );
    }
    n
}

/// Every id a `list_` read returns, page by page.
fn listed_ids(env: &mut PhoneEnv<'_>, list: &str) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let obs = env.step(&Action::Call {
            tool: list.to_string(),
            args: json!({"limit": 100, "offset": ids.len()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        });
        let page: Value = serde_json::from_str(&obs.text).expect("listing JSON");
        let records = page["records"].as_array().cloned().unwrap_or_default();
        if records.is_empty() {
            return ids;
        }
        ids.extend(
            records
                .iter()
                .filter_map(|r| r["id"].as_str().map(str::to_string)),
        );
        if ids.len() as u64 >= page["total"].as_u64().unwrap_or(0) {
            return ids;
        }
    }
}

/// The card parameter of a payment lists the wallet's cards (a small table no operation adds
/// to), while a table the episode can grow keeps a free id.
#[test]
fn small_fixed_tables_put_their_ids_in_the_schema() {
    let env = PhoneEnv::new(world(), EpisodeConfig::default()).expect("phone");
    let tools = env.tools();
    let buy = tools
        .iter()
        .find(|t| t.name == "shopnest.buy_product")
        .expect("shopnest.buy_product");
    let schema = buy.json_schema();
    let cards: Vec<&str> = schema["properties"]["card"]["enum"]
        .as_array()
        .expect("card enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        cards.contains(&"card-corporate") && cards.contains(&"card-debit"),
        "{cards:?}"
    );
    // A table some operation inserts into can gain ids during the episode: never fixed.
    let cat = &world().catalog;
    let grown: Vec<String> = cat
        .apps
        .iter()
        .flat_map(|a| &a.operations)
        .flat_map(|o| &o.effects)
        .filter_map(|e| match e {
            crate::world::app::Effect::Insert { table, .. } => Some(cat.table_name(*table)),
            _ => None,
        })
        .collect();
    let mut open = 0;
    for p in tools.iter().flat_map(|t| &t.params) {
        if p.refers_to.as_ref().is_some_and(|t| grown.contains(t)) {
            assert!(p.choices.is_none(), "{}: {:?}", p.name, p.choices);
            open += 1;
        }
    }
    assert!(open > 0, "no ref parameter points at a growing table");
    let with_enum = tools
        .iter()
        .flat_map(|t| &t.params)
        .filter(|p| p.choices.is_some())
        .count();
    assert!(with_enum >= 10, "only {with_enum} ref parameters carry ids");
}

/// A model's first message names only the apps whose tools it is offered (a travel task does
/// not hear of Tixly), in the phone's own words.
#[test]
fn the_first_message_names_only_the_offered_apps() {
    let env = PhoneEnv::new(world(), EpisodeConfig::default()).expect("phone");
    let all = env.observe().text;
    let weather = released()
        .iter()
        .find(|b| b.task.template == "weather_portland")
        .expect("weather_portland");
    let offer = offered(&env.tools(), weather, Some(120));
    let text = overview_for(&all, &offer);
    assert!(
        text.starts_with(crate::world::phone::APPS_OVERVIEW_HEAD),
        "{text}"
    );
    for app in &world().catalog.apps {
        let line = format!("{} ({})", app.name, app.id);
        assert_eq!(
            text.contains(&line),
            weather.task.offered_apps.contains(&app.id),
            "{line} in {text}"
        );
    }
    // Everything offered: the whole overview, unchanged; a GUI screen is never touched.
    assert_eq!(overview_for(&all, &env.tools()), all);
    assert_eq!(
        overview_for("Home screen\n- x (y): z", &offer),
        "Home screen\n- x (y): z"
    );
}

/// List tools say what their records hold and how dates and times are written, so a model can
/// filter flights by day without guessing the format.
#[test]
fn list_tools_describe_their_fields_and_formats() {
    let tools = catalog_tools();
    let list = tools
        .iter()
        .find(|t| t.name == "skyway.list_flights")
        .expect("skyway.list_flights");
    for part in [
        "date (date, YYYY-MM-DD)",
        "depart (time, HH:MM on a 24-hour clock)",
        "origin (one of SFO, OAK, SJC)",
        "cabins (list; each one of",
    ] {
        assert!(
            list.description.contains(part),
            "{part}: {}",
            list.description
        );
    }
    let book = tools
        .iter()
        .find(|t| t.name == "dinespot.book_table")
        .expect("dinespot.book_table");
    let schema = book.json_schema();
    let date = schema["properties"]["date"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(date.contains("YYYY-MM-DD"), "{date}");
}

/// The tools-mode first observation says which apps there are, in words a model can use; no
/// internal names or counts of the implementation.
#[test]
fn the_first_tools_observation_lists_the_apps() {
    let env = PhoneEnv::new(world(), EpisodeConfig::default()).expect("phone");
    let text = env.observe().text;
    assert!(
        !text.contains("Phone::") && !text.contains("tools available"),
        "{text}"
    );
    for app in &world().catalog.apps {
        assert!(
            text.contains(&format!("{} ({})", app.name, app.id)),
            "{text}"
        );
    }
}

//! Template × variant × world → one candidate task. Slot values, evidence and app defaults come
//! from the world (profile entries, history `supports`, operation forms), so templates state
//! *which* detail is omitted and the world supplies *what* it is.

use serde_json::{json, Map, Value};
use serde_saphyr::Spanned;

use super::check::check_predicate;
use super::error::TaskError;
use super::matcher::generic_keyword;
use super::model::{
    Criterion, CriterionKind, HiddenContext, Perturbation, Slot, Source, Task, TaskBundle,
    Unavailable,
};
use super::predicate::{slot_refs_in, Predicate, Test};
use super::subst::{fill_json, fill_text, Vars};
use super::template::{place, Domains, RawCriterion, RawSlot, RawStep, RawTemplate};
use super::world_index::WorldIndex;
use crate::world::persona::Source as EntrySource;
use crate::world::phone::Overrides;
use crate::world::types::{display, value_matches};

/// What one instantiation works on, and where errors point.
struct Ctx<'a, 'w> {
    ix: &'a WorldIndex<'w>,
    t: &'a RawTemplate,
    at: String,
    task_id: String,
    vars: &'a Vars,
    /// The template file's stem: the default domain.
    stem: String,
    domains: &'a Domains,
}

impl Ctx<'_, '_> {
    fn err(&self, message: impl Into<String>) -> TaskError {
        TaskError::Template {
            at: self.at.clone(),
            message: message.into(),
        }
    }
}

/// Instantiates variant `n` (0-based) of a template; `domains` gives the task its tool offer.
pub fn instantiate(
    ix: &WorldIndex<'_>,
    file: &str,
    t: &Spanned<RawTemplate>,
    n: usize,
    domains: &Domains,
) -> Result<TaskBundle, TaskError> {
    let task_id = format!("{}-{:02}", t.value.id, n + 1);
    let ctx = Ctx {
        ix,
        t: &t.value,
        at: format!(
            "{}: template `{}`, variant {}",
            place(file, t),
            t.value.id,
            n + 1
        ),
        task_id,
        vars: &t.value.variants[n],
        stem: std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        domains,
    };
    build(&ctx)
}

fn build(ctx: &Ctx<'_, '_>) -> Result<TaskBundle, TaskError> {
    let overrides = overrides(ctx)?;
    let slots = ctx
        .t
        .slots
        .iter()
        .map(|(id, raw)| slot(ctx, id, raw, &overrides))
        .collect::<Result<Vec<_>, _>>()?;
    let criteria = ctx
        .t
        .criteria
        .iter()
        .map(|c| criterion(ctx, c, &slots))
        .collect::<Result<Vec<_>, _>>()?;
    let (reference, defaults) = solution(ctx, &slots)?;
    let apps = task_apps(&reference, &criteria);
    let cat = &ctx.ix.world.catalog;
    let category = apps
        .first()
        .and_then(|a| cat.app(a))
        .map(|a| a.category.clone())
        .ok_or_else(|| ctx.err("the solution calls no app and no check names one"))?;
    let cross_app = ctx.ix.cross_app(&overrides.history, &apps, &slots);
    let hidden_context = hidden_context(ctx, &slots)?;
    let (domain, offered_apps) = domain(ctx, &reference, &criteria)?;
    let mut bundle = TaskBundle {
        task: Task {
            task_id: ctx.task_id.clone(),
            persona: ctx.ix.world.persona.id.clone(),
            template: ctx.t.id.clone(),
            instruction: fill_text(&ctx.t.instruction, ctx.vars, &[]).map_err(|e| ctx.err(e))?,
            apps,
            category,
            task_type: ctx.t.task_type,
            perturbation: ctx.t.perturbation,
            cross_app,
            domain,
            offered_apps,
            overrides,
            hidden_context,
            reference_solution: reference,
            defaults_solution: defaults,
            lambda: None,
        },
        slots,
        criteria,
    };
    bundle.sync_hidden_context();
    check_perturbation(ctx, &bundle)?;
    Ok(bundle)
}

/// The task's domain and the apps it offers (in catalog order): the template's `domain`, else
/// its file's stem. Every app the reference solution calls and every table its checks name must
/// be among them, so a capped offer never makes the task impossible.
fn domain(
    ctx: &Ctx<'_, '_>,
    reference: &[Value],
    criteria: &[Criterion],
) -> Result<(String, Vec<String>), TaskError> {
    let d = ctx.domains;
    if d.domains.is_empty() {
        return Ok((String::new(), Vec::new()));
    }
    let name = ctx.t.domain.clone().unwrap_or_else(|| ctx.stem.clone());
    let apps = d.apps(&name).ok_or_else(|| {
        ctx.err(format!(
            "domain `{name}` is not one of _domains.yaml's ({}); set `domain:` on the template",
            d.domains.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })?;
    let cat = &ctx.ix.world.catalog;
    if let Some(bad) = apps.iter().find(|a| cat.app(a).is_none()) {
        return Err(ctx.err(format!("domain `{name}` names unknown app `{bad}`")));
    }
    let mut needed = task_apps(reference, &[]);
    for c in criteria {
        c.predicate.visit(&mut |p| match p {
            Predicate::Record { table, .. } | Predicate::AnswerMentions { table, .. } => {
                push_app(&mut needed, table)
            }
            Predicate::Called { tool, .. } => push_app(&mut needed, tool),
            _ => {}
        });
    }
    if let Some(missing) = needed.iter().find(|a| !apps.contains(a)) {
        return Err(ctx.err(format!(
            "the task needs app `{missing}`, which domain `{name}` does not offer; pick a domain that offers it (`domain:`) or add the app to the domain in _domains.yaml"
        )));
    }
    let offered = cat
        .apps
        .iter()
        .filter(|a| apps.contains(&a.id))
        .map(|a| a.id.clone())
        .collect();
    Ok((name, offered))
}

/// Fills the template's overrides and completes short history events.
fn overrides(ctx: &Ctx<'_, '_>) -> Result<Overrides, TaskError> {
    let Some(raw) = &ctx.t.overrides else {
        return Ok(Overrides::default());
    };
    let mut v = fill_json(raw, ctx.vars).map_err(|e| ctx.err(format!("overrides: {e}")))?;
    if let Some(events) = v.get_mut("history").and_then(Value::as_array_mut) {
        for (i, e) in events.iter_mut().enumerate() {
            complete_event(ctx, i, e);
        }
    }
    serde_json::from_value(v).map_err(|e| ctx.err(format!("overrides: {e}")))
}

/// Fills `event_id`, `location`, `label` and `category` of an override history event.
fn complete_event(ctx: &Ctx<'_, '_>, i: usize, e: &mut Value) {
    let persona = &ctx.ix.world.persona;
    let Some(m) = e.as_object_mut() else { return };
    let supports: Vec<String> = m
        .get("supports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let category = supports
        .first()
        .and_then(|s| persona.entry(s))
        .map(|e| e.dimension.clone())
        .unwrap_or_else(|| "noise".into());
    let home = persona.places.get("home").cloned().unwrap_or_default();
    let label = if supports.is_empty() {
        "noise"
    } else {
        "signal"
    };
    m.entry("event_id")
        .or_insert_with(|| json!(format!("{}-ev{}", ctx.task_id, i + 1)));
    m.entry("location").or_insert_with(|| json!(home));
    m.entry("label").or_insert_with(|| json!(label));
    m.entry("category").or_insert_with(|| json!(category));
    m.entry("supports").or_insert_with(|| json!(supports));
}

fn slot(ctx: &Ctx<'_, '_>, id: &str, raw: &RawSlot, ov: &Overrides) -> Result<Slot, TaskError> {
    let here = |m: String| ctx.err(format!("slot `{id}`: {m}"));
    let fill = |s: &String| fill_text(s, ctx.vars, &[]).map_err(here);
    let (source, value, evidence, entry) = match (&raw.profile, &raw.situational, &raw.ask) {
        (Some(p), None, None) => profile_slot(ctx, &fill(p)?, ov).map_err(here)?,
        (None, Some(s), None) => {
            let s = &fill(s)?;
            let fact = ctx.ix.world.persona.situational.iter().find(|f| &f.id == s);
            let fact =
                fact.ok_or_else(|| here(format!("no situational fact `{s}` in the persona")))?;
            (
                Source::AskOnly,
                fact.value.clone(),
                Vec::new(),
                Some(s.clone()),
            )
        }
        (None, None, Some(v)) => {
            let value = fill_json(v, ctx.vars).map_err(here)?;
            (Source::AskOnly, value, Vec::new(), None)
        }
        _ => {
            return Err(here(
                "give exactly one of `profile`, `situational`, `ask`".into(),
            ))
        }
    };
    if raw.keywords.is_empty() {
        return Err(here(
            "`keywords` is empty; list words that name its field or subject".into(),
        ));
    }
    if let Some(k) = raw.keywords.iter().find(|k| generic_keyword(k)) {
        return Err(here(format!(
            "keyword `{k}` names no field or subject (it would match questions about any slot); use words such as the field's name or what it is about"
        )));
    }
    let about = slot_about(ctx, raw, &entry).map_err(here)?;
    let app_default = match &raw.default {
        Some(path) => field_default(ctx, path).map_err(here)?,
        None => None,
    };
    if let (Source::AskOnly, Some(d)) = (source, &app_default) {
        if value_matches(&value, d) || display(&value) == display(d) {
            return Err(here(format!(
                "ask-only value {} equals the app default; pick a value an agent cannot reach by leaving the form alone",
                display(&value)
            )));
        }
    }
    Ok(Slot {
        slot_id: id.to_string(),
        source,
        evidence,
        value,
        keywords: raw.keywords.clone(),
        app_default,
        profile_entry: entry,
        about,
    })
}

/// The slot's `about` sentence: the template's, else the situational fact's, else one made from
/// the profile entry ("Maya's favourite cuisine (dining)"). `ask:` slots must write their own.
fn slot_about(ctx: &Ctx<'_, '_>, raw: &RawSlot, entry: &Option<String>) -> Result<String, String> {
    let persona = &ctx.ix.world.persona;
    let text = match (&raw.about, entry) {
        (Some(a), _) => fill_text(a, ctx.vars, &[])?,
        (None, Some(id)) => {
            if let Some(f) = persona.situational.iter().find(|f| &f.id == id) {
                f.about.clone()
            } else if let Some(e) = persona.entry(id) {
                format!(
                    "{}'s {} ({})",
                    persona.name.split_whitespace().next().unwrap_or("the user"),
                    e.key.replace('_', " "),
                    e.dimension.replace('_', " ")
                )
            } else {
                String::new()
            }
        }
        (None, None) => {
            return Err("an `ask:` slot needs `about:`, one sentence saying what it is (e.g. \"How many people are coming to dinner\")".into())
        }
    };
    if text.trim().is_empty() {
        return Err("`about` is empty".into());
    }
    if let Some(id) = text.split_whitespace().find(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        w.contains('_')
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
    }) {
        return Err(format!(
            "`about` says `{id}`, an id; write values as words (`date night`, not `date_night`)"
        ));
    }
    Ok(text)
}

type SlotParts = (Source, Value, Vec<String>, Option<String>);

fn profile_slot(ctx: &Ctx<'_, '_>, p: &str, ov: &Overrides) -> Result<SlotParts, String> {
    let entry = ctx
        .ix
        .world
        .persona
        .entry(p)
        .ok_or_else(|| format!("no profile entry `{p}` in the persona"))?;
    let value = ov
        .profile
        .iter()
        .find(|e| e.id == p)
        .map(|e| e.value.clone())
        .unwrap_or_else(|| entry.value.clone());
    match entry.source {
        EntrySource::Inferable => {
            let evidence = ctx.ix.evidence(p, &ov.history);
            Ok((Source::Inferable, value, evidence, Some(p.to_string())))
        }
        EntrySource::AskOnly => Ok((Source::AskOnly, value, Vec::new(), Some(p.to_string()))),
        EntrySource::Unspecified => Err(format!("profile entry `{p}` has no resolution source")),
    }
}

/// The default of `app.operation.field`.
fn field_default(ctx: &Ctx<'_, '_>, path: &str) -> Result<Option<Value>, String> {
    let (tool, field) = path
        .rsplit_once('.')
        .ok_or_else(|| format!("`default: {path}` is not `app.operation.field`"))?;
    let op = ctx
        .ix
        .world
        .catalog
        .operation(tool)
        .ok_or_else(|| format!("unknown operation `{tool}`"))?;
    let def = op
        .field_idx(field)
        .map(|i| &op.fields[i])
        .ok_or_else(|| format!("`{tool}` has no field `{field}`"))?;
    match &def.default {
        Some(d) => Ok(Some(d.clone())),
        None => Err(format!(
            "`{path}` is required and has no default; drop `default`"
        )),
    }
}

fn criterion(ctx: &Ctx<'_, '_>, c: &RawCriterion, slots: &[Slot]) -> Result<Criterion, TaskError> {
    let here = |m: String| ctx.err(format!("criterion `{}`: {m}", c.id));
    let kind = c.kind.unwrap_or(if c.slot.is_some() {
        CriterionKind::Personalization
    } else {
        CriterionKind::Action
    });
    match (kind, &c.slot) {
        (CriterionKind::Personalization, None) => {
            return Err(here("a personalization criterion needs `slot`".into()))
        }
        (CriterionKind::Action, Some(_)) => {
            return Err(here("an action criterion has no `slot`".into()))
        }
        (_, Some(s)) if !slots.iter().any(|x| &x.slot_id == s) => {
            return Err(here(format!("unknown slot `{s}`")))
        }
        _ => {}
    }
    let check = fill_json(&c.check, ctx.vars).map_err(here)?;
    let predicate = Predicate::parse(&check).map_err(|e| here(e.to_string()))?;
    check_predicate(&predicate, &ctx.ix.world.catalog, slots).map_err(here)?;
    let slot = c
        .slot
        .as_deref()
        .and_then(|id| slots.iter().find(|s| s.slot_id == id));
    let free_text = c
        .free_text
        .unwrap_or_else(|| slot.is_some_and(|s| dictated_text(s, &predicate)));
    Ok(Criterion {
        criterion_id: c.id.clone(),
        kind,
        slot_id: c.slot.clone(),
        predicate,
        rubric: fill_text(&c.rubric, ctx.vars, slots).map_err(here)?,
        free_text,
    })
}

/// Whether a criterion checks text the user dictated: an ask-only slot whose value is free text
/// (several words, not an enum id), tested with `contains` or `told`/`answer_contains`.
fn dictated_text(slot: &Slot, p: &Predicate) -> bool {
    let free = slot.source == Source::AskOnly
        && slot
            .value
            .as_str()
            .is_some_and(|v| v.split_whitespace().count() >= 2);
    let mut textual = false;
    p.visit(&mut |q| match q {
        Predicate::Record { conditions, .. } | Predicate::AnswerMentions { conditions, .. } => {
            textual |= conditions
                .iter()
                .any(|c| matches!(c.test, Test::Contains(_)));
        }
        Predicate::AnswerContains { .. } | Predicate::Told { .. } => textual = true,
        _ => {}
    });
    free && textual
}

/// Compiles the steps into the reference solution and the defaults-only solution.
fn solution(ctx: &Ctx<'_, '_>, slots: &[Slot]) -> Result<(Vec<Value>, Vec<Value>), TaskError> {
    let mut reference = Vec::new();
    let mut defaults = Vec::new();
    for (i, step) in ctx.t.solution.iter().enumerate() {
        let here = |m: String| ctx.err(format!("solution step {}: {m}", i + 1));
        match (&step.call, &step.ask, &step.answer) {
            (Some(tool), None, None) => {
                let (r, d) = call_step(ctx, tool, step, slots).map_err(here)?;
                reference.push(r);
                defaults.push(d);
            }
            (None, Some(q), None) => {
                let text = fill_text(q, ctx.vars, &[]).map_err(here)?;
                reference.push(json!({ "action": "ask_user", "text": text }));
            }
            (None, None, Some(a)) => {
                let text = fill_json(&json!(a), ctx.vars).map_err(here)?;
                reference.push(json!({ "action": "answer", "text": text }));
                if let Some(plain) = &step.plain {
                    let plain = fill_json(plain, ctx.vars).map_err(here)?;
                    defaults.push(json!({ "action": "answer", "text": plain }));
                }
            }
            _ => return Err(here("give exactly one of `call`, `ask`, `answer`".into())),
        }
    }
    reference.push(json!({ "action": "finish" }));
    defaults.push(json!({ "action": "finish" }));
    Ok((reference, defaults))
}

fn call_step(
    ctx: &Ctx<'_, '_>,
    tool: &str,
    step: &RawStep,
    slots: &[Slot],
) -> Result<(Value, Value), String> {
    let args = fill_json(step.args.as_ref().unwrap_or(&json!({})), ctx.vars)?;
    let args = args.as_object().cloned().ok_or("`args` must be a map")?;
    let mut refs = Vec::new();
    slot_refs_in(&Value::Object(args.clone()), &mut refs);
    if let Some(bad) = refs
        .iter()
        .find(|r| !slots.iter().any(|s| &s.slot_id == *r))
    {
        return Err(format!("unknown slot `{bad}`"));
    }
    let reference = json!({ "action": "call", "tool": tool, "args": args });
    let Some(op) = ctx.ix.world.catalog.operation(tool) else {
        read_tool(ctx, tool)?;
        return Ok((reference.clone(), reference));
    };
    let plain = fill_json(step.plain.as_ref().unwrap_or(&json!({})), ctx.vars)?;
    let plain = plain.as_object().cloned().ok_or("`plain` must be a map")?;
    let required: Vec<&str> = op
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name.as_str())
        .collect();
    if let Some(k) = plain.keys().find(|k| !required.contains(&k.as_str())) {
        return Err(format!(
            "`plain` sets `{k}`, which is not a required field of `{tool}`"
        ));
    }
    let mut plain_args = Map::new();
    for (k, v) in args.iter().filter(|(k, _)| required.contains(&k.as_str())) {
        let value = match plain.get(k) {
            Some(p) => p.clone(),
            None => {
                let mut r = Vec::new();
                slot_refs_in(v, &mut r);
                if !r.is_empty() {
                    return Err(format!("required argument `{k}` depends on slot `{}`; give `plain: {{ {k}: … }}` (what an agent that does not personalize submits)", r[0]));
                }
                v.clone()
            }
        };
        plain_args.insert(k.clone(), value);
    }
    Ok((
        reference,
        json!({ "action": "call", "tool": tool, "args": plain_args }),
    ))
}

/// Checks `app.list_<table>` / `app.get_<table>` read tools.
fn read_tool(ctx: &Ctx<'_, '_>, tool: &str) -> Result<(), String> {
    let cat = &ctx.ix.world.catalog;
    let ok = tool.split_once('.').is_some_and(|(app, t)| {
        let table = t.strip_prefix("list_").or_else(|| t.strip_prefix("get_"));
        table.is_some_and(|t| cat.table_id(&format!("{app}.{t}"), None).is_some())
    });
    if ok {
        Ok(())
    } else {
        Err(format!("unknown tool `{tool}`"))
    }
}

/// Apps of the reference's calls in first-use order; for pure answers, the apps checks name.
fn task_apps(reference: &[Value], criteria: &[Criterion]) -> Vec<String> {
    let mut apps: Vec<String> = Vec::new();
    for step in reference {
        if let Some(tool) = step.get("tool").and_then(Value::as_str) {
            push_app(&mut apps, tool);
        }
    }
    if apps.is_empty() {
        for c in criteria {
            c.predicate.visit(&mut |p| match p {
                Predicate::Record { table, .. } | Predicate::AnswerMentions { table, .. } => {
                    push_app(&mut apps, table)
                }
                _ => {}
            });
        }
    }
    apps
}

/// Adds the app of `app.thing` unless present.
fn push_app(apps: &mut Vec<String>, dotted: &str) {
    let app = dotted.split('.').next().unwrap_or(dotted);
    if !apps.iter().any(|a| a == app) {
        apps.push(app.to_string());
    }
}

fn hidden_context(ctx: &Ctx<'_, '_>, slots: &[Slot]) -> Result<HiddenContext, TaskError> {
    let facts = ctx
        .t
        .facts
        .iter()
        .map(|f| fill_text(f, ctx.vars, slots))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ctx.err(format!("facts: {e}")))?;
    let unavailable = ctx
        .t
        .unavailable
        .iter()
        .map(|u| {
            let v = fill_json(u, ctx.vars)?;
            serde_json::from_value::<Unavailable>(v).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ctx.err(format!("unavailable: {e}")))?;
    Ok(HiddenContext {
        ask_only: Default::default(),
        facts,
        unavailable,
    })
}

/// A perturbed task must carry what its perturbation needs.
fn check_perturbation(ctx: &Ctx<'_, '_>, b: &TaskBundle) -> Result<(), TaskError> {
    let persona = &ctx.ix.world.persona;
    let ov = &b.task.overrides;
    match b.task.perturbation {
        Perturbation::PreferenceShift => {
            let shifted = b.slots.iter().any(|s| {
                s.source == Source::Inferable
                    && s.profile_entry.as_deref().is_some_and(|p| {
                        persona.entry(p).is_some_and(|e| e.shift.is_some())
                            || ov.profile.iter().any(|e| e.id == p)
                    })
            });
            if !shifted {
                return Err(ctx.err("preference_shift needs an inferable slot whose entry shifts in history or is changed by `overrides.profile`"));
            }
        }
        Perturbation::UnavailableOption => {
            if ov.app_data.is_empty() || b.task.hidden_context.unavailable.is_empty() {
                return Err(ctx.err("unavailable_option needs `overrides.app_data` removing the option and `unavailable` naming it"));
            }
        }
        Perturbation::InstructionOverride | Perturbation::None => {}
    }
    Ok(())
}

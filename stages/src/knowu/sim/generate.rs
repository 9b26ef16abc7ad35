//! Templates × one KnowU persona → task bundles. A template whose persona lacks a section it
//! needs is skipped with the template, persona and missing section named (logged and returned),
//! so any profile of KnowU's schema works and the task counts follow what each persona has.
//! Proactive templates never skip on a missing habit: that is the case where the right
//! behaviour is to stay silent (or to stop after the user rejects).

use serde_json::{json, Map, Value};

use std::collections::BTreeSet;

use super::matching::{self, Wanted};
use super::prefs::{self, Requirements};
use super::task::{Expect, HabitFound, KnowuTask, KnowuTaskInfo, Situation};
use super::template::{Difficulty, Split, Template};
use crate::knowu::interop::rules::Decision;
use crate::knowu::profile::{text, KnowuProfile};
use crate::tasks::check::check_predicate;
use crate::tasks::{
    Criterion, CriterionKind, Perturbation, Predicate, Slot, Source, Task, TaskBundle, TaskType,
};
use crate::world::app::Catalog;
use crate::world::clock::DateTime;
use crate::world::phone::{Action, Overrides};

use super::fill::{fill_from, fill_habit, routine_clock};

/// A template not instantiated for a persona, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    /// Template id.
    pub template: String,
    /// Persona id.
    pub persona: String,
    /// The template's split.
    pub split: Split,
    /// The section the persona lacks (alternatives joined with ` | `).
    pub missing: String,
}

/// The outcome of generation for one persona.
#[derive(Debug, Default)]
pub struct Generated {
    /// Tasks, in template order (a personalized task is followed by its general twin).
    pub tasks: Vec<KnowuTask>,
    /// Templates skipped for this persona.
    pub skipped: Vec<Skip>,
}

/// How many tasks of one split a persona got, and how many templates were skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitCount {
    /// Persona id.
    pub persona: String,
    /// The split.
    pub split: Split,
    /// Tasks generated.
    pub tasks: u32,
    /// Of those, KnowU-Bench classes (the rest are prefflow-only).
    pub knowu_classes: u32,
    /// Tasks not generated because their template was skipped (for general: the twins of
    /// skipped personalized templates).
    pub skipped: u32,
}

impl Generated {
    /// Per split: tasks, KnowU classes among them, and skipped ones.
    pub fn summary(&self, templates: &[Template]) -> Vec<SplitCount> {
        let persona = self
            .tasks
            .iter()
            .map(|t| t.bundle.task.persona.clone())
            .chain(self.skipped.iter().map(|s| s.persona.clone()))
            .next()
            .unwrap_or_default();
        [Split::General, Split::Personalized, Split::Proactive]
            .into_iter()
            .map(|split| {
                let of_split = self.tasks.iter().filter(|t| t.info.split == split);
                let skipped = self
                    .skipped
                    .iter()
                    .filter(|s| match split {
                        Split::General => templates
                            .iter()
                            .any(|t| t.id == s.template && t.twin.is_some()),
                        _ => s.split == split,
                    })
                    .count();
                SplitCount {
                    persona: persona.clone(),
                    split,
                    tasks: of_split.clone().count() as u32,
                    knowu_classes: of_split.filter(|t| t.info.in_knowu).count() as u32,
                    skipped: skipped as u32,
                }
            })
            .collect()
    }
}

/// The slot id of a template's preference.
pub const PREF_SLOT: &str = "pref";

/// Instantiates every template for `persona`, each task's λ from `scoring` (its class's row).
/// Errors are template mistakes (an unparseable action or predicate, an unknown table, a class
/// the scoring table lacks); they name the template.
pub fn generate(
    templates: &[Template],
    persona: &KnowuProfile,
    catalog: &Catalog,
    scoring: &Scoring<'_>,
) -> Result<Generated, String> {
    let mut out = Generated::default();
    // Habit keys some template names: never taken by another template's meaning match.
    let claimed: BTreeSet<String> = templates
        .iter()
        .flat_map(|t| t.habit_keys.iter().chain(t.decisive_keys()).cloned())
        .collect();
    let mut taken = BTreeSet::new();
    for t in templates {
        if let Some(missing) = missing_section(t, persona) {
            tracing::warn!(
                "knowu template `{}` skipped for persona `{}`: the profile has no {missing}",
                t.id,
                persona.id
            );
            out.skipped.push(Skip {
                template: t.id.clone(),
                persona: persona.id.clone(),
                split: t.split,
                missing,
            });
            continue;
        }
        let made = match t.split {
            Split::Proactive => vec![proactive(t, persona, &claimed, &mut taken)?],
            _ => preference_tasks(t, persona)?,
        };
        for mut k in made {
            let lambda = scoring.table.lambda(&k.info.class_name, scoring.label)?;
            k.info.lambda = Some(lambda);
            k.bundle.task.lambda = Some(lambda);
            check_bundle(&k.bundle, catalog).map_err(|e| format!("template `{}`: {e}", t.id))?;
            fill_category(&mut k.bundle, catalog);
            out.tasks.push(k);
        }
    }
    if !out.skipped.is_empty() {
        tracing::warn!(
            "knowu persona `{}`: {} of {} templates skipped ({}); see table `skipped`",
            persona.id,
            out.skipped.len(),
            templates.len(),
            out.skipped
                .iter()
                .map(|s| s.template.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(out)
}

/// The scoring table ([`super::scoring`]) and its name for messages.
pub struct Scoring<'a> {
    /// The table.
    pub table: &'a super::scoring::ScoringTable,
    /// Its path as the pipeline wrote it.
    pub label: &'a str,
}

/// What the persona lacks for the template: a required section, or any key about its
/// preference in the sections it searches, in words (`preferences.diet key about remark |
/// special notes`).
fn missing_section(t: &Template, p: &KnowuProfile) -> Option<String> {
    if let Some(r) = t.requires.iter().find(|r| p.get(r).is_none()) {
        return Some(format!("`{r}`"));
    }
    for rule in &t.unfit {
        if let Some((path, said)) = matching::says_any(p, &rule.at, &rule.key, &rule.says) {
            return Some(format!(
                "fit for the task: {} (`{path}` says {said:?})",
                rule.why
            ));
        }
    }
    let Some(spec) = t.preference.as_ref() else {
        return places_of(t, p).err();
    };
    if let Some(found) = matching::preference(p, &wanted(spec)) {
        let places = match places_of(t, p) {
            Ok(places) => places,
            Err(missing) => return Some(missing),
        };
        // A preference that states nothing to check (a bare refusal: "Almost never — too
        // expensive") does not fit the task: the persona would not want it done at all.
        let value_text = text(found.value);
        let instruction = fill_places(&t.instruction, &places);
        if t.judged.is_some() && situated(t, &instruction, found.value).1.is_empty() {
            return Some(format!(
                "usable preference: `{}` states nothing a task could follow in its situation ({value_text:?})",
                found.path,
            ));
        }
        return None;
    }
    let sections = spec
        .sections
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(" or ");
    let entry = if spec.entry.is_empty() {
        String::new()
    } else {
        format!(" in an entry naming {}", spec.entry.join(" | "))
    };
    Some(format!(
        "{sections} key about {}{entry}",
        spec.about.join(" | ")
    ))
}

/// A template's places chosen for a persona: the name (`dest`) and the place's key, label and
/// address, as `{dest:label}` reads them.
type Places = Vec<(String, Map<String, Value>)>;

/// The places of a template chosen for the persona, or what she lacks for one of them.
fn places_of(t: &Template, p: &KnowuProfile) -> Result<Places, String> {
    t.places
        .iter()
        .map(|(name, rules)| {
            let pl = matching::place(p, rules).map_err(|m| format!("{m} (the task's `{name}`)"))?;
            let m = json!({ "key": pl.key, "label": pl.label, "address": pl.address });
            Ok((name.clone(), m.as_object().cloned().unwrap_or_default()))
        })
        .collect()
}

/// `{dest:label}` and the like filled in from the places chosen.
fn fill_places(s: &str, places: &Places) -> String {
    places
        .iter()
        .fold(s.to_string(), |s, (name, m)| fill_from(&s, name, Some(m)))
}

/// The instruction (places filled in) in which the task is set, and the preference's
/// requirements in that situation: with the template's `on_condition` sentence added when
/// nothing of the preference is checkable otherwise but one of its `only if` conditions would
/// make it so (the condition as her profile words it), so her exception is what she wants.
fn situated(t: &Template, instruction: &str, value: &Value) -> (String, Requirements) {
    let value_text = text(value);
    let parsed = prefs::parse(value);
    let req = parsed
        .clone()
        .in_situation(&prefs::situation(instruction, &value_text));
    let when = parsed
        .conditional
        .first()
        .and_then(|c| c.when.first())
        .map(|w| as_written(&value_text, w));
    match (&t.on_condition, when) {
        (Some(sentence), Some(when)) if req.is_empty() => {
            let planted = format!("{instruction} {}", sentence.replace("{when}", &when));
            let req = parsed.in_situation(&prefs::situation(&planted, &value_text));
            (planted, req)
        }
        _ => (instruction.to_string(), req),
    }
}

/// A condition's first alternative as the profile words it (`splitting with roommates` of
/// "… if splitting with roommates."), else the term's content words.
fn as_written(value_text: &str, when: &prefs::Term) -> String {
    // ASCII lower case keeps byte offsets, so they index `value_text` too.
    let lower = value_text.to_ascii_lowercase();
    let stops: &[char] = &['.', ';', ',', '!', '(', ')', '—', '–'];
    lower
        .match_indices("if ")
        .filter(|(i, _)| *i == 0 || !lower[..*i].ends_with(char::is_alphanumeric))
        .find_map(|(i, m)| {
            let rest = &value_text[i + m.len()..];
            let end = rest.find(stops).unwrap_or(rest.len());
            let end = rest[..end].to_ascii_lowercase().find(" or ").unwrap_or(end);
            let said = rest[..end].trim();
            let stems: Vec<String> = matching::words(said)
                .iter()
                .map(|w| prefs::stem(w))
                .collect();
            when.words
                .iter()
                .all(|w| stems.contains(w))
                .then(|| said.to_string())
        })
        .unwrap_or_else(|| when.text.clone())
}

fn wanted(spec: &super::template::PreferenceSpec) -> Wanted<'_> {
    Wanted {
        sections: &spec.sections,
        about: &spec.about,
        entry: &spec.entry,
    }
}

/// The personalized task and its general twin (or the general task alone).
fn preference_tasks(t: &Template, p: &KnowuProfile) -> Result<Vec<KnowuTask>, String> {
    let (path, value) = match &t.preference {
        Some(spec) => matching::preference(p, &wanted(spec))
            .map(|f| (Some(f.path), f.value.clone()))
            .unwrap_or((None, Value::Null)),
        None => (None, Value::Null),
    };
    let value_text = text(&value);
    let places = places_of(t, p)?;
    let (instruction, req) = situated(t, &fill_places(&t.instruction, &places), &value);
    let pref_text = render(&req);
    // The mapping the preference sits in (a social-graph contact): `{entry:phone|default}`.
    let entry = path
        .as_deref()
        .and_then(|p| p.rsplit_once('.'))
        .and_then(|(parent, _)| p.get(parent))
        .and_then(Value::as_object);
    let fill = |s: &str| {
        let s = s
            .replace("{value}", &value_text)
            .replace("{pref}", &pref_text)
            .replace("{name}", &p.display_name);
        fill_from(&fill_places(&s, &places), "entry", entry)
    };
    let slots = match &t.preference {
        Some(spec) => vec![pref_slot(spec, &value_text, path)],
        None => Vec::new(),
    };
    let mut criteria = vec![Criterion {
        criterion_id: "effect".into(),
        kind: CriterionKind::Action,
        slot_id: None,
        predicate: effect(t, &fill)?,
        rubric: "The operation the user asked for was done.".into(),
        free_text: false,
    }];
    if let (Some(j), false) = (&t.judged, slots.is_empty()) {
        criteria.extend(pref_criteria(j, &value_text, &req)?);
    }
    let base = Parts {
        persona: p,
        slots,
        criteria,
        overrides: Overrides {
            app_data: filled(t, "plant", &t.plant, &fill)?,
            ..Overrides::default()
        },
        preference: t.judged.as_ref().map(|j| (value.clone(), j.spec())),
    };
    let solution: Vec<Value> = t.solution.iter().map(|v| fill_slot(v, &req)).collect();
    let reference = fill_all(&solution, &fill);
    let plain = t.plain.as_ref().map(|p| fill_all(p, &fill));
    base.tasks(t, &|s| fill(s), &instruction, reference, plain)
}

/// The preference slot of a task whose preference is `value_text`, found at `path`.
fn pref_slot(
    spec: &super::template::PreferenceSpec,
    value_text: &str,
    path: Option<String>,
) -> Slot {
    Slot {
        slot_id: PREF_SLOT.into(),
        source: Source::Inferable,
        evidence: Vec::new(),
        value: Value::String(value_text.to_string()),
        keywords: spec.keywords.clone(),
        app_default: None,
        profile_entry: path,
        about: String::new(),
    }
}

/// The template's effect predicate with the task's values filled in.
fn effect(t: &Template, fill: &dyn Fn(&str) -> String) -> Result<Predicate, String> {
    let effect = expand_each(&fill_json(&t.effect, fill))
        .map_err(|e| format!("template `{}`: effect: {e}", t.id))?;
    parse(&effect, "effect")
}

/// `data` (the template's field `what`) with the task's values filled in, read as `T`.
fn filled<T: serde::de::DeserializeOwned>(
    t: &Template,
    what: &str,
    data: &impl serde::Serialize,
    fill: &dyn Fn(&str) -> String,
) -> Result<T, String> {
    serde_json::to_value(data)
        .map(|v| fill_json(&v, fill))
        .and_then(serde_json::from_value)
        .map_err(|e| format!("template `{}`: {what}: {e}", t.id))
}

/// One personalization criterion per requirement of the preference, each rubric carrying the
/// whole preference; the predicates approximate the check for rule judges (`contains` on the
/// judged field: every word of a wanted term, none of an avoided one); time windows and bounds,
/// which no predicate expresses, get the effect as their predicate and are left to a judge
/// model (`free_text`). The KnowU score itself checks the field with [`prefs::check`].
fn pref_criteria(
    j: &super::template::Judged,
    value_text: &str,
    req: &Requirements,
) -> Result<Vec<Criterion>, String> {
    if j.exact {
        let pred = json!({ j.change.clone(): j.table, "where": { j.field.clone(): value_text } });
        return Ok(vec![Criterion {
            criterion_id: "pref_1".into(),
            kind: CriterionKind::Personalization,
            slot_id: Some(PREF_SLOT.into()),
            predicate: parse(&pred, "judged")?,
            rubric: format!(
                "The {} is exactly the user's preference \"{value_text}\" (a fixed option: a neighbouring one, even the opposite order, is not it).",
                j.field
            ),
            free_text: false,
        }]);
    }
    let whole = prefs::rubric(&j.field, value_text, req);
    let has = |word: &str| json!({ j.change.clone(): j.table, "where": { j.field.clone(): { "contains": word } } });
    let all =
        |t: &prefs::Term| json!({ "all": t.words.iter().map(|w| has(w)).collect::<Vec<_>>() });
    let mut lines: Vec<(String, Value, bool)> = Vec::new();
    for g in &req.want {
        let names: Vec<&str> = g.iter().map(|t| t.text.as_str()).collect();
        let pred = json!({ "any": g.iter().map(all).collect::<Vec<_>>() });
        lines.push((format!("wanted: {}", names.join(" or ")), pred, true));
    }
    for t in &req.avoid {
        lines.push((
            format!("ruled out: {}", t.text),
            json!({ "not": all(t) }),
            true,
        ));
    }
    if !req.windows.is_empty() || !req.bounds.is_empty() {
        let pred = json!({ j.change.clone(): j.table });
        lines.push(("times and amounts as stated".into(), pred, true));
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, (what, pred, free_text))| {
            Ok(Criterion {
                criterion_id: format!("pref_{}", i + 1),
                kind: CriterionKind::Personalization,
                slot_id: Some(PREF_SLOT.into()),
                predicate: parse(&pred, "judged")?,
                rubric: format!("{whole} This line: {what}."),
                free_text,
            })
        })
        .collect()
}

/// How long a scheduled record lasts when the preference bounds nothing (`{pref_minutes}`).
const USUAL_MINUTES: u16 = 30;

/// `{pref_start}` / `{pref_minutes}`: when a reference agent schedules the record so that the
/// preference's windows and minute bounds hold ([`prefs::slot`]); a string that is only
/// `{pref_minutes}` becomes a number (a duration field is a whole number).
fn fill_slot(v: &Value, req: &Requirements) -> Value {
    let at = prefs::slot(req, USUAL_MINUTES);
    map_strings(v, &|s| match s {
        "{pref_minutes}" => Value::from(at.minutes),
        s => Value::String(s.replace("{pref_start}", &prefs::hhmm(at.start))),
    })
}

/// The preference as a reference agent writes it (`{pref}` in solutions): the first
/// alternative of each wanted term, `no …` for each avoided one, a time that satisfies each
/// window.
fn render(req: &Requirements) -> String {
    let mut parts: Vec<String> = req
        .want
        .iter()
        .filter_map(|g| g.first().map(|t| t.text.clone()))
        .collect();
    parts.extend(req.avoid.iter().map(|t| format!("no {}", t.text)));
    if !req.windows.is_empty() {
        parts.push(format!(
            "at {}",
            prefs::hhmm(prefs::slot(req, USUAL_MINUTES).start)
        ));
    }
    parts.join("; ")
}

/// What the tasks of one template share.
struct Parts<'a> {
    persona: &'a KnowuProfile,
    slots: Vec<Slot>,
    criteria: Vec<Criterion>,
    /// What the task plants before it starts.
    overrides: Overrides,
    /// The preference value and the judged field (`inserted:app.table.field`).
    preference: Option<(Value, String)>,
}

impl Parts<'_> {
    #[allow(clippy::too_many_arguments)]
    fn bundle(
        &self,
        t: &Template,
        class: &str,
        difficulty: Difficulty,
        instruction: String,
        reference: Vec<Value>,
        defaults: Vec<Value>,
        split: Split,
    ) -> KnowuTask {
        let info = KnowuTaskInfo {
            class_name: class.to_string(),
            split,
            difficulty,
            lambda: None,
            habit_keys: Vec::new(),
            expect: None,
            decision: None,
            reason: String::new(),
            situation: None,
            in_knowu: t.in_knowu(),
            habit: None,
            preference: self.preference.as_ref().map(|p| p.0.clone()),
            judged: self.preference.as_ref().map(|p| p.1.clone()),
        };
        let task = task(
            t,
            self.persona,
            &info,
            instruction,
            self.overrides.clone(),
            reference,
            defaults,
        );
        KnowuTask {
            bundle: TaskBundle {
                task,
                slots: self.slots.clone(),
                criteria: self.criteria.clone(),
            },
            info,
        }
    }

    /// The template's tasks by its split: a general task alone, or the personalized task
    /// (defaults: `plain`, required) and its general twin when it has one.
    fn tasks(
        &self,
        t: &Template,
        fill: &dyn Fn(&str) -> String,
        instruction: &str,
        reference: Vec<Value>,
        plain: Option<Vec<Value>>,
    ) -> Result<Vec<KnowuTask>, String> {
        let (id, difficulty) = (&t.id, t.difficulty);
        if t.split == Split::General {
            let general = fill(instruction);
            let task = self.bundle(
                t,
                id,
                difficulty,
                general,
                reference.clone(),
                reference,
                Split::General,
            );
            return Ok(vec![task]);
        }
        let defaults = plain.ok_or_else(|| {
            format!("template `{}`: a personalized template needs `plain:` (what a non-personalizing agent does)", t.id)
        })?;
        let mut out = vec![self.bundle(
            t,
            id,
            difficulty,
            fill(instruction),
            reference.clone(),
            defaults,
            Split::Personalized,
        )];
        if let Some(twin) = &t.twin {
            out.push(self.bundle(
                t,
                &twin.id,
                twin.difficulty,
                fill(&twin.instruction),
                reference.clone(),
                reference,
                Split::General,
            ));
        }
        Ok(out)
    }
}

/// One proactive task: the habit decides what the persona wants.
fn proactive(
    t: &Template,
    p: &KnowuProfile,
    claimed: &BTreeSet<String>,
    taken: &mut BTreeSet<String>,
) -> Result<KnowuTask, String> {
    let found = matching::habit(p, t.decisive_keys(), &t.habit_means, claimed, taken);
    if let Some((key, _, matching::HabitMatch::Meaning)) = &found {
        taken.insert(key.clone());
    }
    let habit = found.as_ref().map(|(_, h, _)| *h);
    let expect = match (habit.is_some(), t.consent_required) {
        (true, _) => Expect::Act,
        (false, true) => Expect::Stop,
        (false, false) => Expect::Silent,
    };
    let reason = habit
        .and_then(|h| h.get("description"))
        .map(text)
        .unwrap_or_else(|| "That's not something I do; please leave it.".into());
    let spec = t.situation.as_ref().ok_or_else(|| {
        format!(
            "template `{}`: a proactive template needs `situation:`",
            t.id
        )
    })?;
    // `{habit:path|default}`: the habit's own value (KnowU's tasks read theirs: the scam
    // sender, the report's recipient), or the default for a persona without it; `{date}`: the
    // situation's day.
    let named = |s: &str| fill_habit(&s.replace("{name}", &p.display_name), habit);
    let clock = situation_clock(t, spec, habit, &named)?;
    let date = clock
        .as_deref()
        .and_then(|c| c.get(..10))
        .unwrap_or_default();
    let fill = |s: &str| named(&s.replace("{date}", date));
    let act = fill_all(&t.solution, &fill);
    let notification = fill(&spec.notification);
    let overrides = Overrides {
        app_data: filled(t, "situation.app_data", &spec.app_data, &fill)?,
        ..Overrides::default()
    };
    let reference = proactive_reference(t, expect, &notification, &act, &fill);
    let criterion = proactive_criterion(expect, effect(t, &fill)?, &reason)?;
    let instruction = proactive_instruction(clock.as_deref(), &notification, p);
    let situation = Situation {
        clock,
        notification,
    };
    let info = proactive_info(t, &found, expect, reason, situation);
    Ok(KnowuTask {
        bundle: TaskBundle {
            task: task(t, p, &info, instruction, overrides, reference, act),
            slots: Vec::new(),
            criteria: vec![criterion],
        },
        info,
    })
}

/// What a reference agent does: act (asking first when consent is required), ask and stop
/// after the reject, or nothing.
fn proactive_reference(
    t: &Template,
    expect: Expect,
    notification: &str,
    act: &[Value],
    fill: &dyn Fn(&str) -> String,
) -> Vec<Value> {
    let question = t
        .question
        .as_deref()
        .map(fill)
        .unwrap_or_else(|| format!("{notification} Shall I take care of it?"));
    let ask = json!({ "action": "ask_user", "text": question });
    match expect {
        Expect::Act if t.consent_required => std::iter::once(ask).chain(act.to_vec()).collect(),
        Expect::Act => act.to_vec(),
        Expect::Stop => vec![ask],
        Expect::Silent => Vec::new(),
    }
}

/// The proactive task's one criterion: the effect done when the habit says act, else the
/// phone left unchanged.
fn proactive_criterion(
    expect: Expect,
    effect: Predicate,
    reason: &str,
) -> Result<Criterion, String> {
    Ok(match expect {
        Expect::Act => Criterion {
            criterion_id: "act".into(),
            kind: CriterionKind::Action,
            slot_id: None,
            predicate: effect,
            rubric: format!("The agent acted on the user's habit: {reason}"),
            free_text: false,
        },
        _ => Criterion {
            criterion_id: "leave_alone".into(),
            kind: CriterionKind::Action,
            slot_id: None,
            predicate: Predicate::parse(&json!({ "not": effect.to_json() })).map_err(|e| e.to_string())?,
            rubric: "The user has no such habit: the phone is left unchanged (asking is fine; after a reject nothing may change).".into(),
            free_text: false,
        },
    })
}

/// What the agent is told: no request, the time, the notification, the choice it has.
fn proactive_instruction(clock: Option<&str>, notification: &str, p: &KnowuProfile) -> String {
    let when = match clock {
        Some(c) => format!("It is {}. ", c.replace('T', " ")),
        None => String::new(),
    };
    format!(
        "(No request from the user.) {when}The phone shows: {} Decide whether {} would want you to do something about it: act, ask for consent with ask_user, or leave it and finish.",
        notification, p.display_name
    )
}

/// The proactive task's KnowU information: what it expects, the user's decision and reason,
/// the habit found.
fn proactive_info(
    t: &Template,
    found: &Option<(String, &Map<String, Value>, matching::HabitMatch)>,
    expect: Expect,
    reason: String,
    situation: Situation,
) -> KnowuTaskInfo {
    // KnowU's bucket keys, plus the key a meaning match found (so the bucket agrees with what
    // the task expects for a persona whose habit sits under another key).
    let mut habit_keys = t.habit_keys.clone();
    if let Some((key, _, matching::HabitMatch::Meaning)) = found {
        habit_keys.push(key.clone());
    }
    KnowuTaskInfo {
        class_name: t.id.clone(),
        split: Split::Proactive,
        difficulty: t.difficulty,
        lambda: None,
        habit_keys,
        expect: Some(expect),
        decision: Some(if found.is_some() {
            Decision::Accept
        } else {
            Decision::Reject
        }),
        reason,
        situation: Some(situation),
        in_knowu: t.in_knowu(),
        habit: found.as_ref().map(|(k, _, how)| HabitFound {
            key: k.clone(),
            how: *how,
        }),
        preference: None,
        judged: None,
    }
}

/// The situation's clock: the template's (habit values filled in), moved to the habit's
/// trigger day and time when the template says `clock_from_habit` (KnowU's
/// `resolve_routine_datetime`).
fn situation_clock(
    t: &Template,
    spec: &super::template::SituationSpec,
    habit: Option<&Map<String, Value>>,
    fill: &dyn Fn(&str) -> String,
) -> Result<Option<String>, String> {
    let Some(text) = spec.clock.as_deref().map(fill) else {
        return Ok(None);
    };
    let base = DateTime::parse(&text).ok_or_else(|| {
        format!(
            "template `{}`: situation.clock `{text}` is not YYYY-MM-DDTHH:MM",
            t.id
        )
    })?;
    let at = if spec.clock_from_habit {
        let trigger = habit.and_then(|h| h.get("trigger"));
        let kept = trigger.filter(|_| !spec.clock_keys.is_empty()).map(|t| {
            let keys = &spec.clock_keys;
            let m: Map<String, Value> = t
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| keys.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Object(m)
        });
        routine_clock(base, kept.as_ref().or(trigger))
    } else {
        base
    };
    Ok(Some(format!("{}T{}", at.date, at.time.hhmm())))
}

fn task(
    t: &Template,
    p: &KnowuProfile,
    info: &KnowuTaskInfo,
    instruction: String,
    overrides: Overrides,
    reference: Vec<Value>,
    defaults: Vec<Value>,
) -> Task {
    Task {
        task_id: format!("{}@{}", info.class_name, p.id),
        persona: p.id.clone(),
        template: t.id.clone(),
        instruction,
        apps: apps_of(&t.solution),
        category: String::new(),
        task_type: TaskType::Operation,
        perturbation: Perturbation::None,
        cross_app: false,
        domain: String::new(),
        offered_apps: Vec::new(),
        overrides,
        hidden_context: Default::default(),
        reference_solution: reference,
        defaults_solution: defaults,
        // The judge's hybrid S = λ·S_rule + (1−λ)·S_llm uses the template's λ too.
        lambda: info.lambda,
    }
}

/// Apps the solution calls, in first-use order.
fn apps_of(solution: &[Value]) -> Vec<String> {
    let mut apps: Vec<String> = Vec::new();
    for step in solution {
        if let Some(app) = step["tool"].as_str().and_then(|t| t.split('.').next()) {
            if !apps.iter().any(|a| a == app) {
                apps.push(app.to_string());
            }
        }
    }
    apps
}

/// Checks what generation produced against the catalog: actions parse, predicates name real
/// tables and fields; fills in the category.
fn check_bundle(b: &TaskBundle, catalog: &Catalog) -> Result<(), String> {
    for step in b
        .task
        .reference_solution
        .iter()
        .chain(&b.task.defaults_solution)
    {
        serde_json::from_value::<Action>(step.clone())
            .map_err(|e| format!("solution step {step} is not a phone action: {e}"))?;
    }
    for app in &b.task.apps {
        if catalog.app(app).is_none() {
            return Err(format!("the solution calls unknown app `{app}`"));
        }
    }
    for c in &b.criteria {
        check_predicate(&c.predicate, catalog, &b.slots)
            .map_err(|e| format!("criterion `{}`: {e}", c.criterion_id))?;
    }
    Ok(())
}

fn parse(v: &Value, what: &str) -> Result<Predicate, String> {
    Predicate::parse(v).map_err(|e| format!("{what}: {e}"))
}

/// Expands every `{ any_each: { items, words?, default?, each } }` of a filled effect into
/// `{ any: [each, one per item] }` with `{item}` replaced: the habit's own list of accepted
/// replies (`items` is a `;`-separated text, as a filled list reads), or with `words: N` KnowU's
/// `_extract_keywords` of a text (its lower-case `[a-z0-9']+` tokens of three or more
/// characters, each once, the first N); `default` when there are none.
fn expand_each(v: &Value) -> Result<Value, String> {
    Ok(match v {
        Value::Array(a) => Value::Array(a.iter().map(expand_each).collect::<Result<_, _>>()?),
        Value::Object(m) if m.len() == 1 && m.contains_key("any_each") => {
            let spec = &m["any_each"];
            let text = spec["items"].as_str().unwrap_or_default().to_lowercase();
            let mut items: Vec<String> = match spec.get("words").and_then(Value::as_u64) {
                Some(n) => keywords(&text, n as usize),
                None => text
                    .split(';')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            };
            if items.is_empty() {
                items = spec["default"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(text_of)
                    .collect();
            }
            if items.is_empty() {
                return Err("`any_each` has no items and no `default`".into());
            }
            let each = spec
                .get("each")
                .ok_or("`any_each` needs `each:` (a predicate with {item})")?;
            let one = |item: &str| fill_json(each, &|s: &str| s.replace("{item}", item));
            json!({ "any": items.iter().map(|i| one(i)).collect::<Vec<_>>() })
        }
        Value::Object(m) if m.len() == 1 && m.contains_key("any_minute") => {
            any_minute(&m["any_minute"])?
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), expand_each(x)?)))
                .collect::<Result<Map<String, Value>, String>>()?,
        ),
        other => other.clone(),
    })
}

/// `{ any_minute: { from, to, each } }`: `{ any: [each, one per minute] }` with `{minute}`
/// (`HH:MM`) each minute from `from` to `to` inclusive (across midnight when `to` is earlier):
/// a habit's time window checked as a range, as KnowU's routine tasks check the time of the
/// action (`send_weekly_report.py`: the email's time inside the trigger's `time_range`).
fn any_minute(spec: &Value) -> Result<Value, String> {
    let at = |k: &str| {
        spec[k]
            .as_str()
            .and_then(crate::world::clock::Time::parse)
            .map(|t| t.seconds() / 60)
            .ok_or_else(|| format!("`any_minute.{k}` is {}, not HH:MM", spec[k]))
    };
    let (from, to) = (at("from")?, at("to")?);
    let each = spec
        .get("each")
        .ok_or("`any_minute` needs `each:` (a predicate with {minute})")?;
    let span = (to + 24 * 60 - from) % (24 * 60);
    let one = |m: u32| {
        let m = (from + m) % (24 * 60);
        let hhmm = format!("{:02}:{:02}", m / 60, m % 60);
        expand_each(&fill_json(each, &|s: &str| s.replace("{minute}", &hhmm)))
    };
    let all = (0..=span).map(one).collect::<Result<Vec<_>, _>>()?;
    Ok(json!({ "any": all }))
}

fn text_of(v: &Value) -> String {
    text(v).to_lowercase()
}

/// KnowU's `ClockOutRoutineTask._extract_keywords`: the distinct `[a-z0-9']+` tokens of
/// `text` (lower case) with three or more characters, the first `n`.
fn keywords(text: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in text.split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '\''))
    {
        if token.len() >= 3 && !out.iter().any(|t| t == token) {
            out.push(token.to_string());
        }
    }
    out.truncate(n);
    out
}

fn fill_all(steps: &[Value], fill: &dyn Fn(&str) -> String) -> Vec<Value> {
    steps.iter().map(|s| fill_json(s, fill)).collect()
}

/// Fills `{value}` / `{name}` in every string of a JSON value.
fn fill_json(v: &Value, fill: &dyn Fn(&str) -> String) -> Value {
    map_strings(v, &|s| Value::String(fill(s)))
}

/// `v` with every string (in arrays and objects, at any depth) replaced by `f` of it.
fn map_strings(v: &Value, f: &dyn Fn(&str) -> Value) -> Value {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => Value::Array(a.iter().map(|x| map_strings(x, f)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), map_strings(x, f)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

/// Fills the category from the first app (the catalog knows it).
fn fill_category(b: &mut TaskBundle, catalog: &Catalog) {
    if let Some(app) = b.task.apps.first().and_then(|a| catalog.app(a)) {
        b.task.category = app.category.clone();
    }
}

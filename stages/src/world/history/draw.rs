//! One event drawn from one template: the value it carries, its records, time, phrasing and
//! construction, then the checks that keep it true to the phone.

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;
use serde_json::Value;

use super::ask::{Ask, Draft, Role, ATTEMPTS, COUNTER_FRAMED, SIGNAL_FRAMED, TWIN_OWN_SHARE};
use super::constraints::check;
use super::context::Ctx;
use super::plan::{random_day, random_time};
use super::situate::{shown, situate, towns_of, wrapped};
use crate::world::app::Record;
use crate::world::clock::{Date, DateTime};
use crate::world::error::{Result, WorldError};
use crate::world::persona::{
    choose, render, render_at, Binding, Construction, Days, EventTemplate, Fill, ProfileEntry, Var,
};
use crate::world::rules::{occasion, one_off_key, owned, purposes, Act};
use crate::world::template::Template;
use crate::world::types::{value_matches, TableId};

/// The construction form an event is wrapped in, if any: a noise form for a twin, a signal form
/// for [`SIGNAL_FRAMED`] of her own events from a template with twins, a counter form for
/// [`COUNTER_FRAMED`] of her exceptions, none otherwise.
pub(super) fn frame<'a>(
    ctx: &Ctx<'a>,
    ask: &Ask<'_>,
    rng: &mut Xoshiro256PlusPlus,
) -> Option<&'a Template<Var>> {
    let forms = |c: &'a Construction| match ask.role {
        Role::Decoy => &c.noise,
        Role::Counter => &c.counter,
        _ => &c.signal,
    };
    let (wrap, fit): (bool, Vec<usize>) = match ask.role {
        Role::Decoy | Role::Counter if ask.twin => (true, ask.t.twins.clone()),
        Role::Decoy => (false, Vec::new()),
        Role::Support => (
            !ask.t.twins.is_empty() && rng.random_bool(SIGNAL_FRAMED),
            ask.t.twins.clone(),
        ),
        Role::Counter => (
            rng.random_bool(COUNTER_FRAMED),
            (0..ctx.constructions.len()).collect(),
        ),
        Role::Noise => (false, Vec::new()),
    };
    if !wrap {
        return None;
    }
    let fitting: Vec<&Construction> = fit
        .iter()
        .map(|&i| &ctx.constructions[i])
        .filter(|c| !forms(c).is_empty())
        .collect();
    if fitting.is_empty() {
        return None;
    }
    let f = forms(fitting[rng.random_range(0..fitting.len())]);
    Some(&f[rng.random_range(0..f.len())])
}

/// The other value a noise twin of `e` carries in `window`: one of the entry's `others` that is
/// not the value in effect (it may be a shift's other side: someone else still on the cuisine
/// she left).
pub(super) fn other_value<'e>(
    e: &'e ProfileEntry,
    window: (Date, Date),
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(&'e Value, &'e str)> {
    let own = e.value_on(window.0);
    let fit: Vec<_> = e
        .others
        .iter()
        .filter(|o| !value_matches(&o.value, own))
        .collect();
    if fit.is_empty() {
        return Err(WorldError::Synthesis(format!(
            "entry `{}`: no other value for a noise twin in {} … {}",
            e.id, window.0, window.1
        )));
    }
    let o = fit[rng.random_range(0..fit.len())];
    Ok((&o.value, o.mention.as_str()))
}

/// Draws one event: a time in the window, records that fit the profile (for the user's own
/// evidence) and the time (for dated purchases, re-timed into their listing window), a phrasing,
/// and the guards of its role. Then the rules of a phone that did what its history says
/// ([`super::super::rules`]): what the text says she did with a dated record (bought it, flew or
/// saw it) falls in that act's days, a purchase is one the app's orders hold and is told once, and
/// a one-off act (a rating, a list started) is told once. `Ok(None)` when every attempt broke one
/// of those rules: the template has nothing new to say (its records are all bought, its ratings
/// given), and the caller draws from another.
pub(super) fn draw(
    ctx: &Ctx<'_>,
    ask: &Ask<'_>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Option<Draft>> {
    let mut last = None;
    let mut spent = false;
    for _ in 0..ATTEMPTS {
        match attempt(ctx, ask, rng)? {
            Attempt::Drawn(d) => return Ok(Some(d)),
            Attempt::Retry => {}
            Attempt::Spent => spent = true,
            Attempt::Failed(e) => last = Some(e),
        }
    }
    if let Some(e) = last {
        return Err(e);
    }
    if spent {
        return Ok(None);
    }
    let who = ask
        .entry
        .map_or("noise".to_string(), |e| format!("entry `{}`", e.id));
    Err(WorldError::Synthesis(format!(
        "{who}: no records fit the profile and the dates for \"{}\" in {} … {} ({ATTEMPTS} draws)",
        ask.t.app, ask.window.0, ask.window.1
    )))
}

/// What one attempt at an event came to.
enum Attempt {
    /// An event that keeps every rule.
    Drawn(Draft),
    /// A rule broken by this draw's choices: draw again.
    Retry,
    /// Nothing new to say with these records (bought, told, recorded already).
    Spent,
    /// A guard of the role failed; reported if every attempt fails.
    Failed(WorldError),
}

/// The choices of one attempt before its text is checked: the value carried, the records, the
/// vocabulary picks, the construction, the phrasing (with its circumstance) and the time.
struct Telling<'a> {
    value: &'a Value,
    mention: &'a str,
    carry_own: bool,
    chosen: Vec<&'a Record>,
    picks: Vec<usize>,
    wrap: Option<&'a Template<Var>>,
    phrasing: std::borrow::Cow<'a, Template<Var>>,
    one_with: bool,
    time: DateTime,
    /// The days the template and the circumstance allow.
    days: Days,
}

impl Telling<'_> {
    /// The text and location the choices give at `when`.
    fn render(&self, ctx: &Ctx<'_>, t: &EventTemplate, when: DateTime) -> (String, String) {
        let fill = Fill {
            chosen: &self.chosen,
            value: self.value,
            mention: self.mention,
            when,
            vocab: ctx.vocab,
            picks: &self.picks,
            event: "",
            tail: "",
        };
        let text = match self.wrap {
            None => render(ctx.cat, &self.phrasing, &t.binds, &fill),
            Some(form) => wrapped(ctx.cat, form, &self.phrasing, &t.binds, &fill),
        };
        (text, render_at(ctx.cat, t, &fill))
    }
}

/// One attempt: the choices, the days the acts told allow, the checks, and what the event records.
fn attempt(ctx: &Ctx<'_>, ask: &Ask<'_>, rng: &mut Xoshiro256PlusPlus) -> Result<Attempt> {
    let t = ask.t;
    let Some(mut tl) = tell(ctx, ask, rng)? else {
        return Ok(Attempt::Retry);
    };
    let (mut text, mut location) = tl.render(ctx, t, tl.time);
    // The days the acts the text tells allow; the listing window for plain mentions.
    let acts = ctx.rules.acts(ctx.cat, &t.binds, &tl.chosen, &text);
    let mut days = ask.window;
    for a in &acts {
        days = (days.0.max(a.window.0), days.1.min(a.window.1));
    }
    let purchases: Vec<(TableId, &str)> = acts
        .iter()
        .filter(|a| a.act == Act::Purchase)
        .map(|a| (a.table, a.id))
        .collect();
    // A flight is flown once, a show seen once: one telling of the day, not one per entry it
    // evidences.
    let completions: Vec<(TableId, &str)> = acts
        .iter()
        .filter(|a| a.act == Act::Completed)
        .map(|a| (a.table, a.id))
        .collect();
    let done_before = completions.iter().any(|(table, id)| {
        ctx.completed
            .borrow()
            .contains(&(*table, (*id).to_string()))
    });
    let bought_before = purchases.iter().any(|(table, id)| {
        !owned(ctx.cat, *table, id)
            || ctx
                .purchased
                .borrow()
                .contains(&(*table, (*id).to_string()))
    });
    if days.0 > days.1 || bought_before || done_before {
        return Ok(Attempt::Spent);
    }
    if tl.time.date < days.0 || tl.time.date > days.1 {
        let Some(day) = random_day(rng, days, tl.days, ctx.holidays) else {
            return Ok(Attempt::Retry);
        };
        tl.time.date = day;
        (text, location) = tl.render(ctx, t, tl.time);
    }
    if !fits(ctx, ask, &tl, &text) {
        return Ok(Attempt::Retry);
    }
    // A phrase drawn from the vocabulary may trip a guard (a companion who is the value a
    // counter-event must not name): draw again, and report the last failure if all do.
    if let Err(e) = check(&ctx.guards, ask, &text, &location, tl.time, tl.carry_own) {
        return Ok(Attempt::Failed(e));
    }
    if !record_once(ctx, t, &tl.chosen, &text) {
        return Ok(Attempt::Spent);
    }
    for (table, id) in purchases {
        ctx.purchased.borrow_mut().insert((table, id.to_string()));
    }
    for (table, id) in completions {
        ctx.completed.borrow_mut().insert((table, id.to_string()));
    }
    let id = ask.entry.map(|e| e.id.clone());
    Ok(Attempt::Drawn(Draft {
        time: tl.time,
        app: t.app.clone(),
        location,
        text,
        supports: id.clone().filter(|_| ask.role == Role::Support),
        counters: id.filter(|_| ask.role == Role::Counter),
        category: match (ask.role, ask.entry) {
            (Role::Support | Role::Counter, Some(e)) => e.dimension.clone(),
            _ => "noise".into(),
        },
    }))
}

/// The choices of one attempt, in the order the seeded stream makes them: the value carried,
/// the time, the records, the vocabulary picks, the construction, the phrasing and its
/// circumstance. `None` when no records fit.
fn tell<'a>(
    ctx: &Ctx<'a>,
    ask: &Ask<'a>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Option<Telling<'a>>> {
    let t = ask.t;
    let own = matches!(ask.role, Role::Support | Role::Counter);
    let carry_own = ask.role == Role::Decoy && ask.twin && rng.random_bool(TWIN_OWN_SHARE);
    let (value, mention) = carried(ask, carry_own, rng)?;
    let Some(time) = random_time(rng, ask.window, t.hours, t.days, ctx.holidays) else {
        return Ok(None);
    };
    let day = time.date;
    let admit = |b: &Binding, r: &Record| {
        (!own || ctx.rules.fits_profile(b, r, day))
            && ctx.rules.days_for(ctx.cat, b, r, ask.window).is_some()
    };
    let Ok(chosen) = choose(ctx.cat, &t.binds, value, &admit, &mut |n| {
        rng.random_range(0..n)
    }) else {
        return Ok(None);
    };
    let picks: Vec<usize> = ctx
        .vocab
        .iter()
        .map(|l| rng.random_range(0..l.len().max(1)))
        .collect();
    let wrap = frame(ctx, ask, rng);
    let phrasing = &t.texts[rng.random_range(0..t.texts.len())];
    let situated = situate(ctx, ask, phrasing, wrap, &chosen, time.date, rng);
    let one_with = situated.as_ref().is_some_and(|s| s.with);
    let days = t.days.and(situated.as_ref().map_or(Days::ANY, |s| s.days));
    let phrasing = match situated {
        Some(s) => std::borrow::Cow::Owned(s.phrasing),
        None => std::borrow::Cow::Borrowed(phrasing),
    };
    Ok(Some(Telling {
        value,
        mention,
        carry_own,
        chosen,
        picks,
        wrap,
        phrasing,
        one_with,
        time,
        days,
    }))
}

/// The value an event carries: hers for her own events and for a twin carrying her own, another
/// for other twins, a shift's other side for decoys, none for plain noise.
fn carried<'e>(
    ask: &Ask<'e>,
    carry_own: bool,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(&'e Value, &'e str)> {
    Ok(match (ask.entry, ask.role) {
        (Some(e), _) if ask.twin && carry_own => {
            (e.value_on(ask.window.0), e.mention_on(ask.window.0))
        }
        (Some(e), _) if ask.twin => other_value(e, ask.window, rng)?,
        (Some(e), Role::Decoy) => decoy_value(e, ask.window.0),
        (Some(e), _) => (e.value_on(ask.window.0), e.mention_on(ask.window.0)),
        (None, _) => (&Value::Null, ""),
    })
}

/// Whether a rendered text keeps the rules a redraw can mend: her own choices fit the profile
/// on the day and name nothing she avoids, one "with", one town, one purpose, one mention of
/// each person, and words that agree with the clock.
fn fits(ctx: &Ctx<'_>, ask: &Ask<'_>, tl: &Telling<'_>, text: &str) -> bool {
    let own = matches!(ask.role, Role::Support | Role::Counter);
    let day = tl.time.date;
    // Work on a workday, "a run on Sunday morning" on a Sunday.
    if !tl.days.allows(day, ctx.holidays) {
        return false;
    }
    if own
        && !ask
            .t
            .binds
            .iter()
            .zip(&tl.chosen)
            .all(|(b, r)| ctx.rules.fits_profile(b, r, day))
    {
        return false;
    }
    let entry_id = ask.entry.map_or("", |e| e.id.as_str());
    if own && !ctx.rules.text_fits(&text.to_lowercase(), day, entry_id) {
        return false;
    }
    // One "with" once: a record or value may say "with" too ("call with Mom").
    if tl.one_with && text.split(' ').filter(|w| *w == "with").count() > 1 {
        return false;
    }
    // One town and one purpose: no "Landed in PDX … to visit Aisha in Seattle", no "… for a
    // maybe-someday trip for Dev's conference talk" (the audit's `place_conflict` and
    // `purpose_twice` rules).
    if towns_of(ctx, text, &shown(&tl.phrasing, &tl.chosen)).len() > 1 || purposes(text) > 1 {
        return false;
    }
    // One person once: "Marco booked … after Marco's party" reads as two people.
    if ctx
        .people
        .iter()
        .any(|p| text.matches(p.as_str()).count() > 1)
    {
        return false;
    }
    // The clock and the words agree: no "after a long day" at 09:00.
    super::super::rules::fits_clock(text, tl.time.time.seconds() / 3600)
}

/// Records the one-off occasion and the one-off act `text` tells, per app; `false` (and nothing
/// recorded) when either was told already.
fn record_once(ctx: &Ctx<'_>, t: &EventTemplate, chosen: &[&Record], text: &str) -> bool {
    let lower = text.to_lowercase();
    let occasion = occasion(&lower);
    if let Some(o) = &occasion {
        if ctx.occasions.borrow().contains(&(t.app.clone(), o.clone())) {
            return false;
        }
    }
    let core = super::super::core_text::core_text(text, &ctx.decorations);
    let labels: Vec<String> = t
        .binds
        .iter()
        .zip(chosen)
        .map(|(b, r)| ctx.cat.table(b.table).label(r).to_lowercase())
        .collect();
    let one_off = one_off_key(&core, &lower, &labels);
    if one_off
        .as_ref()
        .is_some_and(|k| ctx.one_offs.borrow().contains(&(t.app.clone(), k.clone())))
    {
        return false;
    }
    if let Some(o) = occasion {
        ctx.occasions.borrow_mut().insert((t.app.clone(), o));
    }
    if let Some(k) = one_off {
        ctx.one_offs.borrow_mut().insert((t.app.clone(), k));
    }
    true
}

/// The value a decoy of `e` carries on `day`: for a shifted entry the other side's (someone
/// else still booking the cuisine she left, or already on the one she has not adopted yet), so
/// a reader counting mentions is misled and a careful one is not; otherwise the value in effect.
pub(super) fn decoy_value(e: &ProfileEntry, day: Date) -> (&Value, &str) {
    match &e.shift {
        Some(s) if day < s.changed => (&e.value, e.mention.as_str()),
        Some(s) => (&s.from, s.from_mention.as_str()),
        None => (&e.value, e.mention.as_str()),
    }
}

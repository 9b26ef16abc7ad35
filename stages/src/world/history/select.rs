//! Which template each event is drawn from: rotations over an entry's evidence and counters,
//! and the noise pool (twins, hand-written decoys, plain noise).

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::RngExt;

use super::ask::{Ask, Draft, Role, COUNTER_TWIN_SHARE, DECOY_SHARE, TWIN_SHARE};
use super::context::Ctx;
use super::draw::draw;
use super::plan::{counter_count, for_period, per_window, side_window, windows};
use crate::world::clock::Date;
use crate::world::error::{Result, WorldError};
use crate::world::persona::{EventTemplate, Period, Persona, ProfileEntry, Source};

/// Rotates through templates from a random offset, skipping `once` templates already used and
/// templates with nothing new to say ([`Rotation::spend`]).
pub(super) struct Rotation<'a> {
    templates: Vec<&'a EventTemplate>,
    next: usize,
    used: Vec<bool>,
    spent: Vec<bool>,
}

impl<'a> Rotation<'a> {
    pub(super) fn new(templates: Vec<&'a EventTemplate>, rng: &mut Xoshiro256PlusPlus) -> Self {
        let next = if templates.is_empty() {
            0
        } else {
            rng.random_range(0..templates.len())
        };
        let used = vec![false; templates.len()];
        let spent = vec![false; templates.len()];
        Self {
            templates,
            next,
            used,
            spent,
        }
    }

    pub(super) fn take(&mut self) -> Option<&'a EventTemplate> {
        for _ in 0..self.templates.len() {
            let i = self.next % self.templates.len();
            self.next += 1;
            if (self.templates[i].once && self.used[i]) || self.spent[i] {
                continue;
            }
            self.used[i] = true;
            return Some(self.templates[i]);
        }
        None
    }

    /// Marks a template as having nothing new to say (every record it could buy is bought).
    pub(super) fn spend(&mut self, t: &EventTemplate) {
        if let Some(i) = self.templates.iter().position(|x| std::ptr::eq(*x, t)) {
            self.spent[i] = true;
        }
    }
}

/// Draws one event from the rotation: the next template, or the one after it when a template
/// has nothing new to say.
pub(super) fn draw_rotating<'a>(
    ctx: &Ctx<'_>,
    rot: &mut Rotation<'a>,
    ask: impl Fn(&'a EventTemplate) -> Ask<'a>,
    rng: &mut Xoshiro256PlusPlus,
    what: &str,
) -> Result<Draft> {
    for _ in 0..=rot.templates.len() {
        let Some(t) = rot.take() else { break };
        match draw(ctx, &ask(t), rng)? {
            Some(d) => return Ok(d),
            None => rot.spend(t),
        }
    }
    Err(WorldError::Synthesis(format!(
        "{what}: every template is spent (its records bought, its one-off acts told); add templates or lower the event count"
    )))
}

pub(super) fn entry_events<'a>(
    ctx: &Ctx<'_>,
    persona: &Persona,
    e: &'a ProfileEntry,
    count: usize,
    min: usize,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let n_counter = counter_count(e, count);
    let supporting = count - n_counter;
    let wins = windows(persona, e);
    let per_side = per_window(persona, e, supporting, min);
    for (&(period, from, to), &n) in wins.iter().zip(&per_side) {
        let mut rot = Rotation::new(for_period(&e.evidence, period), rng);
        for _ in 0..n {
            let ask = |t: &'a EventTemplate| Ask {
                t,
                entry: Some(e),
                role: Role::Support,
                window: (from, to),
                twin: false,
            };
            let what = format!("entry `{}` (evidence)", e.id);
            out.push(draw_rotating(ctx, &mut rot, ask, rng, &what)?);
        }
    }
    counter_events(ctx, e, &wins, n_counter, rng, out)
}

/// An entry's designed exceptions: some of her usual events carrying another value, the rest
/// from its counter templates in rotation.
fn counter_events<'a>(
    ctx: &Ctx<'_>,
    e: &'a ProfileEntry,
    wins: &[(Option<Period>, Date, Date)],
    n_counter: usize,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let mut rot = Rotation::new(e.counter.iter().collect(), rng);
    let exceptions = exception_templates(ctx, e);
    for _ in 0..n_counter {
        // An exception of her own may be one of her usual events with another value ("This
        // time, booked Seoul Table (Korean …)"): the words of noise twins occur in signal too.
        let twin = !exceptions.is_empty() && rng.random_bool(COUNTER_TWIN_SHARE);
        if twin {
            let t = exceptions[rng.random_range(0..exceptions.len())];
            let window = side_window(wins, t.period, rng);
            let ask = Ask {
                t,
                entry: Some(e),
                role: Role::Counter,
                window,
                twin,
            };
            if let Some(d) = draw(ctx, &ask, rng)? {
                out.push(d);
                continue;
            }
        }
        let windows: Vec<(Date, Date)> = e
            .counter
            .iter()
            .map(|t| side_window(wins, t.period, rng))
            .collect();
        let ask = |t: &'a EventTemplate| {
            let i = e
                .counter
                .iter()
                .position(|x| std::ptr::eq(x, t))
                .unwrap_or(0);
            Ask {
                t,
                entry: Some(e),
                role: Role::Counter,
                window: windows[i],
                twin: false,
            }
        };
        let what = format!("entry `{}` (counter-evidence)", e.id);
        out.push(draw_rotating(ctx, &mut rot, ask, rng, &what)?);
    }
    Ok(())
}

/// Evidence templates of `e` that can be a designed exception: a construction they list has
/// `counter` forms, and the entry has other values to carry.
pub(super) fn exception_templates<'a>(
    ctx: &Ctx<'_>,
    e: &'a ProfileEntry,
) -> Vec<&'a EventTemplate> {
    if e.others.is_empty() {
        return Vec::new();
    }
    e.evidence
        .iter()
        .filter(|t| {
            t.twins
                .iter()
                .any(|&c| !ctx.constructions[c].counter.is_empty())
        })
        .collect()
}

/// Noise: the noise twins of evidence templates with `twins` ([`TWIN_SHARE`]), the entries'
/// hand-written decoys (the rest of [`DECOY_SHARE`]) and plain noise templates ([`NoisePool`]).
pub(super) fn noise_events(
    ctx: &Ctx<'_>,
    persona: &Persona,
    signal: &[(&str, usize)],
    n: usize,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let mut pool = NoisePool::new(ctx, persona, signal);
    let mut drawn = 0;
    while drawn < n {
        let Some(i) = pool.pick(rng) else {
            break;
        };
        let (t, entry, twin) = pool.templates[i];
        let window = match entry {
            Some(e) => side_window(&windows(persona, e), t.period, rng),
            None => (persona.start, persona.end),
        };
        let role = if entry.is_some() {
            Role::Decoy
        } else {
            Role::Noise
        };
        let ask = Ask {
            t,
            entry,
            role,
            window,
            twin,
        };
        match draw(ctx, &ask, rng)? {
            Some(d) => {
                out.push(d);
                drawn += 1;
            }
            // Nothing new to say: never drawn again, like a used `once` template.
            None => pool.spend(i),
        }
    }
    Ok(())
}

/// A noise template: the template, the entry it dresses as (none for plain noise), and whether
/// it is a noise twin of that entry's evidence.
pub(super) type NoiseTemplate<'a> = (&'a EventTemplate, Option<&'a ProfileEntry>, bool);

/// Every noise template in three segments: `[0, plain)` plain noise, `[plain, hand)` hand-written
/// decoys, `[hand, len)` noise twins. Decoys and plain noise are dealt in shuffled rounds
/// ([`Deck`]); a twin is drawn in proportion to the signal events its template stands for, so
/// twins spread over templates as her own events do and the words of no template lean to noise.
pub(super) struct NoisePool<'a> {
    templates: Vec<NoiseTemplate<'a>>,
    plain: usize,
    hand: usize,
    /// Cumulative weights of the twins, in order from `hand`.
    twin_weights: Vec<f64>,
    used: Vec<bool>,
    spent: Vec<bool>,
    decks: [Deck; 2],
}

impl<'a> NoisePool<'a> {
    /// `signal`: her events per entry.
    pub(super) fn new(ctx: &Ctx<'_>, persona: &'a Persona, signal: &[(&str, usize)]) -> Self {
        let mut templates: Vec<NoiseTemplate<'a>> =
            persona.noise.iter().map(|t| (t, None, false)).collect();
        let inferable = || {
            persona
                .profile
                .iter()
                .filter(|e| e.source == Source::Inferable)
        };
        for e in inferable() {
            templates.extend(e.decoys.iter().map(|t| (t, Some(e), false)));
        }
        let hand = templates.len();
        let mut twin_weights: Vec<f64> = Vec::new();
        let mut total = 0.0;
        for e in inferable() {
            let events = signal.iter().find(|s| s.0 == e.id).map_or(0, |s| s.1);
            let per_template = events as f64 / e.evidence.len().max(1) as f64;
            let twinned = e.evidence.iter().filter(|t| {
                t.twins
                    .iter()
                    .any(|&c| !ctx.constructions[c].noise.is_empty())
            });
            for t in twinned {
                templates.push((t, Some(e), true));
                total += per_template;
                twin_weights.push(total);
            }
        }
        let used = vec![false; templates.len()];
        let spent = vec![false; templates.len()];
        Self {
            templates,
            plain: persona.noise.len(),
            hand,
            twin_weights,
            used,
            spent,
            decks: [Deck::default(), Deck::default()],
        }
    }

    /// The next noise template: TWIN_SHARE of the noise is twins of her evidence, DECOY_SHARE
    /// all dressed as signal, the rest plain phone chatter; an empty segment passes its share on,
    /// and a `once` template already used passes to the next one.
    pub(super) fn pick(&mut self, rng: &mut Xoshiro256PlusPlus) -> Option<usize> {
        let (plain, hand, len) = (self.plain, self.hand, self.templates.len());
        let segments = [(plain, hand), (hand, len), (0, plain)];
        let x = rng.random_range(0.0..1.0);
        let first = if x < TWIN_SHARE {
            1
        } else if x < DECOY_SHARE {
            0
        } else {
            2
        };
        let &(lo, hi) = (0..3)
            .map(|k| &segments[(first + k) % 3])
            .find(|(lo, hi)| lo < hi)?;
        let total = self.twin_weights.last().copied().unwrap_or(0.0);
        let mut i = if lo == hand && total > 0.0 {
            let x = rng.random_range(0.0..total);
            hand + self
                .twin_weights
                .partition_point(|&c| c <= x)
                .min(self.twin_weights.len() - 1)
        } else {
            self.decks[usize::from(lo != plain)].deal(lo..hi, rng)
        };
        let blocked = |j: usize| (self.templates[j].0.once && self.used[j]) || self.spent[j];
        for _ in 0..len {
            if !blocked(i) {
                break;
            }
            i = (i + 1) % len;
        }
        if blocked(i) {
            return None;
        }
        self.used[i] = true;
        Some(i)
    }

    /// Marks template `i` as having nothing new to say: it is never picked again.
    pub(super) fn spend(&mut self, i: usize) {
        self.spent[i] = true;
    }
}

/// Deals template indices of one pool segment in shuffled rounds, each template once per round:
/// hand-written decoys and plain noise repeat as little as the counts allow, so no template's
/// words pile up in the noise.
#[derive(Default)]
pub(super) struct Deck {
    left: Vec<usize>,
}

impl Deck {
    pub(super) fn deal(
        &mut self,
        range: std::ops::Range<usize>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> usize {
        if self.left.is_empty() {
            self.left = range.collect();
            self.left.shuffle(rng);
        }
        self.left.pop().unwrap_or_default()
    }
}

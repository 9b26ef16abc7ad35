//! Where the episodes live. A [`Phone`] borrows the world and carries a non-`Send` user
//! simulator, so each episode gets its own thread that builds its phone and then runs that
//! episode's jobs, one at a time, until the episode is closed or expires. Episodes never wait
//! for one another: a slow `/state` of one episode blocks only that episode, and `/health`
//! reads the shared [`Host`] bookkeeping without touching any episode thread.
//!
//! Every response body is serialized on the episode's thread, so the HTTP runtime only copies
//! bytes. The bookkeeping enforces [`ServeLimits`]: open episodes (in all, and per client),
//! steps and request bytes per episode, and the idle TTL (checked on every request and by a
//! periodic sweep). At a cap, the longest-idle episode past `evict_idle` is closed to make
//! room, so a client that leaks episodes holds at most its quota, and only while it uses them.

use std::collections::{HashMap, VecDeque};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::api::{CreateEpisode, Created};
use super::error::ServeError;
use super::limits::{cap_text, ServeLimits};
use super::user::ScriptedUser;
use crate::world::phone::{Action, ActionSpace, Observation, Phone};
use crate::world::World;

/// A job for one episode's thread; it gets the phone and sends its own answer back.
type Job = Box<dyn for<'w> FnOnce(&mut Phone<'w>) + Send>;

/// How many closed or expired ids are remembered, to tell "expired" from "never existed".
const REMEMBERED: usize = 4096;

/// One open episode, as the bookkeeping sees it.
struct Slot {
    jobs: mpsc::Sender<Job>,
    last_used: Instant,
    steps: u32,
    bytes: usize,
    /// Who created it (see [`ServeLimits::max_episodes_per_client`]).
    client: String,
}

/// Counters reported by `GET /health`.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Counts {
    /// Episodes created since start.
    pub created: u64,
    /// Closed with `DELETE`.
    pub closed: u64,
    /// Closed because they were idle past the TTL.
    pub expired: u64,
    /// Closed while idle to make room for a new episode at a cap.
    pub evicted: u64,
    /// Requests refused by a limit (429 or 413).
    pub refused: u64,
}

#[derive(Default)]
struct Book {
    next: u64,
    /// Episodes being created, by client (counted against the limits before their thread is
    /// up).
    starting: HashMap<String, usize>,
    open: HashMap<String, Slot>,
    gone: VecDeque<(String, &'static str)>,
    counts: Counts,
}

impl Book {
    fn forget(&mut self, id: String, why: &'static str) {
        if self.gone.len() == REMEMBERED {
            self.gone.pop_front();
        }
        self.gone.push_back((id, why));
    }

    fn not_found(&self, id: &str, limits: &ServeLimits) -> ServeError {
        match self.gone.iter().rev().find(|(g, _)| g == id) {
            Some((_, "expired")) => ServeError::Expired {
                id: id.to_string(),
                ttl_secs: limits.episode_ttl.as_secs(),
            },
            Some((_, "evicted")) => ServeError::Evicted {
                id: id.to_string(),
                idle_secs: limits.evict_idle.as_secs(),
            },
            _ => ServeError::NotFound(id.to_string()),
        }
    }

    /// Episodes `client` has open or is starting.
    fn held_by(&self, client: &str) -> usize {
        let open = self.open.values().filter(|s| s.client == client).count();
        open + self.starting.get(client).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.open.len() + self.starting.values().sum::<usize>()
    }

    /// The longest-idle episode (of `client`, or of anyone) idle at least `min_idle`.
    fn longest_idle(
        &self,
        client: Option<&str>,
        min_idle: std::time::Duration,
        now: Instant,
    ) -> Option<String> {
        self.open
            .iter()
            .filter(|(_, s)| client.is_none_or(|c| s.client == c))
            .filter(|(_, s)| now.duration_since(s.last_used) >= min_idle)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(id, _)| id.clone())
    }

    /// Seconds until an episode (of `client`, or of anyone) becomes evictable: what a 429
    /// tells the client to wait (`Retry-After`), at least 1.
    fn retry_after(&self, client: Option<&str>, limits: &ServeLimits, now: Instant) -> u64 {
        self.open
            .values()
            .filter(|s| client.is_none_or(|c| s.client == c))
            .map(|s| {
                limits
                    .evict_idle
                    .saturating_sub(now.duration_since(s.last_used))
            })
            .min()
            .map_or(limits.evict_idle.as_secs(), |d| {
                d.as_secs_f64().ceil() as u64
            })
            .max(1)
    }

    /// Makes room for one more episode of `client`: within its own quota (closing its own
    /// longest-idle episode if it must), then within the server's cap (closing anyone's).
    fn make_room(
        &mut self,
        client: &str,
        limits: &ServeLimits,
        now: Instant,
    ) -> Result<(), ServeError> {
        if self.held_by(client) >= limits.max_episodes_per_client {
            match self.longest_idle(Some(client), limits.evict_idle, now) {
                Some(id) => self.evict(id),
                None => {
                    return Err(ServeError::ClientQuota {
                        limit: limits.max_episodes_per_client,
                        retry_after: self.retry_after(Some(client), limits, now),
                    })
                }
            }
        }
        if self.total() >= limits.max_episodes {
            match self.longest_idle(None, limits.evict_idle, now) {
                Some(id) => self.evict(id),
                None => {
                    return Err(ServeError::TooManyEpisodes {
                        limit: limits.max_episodes,
                        retry_after: self.retry_after(None, limits, now),
                    })
                }
            }
        }
        Ok(())
    }

    fn evict(&mut self, id: String) {
        self.open.remove(&id);
        self.counts.evicted += 1;
        self.forget(id, "evicted");
    }

    fn expire_idle(&mut self, limits: &ServeLimits, now: Instant) {
        let idle: Vec<String> = self
            .open
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_used) > limits.episode_ttl)
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            self.open.remove(&id);
            self.counts.expired += 1;
            self.forget(id, "expired");
        }
    }
}

/// What a request costs an episode: used to enforce the per-episode limits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cost {
    /// A read (`observe`, `state`, `diff`): refreshes the TTL only.
    Read,
    /// A step with a body of this many bytes.
    Step(usize),
}

/// The world, the open episodes and the limits; cheap to clone into every request.
#[derive(Clone)]
pub(crate) struct Host {
    world: Arc<World>,
    limits: Arc<ServeLimits>,
    book: Arc<Mutex<Book>>,
}

impl Host {
    /// A host serving `world` under `limits`.
    pub fn new(world: World, limits: ServeLimits) -> Host {
        Host {
            world: Arc::new(world),
            limits: Arc::new(limits),
            book: Arc::default(),
        }
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        // A panic while holding the lock cannot leave the book half-updated (every update is a
        // single insert/remove/increment), so a poisoned lock is still usable.
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `GET /health`: world size, open episodes, counters and limits.
    pub fn health(&self) -> Value {
        let mut book = self.book();
        book.expire_idle(&self.limits, Instant::now());
        let mut clients: std::collections::BTreeMap<&str, usize> = Default::default();
        for slot in book.open.values() {
            *clients.entry(slot.client.as_str()).or_default() += 1;
        }
        json!({
            "status": "ok",
            "apps": self.world.catalog.apps.len(),
            "events": self.world.history.len(),
            "episodes": book.open.len(),
            "clients": clients,
            "counts": book.counts,
            "limits": *self.limits,
        })
    }

    /// Closes episodes idle past the TTL (called periodically, and on every request).
    pub fn sweep(&self) {
        self.book().expire_idle(&self.limits, Instant::now());
    }

    /// How often [`Host::sweep`] should run: often enough that an idle episode outlives its TTL
    /// by at most a quarter of it.
    pub fn sweep_every(&self) -> std::time::Duration {
        (self.limits.episode_ttl / 4).clamp(
            std::time::Duration::from_millis(200),
            std::time::Duration::from_secs(30),
        )
    }

    /// Starts an episode for `client` on its own thread and returns what its agent sees
    /// first. At a cap the longest-idle episode (idle past `evict_idle`) makes room; else 429.
    pub async fn create(
        &self,
        req: CreateEpisode,
        body_bytes: usize,
        client: String,
    ) -> Result<Vec<u8>, ServeError> {
        let id = {
            let mut book = self.book();
            let now = Instant::now();
            book.expire_idle(&self.limits, now);
            if let Err(e) = book.make_room(&client, &self.limits, now) {
                book.counts.refused += 1;
                return Err(e);
            }
            *book.starting.entry(client.clone()).or_default() += 1;
            book.next += 1;
            format!("ep-{}", book.next)
        };
        let started = self.start_thread(&id, req).await;
        let mut book = self.book();
        if let Some(n) = book.starting.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                book.starting.remove(&client);
            }
        }
        let (jobs, created) = started?;
        book.counts.created += 1;
        book.open.insert(
            id,
            Slot {
                jobs,
                last_used: Instant::now(),
                steps: 0,
                bytes: body_bytes,
                client,
            },
        );
        Ok(created)
    }

    async fn start_thread(
        &self,
        id: &str,
        req: CreateEpisode,
    ) -> Result<(mpsc::Sender<Job>, Vec<u8>), ServeError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready, ready_rx) = tokio::sync::oneshot::channel();
        let world = Arc::clone(&self.world);
        let episode_id = id.to_string();
        let cap = self.limits.max_observation_bytes;
        std::thread::Builder::new()
            .name(format!("prefflow-{id}"))
            .spawn(move || {
                let user = Box::new(ScriptedUser::new(req.answers.clone()));
                let mut phone = match Phone::new(&world, req.config(), user) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = ready.send(Err(ServeError::from(e)));
                        return;
                    }
                };
                let _ = ready.send(to_json(&created(&phone, episode_id, cap)));
                // Ends when the episode's last sender is dropped (closed or expired).
                for job in rx {
                    job(&mut phone);
                }
            })?;
        let created = ready_rx.await.map_err(|_| ServeError::HostGone)??;
        Ok((jobs, created))
    }

    /// Runs `f` on episode `id`'s thread after charging `cost` to its limits; the answer is
    /// the JSON bytes `f` produced there.
    pub async fn run(
        &self,
        id: &str,
        cost: Cost,
        f: impl for<'w> FnOnce(&mut Phone<'w>, &ServeLimits) -> Result<Vec<u8>, ServeError>
            + Send
            + 'static,
    ) -> Result<Vec<u8>, ServeError> {
        let jobs = self.charge(id, cost)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let limits = Arc::clone(&self.limits);
        let job: Job = Box::new(move |phone| {
            // The receiver is gone only if the client disconnected; nothing to tell it then.
            let _ = tx.send(f(phone, &limits));
        });
        jobs.send(job).map_err(|_| ServeError::HostGone)?;
        rx.await.map_err(|_| ServeError::HostGone)?
    }

    /// Checks and updates the episode's usage; returns the channel to its thread.
    fn charge(&self, id: &str, cost: Cost) -> Result<mpsc::Sender<Job>, ServeError> {
        let now = Instant::now();
        let limits = &*self.limits;
        let mut book = self.book();
        book.expire_idle(limits, now);
        let Some(slot) = book.open.get_mut(id) else {
            return Err(book.not_found(id, limits));
        };
        slot.last_used = now;
        let refused = match cost {
            Cost::Read => None,
            Cost::Step(_) if slot.steps >= limits.max_steps => Some(ServeError::StepLimit {
                id: id.to_string(),
                limit: limits.max_steps,
            }),
            Cost::Step(n) if slot.bytes + n > limits.max_episode_bytes => {
                Some(ServeError::EpisodeBytes {
                    id: id.to_string(),
                    limit: limits.max_episode_bytes,
                })
            }
            Cost::Step(n) => {
                slot.steps += 1;
                slot.bytes += n;
                None
            }
        };
        let jobs = slot.jobs.clone();
        if let Some(e) = refused {
            book.counts.refused += 1;
            return Err(e);
        }
        Ok(jobs)
    }

    /// Ends an episode: its thread finishes the jobs already queued, then frees the overlay.
    pub fn close(&self, id: &str) -> Result<(), ServeError> {
        let mut book = self.book();
        book.expire_idle(&self.limits, Instant::now());
        if book.open.remove(id).is_none() {
            return Err(book.not_found(id, &self.limits));
        }
        book.counts.closed += 1;
        book.forget(id.to_string(), "closed");
        Ok(())
    }

    /// Counts a request refused before it reached an episode (e.g. a body over the limit).
    pub fn refused(&self) {
        self.book().counts.refused += 1;
    }
}

/// Serializes a response body (on the episode's thread).
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, ServeError> {
    serde_json::to_vec(value).map_err(|e| ServeError::Internal(format!("encoding a response: {e}")))
}

fn created(phone: &Phone<'_>, episode_id: String, cap: usize) -> Created {
    let mut observation = phone.observe();
    cap_text(&mut observation.text, cap);
    Created {
        episode_id,
        space: phone.space(),
        clock: phone.clock(),
        observation,
        tools: match phone.space() {
            ActionSpace::Tools => phone.tools().to_vec(),
            ActionSpace::Gui => Vec::new(),
        },
    }
}

/// Performs one action; a body that is JSON but no action is an error observation, like any
/// other invalid action.
pub(crate) fn step(
    phone: &mut Phone<'_>,
    action: Result<Action, serde_json::Error>,
    cap: usize,
) -> Observation {
    let mut obs = match action {
        Ok(a) => phone.step(&a),
        Err(e) => Observation::error(format!(
            "invalid action: {e}; send e.g. {{\"action\": \"call\", \"tool\": \"app.operation\", \"args\": {{…}}}}"
        )),
    };
    cap_text(&mut obs.text, cap);
    obs
}

/// What the agent sees now, cut to the observation limit.
pub(crate) fn observe(phone: &Phone<'_>, cap: usize) -> Observation {
    let mut obs = phone.observe();
    cap_text(&mut obs.text, cap);
    obs
}

/// The whole current state: every app table's records, plus the episode's log.
pub(crate) fn state(phone: &Phone<'_>) -> Value {
    let view = phone.state();
    let mut tables = Map::new();
    for app in &view.catalog().apps {
        for t in &app.tables {
            let records = view.records_json(&app.id, &t.name).unwrap_or_default();
            tables.insert(format!("{}.{}", app.id, t.name), Value::from(records));
        }
    }
    json!({
        "clock": phone.clock(),
        "space": phone.space(),
        "finished": phone.is_finished(),
        "answer": phone.answer(),
        "operations": phone.operations(),
        "asks": phone.asks(),
        "tables": tables,
    })
}

//! The thread that owns the world and every live episode. A [`Phone`] borrows the world and
//! carries a non-`Send` user simulator, so phones never cross threads: HTTP handlers send jobs
//! here and await the answer. Steps take microseconds, so one thread serves many clients.

use std::collections::HashMap;
use std::sync::mpsc;

use serde_json::{json, Map, Value};

use super::api::{CreateEpisode, Created};
use super::error::ServeError;
use super::user::ScriptedUser;
use crate::world::phone::{Action, ActionSpace, Observation, Phone, WorldDiff};
use crate::world::World;

/// The live episodes, by id.
#[derive(Default)]
pub(crate) struct Book<'w> {
    next: u64,
    episodes: HashMap<String, Phone<'w>>,
}

type Job = Box<dyn for<'w> FnOnce(&'w World, &mut Book<'w>) + Send>;

/// A handle to the episode thread; cheap to clone into every request.
#[derive(Clone)]
pub(crate) struct Host {
    jobs: mpsc::Sender<Job>,
}

impl Host {
    /// Moves the world onto a new thread that runs jobs until every handle is dropped.
    pub fn start(world: World) -> Result<Host, ServeError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("prefflow-phones".into())
            .spawn(move || {
                let mut book = Book::default();
                for job in rx {
                    job(&world, &mut book);
                }
            })?;
        Ok(Host { jobs })
    }

    /// Runs `f` on the episode thread and returns its result.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl for<'w> FnOnce(&'w World, &mut Book<'w>) -> T + Send + 'static,
    ) -> Result<T, ServeError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |world, book| {
            // The receiver is gone only if the client disconnected; nothing to tell it then.
            let _ = tx.send(f(world, book));
        });
        self.jobs.send(job).map_err(|_| ServeError::HostGone)?;
        rx.await.map_err(|_| ServeError::HostGone)
    }
}

impl<'w> Book<'w> {
    /// Starts an episode.
    pub fn create(&mut self, world: &'w World, req: CreateEpisode) -> Result<Created, ServeError> {
        let user = Box::new(ScriptedUser::new(req.answers.clone()));
        let phone = Phone::new(world, req.config(), user)?;
        self.next += 1;
        let episode_id = format!("ep-{}", self.next);
        let created = Created {
            episode_id: episode_id.clone(),
            space: phone.space(),
            clock: phone.clock(),
            observation: phone.observe(),
            tools: match phone.space() {
                ActionSpace::Tools => phone.tools().to_vec(),
                ActionSpace::Gui => Vec::new(),
            },
        };
        self.episodes.insert(episode_id, phone);
        Ok(created)
    }

    fn phone(&mut self, id: &str) -> Result<&mut Phone<'w>, ServeError> {
        self.episodes
            .get_mut(id)
            .ok_or_else(|| ServeError::NotFound(id.to_string()))
    }

    /// Performs one action; a body that is JSON but no action is an error observation, like
    /// any other invalid action.
    pub fn step(
        &mut self,
        id: &str,
        action: Result<Action, serde_json::Error>,
    ) -> Result<Observation, ServeError> {
        let phone = self.phone(id)?;
        Ok(match action {
            Ok(a) => phone.step(&a),
            Err(e) => Observation::error(format!(
                "invalid action: {e}; send e.g. {{\"action\": \"call\", \"tool\": \"app.operation\", \"args\": {{…}}}}"
            )),
        })
    }

    /// What the agent sees now.
    pub fn observe(&mut self, id: &str) -> Result<Observation, ServeError> {
        Ok(self.phone(id)?.observe())
    }

    /// Changes since the episode started.
    pub fn diff(&mut self, id: &str) -> Result<WorldDiff, ServeError> {
        Ok(self.phone(id)?.diff())
    }

    /// The whole current state: every app table's records, plus the episode's log.
    pub fn state(&mut self, id: &str) -> Result<Value, ServeError> {
        let phone = self.phone(id)?;
        let view = phone.state();
        let mut tables = Map::new();
        for app in &view.catalog().apps {
            for t in &app.tables {
                let records = view.records_json(&app.id, &t.name).unwrap_or_default();
                tables.insert(format!("{}.{}", app.id, t.name), Value::from(records));
            }
        }
        Ok(json!({
            "clock": phone.clock(),
            "space": phone.space(),
            "finished": phone.is_finished(),
            "answer": phone.answer(),
            "operations": phone.operations(),
            "asks": phone.asks(),
            "tables": tables,
        }))
    }

    /// Ends an episode and frees its overlay.
    pub fn close(&mut self, id: &str) -> Result<(), ServeError> {
        self.episodes
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| ServeError::NotFound(id.to_string()))
    }

    /// Live episodes.
    pub fn len(&self) -> usize {
        self.episodes.len()
    }
}

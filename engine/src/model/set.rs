//! A set of in-memory sessions with DSH's store-level operations: create, fork, delete.

use std::collections::BTreeMap;

use super::fork::ForkSpec;
use super::header::SessionHeader;
use super::lifecycle::plan_fork;
use super::session::Session;
use crate::event::Event;
use crate::{Config, Error, Result};

/// Sessions by id.
#[derive(Debug, Default)]
pub struct SessionSet {
    sessions: BTreeMap<String, Session>,
    config: Config,
}

impl SessionSet {
    /// An empty set whose sessions use `config`.
    pub fn new(config: Config) -> Self {
        Self {
            sessions: BTreeMap::new(),
            config,
        }
    }

    /// Creates a session from a header and seed (see [`Session::create`]).
    ///
    /// # Errors
    /// [`Error::SessionExists`] if the id is taken, else as [`Session::create`].
    pub fn create(
        &mut self,
        header: SessionHeader,
        seed: impl IntoIterator<Item = Event>,
    ) -> Result<&mut Session> {
        if self.sessions.contains_key(&header.id) {
            return Err(Error::SessionExists { id: header.id });
        }
        let session = Session::create(header, seed, self.config.clone())?;
        Ok(self
            .sessions
            .entry(session.id().to_owned())
            .or_insert(session))
    }

    /// Adds an already built session.
    ///
    /// # Errors
    /// [`Error::SessionExists`] if the id is taken.
    pub fn insert(&mut self, session: Session) -> Result<&mut Session> {
        if self.sessions.contains_key(session.id()) {
            return Err(Error::SessionExists {
                id: session.id().to_owned(),
            });
        }
        Ok(self
            .sessions
            .entry(session.id().to_owned())
            .or_insert(session))
    }

    /// Forks `source` (DSH v0 `SessionStore.fork`): the child inherits seqs `0..=boundary` by
    /// reference (no event is copied), gets `parentSession` and `seedLength` in its header,
    /// and starts with `session/end-seed {}` at seq `seedLength`.
    ///
    /// # Errors
    /// [`Error::Fork`] with `SESSION_NOT_FOUND`, `SESSION_ALREADY_EXISTS`,
    /// `INVALID_BOUNDARY` or `OPEN_TURN`.
    pub fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<&mut Session> {
        let now = self.config.clock.now_ms();
        let plan = plan_fork(
            source,
            self.sessions.get(source).map(|p| (p.header(), p.state())),
            &spec,
            |id| self.sessions.contains_key(id),
            now,
        )?;
        let Some(parent) = self.sessions.get_mut(source) else {
            return Err(Error::SessionNotFound {
                id: source.to_owned(),
            });
        };
        let last = plan
            .inherited
            .checked_sub(1)
            .and_then(|seq| parent.event(seq))
            .map(|e| e.event_type().to_owned());
        let marker = plan.marker(last.as_deref());
        let log = parent.log_mut().share_prefix(plan.inherited);
        let mut child = Session::from_shared(plan.header, log, self.config.clone())?;
        if let Some(marker) = marker {
            child.accept(marker)?;
        }
        Ok(self.sessions.entry(plan.child_id).or_insert(child))
    }

    /// The session `id`.
    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    /// The session `id`, for appending.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.get_mut(id)
    }

    /// Removes a session; forks of it keep their inherited events.
    pub fn remove(&mut self, id: &str) -> Option<Session> {
        self.sessions.remove(id)
    }

    /// All sessions in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    /// The number of sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there are no sessions.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

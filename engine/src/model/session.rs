//! An in-memory session: header, accepted events, and derived state. Every way in (create
//! from a seed, restore, append, fork) goes through the one acceptance function.

use std::borrow::Cow;

use super::accept::{EventSource, plan};
use super::draft::Draft;
use super::header::SessionHeader;
use super::lifecycle::{ResumeReport, end_seed_after, resume_events};
use super::messages::{Message, derive_message};
use super::shared_vec::EventList;
use super::state::SessionState;
use crate::event::Event;
use crate::{Config, Result};

/// One session held in memory.
#[derive(Debug, Clone)]
pub struct Session {
    header: SessionHeader,
    state: SessionState,
    log: EventList,
    config: Config,
}

impl EventSource for EventList {
    fn event(&self, seq: u64) -> Result<Option<Cow<'_, Event>>> {
        Ok(self.get(seq).map(Cow::Borrowed))
    }
}

impl Session {
    /// Creates a session from a header and seed events (DSH `Session.create`): validates the
    /// header, accepts every seed event in order, then appends `session/end-seed {}` unless
    /// the seed already ends with one. A surface event without `surfaceOp` is refused, never
    /// upgraded.
    ///
    /// # Errors
    /// [`Error::InvalidHeader`](crate::Error::InvalidHeader) or the first seed event's
    /// [`Error::Rejected`](crate::Error::Rejected).
    pub fn create(
        header: SessionHeader,
        seed: impl IntoIterator<Item = Event>,
        config: Config,
    ) -> Result<Self> {
        let mut session = Self::restore(header, seed, config)?;
        session.mark_end_seed()?;
        Ok(session)
    }

    /// Rebuilds a session from stored events, validating each, without appending anything
    /// (import, DSH `Session.fromRestore` before its constructor appends).
    ///
    /// # Errors
    /// As [`Session::create`].
    pub fn restore(
        header: SessionHeader,
        events: impl IntoIterator<Item = Event>,
        config: Config,
    ) -> Result<Self> {
        header.validate()?;
        let mut session = Self {
            header,
            state: SessionState::new(),
            log: EventList::default(),
            config,
        };
        for event in events {
            session.accept(event)?;
        }
        Ok(session)
    }

    /// A session over an already shared log (fork): replays the inherited events through the
    /// acceptance function to build its state.
    pub(crate) fn from_shared(
        header: SessionHeader,
        log: EventList,
        config: Config,
    ) -> Result<Self> {
        header.validate()?;
        let mut state = SessionState::new();
        for event in log.iter() {
            let change = plan(&header.id, &state, &log, event, &config.limits)?;
            state.apply(event, &change);
        }
        Ok(Self {
            header,
            state,
            log,
            config,
        })
    }

    pub(crate) fn log_mut(&mut self) -> &mut EventList {
        &mut self.log
    }

    pub(crate) fn accept(&mut self, event: Event) -> Result<u64> {
        let change = plan(
            &self.header.id,
            &self.state,
            &self.log,
            &event,
            &self.config.limits,
        )?;
        self.state.apply(&event, &change);
        let seq = event.seq();
        self.log.push(event);
        Ok(seq)
    }

    /// Appends a draft at the next seq; returns that seq.
    ///
    /// # Errors
    /// [`Error::Rejected`](crate::Error::Rejected) naming the rule; the session is unchanged.
    pub fn append(&mut self, draft: Draft) -> Result<u64> {
        let event = draft.into_event(self.state.next_seq(), self.config.clock.now_ms());
        self.accept(event)
    }

    /// Appends a complete event (its seq must be the next one); the runtime check for dynamic
    /// callers.
    ///
    /// # Errors
    /// As [`Session::append`].
    pub fn append_event(&mut self, event: Event) -> Result<u64> {
        self.accept(event)
    }

    /// Appends the repair closers if the last turn is open (`docs/DESIGN.md` §2.7); returns their seqs.
    ///
    /// # Errors
    /// Only if a closer were refused, which would be a bug.
    pub fn repair(&mut self) -> Result<Vec<u64>> {
        let time = self
            .state
            .last_time()
            .unwrap_or_else(|| self.config.clock.now_ms());
        let closers = self.state.repair().closers(self.state.next_seq(), time);
        closers.into_iter().map(|c| self.accept(c)).collect()
    }

    /// Prepares a stored session for writing, as DSH's constructor does on resume: repair
    /// closers if the last turn is open, then `session/end-seed {}` unless the log already
    /// ends with one.
    ///
    /// # Errors
    /// As [`Session::repair`].
    pub fn resume(&mut self) -> Result<ResumeReport> {
        let last = self.log.last().map(Event::event_type);
        let (events, report) = resume_events(&self.state, last, self.config.clock.now_ms());
        for event in events {
            self.accept(event)?;
        }
        Ok(report)
    }

    /// Appends the end-seed marker unless the log ends with one.
    fn mark_end_seed(&mut self) -> Result<Option<u64>> {
        let last = self.log.last().map(Event::event_type);
        let now = self.config.clock.now_ms();
        end_seed_after(last, self.state.next_seq(), now)
            .map(|marker| self.accept(marker))
            .transpose()
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The derived state.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The number of events.
    pub fn len(&self) -> u64 {
        self.log.len()
    }

    /// Whether the session has no events.
    pub fn is_empty(&self) -> bool {
        self.log.len() == 0
    }

    /// The event with `seq`.
    pub fn event(&self, seq: u64) -> Option<&Event> {
        self.log.get(seq)
    }

    /// All events in seq order.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.log.iter()
    }

    /// The surface: seqs of the events that become messages, in order.
    pub fn surface(&self) -> &[u64] {
        self.state.surface().seqs()
    }

    /// Whether the last turn is open (resuming would append closers).
    pub fn turn_is_open(&self) -> bool {
        self.state.repair().turn_is_open()
    }

    /// `deriveMessages()`: the message JSON of every surface node, as slices of stored bytes.
    pub fn messages(&self) -> Vec<Message<&[u8]>> {
        let surface = self.surface();
        let mut out = Vec::with_capacity(surface.len());
        // A plain loop with the derivation inlined: through `filter_map` it was an
        // out-of-line call whose result went through the stack (a store-forwarding stall on
        // every node, the hottest line of `perf annotate`; PERFORMANCE.md).
        for &seq in surface {
            if let Some(m) = self.log.get(seq).and_then(derive_message) {
                out.push(m);
            }
        }
        out
    }

    #[cfg(test)]
    pub(crate) fn shares_events_with(&self, other: &Session, len: usize) -> bool {
        self.log.shares_prefix_with(&other.log, len)
    }
}

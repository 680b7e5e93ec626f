//! Where an import puts sessions: a dry run that validates everything and stores nothing, then
//! the store. An invocation that imports several sessions runs both passes, so a refused or
//! conflicting session anywhere leaves the store untouched.
//!
//! Import is incremental and idempotent: a session the store already holds with the same
//! events is skipped, one whose input continues the stored events gets the new ones appended,
//! and one that differs from the stored copy is a conflict.

use std::cell::RefCell;
use std::collections::BTreeSet;

use sessdb::{Config, Error as StoreError, Event, Session, SessionHeader, Store};

/// What an import does (or, in a dry run, would do) with one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// New to the store: imported whole.
    Imported,
    /// The store held its first `from` events: the ones after were appended.
    Extended {
        /// Events the store already held.
        from: u64,
    },
    /// The store already holds every event of it: nothing written.
    Skipped,
}

impl Outcome {
    /// Events this outcome adds to the store, for an input of `events` events.
    pub fn added(self, events: u64) -> u64 {
        match self {
            Outcome::Imported => events,
            Outcome::Extended { from } => events.saturating_sub(from),
            Outcome::Skipped => 0,
        }
    }
}

/// Why a target did not take a session.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The store refused it (validation, I/O).
    Store(StoreError),
    /// The store holds a different session under the same id.
    Conflict(String),
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Store(e)
    }
}

/// Takes one session, whole or not at all.
pub(crate) trait RestoreTarget {
    /// Restores `header` with `events`, or extends or skips the stored copy.
    fn restore(&self, header: SessionHeader, events: Vec<Event>) -> Result<Outcome, Refusal>;
}

/// How the input relates to what `store` holds under the same id.
fn compare(store: &Store, header: &SessionHeader, events: &[Event]) -> Result<Outcome, Refusal> {
    let stored_len = match store.session_len(&header.id) {
        Ok(n) => n,
        Err(StoreError::SessionNotFound { .. }) => return Ok(Outcome::Imported),
        Err(e) => return Err(e.into()),
    };
    if store.header(&header.id)? != *header {
        return Err(Refusal::Conflict(
            "its header differs from the stored session's".into(),
        ));
    }
    let common = stored_len.min(events.len() as u64);
    let stored = store.events(&header.id, ..common)?;
    if let Some((seq, _)) = stored
        .iter()
        .zip(events)
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        return Err(Refusal::Conflict(format!(
            "event {seq} differs from the stored session's"
        )));
    }
    Ok(if events.len() as u64 > stored_len {
        Outcome::Extended { from: stored_len }
    } else {
        Outcome::Skipped
    })
}

impl RestoreTarget for Store {
    fn restore(&self, header: SessionHeader, mut events: Vec<Event>) -> Result<Outcome, Refusal> {
        let outcome = compare(self, &header, &events)?;
        match outcome {
            Outcome::Imported => {
                self.restore_session(header, events)?;
            }
            Outcome::Extended { from } => {
                let new = events.split_off(usize::try_from(from).unwrap_or(usize::MAX));
                self.append_events(&header.id, new)?;
            }
            Outcome::Skipped => {}
        }
        Ok(outcome)
    }
}

/// Decides what the store would, storing nothing: the same acceptance function (through the
/// in-memory session), and ids taken in the store or earlier in the same import.
pub(crate) struct DryRun<'a> {
    store: &'a Store,
    ids: RefCell<BTreeSet<String>>,
}

impl<'a> DryRun<'a> {
    pub(crate) fn new(store: &'a Store) -> Self {
        Self {
            store,
            ids: RefCell::new(BTreeSet::new()),
        }
    }
}

impl RestoreTarget for DryRun<'_> {
    fn restore(&self, header: SessionHeader, events: Vec<Event>) -> Result<Outcome, Refusal> {
        let id = header.id.clone();
        if self.ids.borrow().contains(&id) {
            return Err(StoreError::SessionExists { id }.into());
        }
        let outcome = compare(self.store, &header, &events)?;
        // The whole input through the acceptance function: for an extension the stored
        // prefix is the same events, so this decides the appended ones as the store will.
        if outcome != Outcome::Skipped {
            Session::restore(header, events, Config::default())?;
        }
        self.ids.borrow_mut().insert(id);
        Ok(outcome)
    }
}

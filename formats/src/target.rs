//! Where an import puts sessions: a dry run that validates everything and stores nothing, then
//! the store. An invocation that imports several sessions runs both passes, so a refused or
//! conflicting session anywhere leaves the store untouched.

use std::cell::RefCell;
use std::collections::BTreeSet;

use sessdb::{Config, Error as StoreError, Event, Session, SessionHeader, Store};

/// Takes one session, whole or not at all.
pub(crate) trait RestoreTarget {
    /// Restores `header` with `events` (as `Store::restore_session`).
    fn restore(&self, header: SessionHeader, events: Vec<Event>) -> sessdb::Result<()>;
}

impl RestoreTarget for Store {
    fn restore(&self, header: SessionHeader, events: Vec<Event>) -> sessdb::Result<()> {
        self.restore_session(header, events).map(|_| ())
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
    fn restore(&self, header: SessionHeader, events: Vec<Event>) -> sessdb::Result<()> {
        let id = header.id.clone();
        if self.store.session_len(&id).is_ok() || self.ids.borrow().contains(&id) {
            return Err(StoreError::SessionExists { id });
        }
        Session::restore(header, events, Config::default())?;
        self.ids.borrow_mut().insert(id);
        Ok(())
    }
}

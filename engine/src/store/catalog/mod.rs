//! The catalog (`docs/DESIGN.md` §3.3): every live session's resident state, read under a
//! shared lock, changed only by the plan/commit of a write (`write.rs`), a replay (open,
//! `refresh`) or a checkpoint marking what it wrote.

pub(crate) mod cold;
pub(crate) mod entries;
pub(crate) mod listing;
pub(crate) mod locations;
pub(crate) mod write;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::Result;
use crate::event::Event;
use crate::store::log::segments::SegmentList;
use entries::{Entries, SessionEntry};

/// The catalog of an open store.
#[derive(Debug)]
pub(crate) struct Catalog {
    entries: RwLock<Entries>,
    /// How many sessions reads may leave decoded before the clean ones go back to the index
    /// (`StoreOptions::resident_sessions`).
    resident: usize,
}

impl Catalog {
    pub(crate) fn new(entries: Entries, resident: usize) -> Self {
        Self {
            entries: RwLock::new(entries),
            resident,
        }
    }

    /// Every session, read-locked (appends go on beside it until one commits).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Entries> {
        self.entries.read()
    }

    /// Every session, write-locked: for a replay (`refresh`) and a checkpoint marking what it
    /// wrote; writes go through [`Catalog::create`] and its siblings.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Entries> {
        self.entries.write()
    }

    /// Every session read-locked, with session `id` resident if it exists (decoded from the
    /// checkpoint's index on its first use).
    ///
    /// # Errors
    /// `Corruption` when its entry is damaged.
    pub(crate) fn read_with(&self, id: &str) -> Result<RwLockReadGuard<'_, Entries>> {
        let entries = self.entries.read();
        if entries.sessions.contains_key(id) || entries.cold().is_none() {
            return Ok(entries);
        }
        drop(entries);
        let mut entries = self.entries.write();
        if !entries.sessions.contains_key(id) && entries.over(self.resident) {
            entries.release_clean();
        }
        entries.load(id)?;
        Ok(RwLockWriteGuard::downgrade(entries))
    }

    /// The event `seq` of `session`, if it has one.
    pub(crate) fn event_at(
        &self,
        segments: &SegmentList,
        session: &str,
        seq: u64,
    ) -> Result<Option<Event>> {
        let loc = self.read_with(session)?.get(session)?.locs.get(seq)?;
        loc.map(|l| segments.read_event(l, seq)).transpose()
    }
}

/// The event `seq` of a session entry the caller holds.
pub(crate) fn event_of(
    segments: &SegmentList,
    entry: &SessionEntry,
    seq: u64,
) -> Result<Option<Event>> {
    entry
        .locs
        .get(seq)?
        .map(|l| segments.read_event(l, seq))
        .transpose()
}

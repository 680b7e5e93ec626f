//! Reads by location: one event of a session through the resident index.

use crate::Result;
use crate::event::Event;
use crate::store::catalog::entries::SessionEntry;
use crate::store::inner::Inner;

impl Inner {
    /// The event `seq` of `session`, if it has one.
    pub(in crate::store) fn event_at(&self, session: &str, seq: u64) -> Result<Option<Event>> {
        let loc = {
            let cat = self.catalog.read();
            let e = cat.get(session)?;
            e.locs.get(seq)?
        };
        loc.map(|l| self.segments.read_event(l, seq)).transpose()
    }

    /// The event `seq` of a session entry the caller holds.
    pub(in crate::store) fn event_at_loc(
        &self,
        entry: &SessionEntry,
        seq: u64,
    ) -> Result<Option<Event>> {
        entry
            .locs
            .get(seq)?
            .map(|l| self.segments.read_event(l, seq))
            .transpose()
    }
}

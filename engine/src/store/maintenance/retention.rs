//! Retention (`docs/DESIGN.md` §3.7): which sessions go by the age of their last event or
//! because the live bytes are over a bound (oldest last event first), and the deletions
//! that follow. Each deletion is one Delete record, as [`Store::delete_session`](crate::store::Store::delete_session)
//! writes; the bytes go at the next compaction.

use std::collections::BTreeMap;

use crate::store::catalog::entries::SessionEntry;
use crate::store::compact::Compaction;
use crate::store::inner::Inner;
use crate::store::options::RetentionPolicy;
use crate::{Error, Result};

/// What [`Store::apply_retention`](crate::store::Store::apply_retention) or
/// [`Store::delete_older_than`](crate::store::Store::delete_older_than) deleted, or in a dry run
/// would delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionReport {
    /// Only planned: nothing was deleted.
    pub dry_run: bool,
    /// The sessions, oldest last event first, each with the time of its last event (its
    /// creation when it has none).
    pub deleted: Vec<(String, i64)>,
    /// Live record bytes before, when the policy bounds them.
    pub live_bytes_before: Option<u64>,
    /// Live record bytes after (estimated: exact after the next compaction).
    pub live_bytes_after: Option<u64>,
}

/// When a session was last written: its last event, else its creation.
fn last_written(e: &SessionEntry) -> i64 {
    e.state.last_time().unwrap_or(e.header.created_at)
}

/// Retention over an open store: which sessions go, deleted through the store's write path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention<'s> {
    pub(crate) store: &'s Inner,
}

impl Retention<'_> {
    /// The sessions whose last event is before `cutoff_ms`, oldest first.
    pub(in crate::store) fn sessions_before(&self, cutoff_ms: i64) -> Vec<(String, i64)> {
        let cat = self.store.catalog.read();
        let mut out: Vec<(String, i64)> = cat
            .sessions
            .iter()
            .map(|(id, e)| (id.clone(), last_written(e)))
            .filter(|(_, t)| *t < cutoff_ms)
            .collect();
        // Sessions not decoded: their slots say when they were last written. A damaged entry
        // is not listed (its id cannot be read); `verify` names it.
        if let Some(cold) = cat.cold() {
            for i in cold.untaken() {
                let Ok(slot) = cold.slot(i) else { continue };
                let t = slot.last_time.unwrap_or(slot.created_at);
                if t < cutoff_ms
                    && let Ok(id) = cold.id(i)
                {
                    out.push((id.to_owned(), t));
                }
            }
        }
        out.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Deletes every session in `ids` (all checked first: one unknown id deletes nothing).
    pub(in crate::store) fn delete_all(&self, ids: &[&str]) -> Result<()> {
        self.store.writer.check_writable()?;
        {
            let cat = self.store.catalog.read();
            if let Some(id) = ids.iter().find(|id| !cat.exists(id).unwrap_or(false)) {
                return Err(Error::SessionNotFound {
                    id: (*id).to_owned(),
                });
            }
        }
        for id in ids {
            match self.store.delete(id) {
                // Deleted beside this call by another: what was asked holds.
                Ok(()) | Err(Error::SessionNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Deletes the sessions whose last event is older than `age`.
    pub(in crate::store) fn delete_older_than(
        &self,
        age: std::time::Duration,
        dry_run: bool,
    ) -> Result<RetentionReport> {
        // A dry run changes nothing: read-only stores answer it too.
        if dry_run {
            if self.store.writer.is_closed() {
                return Err(crate::Error::Closed);
            }
        } else {
            self.store.writer.check_writable()?;
        }
        let now = self.store.options.clock.now_ms();
        let cutoff = now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
        let deleted = self.sessions_before(cutoff);
        if !dry_run {
            self.delete_listed(&deleted)?;
        }
        Ok(RetentionReport {
            dry_run,
            deleted,
            live_bytes_before: None,
            live_bytes_after: None,
        })
    }

    /// Applies `policy` once.
    pub(in crate::store) fn apply_retention(
        &self,
        policy: &RetentionPolicy,
        dry_run: bool,
    ) -> Result<RetentionReport> {
        self.store.writer.check_writable()?;
        let mut report = RetentionReport {
            dry_run,
            ..RetentionReport::default()
        };
        if let Some(age) = policy.max_age {
            let now = self.store.options.clock.now_ms();
            let cutoff = now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            report.deleted = self.sessions_before(cutoff);
        }
        if let Some(bound) = policy.max_live_bytes {
            let before = self.live_bytes()?;
            let mut live = before;
            for (id, _) in &report.deleted {
                live = live.saturating_sub(self.own_bytes(id).values().sum());
            }
            if live > bound {
                for (id, t) in self.sessions_before(i64::MAX) {
                    if live <= bound {
                        break;
                    }
                    if report.deleted.iter().any(|(d, _)| *d == id) {
                        continue;
                    }
                    live = live.saturating_sub(self.own_bytes(&id).values().sum());
                    report.deleted.push((id, t));
                }
            }
            report.live_bytes_before = Some(before);
            report.live_bytes_after = Some(live);
        }
        if !dry_run {
            self.delete_listed(&report.deleted)?;
        }
        Ok(report)
    }

    fn delete_listed(&self, listed: &[(String, i64)]) -> Result<()> {
        for (id, _) in listed {
            match self.store.delete(id) {
                Ok(()) | Err(Error::SessionNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The live record bytes: the log less what the writer knows to be dead (read from the
    /// log the first time).
    fn live_bytes(&self) -> Result<u64> {
        let end = self.store.writer.tail().as_ref().map_or(0, |t| t.next_lsn);
        let dead = match self.store.maintenance.known_dead() {
            Some(d) => d,
            None => {
                let space = Compaction { store: self.store }.space()?;
                let by_first = self
                    .store
                    .segments
                    .full()?
                    .iter()
                    .zip(&space.segments)
                    .filter(|(_, s)| s.dead_bytes > 0)
                    .map(|(seg, s)| (seg.first_lsn, s.dead_bytes))
                    .collect();
                self.store.maintenance.set_exact(by_first);
                space.dead_bytes()
            }
        };
        let segments = self.store.segments.full()?;
        let first = segments.first().map_or(0, |s| s.first_lsn);
        // Positions past compacted space are not bytes: count what the segments hold.
        let holes: u64 = segments
            .iter()
            .filter(|s| s.is_compacted())
            .map(|s| {
                let held = s.records_end().map_or(0, |e| {
                    e.saturating_sub(crate::codec::segment::SEGMENT_HEADER_LEN as u64)
                });
                s.end_lsn()
                    .map_or(0, |e| e.saturating_sub(s.first_lsn))
                    .saturating_sub(held)
            })
            .sum();
        Ok(end
            .saturating_sub(first)
            .saturating_sub(holes)
            .saturating_sub(dead))
    }

    /// What deleting `id` would leave dead, by segment (first LSN): the frames of the records
    /// holding its own events (not those a fork inherits from its parent). An estimate: a
    /// live fork may still read some of them, which the next read of the log finds.
    pub(in crate::store) fn own_bytes(&self, id: &str) -> BTreeMap<u64, u64> {
        let Ok(cat) = self.store.catalog.read_with(id) else {
            return BTreeMap::new();
        };
        cat.sessions
            .get(id)
            .map(|e| e.own_bytes(&self.store.segments))
            .unwrap_or_default()
    }
}

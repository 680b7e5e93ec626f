//! The catalog's side of a write (`docs/DESIGN.md` §3.2): plan a batch with the acceptance
//! function, have the writer seal it as one record, commit the plan and the record's event
//! locations. Every catalog write holds the tail lock: two never run at once.

use parking_lot::{RwLockUpgradableReadGuard, RwLockWriteGuard};

use super::Catalog;
use super::entries::{Batch, Planned, Prechecked, SessionEntry, StoredEvents, plan_batch};
use super::locations::Locations;
use crate::codec::record::{BodyRef, append_frame_bound};
use crate::event::Event;
use crate::limits::Now;
use crate::model::{
    EventChecked, EventSource, ForkPlan, ForkSpec, SessionHeader, SessionState, Verdict,
    end_seed_after, plan, plan_checked, plan_fork,
};
use crate::store::writer::seal::{Sealed, Target};
use crate::store::writer::tail::Tail;
use crate::store::writer::{Attempt, Writer};
use crate::{Error, Limits, Result};

/// How a new session's first events are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seed {
    /// As given, every event, nothing added: a session restored (import, DSH materializing).
    Exact,
    /// A seed: `session/end-seed` is appended unless it ends with one (DSH's `create`).
    EndMarked,
}

/// A batch written: its seqs, and the log end after its record (`None`: nothing written).
type Appended = (std::ops::Range<u64>, Option<u64>);

/// Where a write goes: the writer holding the tail, the files, and the acceptance limits.
pub(crate) struct WriteTo<'a> {
    pub(crate) writer: &'a Writer,
    pub(crate) tail: &'a mut Tail,
    pub(crate) target: Target<'a>,
    pub(crate) limits: &'a Limits,
    pub(crate) now: &'a Now<'a>,
}

impl WriteTo<'_> {
    fn seal(&mut self, body: &BodyRef<'_>) -> Result<Sealed> {
        self.writer.seal(self.tail, self.target, body, self.now)
    }

    fn try_seal(&mut self, body: &BodyRef<'_>) -> Result<Option<Sealed>> {
        self.writer.try_seal(self.tail, self.target, body)
    }

    fn source<'e>(&self, locs: Option<&'e Locations>, batch: &'e [Event]) -> StoredEvents<'e>
    where
        Self: 'e,
    {
        StoredEvents {
            segments: self.target.segments,
            locs,
            batch,
        }
    }
}

/// Commits a planned batch written at `lsn` to its session's entry: the state, the events'
/// locations, the mark for the next checkpoint.
#[inline]
fn commit_batch(
    entry: &mut SessionEntry,
    planned: Planned,
    events: &[Event],
    tail: &Tail,
    lsn: u64,
    session: &str,
    range: &std::ops::Range<u64>,
) {
    planned.commit(&mut entry.state, events);
    tail.push_locations(lsn, |l| entry.locs.push(l));
    // Where the batch crosses into the catalog: one location per event, the session's length
    // its next seq.
    debug_assert_eq!(
        entry.locs.len(),
        entry.state.next_seq(),
        "{session}: locations"
    );
    debug_assert_eq!(
        entry.state.next_seq(),
        range.end,
        "{session}: the batch's seqs"
    );
    entry.dirty = true;
}

/// How the one-event append holds the catalog while it plans and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// The write lock from the start, where the record goes into the mapped log at once
    /// (`Tail::places_at_once`): held for well under a microsecond, and one locked instruction
    /// and one lookup of the session fewer than an upgrade (PERFORMANCE.md, "2026-12-06,
    /// closing").
    Exclusive,
    /// Upgradable while planning and writing, upgraded for the commit, where the write may
    /// wait (a roll's sync, space allocated or prepared ahead, a `pwrite`): readers go on
    /// meanwhile. Every other catalog writer holds the tail lock too, so the upgrade waits for
    /// no writer.
    Upgradable,
}

impl Hold {
    /// For a frame of at most `bound` bytes, by what the tail (locked) says of it.
    fn for_frame(tail: &Tail, bound: u64) -> Hold {
        if tail.places_at_once(bound) {
            Hold::Exclusive
        } else {
            Hold::Upgradable
        }
    }
}

/// Numbers `event` as the next of `entry` and plans it; the verdict and its seq.
#[inline(always)]
fn plan_one(
    to: &WriteTo<'_>,
    entry: &SessionEntry,
    session: &str,
    event: &mut Event,
    checked: Option<EventChecked>,
) -> Result<(Verdict, u64)> {
    let seq = entry.state.next_seq();
    event.set_seq(seq);
    let source = to.source(Some(&entry.locs), &[]);
    let verdict = match checked {
        Some(c) => plan_checked(session, &entry.state, &source, event, c, to.limits),
        None => plan(session, &entry.state, &source, event, to.limits),
    }?;
    Ok((verdict, seq))
}

/// Plans, writes and commits one event into `entry`, under the catalog's write lock.
#[inline(always)]
fn append_into(
    mut to: WriteTo<'_>,
    entry: &mut SessionEntry,
    session: &str,
    mut event: Event,
    checked: Option<EventChecked>,
) -> Result<(u64, Option<u64>)> {
    let (verdict, seq) = plan_one(&to, entry, session, &mut event, checked)?;
    let sealed = to.seal(&BodyRef::Append {
        session,
        events: std::slice::from_ref(&event),
    })?;
    commit_one(entry, &event, &verdict, to.tail, sealed, session, seq);
    Ok((seq, Some(sealed.end)))
}

/// Commits one planned event written as `sealed` to its session's entry.
#[inline(always)]
fn commit_one(
    entry: &mut SessionEntry,
    event: &Event,
    verdict: &Verdict,
    tail: &Tail,
    sealed: Sealed,
    session: &str,
    seq: u64,
) {
    entry.state.apply(event, verdict);
    tail.push_locations(sealed.lsn, |l| entry.locs.push(l));
    // Where the event crosses into the catalog: one location per event, the session's
    // length its next seq.
    debug_assert_eq!(
        entry.locs.len(),
        entry.state.next_seq(),
        "{session}: locations"
    );
    debug_assert_eq!(entry.state.next_seq(), seq + 1, "{session}: the seq");
    debug_assert!(
        sealed.end - sealed.lsn <= append_frame_bound(session, event),
        "{session}: a frame longer than its bound"
    );
    entry.dirty = true;
}

impl Catalog {
    /// Creates session `header.id` with `events`; returns its length and the log end.
    pub(crate) fn create(
        &self,
        mut to: WriteTo<'_>,
        header: SessionHeader,
        mut events: Vec<Event>,
        seed: Seed,
    ) -> Result<(u64, Option<u64>)> {
        let id = header.id.clone();
        if self.read().exists(&id)? {
            return Err(Error::SessionExists { id });
        }
        if seed == Seed::EndMarked {
            let last = events.last().map(Event::event_type);
            let marker = end_seed_after(last, events.len() as u64, to.now.get());
            events.extend(marker);
        }
        let mut state = SessionState::new();
        let source = to.source(None, &events);
        plan_batch(&id, &state, &source, &events, Prechecked::No, to.limits)?
            .commit(&mut state, &events);
        let header_json = header.to_json();
        let sealed = to.seal(&BodyRef::Create {
            session: &id,
            header_json: &header_json,
            events: &events,
        })?;
        let mut locs = Locations::default();
        to.tail.push_locations(sealed.lsn, |l| locs.push(l));
        let len = state.next_seq();
        self.write()
            .insert_created(header, state, locs, None, sealed.lsn);
        Ok((len, Some(sealed.end)))
    }

    /// Appends the batch `make` builds from the session's entry; returns the new seqs and
    /// the log end (`None` when the batch was empty).
    pub(crate) fn append(
        &self,
        mut to: WriteTo<'_>,
        session: &str,
        make: impl FnOnce(&SessionEntry, &Now<'_>) -> Result<Batch>,
    ) -> Result<(std::ops::Range<u64>, Option<u64>)> {
        // Upgradable, then upgraded for the commit: one lock taken instead of a read lock and
        // a write lock (their locked operations
        // led this function's `perf annotate`). Every other catalog writer holds the tail lock too, so the
        // upgrade never waits for one; readers go on beside it until the upgrade.
        let plan = |entry: &SessionEntry| -> Result<_> {
            let Batch { events, checked } = make(entry, to.now)?;
            let source = to.source(Some(&entry.locs), &events);
            let planned = plan_batch(session, &entry.state, &source, &events, checked, to.limits)?;
            Ok((events, planned, entry.state.next_seq()))
        };
        let mut cat = self.entries.upgradable_read();
        // One lookup when the session is decoded (most appends): the map's hash and key
        // compare were ~9 ns of an event each (PERFORMANCE.md).
        let (events, planned, first) = match cat.sessions.get(session) {
            Some(entry) => plan(entry)?,
            None => {
                if cat.cold().is_some() {
                    // Decoded under the lock the plan and commit hold: with the lock let go
                    // in between, a checkpoint's `adopt` handed the session just decoded
                    // (clean) back to its index, and the plan then found no session
                    // (`tests/tests/append_beside_checkpoints.rs`).
                    let mut loading = RwLockUpgradableReadGuard::upgrade(cat);
                    loading.load(session)?;
                    cat = RwLockWriteGuard::downgrade_to_upgradable(loading);
                }
                plan(cat.get(session)?)?
            }
        };
        if events.is_empty() {
            return Ok((first..first, None));
        }
        let sealed = to.seal(&BodyRef::Append {
            session,
            events: &events,
        })?;
        let range = first..first + events.len() as u64;
        let mut cat = RwLockUpgradableReadGuard::upgrade(cat);
        if let Some(entry) = cat.sessions.get_mut(session) {
            commit_batch(
                entry, planned, &events, to.tail, sealed.lsn, session, &range,
            );
        }
        Ok((range, Some(sealed.end)))
    }

    /// Appends one event whose own rules `checked` holds (`None`: every rule runs here);
    /// returns its seq and the log end. [`Catalog::append`] for the one-event append, the hot
    /// path: the event and its checks are planned where they lie, with no batch built around
    /// them and moved through the planning's results (those moves were ~20 ns of an event,
    /// PERFORMANCE.md). How it holds the catalog, the tail decides ([`Hold`]).
    pub(crate) fn append_one(
        &self,
        to: WriteTo<'_>,
        session: &str,
        event: Event,
        checked: Option<EventChecked>,
    ) -> Result<(u64, Option<u64>)> {
        match Hold::for_frame(to.tail, append_frame_bound(session, &event)) {
            Hold::Exclusive => self.append_one_exclusive(to, session, event, checked),
            Hold::Upgradable => self.append_one_upgradable(to, session, event, checked),
        }
    }

    /// [`Catalog::append_one`] under the write lock from the start.
    fn append_one_exclusive(
        &self,
        to: WriteTo<'_>,
        session: &str,
        event: Event,
        checked: Option<EventChecked>,
    ) -> Result<(u64, Option<u64>)> {
        let mut cat = self.entries.write();
        // One lookup when the session is decoded (most appends).
        if let Some(entry) = cat.sessions.get_mut(session) {
            return append_into(to, entry, session, event, checked);
        }
        if cat.cold().is_some() {
            // Decoded under the lock the plan and commit hold: with the lock let go in
            // between, a checkpoint's `adopt` handed the session just decoded (clean) back to
            // its index (`tests/tests/append_beside_checkpoints.rs`).
            cat.load(session)?;
        }
        match cat.sessions.get_mut(session) {
            Some(entry) => append_into(to, entry, session, event, checked),
            None => Err(Error::SessionNotFound {
                id: session.to_owned(),
            }),
        }
    }

    /// [`Catalog::append_one`] under the upgradable lock, upgraded for the commit.
    fn append_one_upgradable(
        &self,
        mut to: WriteTo<'_>,
        session: &str,
        mut event: Event,
        checked: Option<EventChecked>,
    ) -> Result<(u64, Option<u64>)> {
        let mut cat = self.entries.upgradable_read();
        // One lookup to plan when the session is decoded (most appends), as in `append`.
        let (verdict, seq) = match cat.sessions.get(session) {
            Some(entry) => plan_one(&to, entry, session, &mut event, checked)?,
            None => {
                if cat.cold().is_some() {
                    // Decoded under the lock the plan and commit hold, as in `append`.
                    let mut loading = RwLockUpgradableReadGuard::upgrade(cat);
                    loading.load(session)?;
                    cat = RwLockWriteGuard::downgrade_to_upgradable(loading);
                }
                plan_one(&to, cat.get(session)?, session, &mut event, checked)?
            }
        };
        let sealed = to.seal(&BodyRef::Append {
            session,
            events: std::slice::from_ref(&event),
        })?;
        let mut cat = RwLockUpgradableReadGuard::upgrade(cat);
        if let Some(entry) = cat.sessions.get_mut(session) {
            commit_one(entry, &event, &verdict, to.tail, sealed, session, seq);
        }
        Ok((seq, Some(sealed.end)))
    }

    /// [`Catalog::append`] of a batch of complete events where nothing on the way waits: the
    /// catalog's write lock free now, the session decoded, the record written at once
    /// ([`Writer::try_seal`]). Otherwise nothing is written and the events come back. Returns
    /// the seqs and the log end.
    pub(crate) fn try_append(
        &self,
        mut to: WriteTo<'_>,
        session: &str,
        Batch { events, checked }: Batch,
    ) -> Result<Attempt<Appended, Vec<Event>>> {
        // The write lock now, not an upgradable one upgraded later: an upgrade waits for the
        // readers (a listing holds its read lock over all its rows).
        let Some(mut cat) = self.entries.try_write() else {
            return Ok(Attempt::WouldWait(events));
        };
        // Not decoded: its entry would be read from the checkpoint file first.
        let Some(entry) = cat.sessions.get_mut(session) else {
            return Ok(Attempt::WouldWait(events));
        };
        let first = entry.state.next_seq();
        if events.is_empty() {
            return Ok(Attempt::Done((first..first, None)));
        }
        let source = to.source(Some(&entry.locs), &events);
        let planned = plan_batch(session, &entry.state, &source, &events, checked, to.limits)?;
        let Some(sealed) = to.try_seal(&BodyRef::Append {
            session,
            events: &events,
        })?
        else {
            return Ok(Attempt::WouldWait(events));
        };
        let range = first..first + events.len() as u64;
        commit_batch(
            entry, planned, &events, to.tail, sealed.lsn, session, &range,
        );
        Ok(Attempt::Done((range, Some(sealed.end))))
    }

    /// Forks `source` as `spec` says; returns the child's id and the log end.
    pub(crate) fn fork(
        &self,
        mut to: WriteTo<'_>,
        source: &str,
        spec: ForkSpec,
    ) -> Result<(String, Option<u64>)> {
        let mut cat = self.write();
        cat.load(source)?;
        let plan = plan_fork(
            source,
            cat.sessions.get(source).map(|p| (&p.header, &p.state)),
            &spec,
            // An id whose entry in the index cannot be read is taken as used: never reused.
            |id| cat.exists(id).unwrap_or(true),
            to.now.get(),
        )?;
        let Some((base, locs)) =
            cat.fork_base(to.target.segments, &plan.child_id, source, plan.inherited)?
        else {
            return Err(Error::SessionNotFound {
                id: source.to_owned(),
            });
        };
        let last = match plan.inherited.checked_sub(1) {
            Some(seq) => to
                .source(Some(&locs), &[])
                .event(seq)?
                .map(|e| e.event_type().to_owned()),
            None => None,
        };
        let marker: Vec<Event> = plan.marker(last.as_deref()).into_iter().collect();
        let ForkPlan {
            child_id,
            inherited,
            header,
            ..
        } = plan;
        let mut state = base;
        plan_batch(
            &child_id,
            &state,
            &to.source(Some(&locs), &marker),
            &marker,
            Prechecked::No,
            to.limits,
        )?
        .commit(&mut state, &marker);
        let header_json = header.to_json();
        let sealed = to.seal(&BodyRef::Fork {
            child: &child_id,
            header_json: &header_json,
            parent: source,
            inherited,
            events: &marker,
        })?;
        let mut locs = locs;
        to.tail.push_locations(sealed.lsn, |l| locs.push(l));
        cat.insert_created(
            header,
            state,
            locs,
            Some((source.to_owned(), inherited)),
            sealed.lsn,
        );
        Ok((child_id, Some(sealed.end)))
    }

    /// Deletes `session`; returns its entry (what the deletion left dead) and the log end.
    pub(crate) fn delete(
        &self,
        mut to: WriteTo<'_>,
        session: &str,
    ) -> Result<(Option<SessionEntry>, Option<u64>)> {
        // Decoded before the record is written, so that applying it cannot fail after.
        if !self.write().load_with_forks(session)? {
            return Err(Error::SessionNotFound {
                id: session.to_owned(),
            });
        }
        let sealed = to.seal(&BodyRef::Delete { session })?;
        let gone = self.write().delete(session)?;
        Ok((gone, Some(sealed.end)))
    }
}

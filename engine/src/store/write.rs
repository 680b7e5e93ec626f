//! The write path (`docs/DESIGN.md` §3.2): plan with the acceptance function, encode one
//! frame, write it at the tail, commit to the catalog, then wake subscribers, sync (group
//! commit) and checkpoint when due. A failed write or sync poisons the store.

use std::sync::atomic::Ordering;

use crate::codec::frame::{begin_frame, payload_len, payload_offset};
use crate::codec::record::{BodyRef, encode_into};
use crate::event::Event;
use crate::limits::Now;
use crate::model::{
    EventSource, ForkPlan, ForkSpec, SessionHeader, SessionState, end_seed_after, plan_fork,
};
use crate::store::catalog::entries::{Batch, SessionEntry, StoredEvents, plan_batch};
use crate::store::inner::Inner;
use crate::store::options;
use crate::store::writer::tail::Tail;
use crate::{Error, Result};

/// How a new session's first events are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seed {
    /// As given, every event, nothing added: a session restored (import, DSH materializing).
    Exact,
    /// A seed: `session/end-seed` is appended unless it ends with one (DSH's `create`).
    EndMarked,
}

impl Inner {
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(super) fn notify(&self) {
        self.changes.notify();
    }

    /// The write tail's helper finished and stopped (`Tail::quiesce`): before the writer lock
    /// is released.
    pub(super) fn quiesce(&self) {
        if let Some(tail) = self.tail.lock().as_mut() {
            tail.quiesce();
        }
    }

    pub(super) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.poison.check()
    }

    pub(super) fn poison<T>(&self, e: Error) -> Result<T> {
        self.poison.set(e)
    }

    /// Encodes and writes one record; returns its LSN and the log end after it, and leaves
    /// the events' `(offset, len)` in their payload in `tail.offsets`. Poisons the store on a
    /// write error.
    pub(super) fn write_record(
        &self,
        tail: &mut Tail,
        body: &BodyRef<'_>,
        now: &Now<'_>,
    ) -> Result<(u64, u64)> {
        // Checked under the tail lock: an append that waited for it while another write
        // failed must not write after that failure (a failed roll left the tail behind).
        self.poison.check()?;
        // The payload is encoded after room for the frame header, into the tail's reused
        // buffer: no allocation and no copy per record.
        let mut frame = std::mem::take(&mut tail.frame);
        begin_frame(&mut frame);
        tail.offsets.clear();
        let result = self.encode_and_write(tail, body, &mut frame, now);
        // A huge record's buffer is not kept for the records after it.
        if frame.capacity() <= 1 << 20 {
            tail.frame = frame;
        }
        result
    }

    fn encode_and_write(
        &self,
        tail: &mut Tail,
        body: &BodyRef<'_>,
        frame: &mut Vec<u8>,
        now: &Now<'_>,
    ) -> Result<(u64, u64)> {
        // Only a part past its 4 GiB length field fails to encode.
        let kind =
            encode_into(body, frame, &mut tail.offsets).map_err(|_| Error::RecordTooLarge {
                bytes: payload_len(frame),
                limit: self.options.record_bytes_max,
            })?;
        if payload_len(frame) > self.options.record_bytes_max as usize {
            return Err(Error::RecordTooLarge {
                bytes: payload_len(frame),
                limit: self.options.record_bytes_max,
            });
        }
        for (o, _) in &mut tail.offsets {
            *o = payload_offset(*o);
        }
        match tail.write_frame(&*self.storage, &self.segments, kind, frame, now) {
            Ok(lsn) => {
                // A roll changed the active file: group commit syncs the new one.
                self.commit.written(tail);
                Ok((lsn, tail.next_lsn))
            }
            Err(e) => self.poison(e),
        }
    }

    /// After a write: wake subscribers, sync if the durability asks, checkpoint if due.
    pub(super) fn after_write(&self, end_lsn: u64) -> Result<()> {
        self.notify();
        if self.options.durability == options::Durability::Sync {
            self.sync_to(end_lsn)?;
        }
        let due = end_lsn >= self.checkpoint_due_lsn.load(Ordering::Relaxed);
        if due {
            self.check_writable()?;
            self.checkpoint_due()?;
        }
        Ok(())
    }

    /// Group commit (`commit.rs`): returns once everything before `lsn` is durable.
    pub(super) fn sync_to(&self, lsn: u64) -> Result<()> {
        self.commit.sync_to(lsn, &self.poison)
    }

    /// The skeleton every write path shares: the store writable, the tail lock held while
    /// `write` plans, writes one record and applies it (its other locks dropped with it),
    /// then — the lock released — what follows a record ending at the LSN `write` returns
    /// (`None`: nothing was written).
    fn write_with<R>(
        &self,
        write: impl FnOnce(&mut Tail, &Now<'_>) -> Result<(R, Option<u64>)>,
    ) -> Result<R> {
        self.check_writable()?;
        let mut tail_guard = self.tail.lock();
        let tail = tail_guard.as_mut().ok_or(Error::ReadOnly)?;
        let now = Now::new(&self.options.clock);
        let (out, end) = write(tail, &now)?;
        drop(tail_guard);
        if let Some(end) = end {
            self.after_write(end)?;
        }
        Ok(out)
    }

    pub(super) fn create(
        &self,
        header: SessionHeader,
        events: Vec<Event>,
        seed: Seed,
    ) -> Result<u64> {
        // Closed before invalid, as every call says.
        self.check_writable()?;
        header.validate()?;
        self.write_with(|tail, now| self.create_in(tail, now, header, events, seed))
    }

    fn create_in(
        &self,
        tail: &mut Tail,
        now: &Now<'_>,
        header: SessionHeader,
        mut events: Vec<Event>,
        seed: Seed,
    ) -> Result<(u64, Option<u64>)> {
        let id = header.id.clone();
        if self.catalog.read().sessions.contains_key(&id) {
            return Err(Error::SessionExists { id });
        }
        if seed == Seed::EndMarked {
            let last = events.last().map(Event::event_type);
            let marker = end_seed_after(last, events.len() as u64, now.get());
            events.extend(marker);
        }
        let source = StoredEvents {
            segments: &self.segments,
            locs: None,
            batch: &events,
        };
        let mut state = SessionState::new();
        plan_batch(&id, &state, &source, &events, &self.options.limits)?
            .commit(&mut state, &events);
        let header_json = header.to_json();
        let (lsn, end) = self.write_record(
            tail,
            &BodyRef::Create {
                session: &id,
                header_json: &header_json,
                events: &events,
            },
            now,
        )?;
        let mut locs = crate::store::catalog::locations::Locations::default();
        tail.push_locations(lsn, |l| locs.push(l));
        let len = state.next_seq();
        self.catalog
            .write()
            .insert_created(header, state, locs, None, lsn);
        Ok((len, Some(end)))
    }

    pub(super) fn write_events(
        &self,
        session: &str,
        make: impl FnOnce(&SessionEntry, &Now<'_>) -> Result<Batch>,
    ) -> Result<std::ops::Range<u64>> {
        self.write_with(|tail, now| self.write_events_in(tail, now, session, make))
    }

    fn write_events_in(
        &self,
        tail: &mut Tail,
        now: &Now<'_>,
        session: &str,
        make: impl FnOnce(&SessionEntry, &Now<'_>) -> Result<Batch>,
    ) -> Result<(std::ops::Range<u64>, Option<u64>)> {
        // Upgradable, then upgraded for the commit: one lock taken instead of a read lock and
        // a write lock (their four locked operations were about 40 % of this function's own
        // time in `perf annotate`). Every other catalog writer holds the tail lock too, so the upgrade never
        // waits for one; readers go on beside it until the upgrade.
        let cat = self.catalog.upgradable_read();
        let (events, planned, first) = {
            let entry = cat.get(session)?;
            let events = make(entry, now)?;
            let source = StoredEvents {
                segments: &self.segments,
                locs: Some(&entry.locs),
                batch: &events,
            };
            let planned = plan_batch(
                session,
                &entry.state,
                &source,
                &events,
                &self.options.limits,
            )?;
            (events, planned, entry.state.next_seq())
        };
        if events.is_empty() {
            return Ok((first..first, None));
        }
        let (lsn, end) = self.write_record(
            tail,
            &BodyRef::Append {
                session,
                events: &events,
            },
            now,
        )?;
        let range = first..first + events.len() as u64;
        let mut cat = parking_lot::RwLockUpgradableReadGuard::upgrade(cat);
        if let Some(entry) = cat.sessions.get_mut(session) {
            planned.commit(&mut entry.state, &events);
            tail.push_locations(lsn, |l| entry.locs.push(l));
            // Where the batch crosses into the catalog: one location per event, the session's
            // length its next seq.
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
        Ok((range, Some(end)))
    }

    pub(super) fn fork(&self, source: &str, spec: ForkSpec) -> Result<String> {
        self.write_with(|tail, now| self.fork_in(tail, now, source, spec))
    }

    fn fork_in(
        &self,
        tail: &mut Tail,
        now: &Now<'_>,
        source: &str,
        spec: ForkSpec,
    ) -> Result<(String, Option<u64>)> {
        let mut cat = self.catalog.write();
        let plan = plan_fork(
            source,
            cat.sessions.get(source).map(|p| (&p.header, &p.state)),
            &spec,
            |id| cat.sessions.contains_key(id),
            now.get(),
        )?;
        let Some((base, locs)) = cat.fork_base(
            &self.segments,
            &plan.child_id,
            source,
            plan.inherited,
            &self.options.limits,
        )?
        else {
            return Err(Error::SessionNotFound {
                id: source.to_owned(),
            });
        };
        let last = match plan.inherited.checked_sub(1) {
            Some(seq) => StoredEvents {
                segments: &self.segments,
                locs: Some(&locs),
                batch: &[],
            }
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
        let stored = StoredEvents {
            segments: &self.segments,
            locs: Some(&locs),
            batch: &marker,
        };
        let mut state = base;
        plan_batch(&child_id, &state, &stored, &marker, &self.options.limits)?
            .commit(&mut state, &marker);
        let header_json = header.to_json();
        let body = BodyRef::Fork {
            child: &child_id,
            header_json: &header_json,
            parent: source,
            inherited,
            events: &marker,
        };
        let (lsn, end) = self.write_record(tail, &body, now)?;
        let mut locs = locs;
        tail.push_locations(lsn, |l| locs.push(l));
        cat.insert_created(
            header,
            state,
            locs,
            Some((source.to_owned(), inherited)),
            lsn,
        );
        Ok((child_id, Some(end)))
    }

    pub(super) fn delete(&self, session: &str) -> Result<()> {
        let gone = self.write_with(|tail, now| {
            if !self.catalog.read().sessions.contains_key(session) {
                return Err(Error::SessionNotFound {
                    id: session.to_owned(),
                });
            }
            let (_, end) = self.write_record(tail, &BodyRef::Delete { session }, now)?;
            let gone = self.catalog.write().delete(session);
            Ok((gone, Some(end)))
        })?;
        // What the deletion left dead, for the background compaction (outside the locks).
        if self.options.compaction.is_some()
            && let Some(entry) = gone
        {
            let dead = crate::store::maintenance::retention::own_bytes_of(self, &entry);
            crate::store::maintenance::background::left_dead(self, &dead);
        }
        Ok(())
    }
}

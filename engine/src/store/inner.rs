//! An open store: one field per owner — the writer, the catalog, the checkpointer,
//! maintenance — beside the storage, the segment list and the options they share. The one
//! `impl Inner`: each write sequenced through the owners (`docs/DESIGN.md` §3.2), a
//! checkpoint handed the parts it reads; the [`Store`](super::api::Store) API wraps it.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::Result;
use crate::codec::checkpoint::CheckpointMeta;
use crate::event::Event;
use crate::limits::Now;
use crate::model::{EventChecked, ForkSpec, SessionHeader};
use crate::storage::{LockGuard, Storage};
use crate::store::catalog::Catalog;
use crate::store::catalog::entries::{Batch, Prechecked, SessionEntry};
use crate::store::catalog::write::{Seed, WriteTo};
use crate::store::checkpoint::background::DueCheckpoints;
use crate::store::checkpoint::{CheckpointKind, Checkpointer, Parts};
use crate::store::log::segments::SegmentList;
use crate::store::maintenance::Maintenance;
use crate::store::options::{Durability, StoreOptions};
use crate::store::report::OpenReport;
use crate::store::writer::seal::Target;
use crate::store::writer::tail::Tail;
use crate::store::writer::{Attempt, Writer};

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) options: StoreOptions,
    /// The writer lock (`None` when read-only, and once closed).
    pub(crate) lock: Mutex<Option<LockGuard>>,
    pub(crate) segments: SegmentList,
    pub(crate) writer: Writer,
    pub(crate) catalog: Catalog,
    pub(crate) checkpointer: Checkpointer,
    /// The background work (retention, compaction by policy) and one compaction at a time.
    pub(crate) maintenance: Maintenance,
    pub(crate) report: OpenReport,
}

impl Inner {
    /// Runs one catalog write through the writer, then what follows its record.
    #[inline]
    fn write<R>(
        &self,
        write: impl FnOnce(&Catalog, WriteTo<'_>) -> Result<(R, Option<u64>)>,
    ) -> Result<R> {
        let (out, end) = self.writer.write_with(&self.options.clock, |tail, now| {
            write(&self.catalog, self.write_to(tail, now))
        })?;
        if let Some(end) = end {
            self.after_write(end)?;
        }
        Ok(out)
    }

    fn write_to<'a>(&'a self, tail: &'a mut Tail, now: &'a Now<'a>) -> WriteTo<'a> {
        WriteTo {
            writer: &self.writer,
            tail,
            target: Target {
                storage: &*self.storage,
                segments: &self.segments,
                record_bytes_max: self.options.record_bytes_max,
            },
            limits: &self.options.limits,
            now,
        }
    }

    /// After a write (the tail lock released): wake subscribers, sync if the durability
    /// asks, checkpoint if due.
    fn after_write(&self, end_lsn: u64) -> Result<()> {
        self.writer.notify();
        if self.options.durability == Durability::Sync {
            self.writer.sync_to(end_lsn)?;
        }
        if self.checkpointer.is_due(end_lsn) && !self.checkpointer.hand_off(end_lsn) {
            DueCheckpoints::take_due_checkpoint(self)?;
        }
        Ok(())
    }

    /// After a write that waits for nothing: subscribers woken, a due checkpoint handed to
    /// the checkpointer's thread — or, with no thread to take it now, left due for the next
    /// append that may wait.
    fn after_write_at_once(&self, end_lsn: u64) {
        self.writer.notify();
        if self.checkpointer.is_due(end_lsn) {
            self.checkpointer.hand_off(end_lsn);
        }
    }

    /// Whether an append can be written without waiting at all: a `Sync` append waits for
    /// its sync, and with inline checkpoints an append may write one.
    pub(crate) fn appends_at_once(&self) -> bool {
        self.options.durability == Durability::Buffered && self.checkpointer.hands_off()
    }

    /// [`Inner::write_events`] of complete events where nothing waits
    /// ([`Catalog::try_append`]); the events handed back otherwise.
    pub(crate) fn try_append_events(
        &self,
        session: &str,
        events: Vec<Event>,
        checked: Prechecked,
    ) -> Result<Attempt<std::ops::Range<u64>, Vec<Event>>> {
        if !self.appends_at_once() {
            return Ok(Attempt::WouldWait(events));
        }
        let batch = Batch { events, checked };
        let written =
            self.writer
                .try_write_with(&self.options.clock, batch, |batch, tail, now| {
                    self.catalog
                        .try_append(self.write_to(tail, now), session, batch)
                })?;
        Ok(match written {
            Attempt::WouldWait(batch) => Attempt::WouldWait(batch.events),
            Attempt::Done(appended) => match appended? {
                Attempt::WouldWait(events) => Attempt::WouldWait(events),
                Attempt::Done((range, end)) => {
                    if let Some(end) = end {
                        self.after_write_at_once(end);
                    }
                    Attempt::Done(range)
                }
            },
        })
    }

    /// The checkpointer's thread is to checkpoint this store (held weakly: the thread keeps
    /// no store open).
    pub(crate) fn attach_checkpointer(self: &Arc<Self>) {
        let weak: std::sync::Weak<dyn DueCheckpoints> = Arc::downgrade(self) as _;
        self.checkpointer.attach(weak);
    }

    pub(crate) fn create(
        &self,
        header: SessionHeader,
        events: Vec<Event>,
        seed: Seed,
    ) -> Result<u64> {
        // Closed before invalid, as every call says.
        self.writer.check_writable()?;
        header.validate()?;
        self.write(|catalog, to| catalog.create(to, header, events, seed))
    }

    pub(crate) fn write_events(
        &self,
        session: &str,
        make: impl FnOnce(&SessionEntry, &Now<'_>) -> Result<Batch>,
    ) -> Result<std::ops::Range<u64>> {
        self.write(|catalog, to| catalog.append(to, session, make))
    }

    // Inlined into `Store::append`, as `write` (as both were before the store grew
    // `try_append_events`): called, the event and its checks (~200 bytes) were copied by
    // `memmove` on the way in, ~15 ns of an event (PERFORMANCE.md).
    #[inline]
    pub(crate) fn append_one(
        &self,
        session: &str,
        event: Event,
        checked: Option<EventChecked>,
    ) -> Result<u64> {
        self.write(|catalog, to| catalog.append_one(to, session, event, checked))
    }

    pub(crate) fn fork(&self, source: &str, spec: ForkSpec) -> Result<String> {
        self.write(|catalog, to| catalog.fork(to, source, spec))
    }

    pub(crate) fn delete(&self, session: &str) -> Result<()> {
        let gone = self.write(|catalog, to| catalog.delete(to, session))?;
        // What the deletion left dead, for the background compaction (outside the locks).
        if let Some(policy) = self.options.compaction
            && let Some(entry) = gone
        {
            let dead = entry.own_bytes(&self.segments);
            let end_lsn = self.writer.end().lsn;
            self.maintenance.left_dead(policy, &dead, |first| {
                // A file that cannot be measured counts as empty: the compaction it may start
                // reads the log and reports the error.
                self.segments.record_bytes_of(first, end_lsn).unwrap_or(0)
            });
        }
        Ok(())
    }

    /// What a checkpoint reads and writes.
    fn parts(&self) -> Parts<'_> {
        Parts {
            storage: &*self.storage,
            segments: &self.segments,
            writer: &self.writer,
            catalog: &self.catalog,
        }
    }

    /// A checkpoint of `kind` now, the store writable.
    pub(crate) fn checkpoint(&self, kind: CheckpointKind) -> Result<Option<CheckpointMeta>> {
        self.writer.check_writable()?;
        self.checkpoint_unchecked(kind)
    }

    /// A checkpoint of `kind` now, also after `close` marked the store closed.
    pub(crate) fn checkpoint_unchecked(
        &self,
        kind: CheckpointKind,
    ) -> Result<Option<CheckpointMeta>> {
        self.checkpointer.take(self.parts(), kind)
    }

    /// The event `seq` of `session`, if it has one.
    pub(crate) fn event_at(&self, session: &str, seq: u64) -> Result<Option<Event>> {
        self.catalog.event_at(&self.segments, session, seq)
    }
}

impl DueCheckpoints for Inner {
    /// The checkpoint an append found due (on the appender, or on the checkpointer's
    /// thread): none once the store is closed or poisoned, nor while another is being
    /// written.
    fn take_due_checkpoint(&self) -> Result<()> {
        self.writer.check_writable()?;
        self.checkpointer.take_due(self.parts())
    }

    fn checkpoint_failed(&self, e: String) {
        self.maintenance.note_error(e);
    }
}

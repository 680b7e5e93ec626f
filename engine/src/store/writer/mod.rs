//! The writer (`docs/DESIGN.md` §3.2): the append tail, frame sealing, group commit, the
//! helper thread, poisoning and the change signal. Its state is private: the catalog plans
//! and commits a batch around [`Writer::seal`], the checkpointer and compaction take the tail
//! through [`Writer::tail`], and every other part asks it where the log ends.

pub(crate) mod changes;
pub(crate) mod commit;
pub(crate) mod poison;
pub(crate) mod prefault;
pub(crate) mod seal;
pub(crate) mod syncs;
pub(crate) mod tail;

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::codec::frame::RecordLink;
use crate::limits::{Clock, Now};
use crate::store::log::record_at::{EpochWalk, epoch_at};
use crate::store::log::segments::SegmentList;
use crate::{Error, Result};
use changes::Changes;
use commit::GroupCommit;
use poison::Poison;
use tail::Tail;

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The one writer: takes the lock, cuts a torn tail, writes.
    Write,
    /// A reader (beside a writer, or alone): takes no lock, changes nothing.
    Read,
}

/// A write that waits for nothing: done, or — where it would have waited for a lock another
/// write holds, the file system, or a sync — not started, its input handed back.
#[derive(Debug)]
pub(crate) enum Attempt<R, T> {
    /// Written: what the write returned.
    Done(R),
    /// Nothing written: the input, for the write that may wait.
    WouldWait(T),
}

/// Where the log ends: the position after its last record, and that record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogEnd {
    /// The LSN after the last record (sparse after a compaction: a position, not a size).
    pub(crate) lsn: u64,
    /// The last record, `None` in an empty log.
    pub(crate) last_record: Option<RecordLink>,
}

/// The writer: one per open store (a read-only store's writer writes nothing and only knows
/// where its last scan stopped).
#[derive(Debug)]
pub(crate) struct Writer {
    access: Access,
    /// The write path: held while a record is planned, written and applied. `None` when
    /// read-only.
    tail: Mutex<Option<Tail>>,
    /// Read-only stores: where the last scan stopped (a writer's end is its tail's).
    scanned: Mutex<LogEnd>,
    /// Group commit: the durable log end, the active file, the round in progress.
    commit: GroupCommit,
    /// Set by the first failed write or sync; checked under `tail` by every write.
    poison: Poison,
    closed: AtomicBool,
    /// What subscribers wait on: bumped after every record.
    changes: Changes,
    /// The last walk for the epoch in force at a position (`Store::last_record`): the next
    /// one in the same segment goes on from there.
    epoch_walk: Mutex<Option<EpochWalk>>,
}

impl Writer {
    /// A writer over the tail recovery left (`None`: read-only), the log ending at `end`.
    pub(crate) fn new(tail: Option<Tail>, end: LogEnd) -> Self {
        debug_assert!(
            tail.as_ref().is_none_or(|t| t.next_lsn == end.lsn),
            "the tail ends where recovery stopped"
        );
        Self {
            access: if tail.is_some() {
                Access::Write
            } else {
                Access::Read
            },
            commit: GroupCommit::new(tail.as_ref()),
            tail: Mutex::new(tail),
            scanned: Mutex::new(end),
            poison: Poison::default(),
            closed: AtomicBool::new(false),
            changes: Changes::default(),
            epoch_walk: Mutex::new(None),
        }
    }

    pub(crate) fn access(&self) -> Access {
        self.access
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the store closed; `true` if it already was.
    pub(crate) fn close(&self) -> bool {
        self.closed.swap(true, Ordering::AcqRel)
    }

    /// `ReadOnly`, `Closed` or `Poisoned` when nothing may be written.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.access == Access::Read {
            return Err(Error::ReadOnly);
        }
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.poison.check()
    }

    /// `Poisoned` once a write or sync has failed.
    pub(crate) fn check_poison(&self) -> Result<()> {
        self.poison.check()
    }

    /// Records a failed write or sync (the store refuses writes from now on); returns `e`.
    pub(crate) fn poison<T>(&self, e: Error) -> Result<T> {
        self.poison.set(e)
    }

    /// Wakes subscribers: something was written, read or closed.
    pub(crate) fn notify(&self) {
        self.changes.notify();
    }

    pub(crate) fn changes(&self) -> &Changes {
        &self.changes
    }

    /// The write tail, locked: the one lock every write, checkpoint and compaction step that
    /// must see the log's end unchanged holds.
    pub(crate) fn tail(&self) -> MutexGuard<'_, Option<Tail>> {
        self.tail.lock()
    }

    /// Where the log ends now (a writer's tail, or where a reader's last scan stopped).
    pub(crate) fn end(&self) -> LogEnd {
        match self.tail.lock().as_ref() {
            Some(t) => LogEnd {
                lsn: t.next_lsn,
                last_record: t.last_record,
            },
            None => *self.scanned.lock(),
        }
    }

    /// Where the log ends, and this open's epoch when it wrote the newest records.
    pub(crate) fn end_and_epoch(&self) -> (Option<crate::codec::frame::RecordLink>, Option<u64>) {
        match self.tail.lock().as_ref() {
            Some(t) => (t.last_record, t.announced().then(|| t.epoch().id)),
            None => (self.scanned.lock().last_record, None),
        }
    }

    /// The epoch in force at `lsn` (`record_at::epoch_at`), going on from the last walk.
    pub(crate) fn epoch_at(&self, segments: &SegmentList, lsn: u64) -> Option<u64> {
        let mut last = self.epoch_walk.lock();
        let walk = epoch_at(segments, lsn, *last)?;
        *last = Some(walk);
        walk.epoch
    }

    /// A reader's scan position, locked while a refresh moves it on.
    pub(crate) fn scanned(&self) -> MutexGuard<'_, LogEnd> {
        self.scanned.lock()
    }

    /// The tail's helper finished and stopped (`Tail::quiesce`): before the lock is released.
    /// Unless a write or sync failed, the space allocated ahead is cut off too
    /// (`Tail::trim_ahead`): a closed store holds no preallocated zeros.
    pub(crate) fn quiesce(&self) -> Result<()> {
        let mut tail = self.tail.lock();
        let Some(tail) = tail.as_mut() else {
            return Ok(());
        };
        tail.quiesce();
        if self.poison.check().is_ok() {
            return tail.trim_ahead();
        }
        Ok(())
    }

    /// Group commit: returns once everything before `lsn` is durable.
    pub(crate) fn sync_to(&self, lsn: u64) -> Result<()> {
        self.commit.sync_to(lsn, &self.poison)
    }

    /// After the tail moved (a record written, a roll): its end, and its active file if a
    /// roll changed it, published for group commit.
    pub(crate) fn publish(&self, tail: &Tail) {
        self.commit.written(tail);
    }

    /// The skeleton every write shares: the store writable, the tail lock held while `write`
    /// plans, writes one record and applies it; returns what it returned and the log end
    /// after its record (`None`: nothing was written), the lock released.
    pub(crate) fn write_with<R>(
        &self,
        clock: &Clock,
        write: impl FnOnce(&mut Tail, &Now<'_>) -> Result<(R, Option<u64>)>,
    ) -> Result<(R, Option<u64>)> {
        self.check_writable()?;
        let mut guard = self.tail.lock();
        let tail = guard.as_mut().ok_or(Error::ReadOnly)?;
        let now = Now::new(clock);
        write(tail, &now)
    }

    /// [`Writer::write_with`] when the tail lock is free now; `input` handed back when another
    /// write holds it.
    pub(crate) fn try_write_with<T, R>(
        &self,
        clock: &Clock,
        input: T,
        write: impl FnOnce(T, &mut Tail, &Now<'_>) -> R,
    ) -> Result<Attempt<R, T>> {
        self.check_writable()?;
        let Some(mut guard) = self.tail.try_lock() else {
            return Ok(Attempt::WouldWait(input));
        };
        let tail = guard.as_mut().ok_or(Error::ReadOnly)?;
        let now = Now::new(clock);
        Ok(Attempt::Done(write(input, tail, &now)))
    }
}

//! Group commit (`docs/DESIGN.md` §3.2): the appender that finds no sync running becomes the
//! leader, reads the log end *then*, and makes everything written up to it durable with one
//! `fdatasync`, without holding any lock (writers keep encoding and writing meanwhile).
//! Followers wait for the leader's round and return as soon as it covers them; the first one
//! not covered leads the next round. After a failed `fdatasync` every waiter not already
//! covered gets `Poisoned` (fsyncgate: the failed sync may have dropped dirty pages that a
//! later sync would report as written).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::Result;
use crate::storage::StorageFile;
use crate::store::writer::poison::Poison;
use crate::store::writer::syncs::LogSyncs;
use crate::store::writer::tail::Tail;

/// The file group commit syncs, and its path for errors.
type ActiveFile = (Arc<dyn StorageFile>, String);

#[derive(Debug, Default)]
struct Round {
    /// Everything before this LSN is durable.
    durable: u64,
    /// A leader is in `fdatasync` now.
    leader: bool,
}

/// The state group commit shares between appenders.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    round: Mutex<Round>,
    done: Condvar,
    /// The log end after the last record written (set under the tail lock, read lock-free by
    /// the leader after it takes the sync role).
    written: AtomicU64,
    /// The active segment's file (replaced under the tail lock at a roll; innermost lock).
    active: Mutex<Option<ActiveFile>>,
    /// The first LSN of the segment in `active` (a roll is seen without taking the lock).
    active_first_lsn: AtomicU64,
    /// The turn to sync the log, shared with the tail's rolls (`writer/syncs.rs`).
    syncs: Arc<LogSyncs>,
}

impl GroupCommit {
    /// Everything up to the tail's position is durable (what recovery read, or nothing for a
    /// read-only store).
    pub(crate) fn new(tail: Option<&Tail>) -> Self {
        let end = tail.map_or(0, |t| t.next_lsn);
        Self {
            round: Mutex::new(Round {
                durable: end,
                leader: false,
            }),
            done: Condvar::new(),
            written: AtomicU64::new(end),
            active: Mutex::new(
                tail.and_then(Tail::active_segment)
                    .map(|s| (Arc::clone(&s.file), s.path.clone())),
            ),
            active_first_lsn: AtomicU64::new(
                tail.and_then(Tail::active_segment)
                    .map_or(u64::MAX, |s| s.first_lsn),
            ),
            // A read-only store syncs nothing: its own turn is never taken.
            syncs: tail.map_or_else(Arc::default, |t| Arc::clone(t.syncs())),
        }
    }

    /// After a record is written, under the tail lock: the active file (a roll changed it)
    /// and the log end, published after the bytes so a sync that reads it covers them.
    pub(crate) fn written(&self, tail: &Tail) {
        // Checked lock-free; the slot is locked only after a roll (writers hold the tail).
        // Between a roll and the next write there is no active file: the sealed one, synced
        // whole by the roll, stays in the slot.
        if let Some(seg) = tail.active_segment()
            && self.active_first_lsn.load(Ordering::Relaxed) != seg.first_lsn
        {
            *self.active.lock() = Some((Arc::clone(&seg.file), seg.path.clone()));
            self.active_first_lsn
                .store(seg.first_lsn, Ordering::Relaxed);
        }
        self.written.store(tail.next_lsn, Ordering::Release);
    }

    /// Returns once everything before `lsn` is durable.
    ///
    /// # Errors
    /// The sync's error (which poisons the store), `Poisoned`.
    pub(crate) fn sync_to(&self, lsn: u64, poison: &Poison) -> Result<()> {
        let mut round = self.round.lock();
        loop {
            if round.durable >= lsn {
                return Ok(());
            }
            poison.check()?;
            if round.leader {
                self.done.wait(&mut round);
                continue;
            }
            round.leader = true;
            drop(round);
            // The end first, then the file: a roll in between synced the old segment whole
            // before the new one existed, so syncing the newer file still covers `written`.
            let written = self.written.load(Ordering::Acquire);
            let Some((file, path)) = self.active.lock().clone() else {
                // A read-only store writes nothing: there is nothing to make durable.
                round = self.round.lock();
                round.leader = false;
                self.done.notify_all();
                return Ok(());
            };
            // In turn with a roll's sync of the same file: a failure the roll's sync took
            // is recorded before this one starts, and this one then refuses.
            let result = self.syncs.sync(file.as_ref(), &path);
            round = self.round.lock();
            round.leader = false;
            if let Err(e) = result {
                self.done.notify_all();
                return poison.set(e);
            }
            // A failure another path saw meanwhile (a roll's sync) wins over this success.
            if !poison.is_set() {
                round.durable = round.durable.max(written);
            }
            self.done.notify_all();
        }
    }
}

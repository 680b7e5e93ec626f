//! The checkpointer (`docs/DESIGN.md` §3.5): when a checkpoint is due, and taking one — the
//! changed sessions (or all, every `checkpoint_merge_every`-th time) encoded as of one log
//! position, the log synced up to that position, the file written, then chains older than
//! the previous full checkpoint dropped.
//!
//! Only the encoding holds the writer lock and the catalog: the log's sync and the file's
//! write, rename and directory sync run with both released, so appends and reads go on beside
//! them. Checkpoints stay one at a time and in order under the chain's lock, taken first.

pub(crate) mod background;
pub(crate) mod chain;
pub(crate) mod files;
mod indexed;
pub(crate) mod load;
mod pages;
pub(crate) mod state;
pub(crate) mod view;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::Result;
use crate::codec::checkpoint::CheckpointMeta;
use crate::storage::Storage;
use crate::store::catalog::Catalog;
use crate::store::log::segments::SegmentList;
use crate::store::options::CheckpointWrites;
use crate::store::writer::Writer;
pub(crate) use files::CheckpointKind;
use state::CheckpointState;

/// The checkpointer of an open store: the chain's state and when the next one is due.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    /// The log end at which a checkpoint is due: the last checkpoint's end (or the log end at
    /// open) plus the interval. A plain load per write (PERFORMANCE.md: counting the bytes
    /// instead was a locked add per record).
    due_lsn: AtomicU64,
    interval_bytes: u64,
    merge_every: u32,
    chain: Mutex<CheckpointState>,
    /// Which thread writes a due checkpoint.
    writes: CheckpointWrites,
    /// The thread that writes them under [`CheckpointWrites::Background`].
    worker: background::Worker,
}

/// What taking a checkpoint reads and writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) segments: &'a SegmentList,
    pub(crate) writer: &'a Writer,
    pub(crate) catalog: &'a Catalog,
}

impl Checkpointer {
    /// The chain an open left, the log ending at `end_lsn`.
    pub(crate) fn new(
        chain: CheckpointState,
        end_lsn: u64,
        interval_bytes: u64,
        merge_every: u32,
        writes: CheckpointWrites,
    ) -> Self {
        Self {
            due_lsn: AtomicU64::new(end_lsn.saturating_add(interval_bytes)),
            interval_bytes,
            merge_every,
            chain: Mutex::new(chain),
            writes,
            worker: background::Worker::default(),
        }
    }

    /// The store the background thread checkpoints (once it is built).
    pub(crate) fn attach(&self, store: std::sync::Weak<dyn background::DueCheckpoints>) {
        self.worker.attach(store);
    }

    /// An append found a checkpoint due at `end_lsn`: handed to the thread (and not due again
    /// for another interval, so the appends until it is taken do not ask again), or — inline,
    /// or with no thread — `false`, for the appender to take it.
    pub(crate) fn hand_off(&self, end_lsn: u64) -> bool {
        if self.writes == CheckpointWrites::Inline || !self.worker.ask() {
            return false;
        }
        self.due_lsn.store(
            end_lsn.saturating_add(self.interval_bytes),
            Ordering::Relaxed,
        );
        true
    }

    /// Whether a due checkpoint goes to the checkpointer's thread (else the appender that
    /// found it due writes it).
    pub(crate) fn hands_off(&self) -> bool {
        self.writes == CheckpointWrites::Background
    }

    /// Ends the background thread after the checkpoint it is writing: before the last
    /// checkpoint of a close, and before the writer lock goes.
    pub(crate) fn stop(&self) {
        self.worker.stop();
    }

    /// Whether the log ending at `end_lsn` is past the position a checkpoint is due at.
    pub(crate) fn is_due(&self, end_lsn: u64) -> bool {
        end_lsn >= self.due_lsn.load(Ordering::Relaxed)
    }

    /// Where the chain stands (generation and covered position), for `stats`.
    pub(crate) fn chain(&self) -> MutexGuard<'_, CheckpointState> {
        self.chain.lock()
    }

    /// The checkpoint an append found due, unless one is being written already (it covers
    /// nearly as much; the next append past the next due position asks again): an appender
    /// never waits for another's checkpoint.
    pub(crate) fn take_due(&self, parts: Parts<'_>) -> Result<()> {
        match self.chain.try_lock() {
            Some(chain) => self
                .take_holding(parts, chain, CheckpointKind::Delta)
                .map(|_| ()),
            None => Ok(()),
        }
    }

    /// Takes a checkpoint of `kind` (a delta may become full: the chain's rule); `None` when
    /// nothing changed since the last one.
    pub(crate) fn take(
        &self,
        parts: Parts<'_>,
        kind: CheckpointKind,
    ) -> Result<Option<CheckpointMeta>> {
        // The chain's lock before the writer lock: a checkpoint waiting for another one
        // holds nothing appends need.
        let chain = self.chain.lock();
        self.take_holding(parts, chain, kind)
    }

    fn take_holding(
        &self,
        parts: Parts<'_>,
        mut chain: MutexGuard<'_, CheckpointState>,
        asked: CheckpointKind,
    ) -> Result<Option<CheckpointMeta>> {
        let Parts {
            storage,
            segments,
            writer,
            catalog,
        } = parts;
        let tail_guard = writer.tail();
        let Some(tail) = tail_guard.as_ref() else {
            return Ok(None);
        };
        // Under the tail lock, as every write: nothing is checkpointed after a failure.
        writer.check_poison()?;
        if chain.nothing_new(tail.next_lsn) && asked == CheckpointKind::Delta {
            return Ok(None);
        }
        let kind = if chain.next_is_full(self.merge_every) {
            CheckpointKind::Full
        } else {
            asked
        };
        let meta = CheckpointMeta {
            generation: chain.generation + 1,
            base: match kind {
                CheckpointKind::Full => 0,
                CheckpointKind::Delta => chain.generation,
            },
            covered_lsn: tail.next_lsn,
            last_record: tail.last_record,
        };
        // The catalog as of `covered_lsn`: every write applies its record under the tail
        // lock held here. What changes after it is marked for the next delta.
        let bytes = {
            let mut cat = catalog.write();
            let encoded = files::encode(&cat, kind, meta.generation)?;
            cat.mark_checkpointed(encoded.written);
            encoded.body
        };
        // The link names the record the checkpoint ends at: an intact frame with that
        // checksum, ending exactly where the checkpoint says, or one compaction left out
        // (what an open confirms).
        debug_assert!(
            matches!(chain::confirm(segments, &meta), chain::Confirmation::Holds),
            "a checkpoint link that is not the record it names"
        );
        // Due again from here: the appends that go on meanwhile do not start another.
        self.due_lsn.store(
            meta.covered_lsn.saturating_add(self.interval_bytes),
            Ordering::Relaxed,
        );
        drop(tail_guard);
        // Never ahead of the durable log: sync what the checkpoint covers first (through
        // group commit, so no two syncs of the log ever run at once). A failure here or in
        // the write poisons the store: the sessions marked clean above are then written by
        // no later checkpoint of this open, and a reopen recovers from what is durable.
        writer.sync_to(meta.covered_lsn)?;
        if let Err(e) = files::write(storage, &meta, &bytes) {
            return writer.poison(e);
        }
        let obsolete_below = chain.after_write(&meta, kind == CheckpointKind::Full);
        // The new index becomes the sessions not decoded: the next delta's slots name files
        // of this chain only, and sessions left clean go back to their mapped form. Failing
        // that, the next delta could name a file outside its chain: the store stops writing.
        if let Err(e) = files::chain_index(storage, chain.members())
            .and_then(|cold| catalog.write().adopt(cold))
        {
            return writer.poison(e);
        }
        if let Some(keep_from) = obsolete_below {
            // The chain no longer needs them; one left behind by a failure here is harmless
            // (an open takes the newest whole chain) and is removed by the next checkpoint,
            // so the append that found this checkpoint due is not failed for it.
            let _ = files::remove(storage, files::Older::Than(keep_from));
        }
        Ok(Some(meta))
    }
}

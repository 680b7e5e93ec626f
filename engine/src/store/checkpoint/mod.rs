//! Taking checkpoints (`docs/DESIGN.md` §3.5): the changed sessions (or all, every
//! `checkpoint_merge_every`-th time) encoded as of one log position, the log synced up to that
//! position, the file written, then chains older than the previous full checkpoint dropped.
//!
//! Only the encoding holds the writer lock and the catalog: the log's sync and the file's
//! write, rename and directory sync run with both released, so appends and reads go on beside
//! them. Checkpoints stay one at a time and in order under the chain's lock, taken first.

pub(crate) mod chain;
pub(crate) mod files;
pub(crate) mod state;

use crate::Result;
use crate::codec::checkpoint::CheckpointMeta;
pub(super) use crate::store::checkpoint::files::CheckpointKind;
use crate::store::inner::Inner;

impl Inner {
    pub(super) fn checkpoint(&self, kind: CheckpointKind) -> Result<Option<CheckpointMeta>> {
        self.check_writable()?;
        self.checkpoint_unchecked(kind)
    }

    /// The checkpoint an append found due, unless one is being written already (it covers
    /// nearly as much; the next append past the next due position asks again): an appender
    /// never waits for another's checkpoint.
    pub(super) fn checkpoint_due(&self) -> Result<()> {
        match self.chain_state.try_lock() {
            Some(chain) => self
                .checkpoint_holding(chain, CheckpointKind::Delta)
                .map(|_| ()),
            None => Ok(()),
        }
    }

    pub(super) fn checkpoint_unchecked(
        &self,
        kind: CheckpointKind,
    ) -> Result<Option<CheckpointMeta>> {
        // The chain's lock before the writer lock: a checkpoint waiting for another one
        // holds nothing appends need.
        let chain = self.chain_state.lock();
        self.checkpoint_holding(chain, kind)
    }

    fn checkpoint_holding(
        &self,
        mut chain: parking_lot::MutexGuard<'_, crate::store::checkpoint::state::CheckpointState>,
        asked: CheckpointKind,
    ) -> Result<Option<CheckpointMeta>> {
        let tail_guard = self.tail.lock();
        let Some(tail) = tail_guard.as_ref() else {
            return Ok(None);
        };
        // Under the tail lock, as every write: nothing is checkpointed after a failure.
        self.poison.check()?;
        if chain.nothing_new(tail.next_lsn) && asked == CheckpointKind::Delta {
            return Ok(None);
        }
        // A delta becomes full every `checkpoint_merge_every`-th time (the chain's rule).
        let kind = if chain.next_is_full(self.options.checkpoint_merge_every) {
            CheckpointKind::Full
        } else {
            asked
        };
        let full = kind == CheckpointKind::Full;
        let meta = CheckpointMeta {
            generation: chain.generation + 1,
            base: if full { 0 } else { chain.generation },
            covered_lsn: tail.next_lsn,
            last_record: tail.last_record,
        };
        // The catalog as of `covered_lsn`: every write applies its record under the tail
        // lock held here. What changes after it is marked for the next delta.
        let bytes = {
            let mut cat = self.catalog.write();
            let bytes = files::encode(&cat, kind)?;
            for e in cat.sessions.values_mut() {
                e.checkpointed_locs = e.locs.len();
                e.dirty = false;
            }
            cat.deleted.clear();
            bytes
        };
        // The link names the record the checkpoint ends at: an intact frame with that
        // checksum, ending exactly where the checkpoint says, or one compaction left out
        // (what an open confirms).
        debug_assert!(
            matches!(
                crate::store::checkpoint::chain::confirm(&self.segments, &meta),
                crate::store::checkpoint::chain::Confirmation::Holds
            ),
            "a checkpoint link that is not the record it names"
        );
        // Due again from here: the appends that go on meanwhile do not start another.
        self.checkpoint_due_lsn.store(
            meta.covered_lsn
                .saturating_add(self.options.checkpoint_interval_bytes),
            std::sync::atomic::Ordering::Relaxed,
        );
        drop(tail_guard);
        // Never ahead of the durable log: sync what the checkpoint covers first (through
        // group commit, so no two syncs of the log ever run at once). A failure here or in
        // the write poisons the store: the sessions marked clean above are then written by
        // no later checkpoint of this open, and a reopen recovers from what is durable.
        self.sync_to(meta.covered_lsn)?;
        if let Err(e) = files::write(&*self.storage, &meta, &bytes) {
            return self.poison(e);
        }
        let obsolete_below = chain.after_write(&meta, full);
        if let Some(keep_from) = obsolete_below {
            // The chain no longer needs them; one left behind by a failure here is harmless
            // (an open takes the newest whole chain) and is removed by the next checkpoint,
            // so the append that found this checkpoint due is not failed for it.
            let _ = files::remove(&*self.storage, files::Older::Than(keep_from));
        }
        Ok(Some(meta))
    }
}

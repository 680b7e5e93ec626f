//! Taking checkpoints (`docs/DESIGN.md` §3.5): sync the log up to the position covered,
//! write the changed sessions (or all, every `checkpoint_merge_every`-th time), then drop
//! chains older than the previous full checkpoint.

use super::checkpoint;
use super::inner::Inner;
use crate::Result;
use crate::codec::checkpoint::{CheckpointMeta, checkpoint_path};

impl Inner {
    pub(super) fn checkpoint(&self, full: bool) -> Result<Option<CheckpointMeta>> {
        self.check_writable()?;
        self.checkpoint_unchecked(full)
    }

    pub(super) fn checkpoint_unchecked(&self, full: bool) -> Result<Option<CheckpointMeta>> {
        let tail_guard = self.tail.lock();
        let Some(tail) = tail_guard.as_ref() else {
            return Ok(None);
        };
        // Under the tail lock, as every write: nothing is checkpointed after a failure.
        self.poison.check()?;
        let mut chain = self.chain_state.lock();
        if chain.nothing_new(tail.next_lsn) && !full {
            return Ok(None);
        }
        // Never ahead of the durable log: sync what the checkpoint covers first (through
        // group commit, so no two syncs of the log ever run at once).
        self.sync_to(tail.next_lsn)?;
        let full = full || chain.next_is_full(self.options.checkpoint_merge_every);
        let mut cat = self.catalog.write();
        let bytes = checkpoint::encode(&cat, full)?;
        let meta = CheckpointMeta {
            generation: chain.generation + 1,
            base: if full { 0 } else { chain.generation },
            covered_lsn: tail.next_lsn,
            last_record: tail.last_record,
        };
        // The link names the record the checkpoint ends at: an intact frame with that
        // checksum, ending exactly where the checkpoint says, or one compaction left out
        // (what an open confirms).
        debug_assert!(
            matches!(
                super::chain::confirm(&self.segments, &meta),
                super::chain::Confirmation::Holds
            ),
            "a checkpoint link that is not the record it names"
        );
        if let Err(e) = checkpoint::write(&*self.storage, &meta, &bytes) {
            return self.poison(e);
        }
        for e in cat.sessions.values_mut() {
            e.checkpointed_locs = e.locs.len();
            e.dirty = false;
        }
        cat.deleted.clear();
        drop(cat);
        let obsolete_below = chain.after_write(&meta, full);
        self.checkpoint_due_lsn.store(
            meta.covered_lsn
                .saturating_add(self.options.checkpoint_interval_bytes),
            std::sync::atomic::Ordering::Relaxed,
        );
        if let Some(keep_from) = obsolete_below {
            for generation in checkpoint::list(&*self.storage)?
                .into_iter()
                .filter(|&g| g < keep_from)
            {
                let _ = self.storage.remove(&checkpoint_path(generation));
            }
        }
        Ok(Some(meta))
    }
}

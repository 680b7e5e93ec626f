//! Where the checkpoint chain stands (`docs/DESIGN.md` §3.5): the one owner of that state.
//! The open sets it up ([`CheckpointState::from_open`]), each checkpoint written moves it on
//! ([`CheckpointState::after_write`], by the [`Checkpointer`](super::Checkpointer)); a
//! read-only view built again (`open/refresh.rs`) takes a fresh open's; nothing else changes it.

use crate::codec::checkpoint::{BodyLayout, CheckpointMeta};

/// Where the checkpoint chain stands: set up once by the open ([`CheckpointState::from_open`])
/// and moved on by each checkpoint written ([`CheckpointState::after_write`]); nothing else
/// changes it.
#[derive(Debug, Default)]
pub(crate) struct CheckpointState {
    /// The newest generation there is (the next one written is one more).
    pub(crate) generation: u64,
    /// The log position the newest checkpoint written or used covers.
    pub(crate) covered_lsn: u64,
    /// The full checkpoint the chain in use starts from.
    last_full: u64,
    /// Deltas written on it.
    deltas_since_full: u32,
    /// The next checkpoint is written full: the chain the open used is not the newest.
    next_full: bool,
    /// A later checkpoint than the one the open used was discarded: the next one is written
    /// even if nothing changed, so no reader falls back past it.
    stale_newer: bool,
}

impl CheckpointState {
    /// The state an open leaves: `used` is the checkpoint it loaded (its meta, the full
    /// checkpoint its chain starts from and the chain's body layout), `newest` the newest
    /// generation whose header checks.
    pub(crate) fn from_open(
        used: Option<(&CheckpointMeta, u64, BodyLayout)>,
        newest: Option<u64>,
    ) -> Self {
        let used_generation = used.map(|(m, _, _)| m.generation);
        // A delta of this layout names the entries and runs of its chain's files: on a chain of
        // another layout, the next checkpoint is full.
        let other_layout = used.is_some_and(|(_, _, layout)| layout != BodyLayout::CURRENT);
        let generation = used_generation.unwrap_or(0).max(newest.unwrap_or(0));
        Self {
            // Later checkpoints than the one used were discarded: never build on them.
            generation,
            covered_lsn: used.map_or(0, |(m, _, _)| m.covered_lsn),
            last_full: used.map_or(0, |(_, base, _)| base),
            deltas_since_full: 0,
            next_full: used_generation != newest || other_layout,
            stale_newer: generation > used_generation.unwrap_or(0),
        }
    }

    /// Whether a checkpoint asked for now has nothing to write: the log has not moved since
    /// the last one, which is the newest there is.
    pub(in crate::store) fn nothing_new(&self, next_lsn: u64) -> bool {
        next_lsn == self.covered_lsn && self.generation > 0 && !self.stale_newer
    }

    /// Whether the next checkpoint is a full one.
    pub(in crate::store) fn next_is_full(&self, merge_every: u32) -> bool {
        self.generation == 0 || self.next_full || self.deltas_since_full + 1 >= merge_every
    }

    /// The generations of the chain the newest checkpoint belongs to: its full checkpoint,
    /// then each delta on it (each names the one before as its base).
    pub(in crate::store) fn members(&self) -> std::ops::RangeInclusive<u64> {
        self.last_full..=self.generation
    }

    /// After `meta` was written (`full` or a delta): returns the generation below which the
    /// files are no longer needed (a full checkpoint keeps the previous full chain as a
    /// fallback), if any.
    pub(in crate::store) fn after_write(
        &mut self,
        meta: &CheckpointMeta,
        full: bool,
    ) -> Option<u64> {
        self.generation = meta.generation;
        self.covered_lsn = meta.covered_lsn;
        self.stale_newer = false;
        self.next_full = false;
        if full {
            let keep_from = self.last_full;
            self.last_full = meta.generation;
            self.deltas_since_full = 0;
            Some(keep_from)
        } else {
            self.deltas_since_full += 1;
            None
        }
    }
}

//! Everything the engine keeps about one session besides its events: the next seq, the
//! surface, the repair state and the turn markers. The durable store keeps exactly this per
//! session (and checkpoints it); the acceptance function reads it.

use super::repair::RepairState;
use super::surface::SurfaceManager;
use super::turns::TurnMarks;
use super::verdict::Verdict;
use crate::event::{Event, types::names};

/// The derived state of one session after its first [`next_seq`](Self::next_seq) events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionState {
    pub(crate) next_seq: u64,
    pub(crate) last_time: Option<i64>,
    pub(crate) surface: SurfaceManager,
    pub(crate) repair: RepairState,
    pub(crate) turns: TurnMarks,
}

impl SessionState {
    /// The state of an empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state that has only its next seq: what the acceptance function reads of a session
    /// to check an event that is not a replace (the store's batch planning).
    pub(crate) fn starting_at(next_seq: u64) -> Self {
        Self {
            next_seq,
            ..Self::default()
        }
    }

    /// The seq the next event must have (= the number of events).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The time of the last event, if any.
    pub fn last_time(&self) -> Option<i64> {
        self.last_time
    }

    /// The surface.
    pub fn surface(&self) -> &SurfaceManager {
        &self.surface
    }

    /// The repair state.
    pub fn repair(&self) -> &RepairState {
        &self.repair
    }

    /// The turn markers.
    pub fn turns(&self) -> &TurnMarks {
        &self.turns
    }

    /// Commits one event that the acceptance function planned as `verdict`.
    pub(crate) fn apply(&mut self, event: &Event, verdict: &Verdict) {
        debug_assert_eq!(event.seq(), self.next_seq);
        self.surface.apply(event.seq(), &verdict.change);
        self.repair.observe_facts(event, &verdict.facts);
        match event.event_type() {
            names::TURN_START => self.turns.push(event.seq(), true),
            names::TURN_END => self.turns.push(event.seq(), false),
            _ => {}
        }
        self.next_seq += 1;
        self.last_time = Some(event.time());
    }
}

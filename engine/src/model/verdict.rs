//! What the acceptance function decides about an event it accepts, for
//! [`super::state::SessionState::apply`] to commit.

use super::repair::RepairFacts;
use super::surface::SurfaceChange;

/// What an accepted event does: its surface change, and what the repair state reads of its
/// `data` (located while the event was checked, so committing it walks `data` no more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The surface change.
    pub(crate) change: SurfaceChange,
    /// For [`super::repair::RepairState::observe_facts`].
    pub(crate) facts: RepairFacts,
}

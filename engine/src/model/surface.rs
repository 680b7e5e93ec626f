//! The SurfaceManager: one seq vector per session, changed one committed event at a time.
//!
//! Invariant: `seqs` holds exactly the seqs that a replay of the session's events through
//! [`SurfaceManager::apply`] produces; each seq appears at most once. Append is O(1);
//! replace is one splice (DSH `surface.ts`).

use std::ops::RangeInclusive;

/// The ordered seqs of the events that become LLM messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SurfaceManager {
    seqs: Vec<u64>,
    replace_generation: u64,
}

/// What one accepted event does to the surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SurfaceChange {
    /// A log-only event: nothing.
    None,
    /// Push the event's seq.
    Append,
    /// Replace the nodes at these surface positions by the event's seq.
    Replace(RangeInclusive<usize>),
}

impl SurfaceManager {
    /// A surface rebuilt from its parts (checkpoint load).
    pub fn from_parts(seqs: Vec<u64>, replace_generation: u64) -> Self {
        Self {
            seqs,
            replace_generation,
        }
    }

    /// The surface, in order.
    pub fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    /// How many replaces have been applied (DSH `replaceGeneration`): a cache of derived
    /// messages is valid while this is unchanged.
    pub fn replace_generation(&self) -> u64 {
        self.replace_generation
    }

    /// Heap bytes held by the seq vector.
    pub fn heap_bytes(&self) -> usize {
        self.seqs.capacity() * std::mem::size_of::<u64>()
    }

    /// Drops spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.seqs.shrink_to_fit();
    }

    /// The position of `seq` on the surface (DSH `indexOf`). Replacement targets are almost
    /// always recent, so the search runs from the end.
    pub fn position(&self, seq: u64) -> Option<usize> {
        self.seqs.iter().rposition(|&s| s == seq)
    }

    /// Applies a planned change for the event `seq`. Planning checked every precondition.
    pub(crate) fn apply(&mut self, seq: u64, change: &SurfaceChange) {
        match change {
            SurfaceChange::None => {}
            SurfaceChange::Append => self.seqs.push(seq),
            SurfaceChange::Replace(range) => {
                self.seqs.splice(range.clone(), [seq]);
                self.replace_generation += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_and_replace_splice() {
        let mut s = SurfaceManager::default();
        for seq in [1, 3, 5, 7] {
            s.apply(seq, &SurfaceChange::Append);
        }
        s.apply(9, &SurfaceChange::None);
        s.apply(10, &SurfaceChange::Replace(1..=2));
        assert_eq!(s.seqs(), &[1, 10, 7]);
        assert_eq!(s.replace_generation(), 1);
        assert_eq!(s.position(10), Some(1));
        assert_eq!(s.position(3), None);
        s.apply(11, &SurfaceChange::Replace(0..=2));
        assert_eq!(s.seqs(), &[11]);
    }
}

//! The SurfaceManager: one seq vector per session, changed one committed event at a time.
//!
//! Invariant: the live seqs are exactly the seqs that a replay of the session's events
//! through [`SurfaceManager::apply`] produces; each seq appears at most once. Append is O(1);
//! a replace costs its distance to the nearer end of the surface, not the surface's length:
//! the vector keeps a gap at its front, so a replace near the front moves the few nodes before
//! it right (into the gap) and one near the back moves the few after it left; finding an
//! endpoint searches from both ends at once. (Compactions replace from the first node;
//! tool-result prunes and most replaces touch the last ones.)

use std::ops::RangeInclusive;

/// The ordered seqs of the events that become LLM messages.
#[derive(Debug, Clone, Default)]
pub struct SurfaceManager {
    /// `buf[head..]` is the surface; `buf[..head]` is a gap left by replaces near the front.
    buf: Vec<u64>,
    head: usize,
    replace_generation: u64,
}

impl PartialEq for SurfaceManager {
    fn eq(&self, other: &Self) -> bool {
        self.seqs() == other.seqs() && self.replace_generation == other.replace_generation
    }
}

impl Eq for SurfaceManager {}

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
            buf: seqs,
            head: 0,
            replace_generation,
        }
    }

    /// The surface, in order.
    pub fn seqs(&self) -> &[u64] {
        self.buf.get(self.head..).unwrap_or_default()
    }

    /// How many replaces have been applied (DSH `replaceGeneration`): a cache of derived
    /// messages is valid while this is unchanged.
    pub fn replace_generation(&self) -> u64 {
        self.replace_generation
    }

    /// Heap bytes held by the seq vector.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() * std::mem::size_of::<u64>()
    }

    /// Drops spare capacity (and the front gap).
    pub(crate) fn shrink_to_fit(&mut self) {
        if self.head > 0 {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        self.buf.shrink_to_fit();
    }

    /// The position of `seq` on the surface (DSH `indexOf`), searching from both ends at once:
    /// the cost is the distance to the nearer end.
    pub fn position(&self, seq: u64) -> Option<usize> {
        let live = self.seqs();
        let n = live.len();
        for i in 0..n.div_ceil(2) {
            if live.get(i) == Some(&seq) {
                return Some(i);
            }
            let j = n - 1 - i;
            if live.get(j) == Some(&seq) {
                return Some(j);
            }
        }
        None
    }

    /// Applies a planned change for the event `seq`. Planning checked every precondition.
    pub(crate) fn apply(&mut self, seq: u64, change: &SurfaceChange) {
        match change {
            SurfaceChange::None => {}
            SurfaceChange::Append => self.buf.push(seq),
            SurfaceChange::Replace(range) => {
                self.replace(range.clone(), seq);
                self.replace_generation += 1;
            }
        }
    }

    /// Replaces live positions `range` by `seq`, moving whichever side is shorter.
    fn replace(&mut self, range: RangeInclusive<usize>, seq: u64) {
        let (a, b) = (*range.start(), *range.end());
        let len = self.seqs().len();
        if a > b || b >= len {
            return; // planning rules this out
        }
        let removed = b - a; // nodes that disappear; one slot takes `seq`
        if a <= len - 1 - b {
            // Near the front: the `a` nodes before the range move right into the freed slots.
            let (h, front) = (self.head, self.head + a);
            self.buf.copy_within(h..front, h + removed);
            self.head += removed;
            if let Some(slot) = self.buf.get_mut(self.head + a) {
                *slot = seq;
            }
            // A gap larger than the surface is given back, once (amortized O(1)).
            if self.head > self.seqs().len() + 64 {
                self.buf.drain(..self.head);
                self.head = 0;
            }
        } else {
            let (s, e) = (self.head + a, self.head + b);
            self.buf.splice(s..=e, [seq]);
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

    proptest::proptest! {
        /// The gapped vector behaves exactly as a plain `Vec` with `splice` and `rposition`.
        #[test]
        fn replaces_anywhere_match_a_plain_vector(ops in proptest::collection::vec((0u8..3, 0usize..50, 0usize..4), 1..200)) {
            let mut s = SurfaceManager::default();
            let mut model: Vec<u64> = Vec::new();
            let mut next = 0u64;
            for (kind, at, width) in ops {
                next += 1;
                if kind < 2 || model.is_empty() {
                    s.apply(next, &SurfaceChange::Append);
                    model.push(next);
                } else {
                    let a = at % model.len();
                    let b = (a + width).min(model.len() - 1);
                    s.apply(next, &SurfaceChange::Replace(a..=b));
                    model.splice(a..=b, [next]);
                }
                proptest::prop_assert_eq!(s.seqs(), &model[..]);
                for (i, &q) in model.iter().enumerate() {
                    proptest::prop_assert_eq!(s.position(q), Some(i));
                }
                proptest::prop_assert_eq!(s.position(u64::MAX), None);
            }
            let mut shrunk = s.clone();
            shrunk.shrink_to_fit();
            proptest::prop_assert_eq!(&shrunk, &s);
        }
    }
}

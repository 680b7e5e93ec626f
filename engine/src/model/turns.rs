//! Where turns start and end, so that a fork can tell in O(log n) whether its boundary lies
//! inside an open turn (DSH: "the latest turn/start or turn/end at or before the boundary
//! must not be a turn/start").

/// The seqs of a session's `turn/start` and `turn/end` events, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnMarks {
    /// `seq << 1 | 1` for a `turn/start`, `seq << 1` for a `turn/end`: ascending.
    marks: Vec<u64>,
}

impl TurnMarks {
    /// Marks rebuilt from their encoded form (checkpoint load).
    pub fn from_encoded(marks: Vec<u64>) -> Self {
        Self { marks }
    }

    /// The encoded marks.
    pub fn encoded(&self) -> &[u64] {
        &self.marks
    }

    /// Records a turn marker at `seq`.
    pub(crate) fn push(&mut self, seq: u64, is_start: bool) {
        self.marks.push(seq << 1 | u64::from(is_start));
    }

    /// Whether the latest marker at or before `boundary` is a `turn/start`.
    pub fn open_at(&self, boundary: u64) -> bool {
        let upto = self.marks.partition_point(|&m| m >> 1 <= boundary);
        upto.checked_sub(1)
            .and_then(|i| self.marks.get(i))
            .is_some_and(|m| m & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_at_finds_the_latest_marker() {
        let mut t = TurnMarks::default();
        t.push(2, true);
        t.push(6, false);
        t.push(9, true);
        assert!(!t.open_at(0));
        assert!(!t.open_at(1));
        assert!(t.open_at(2));
        assert!(t.open_at(5));
        assert!(!t.open_at(6));
        assert!(!t.open_at(8));
        assert!(t.open_at(9));
        assert!(t.open_at(100));
        assert_eq!(t.encoded(), &[5, 12, 19]);
    }
}

//! Salvage's decision table: what it does where the walk over a segment stopped. The same
//! shape as the recovery table (`store/log/recovery.rs`): named facts in, one repair out, every
//! combination written down and tested.

/// What the walk found where it stopped, as salvage sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stopped {
    /// A torn tail (the recovery table says: cut it).
    Torn,
    /// The log ends, or holds only zeros, before what a checkpoint vouches for.
    LogEndsEarly,
    /// Damage: a frame that does not check, with a valid frame (or the end) after it.
    Damaged,
}

/// What salvage does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repair {
    /// Cut the segment at the torn tail.
    CutTorn,
    /// The log ends here: cut (if bytes follow) and remove the checkpoints.
    LogEnds,
    /// Void the damaged bytes up to the next valid frame, and go on there.
    Void,
    /// Damage too short for a void record at the end of the newest segment: cut it.
    CutTail,
    /// Damage too short for a void record inside a sealed segment: nothing can stand in its
    /// place without moving every later record, so salvage refuses (`Corruption`).
    Refuse,
}

/// The repair for what was found; `short_gap`: the damage up to the next valid frame is
/// shorter than a frame header (only asked of `Damaged`); `newest`: in the newest segment.
pub(super) fn choose(found: Stopped, short_gap: bool, newest: bool) -> Repair {
    match (found, short_gap, newest) {
        (Stopped::Torn, _, _) => Repair::CutTorn,
        (Stopped::LogEndsEarly, _, _) => Repair::LogEnds,
        (Stopped::Damaged, false, _) => Repair::Void,
        (Stopped::Damaged, true, true) => Repair::CutTail,
        (Stopped::Damaged, true, false) => Repair::Refuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination, written out: a change to `choose` changes a row here.
    #[test]
    fn every_combination_has_its_row() {
        use Repair::*;
        use Stopped::*;
        let rows = [
            (Torn, false, false, CutTorn),
            (Torn, false, true, CutTorn),
            (Torn, true, false, CutTorn),
            (Torn, true, true, CutTorn),
            (LogEndsEarly, false, false, LogEnds),
            (LogEndsEarly, false, true, LogEnds),
            (LogEndsEarly, true, false, LogEnds),
            (LogEndsEarly, true, true, LogEnds),
            (Damaged, false, false, Void),
            (Damaged, false, true, Void),
            (Damaged, true, false, Refuse),
            (Damaged, true, true, CutTail),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (found, short, newest, repair) in rows {
            assert_eq!(
                choose(found, short, newest),
                repair,
                "{found:?} {short} {newest}"
            );
            seen.insert((found as u8, short, newest));
        }
        assert_eq!(seen.len(), 3 * 2 * 2, "every combination once");
    }
}

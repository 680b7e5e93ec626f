//! The recovery decision table: what opening a store does with the bytes at a position of a
//! segment where the scan reads the next frame.
//!
//! The table is data: rows of named facts → action, in the manner of TigerBeetle's recovery
//! cases. Every combination of facts is either rejected as impossible by a named constraint or
//! matched by exactly one row (the tests enumerate all 128). The rule the rows encode: bytes
//! that a durable mark vouches for — a sealed segment, a checkpoint whose header checksum is
//! valid, a later valid record — are corruption when damaged, never a torn tail. Only bytes
//! beyond every durable mark, followed by nothing but zeros, may be cut (model-codebases
//! practice 5, "avoid" 2).

use crate::codec::CorruptionKind;
use crate::codec::frame::FrameCheck;

/// The observable facts at the position where a segment scan reads a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TailFacts {
    /// The segment is sealed (not the newest): it was synced whole before its successor was
    /// created.
    pub sealed: bool,
    /// A checkpoint whose header checksum is valid covers this position: the log was synced
    /// past it before that checkpoint was written.
    pub vouched: bool,
    /// At least a frame header's bytes remain.
    pub header_complete: bool,
    /// The length checksum holds and the length is within the maximum.
    pub length_valid: bool,
    /// The frame the length claims ends within the segment.
    pub frame_fits: bool,
    /// The frame checksum holds and the kind is known.
    pub checksum_valid: bool,
    /// Every byte after the damaged frame (after its header when the length is not
    /// trusted) up to the end of the segment is zero: no later record vouches for it.
    pub zeros_after: bool,
}

/// What recovery does at that position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TailAction {
    /// A valid record: replay it and go on.
    Accept,
    /// A torn tail: truncate the segment here, sync, and stop.
    Truncate,
    /// Corruption of this kind.
    Corrupt(CorruptionKind),
}

/// A combination of facts the scan cannot produce; the matcher refuses it rather than give it
/// an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Impossible(pub &'static str);

/// One fact's condition in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Is {
    Yes,
    No,
    Any,
}

impl Is {
    fn admits(self, fact: bool) -> bool {
        match self {
            Is::Yes => fact,
            Is::No => !fact,
            Is::Any => true,
        }
    }
}

/// What a row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Replay,
    CutTornTail,
    /// Corruption of the kind the frame check found.
    Corrupt,
    /// Corruption: a damaged frame with data after it.
    CorruptDataAfter,
}

/// A row: its name, conditions in [`TailFacts`] field order, and its action.
#[derive(Debug)]
struct Row {
    name: &'static str,
    sealed: Is,
    vouched: Is,
    header: Is,
    length: Is,
    fits: Is,
    checksum: Is,
    zeros_after: Is,
    act: Act,
}

impl Row {
    fn matches(&self, f: &TailFacts) -> bool {
        self.sealed.admits(f.sealed)
            && self.vouched.admits(f.vouched)
            && self.header.admits(f.header_complete)
            && self.length.admits(f.length_valid)
            && self.fits.admits(f.frame_fits)
            && self.checksum.admits(f.checksum_valid)
            && self.zeros_after.admits(f.zeros_after)
    }
}

/// Shorthand for the table below.
const fn row(
    name: &'static str,
    [sealed, vouched, header, length, fits, checksum, zeros_after]: [Is; 7],
    act: Act,
) -> Row {
    Row {
        name,
        sealed,
        vouched,
        header,
        length,
        fits,
        checksum,
        zeros_after,
        act,
    }
}

use Is::{Any as __, No as NO, Yes as YE};

/// The decision table. Columns: sealed, vouched, header complete, length valid, frame fits,
/// checksum valid, zeros after.
#[rustfmt::skip]
const TABLE: &[Row] = &[
    row("valid frame", [__, __, YE, YE, YE, YE, __], Act::Replay),
    // Sealed segments were synced whole before the next one was created.
    row("sealed: short header", [YE, __, NO, __, __, __, __], Act::Corrupt),
    row("sealed: bad length", [YE, __, YE, NO, __, __, __], Act::Corrupt),
    row("sealed: incomplete", [YE, __, YE, YE, NO, __, __], Act::Corrupt),
    row("sealed: bad checksum", [YE, __, YE, YE, YE, NO, __], Act::Corrupt),
    // A checkpoint with a valid header proves the log was synced past this position.
    row("vouched: short header", [NO, YE, NO, __, __, __, __], Act::Corrupt),
    row("vouched: bad length", [NO, YE, YE, NO, __, __, __], Act::Corrupt),
    row("vouched: incomplete", [NO, YE, YE, YE, NO, __, __], Act::Corrupt),
    row("vouched: bad checksum", [NO, YE, YE, YE, YE, NO, __], Act::Corrupt),
    // Beyond every durable mark: an interrupted append leaves a prefix, maybe then zeros.
    row("tail: short header", [NO, NO, NO, __, __, __, __], Act::CutTornTail),
    row("tail: frame cut short", [NO, NO, YE, YE, NO, __, __], Act::CutTornTail),
    row("tail: bad length, zeros after", [NO, NO, YE, NO, __, __, YE], Act::CutTornTail),
    row("tail: bad length, data after", [NO, NO, YE, NO, __, __, NO], Act::CorruptDataAfter),
    row("tail: bad checksum, zeros after", [NO, NO, YE, YE, YE, NO, YE], Act::CutTornTail),
    row("tail: bad checksum, data after", [NO, NO, YE, YE, YE, NO, NO], Act::CorruptDataAfter),
];

/// Combinations the scan cannot produce, by the order in which it checks a frame.
/// A named constraint: `true` when the facts satisfy it.
type Constraint = (&'static str, fn(&TailFacts) -> bool);

const CONSTRAINTS: &[Constraint] = &[
    ("a length is read only from a complete header", |f| {
        !f.length_valid || f.header_complete
    }),
    ("a frame fits only if its length is trusted", |f| {
        !f.frame_fits || f.length_valid
    }),
    ("a checksum is checked only over a frame that fits", |f| {
        !f.checksum_valid || f.frame_fits
    }),
    (
        "nothing follows a header or frame cut short by the end",
        |f| {
            let cut_by_end = !f.header_complete || (f.length_valid && !f.frame_fits);
            !cut_by_end || f.zeros_after
        },
    ),
];

impl TailFacts {
    /// The facts for a frame check at a position.
    pub fn from_check(check: &FrameCheck, sealed: bool, vouched: bool, zeros_after: bool) -> Self {
        let (header_complete, length_valid, frame_fits, checksum_valid) = match check {
            FrameCheck::Valid { .. } => (true, true, true, true),
            FrameCheck::End | FrameCheck::ShortHeader => (false, false, false, false),
            FrameCheck::BadLength => (true, false, false, false),
            FrameCheck::Incomplete { .. } => (true, true, false, false),
            FrameCheck::BadChecksum { .. } | FrameCheck::UnknownKind { .. } => {
                (true, true, true, false)
            }
        };
        Self {
            sealed,
            vouched,
            header_complete,
            length_valid,
            frame_fits,
            checksum_valid,
            zeros_after,
        }
    }

    /// The kind of damage the frame check found, as it is reported.
    fn damage(&self) -> CorruptionKind {
        if !self.header_complete {
            CorruptionKind::ShortHeader
        } else if !self.length_valid {
            CorruptionKind::BadLength
        } else if !self.frame_fits {
            CorruptionKind::Incomplete
        } else {
            CorruptionKind::ChecksumMismatch
        }
    }
}

/// The row that decides `f`, with its name.
///
/// # Errors
/// [`Impossible`] naming the constraint the facts break.
pub fn decide_row(f: TailFacts) -> Result<(&'static str, TailAction), Impossible> {
    if let Some((name, _)) = CONSTRAINTS.iter().find(|(_, holds)| !holds(&f)) {
        return Err(Impossible(name));
    }
    let row = TABLE
        .iter()
        .find(|r| r.matches(&f))
        .ok_or(Impossible("no row matches"))?;
    let action = match row.act {
        Act::Replay => TailAction::Accept,
        Act::CutTornTail => TailAction::Truncate,
        Act::Corrupt => TailAction::Corrupt(f.damage()),
        Act::CorruptDataAfter => TailAction::Corrupt(CorruptionKind::DataAfterDamage),
    };
    Ok((row.name, action))
}

/// The action for `f`; an impossible combination is reported as corruption (the scan never
/// produces one; the tests prove the table total over the possible ones).
pub fn decide(f: TailFacts) -> TailAction {
    decide_row(f).map_or(
        TailAction::Corrupt(CorruptionKind::Inconsistent(
            "recovery facts outside the decision table",
        )),
        |(_, action)| action,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_facts() -> impl Iterator<Item = TailFacts> {
        (0u32..128).map(|bits| {
            let b = |i: u32| bits & (1 << i) != 0;
            TailFacts {
                sealed: b(0),
                vouched: b(1),
                header_complete: b(2),
                length_valid: b(3),
                frame_fits: b(4),
                checksum_valid: b(5),
                zeros_after: b(6),
            }
        })
    }

    #[test]
    fn every_possible_combination_matches_exactly_one_row_and_the_rest_are_refused() {
        let mut used = std::collections::HashSet::new();
        let (mut possible, mut impossible) = (0, 0);
        for f in all_facts() {
            let broken = CONSTRAINTS.iter().filter(|(_, holds)| !holds(&f)).count();
            let rows: Vec<&Row> = TABLE.iter().filter(|r| r.matches(&f)).collect();
            if broken > 0 {
                impossible += 1;
                assert!(decide_row(f).is_err(), "{f:?} must be refused");
                continue;
            }
            possible += 1;
            assert_eq!(rows.len(), 1, "{f:?} matches {rows:?}");
            let (name, action) = decide_row(f).unwrap();
            used.insert(name);
            // The rule, restated independently of the rows.
            let valid = f.header_complete && f.length_valid && f.frame_fits && f.checksum_valid;
            if valid {
                assert_eq!(action, TailAction::Accept, "{f:?}");
            } else if f.sealed || f.vouched {
                assert!(
                    matches!(action, TailAction::Corrupt(_)),
                    "durable bytes are never cut: {f:?}"
                );
            } else if f.zeros_after {
                assert_eq!(action, TailAction::Truncate, "{f:?}");
            } else {
                assert_eq!(
                    action,
                    TailAction::Corrupt(CorruptionKind::DataAfterDamage),
                    "{f:?}"
                );
            }
        }
        assert_eq!(possible + impossible, 128);
        assert_eq!(
            (possible, impossible),
            (32, 96),
            "as docs/FORMAT.md §6 says"
        );
        // No dead rows.
        for r in TABLE {
            assert!(used.contains(r.name), "row {:?} is never used", r.name);
        }
    }

    #[test]
    fn named_rows() {
        let tail = TailFacts {
            sealed: false,
            vouched: false,
            header_complete: true,
            length_valid: true,
            frame_fits: true,
            checksum_valid: false,
            zeros_after: false,
        };
        let name = |f| decide_row(f).unwrap().0;
        assert_eq!(name(tail), "tail: bad checksum, data after");
        assert_eq!(
            decide(TailFacts {
                zeros_after: true,
                ..tail
            }),
            TailAction::Truncate
        );
        // The defect this table was rebuilt for: a damaged last record that a checkpoint
        // covers is corruption, not a torn tail.
        assert_eq!(
            decide(TailFacts {
                vouched: true,
                zeros_after: true,
                ..tail
            }),
            TailAction::Corrupt(CorruptionKind::ChecksumMismatch)
        );
        assert_eq!(
            decide(TailFacts {
                sealed: true,
                zeros_after: true,
                ..tail
            }),
            TailAction::Corrupt(CorruptionKind::ChecksumMismatch)
        );
        assert_eq!(
            decide_row(TailFacts {
                header_complete: false,
                ..tail
            }),
            Err(Impossible("a length is read only from a complete header"))
        );
    }
}

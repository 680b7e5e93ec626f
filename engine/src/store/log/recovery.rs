//! The recovery decision table: what reading the log does with the bytes at a position of a
//! segment where the next frame should be. Open, `refresh`, salvage and `verify` all ask it,
//! through the log cursor (`log/cursor.rs`), the only frame loop of the store.
//!
//! The table is data: rows of named facts → action, in the manner of TigerBeetle's recovery
//! cases. Every combination of facts is either rejected as impossible by a named constraint or
//! matched by exactly one row (the tests enumerate all 2,048). The rule the rows encode: bytes
//! that a durable mark vouches for — a sealed segment, a checkpoint whose header checksum is
//! valid, a later valid record — are corruption when damaged or missing, never a torn tail.
//! Only bytes beyond every durable mark, followed by nothing but zeros, may be cut; zeros
//! alone there are the log's clean end. A frame whose checksums hold but whose kind is unknown
//! is no torn write: corruption everywhere. Damage with data after it, seen by a view that
//! does not hold the writer lock, may be a write in flight: read again before deciding
//! (model-codebases practice 5, "avoid" 2).

use crate::codec::frame::FrameCheck;

/// The observable facts at the position where the cursor reads a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameFacts {
    /// The segment is sealed (not the newest): it was synced whole before its successor was
    /// created.
    pub sealed: bool,
    /// A checkpoint whose header checksum is valid covers this position: the log was synced
    /// past it before that checkpoint was written.
    pub vouched: bool,
    /// No write can be in flight at this position: the view holds the writer lock, or these
    /// bytes were read again after the bytes beyond them had been seen.
    pub settled: bool,
    /// At least a frame header's bytes remain.
    pub header_complete: bool,
    /// The length checksum holds and the length is within the maximum.
    pub length_valid: bool,
    /// The frame the length claims ends within the segment.
    pub frame_fits: bool,
    /// The frame checksum holds.
    pub checksum_valid: bool,
    /// The kind byte names a known record kind.
    pub kind_known: bool,
    /// Every byte after the damaged frame (after its header when the length is not
    /// trusted) up to the end of the segment is zero: no later record vouches for it.
    pub zeros_after: bool,
    /// No byte remains: the position is the segment's end.
    pub at_end: bool,
    /// Every byte from the position to the segment's end is zero (true at the end).
    pub zeros_only: bool,
}

/// What recovery does at that position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameAction {
    /// A valid record: replay it and go on.
    Accept,
    /// The end of the segment's records: go on with the next segment, or stop at the log's
    /// end.
    End,
    /// A torn tail: a writable open cuts the segment here; a read-only view stops here (a
    /// writer may be in the middle of appending).
    Truncate,
    /// A write may be in flight here: read the bytes from here again, then decide.
    Reread,
    /// Corruption.
    Corrupt(Corrupt),
}

/// Which corruption a row reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Corrupt {
    /// The damage the frame check found (short header, bad length, incomplete, checksum,
    /// unknown kind).
    AsFound,
    /// A damaged frame with data after it.
    DataAfterDamage,
    /// The log ends (or holds only zeros) before a position a checkpoint vouches for.
    MissingRecords,
}

/// A combination of facts the cursor cannot produce; the matcher refuses it rather than give
/// it an action.
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

/// A row: its name, conditions in [`FrameFacts`] field order, and its action.
#[derive(Debug)]
struct Row {
    name: &'static str,
    cond: [Is; 11],
    act: FrameAction,
}

impl Row {
    fn matches(&self, f: &FrameFacts) -> bool {
        self.cond
            .iter()
            .zip(f.as_array())
            .all(|(c, fact)| c.admits(fact))
    }
}

impl FrameFacts {
    /// The facts in field order (the table's columns).
    fn as_array(&self) -> [bool; 11] {
        [
            self.sealed,
            self.vouched,
            self.settled,
            self.header_complete,
            self.length_valid,
            self.frame_fits,
            self.checksum_valid,
            self.kind_known,
            self.zeros_after,
            self.at_end,
            self.zeros_only,
        ]
    }
}

const fn row(name: &'static str, cond: [Is; 11], act: FrameAction) -> Row {
    Row { name, cond, act }
}

use Corrupt::{AsFound, DataAfterDamage, MissingRecords};
use FrameAction::{Accept, Corrupt as Bad, End, Reread, Truncate};
use Is::{Any as __, No as NO, Yes as YE};

/// The decision table. Columns: sealed, vouched, settled, header complete, length valid,
/// frame fits, checksum valid, kind known, zeros after, at end, zeros only.
#[rustfmt::skip]
const TABLE: &[Row] = &[
    //                                       sea vou set hdr len fit sum knd zaf end zon
    row("valid frame",                       [__, __, __, YE, YE, YE, YE, YE, __, __, __], Accept),
    // Checksums hold: no torn write made this frame.
    row("unknown kind",                      [__, __, __, YE, YE, YE, YE, NO, __, __, __], Bad(AsFound)),
    // A sealed segment is exactly its records: its end is where they end.
    row("sealed: end",                       [YE, __, __, __, __, __, __, __, __, YE, __], End),
    row("sealed: short header",              [YE, __, __, NO, __, __, __, __, __, NO, __], Bad(AsFound)),
    row("sealed: bad length",                [YE, __, __, YE, NO, __, __, __, __, __, __], Bad(AsFound)),
    row("sealed: incomplete",                [YE, __, __, YE, YE, NO, __, __, __, __, __], Bad(AsFound)),
    row("sealed: bad checksum",              [YE, __, __, YE, YE, YE, NO, __, __, __, __], Bad(AsFound)),
    // The newest segment ends, or holds only zeros, where a checkpoint vouches for records.
    row("vouched: log ends early",           [NO, YE, __, __, __, __, __, __, __, __, YE], Bad(MissingRecords)),
    // Beyond every durable mark, zeros (preallocated space) or nothing: the clean end.
    row("clean end",                         [NO, NO, __, __, __, __, __, __, __, __, YE], End),
    // A checkpoint with a valid header proves the log was synced past this position.
    row("vouched: short header",             [NO, YE, __, NO, __, __, __, __, __, __, NO], Bad(AsFound)),
    row("vouched: bad length",               [NO, YE, __, YE, NO, __, __, __, __, __, NO], Bad(AsFound)),
    row("vouched: incomplete",               [NO, YE, __, YE, YE, NO, __, __, __, __, NO], Bad(AsFound)),
    row("vouched: bad checksum",             [NO, YE, __, YE, YE, YE, NO, __, __, __, NO], Bad(AsFound)),
    // Beyond every durable mark: an interrupted append leaves a prefix, maybe then zeros.
    row("tail: short header",                [NO, NO, __, NO, __, __, __, __, __, __, NO], Truncate),
    row("tail: frame cut short",             [NO, NO, __, YE, YE, NO, __, __, __, __, NO], Truncate),
    row("tail: bad length, zeros after",     [NO, NO, __, YE, NO, __, __, __, YE, __, NO], Truncate),
    row("tail: bad length, data after",      [NO, NO, YE, YE, NO, __, __, __, NO, __, NO], Bad(DataAfterDamage)),
    row("tail: bad length, in flight?",      [NO, NO, NO, YE, NO, __, __, __, NO, __, NO], Reread),
    row("tail: bad checksum, zeros after",   [NO, NO, __, YE, YE, YE, NO, __, YE, __, NO], Truncate),
    row("tail: bad checksum, data after",    [NO, NO, YE, YE, YE, YE, NO, __, NO, __, NO], Bad(DataAfterDamage)),
    row("tail: bad checksum, in flight?",    [NO, NO, NO, YE, YE, YE, NO, __, NO, __, NO], Reread),
];

/// A named constraint: `true` when the facts satisfy it.
type Constraint = (&'static str, fn(&FrameFacts) -> bool);

/// Combinations the cursor cannot produce, by the order in which it checks a frame.
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
        "a kind is read only from a frame whose checksum holds",
        |f| !f.kind_known || f.checksum_valid,
    ),
    (
        "nothing follows a header or frame cut short by the end",
        |f| {
            let cut_by_end = !f.header_complete || (f.length_valid && !f.frame_fits);
            !cut_by_end || f.zeros_after
        },
    ),
    (
        "at the end no header remains and all of nothing is zero",
        |f| !f.at_end || (!f.header_complete && f.zeros_only),
    ),
    (
        "an all-zero header fails the length check, and zeros follow zeros",
        |f| !f.zeros_only || (!f.length_valid && f.zeros_after),
    ),
];

impl FrameFacts {
    /// The facts for a frame check at a position. `zeros_after` and `zeros_only` are the
    /// cursor's reading of the bytes after the frame and from the position.
    pub fn from_check(
        check: &FrameCheck,
        [sealed, vouched, settled]: [bool; 3],
        zeros_after: bool,
        zeros_only: bool,
    ) -> Self {
        let (header_complete, length_valid, frame_fits, checksum_valid, kind_known) = match check {
            FrameCheck::Valid { .. } => (true, true, true, true, true),
            FrameCheck::End | FrameCheck::ShortHeader => (false, false, false, false, false),
            FrameCheck::BadLength => (true, false, false, false, false),
            FrameCheck::Incomplete { .. } => (true, true, false, false, false),
            FrameCheck::BadChecksum { .. } => (true, true, true, false, false),
            FrameCheck::UnknownKind { .. } => (true, true, true, true, false),
        };
        Self {
            sealed,
            vouched,
            settled,
            header_complete,
            length_valid,
            frame_fits,
            checksum_valid,
            kind_known,
            zeros_after,
            at_end: matches!(check, FrameCheck::End),
            zeros_only,
        }
    }
}

/// The row that decides `f`, with its name.
///
/// # Errors
/// [`Impossible`] naming the constraint the facts break.
pub fn decide_row(f: FrameFacts) -> Result<(&'static str, FrameAction), Impossible> {
    if let Some((name, _)) = CONSTRAINTS.iter().find(|(_, holds)| !holds(&f)) {
        return Err(Impossible(name));
    }
    TABLE
        .iter()
        .find(|r| r.matches(&f))
        .map(|r| (r.name, r.act))
        .ok_or(Impossible("no row matches"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_facts() -> impl Iterator<Item = FrameFacts> {
        (0u32..2048).map(|bits| {
            let b = |i: u32| bits & (1 << i) != 0;
            FrameFacts {
                sealed: b(0),
                vouched: b(1),
                settled: b(2),
                header_complete: b(3),
                length_valid: b(4),
                frame_fits: b(5),
                checksum_valid: b(6),
                kind_known: b(7),
                zeros_after: b(8),
                at_end: b(9),
                zeros_only: b(10),
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
            let expected = if valid && f.kind_known {
                Accept
            } else if valid {
                Bad(AsFound)
            } else if f.sealed {
                if f.at_end { End } else { Bad(AsFound) }
            } else if f.zeros_only {
                if f.vouched { Bad(MissingRecords) } else { End }
            } else if f.vouched {
                Bad(AsFound)
            } else if f.zeros_after {
                Truncate
            } else if f.settled {
                Bad(DataAfterDamage)
            } else {
                Reread
            };
            assert_eq!(action, expected, "{f:?} ({name})");
        }
        assert_eq!(possible + impossible, 2048);
        assert_eq!(
            (possible, impossible),
            (104, 1944),
            "as docs/FORMAT.md §6 says"
        );
        // No dead rows.
        for r in TABLE {
            assert!(used.contains(r.name), "row {:?} is never used", r.name);
        }
    }

    #[test]
    fn named_rows() {
        let tail = FrameFacts {
            sealed: false,
            vouched: false,
            settled: true,
            header_complete: true,
            length_valid: true,
            frame_fits: true,
            checksum_valid: false,
            kind_known: false,
            zeros_after: false,
            at_end: false,
            zeros_only: false,
        };
        let decide = |f| decide_row(f).unwrap();
        assert_eq!(
            decide(tail),
            ("tail: bad checksum, data after", Bad(DataAfterDamage))
        );
        assert_eq!(
            decide(FrameFacts {
                settled: false,
                ..tail
            }),
            ("tail: bad checksum, in flight?", Reread)
        );
        assert_eq!(
            decide(FrameFacts {
                zeros_after: true,
                ..tail
            })
            .1,
            Truncate
        );
        // The defect this table was first built for: a damaged last record that a
        // checkpoint covers is corruption, not a torn tail.
        assert_eq!(
            decide(FrameFacts {
                vouched: true,
                zeros_after: true,
                ..tail
            })
            .1,
            Bad(AsFound)
        );
        // A log cut at a record boundary below a checkpoint's coverage: records are missing.
        let end = FrameFacts::from_check(&FrameCheck::End, [false, true, true], true, true);
        assert_eq!(
            decide(end),
            ("vouched: log ends early", Bad(MissingRecords))
        );
        assert_eq!(
            decide(FrameFacts {
                vouched: false,
                ..end
            }),
            ("clean end", End)
        );
        assert_eq!(
            decide(FrameFacts {
                sealed: true,
                ..end
            }),
            ("sealed: end", End)
        );
        // An unknown kind with valid checksums is never cut, even at the tail.
        let unknown = FrameFacts::from_check(
            &FrameCheck::UnknownKind {
                kind: 9,
                frame_len: 20,
            },
            [false, false, true],
            true,
            false,
        );
        assert_eq!(decide(unknown), ("unknown kind", Bad(AsFound)));
        assert_eq!(
            decide_row(FrameFacts {
                header_complete: false,
                ..tail
            }),
            Err(Impossible("a length is read only from a complete header"))
        );
    }
}

//! The recovery decision table: what opening a store does with the first bytes of a segment
//! that are not a valid record.
//!
//! Only a provably torn tail is cut; everything else is corruption (model-codebases practice
//! 5, "avoid" 2). A tail is torn when it can be the prefix of an interrupted append: it is in
//! the last segment, after every byte the checkpoint proves durable, and nothing but zeros
//! follows the damaged frame.

use crate::codec::CorruptionKind;
use crate::codec::frame::FrameCheck;

/// The observable facts at the position where a segment scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TailFacts {
    /// The segment is the newest one (the only one being appended to).
    pub last_segment: bool,
    /// The position lies after everything the checkpoint proves durable.
    pub after_durable_mark: bool,
    /// At least a frame header's bytes remain.
    pub header_complete: bool,
    /// The length checksum holds and the length is within the maximum.
    pub length_valid: bool,
    /// The frame the length claims ends within the segment.
    pub frame_fits: bool,
    /// The frame checksum holds and the kind is known.
    pub checksum_valid: bool,
    /// Every byte after the damaged frame (after its header when the length is not
    /// trusted) up to the end of the segment is zero.
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

impl TailFacts {
    /// The facts for a frame check at a position.
    pub fn from_check(
        check: &FrameCheck,
        last_segment: bool,
        after_durable_mark: bool,
        zeros_after: bool,
    ) -> Self {
        let (header_complete, length_valid, frame_fits, checksum_valid) = match check {
            FrameCheck::Valid { .. } => (true, true, true, true),
            FrameCheck::End => (false, false, false, false),
            FrameCheck::ShortHeader => (false, false, false, false),
            FrameCheck::BadLength => (true, false, false, false),
            FrameCheck::Incomplete { .. } => (true, true, false, false),
            FrameCheck::BadChecksum { .. } | FrameCheck::UnknownKind { .. } => {
                (true, true, true, false)
            }
        };
        Self {
            last_segment,
            after_durable_mark,
            header_complete,
            length_valid,
            frame_fits,
            checksum_valid,
            zeros_after,
        }
    }
}

/// The decision table.
pub fn decide(f: TailFacts) -> TailAction {
    use CorruptionKind::*;
    use TailAction::*;
    // A complete, valid frame is a record wherever it is.
    if f.header_complete && f.length_valid && f.frame_fits && f.checksum_valid {
        return Accept;
    }
    // The kind of damage, as it would be reported.
    let damage = if !f.header_complete {
        ShortHeader
    } else if !f.length_valid {
        BadLength
    } else if !f.frame_fits {
        Incomplete
    } else {
        ChecksumMismatch
    };
    // Sealed segments were synced whole before the next one was created; bytes the
    // checkpoint covers were synced: damage there can only be corruption.
    if !f.last_segment || !f.after_durable_mark {
        return Corrupt(damage);
    }
    match damage {
        // The append stopped inside the header or before the frame's end.
        ShortHeader | Incomplete => Truncate,
        // The header or the body was not fully persisted, and nothing follows it.
        BadLength | ChecksumMismatch if f.zeros_after => Truncate,
        _ => Corrupt(DataAfterDamage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_facts() -> impl Iterator<Item = TailFacts> {
        (0u32..128).map(|bits| {
            let b = |i: u32| bits & (1 << i) != 0;
            TailFacts {
                last_segment: b(0),
                after_durable_mark: b(1),
                header_complete: b(2),
                length_valid: b(3),
                frame_fits: b(4),
                checksum_valid: b(5),
                zeros_after: b(6),
            }
        })
    }

    /// The table restated row by row, independently of `decide`'s code.
    fn expected(f: TailFacts) -> TailAction {
        let valid = f.header_complete && f.length_valid && f.frame_fits && f.checksum_valid;
        let tail = f.last_segment && f.after_durable_mark;
        let cut_short = !f.header_complete || (f.length_valid && !f.frame_fits);
        if valid {
            TailAction::Accept
        } else if tail && (cut_short || f.zeros_after) {
            TailAction::Truncate
        } else {
            TailAction::Corrupt(decide(f).kind_or_panic())
        }
    }

    impl TailAction {
        fn kind_or_panic(self) -> CorruptionKind {
            match self {
                TailAction::Corrupt(k) => k,
                other => panic!("expected corruption, table says {other:?}"),
            }
        }
    }

    #[test]
    fn every_combination_of_tail_facts_has_exactly_the_expected_action() {
        let mut seen = std::collections::HashMap::new();
        for f in all_facts() {
            let action = decide(f);
            assert_eq!(action, expected(f), "{f:?}");
            *seen.entry(std::mem::discriminant(&action)).or_insert(0) += 1;
            // Invariants that must hold whatever the table grows into:
            if action == TailAction::Truncate {
                assert!(
                    f.last_segment && f.after_durable_mark,
                    "never cut sealed or durable bytes: {f:?}"
                );
            }
            if action == TailAction::Accept {
                assert!(f.checksum_valid && f.frame_fits, "{f:?}");
            }
        }
        assert_eq!(seen.len(), 3, "all three actions occur");
    }

    #[test]
    fn named_rows() {
        let tail = TailFacts {
            last_segment: true,
            after_durable_mark: true,
            header_complete: true,
            length_valid: true,
            frame_fits: true,
            checksum_valid: false,
            zeros_after: false,
        };
        assert_eq!(
            decide(tail),
            TailAction::Corrupt(CorruptionKind::DataAfterDamage)
        );
        assert_eq!(
            decide(TailFacts {
                zeros_after: true,
                ..tail
            }),
            TailAction::Truncate
        );
        assert_eq!(
            decide(TailFacts {
                frame_fits: false,
                ..tail
            }),
            TailAction::Truncate
        );
        assert_eq!(
            decide(TailFacts {
                last_segment: false,
                ..tail
            }),
            TailAction::Corrupt(CorruptionKind::ChecksumMismatch)
        );
        assert_eq!(
            decide(TailFacts {
                after_durable_mark: false,
                zeros_after: true,
                ..tail
            }),
            TailAction::Corrupt(CorruptionKind::ChecksumMismatch)
        );
        assert_eq!(
            decide(TailFacts {
                length_valid: false,
                zeros_after: true,
                ..tail
            }),
            TailAction::Truncate
        );
        assert_eq!(
            decide(TailFacts {
                length_valid: false,
                ..tail
            }),
            TailAction::Corrupt(CorruptionKind::DataAfterDamage)
        );
    }
}

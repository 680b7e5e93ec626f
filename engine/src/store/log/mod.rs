//! The log as recovery reads it: the segment files and their header rules (`discover.rs`),
//! and the cursor that walks a segment's frames and asks the decision table wherever the next
//! frame is not a valid record (`cursor.rs`).

pub(crate) mod cursor;
pub(crate) mod discover;

use crate::codec::CorruptionKind;
use cursor::{LogCursor, SegmentFacts, Step, StopAction};

/// Whether `b` holds only zeros. Compared 32 bytes at a time: the end of the active segment
/// is up to a preallocated MiB of zeros, read at every open, and a byte-at-a-time loop over
/// it was most of a read-only open's time (`perf`, `--profile-open --big`).
pub(crate) fn zeros(b: &[u8]) -> bool {
    let (blocks, rest) = b.as_chunks::<32>();
    blocks.iter().all(|c| *c == [0u8; 32]) && rest.iter().all(|&x| x == 0)
}

/// What the decision table says of a log with no segment holding records, under a durable
/// mark at `durable_lsn`: nothing (an empty log may be the end), or the corruption it is.
pub(crate) fn empty_log(
    durable_lsn: u64,
    locked: bool,
    record_bytes_max: u32,
) -> Option<CorruptionKind> {
    let facts = SegmentFacts {
        first_lsn: 0,
        sealed: false,
        durable_lsn,
        locked,
        record_bytes_max,
    };
    match LogCursor::new(facts, 0, &[], false).step() {
        Step::Stop(stop) => match stop.action {
            StopAction::Corrupt(kind) => Some(kind),
            _ => None,
        },
        _ => None,
    }
}

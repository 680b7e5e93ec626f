//! How a segment's file offsets are its LSNs: by arithmetic in a segment appends wrote, through
//! the run table in one compaction wrote (`codec/compacted.rs`). Every reader of the log asks
//! here — the cursor, the scan, reads by location, the marks — so a compacted segment is one
//! more case of this type, not a branch in each of them.

use crate::codec::compacted::Runs;
use crate::codec::segment::SEGMENT_HEADER_LEN;

/// A segment's LSN ↔ file offset map.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LsnMap<'a> {
    /// Written by appends: the file offset is `40 + (lsn − first_lsn)`.
    Plain {
        /// The segment's first LSN.
        first_lsn: u64,
    },
    /// Written by compaction: the records it kept, at their LSNs, in runs.
    Runs(&'a Runs),
}

const HEADER: u64 = SEGMENT_HEADER_LEN as u64;

impl LsnMap<'_> {
    /// The LSN of file offset `at` (a record's start, or where the records end).
    pub(crate) fn lsn_of(&self, at: u64) -> Option<u64> {
        match self {
            Self::Plain { first_lsn } => Some(first_lsn + at.saturating_sub(HEADER)),
            Self::Runs(runs) => runs.lsn_of(at),
        }
    }

    /// The file offset of the byte at `lsn`; `None` where compaction left it out.
    pub(crate) fn offset_of(&self, lsn: u64) -> Option<u64> {
        match self {
            Self::Plain { first_lsn } => lsn.checked_sub(*first_lsn).map(|d| HEADER + d),
            Self::Runs(runs) => runs.offset_of(lsn),
        }
    }

    /// Where the stretch of contiguous log holding file offset `at` ends in the file: a
    /// compacted segment's next run (no record crosses it); `None` in a segment appends wrote.
    pub(crate) fn run_end(&self, at: u64) -> Option<u64> {
        match self {
            Self::Plain { .. } => None,
            Self::Runs(runs) => Some(runs.run_end(at)),
        }
    }

    /// The file offset a reader that starts at log position `lsn` begins at: the first byte
    /// kept at or after it.
    pub(crate) fn offset_at_or_after(&self, lsn: u64) -> u64 {
        match self {
            Self::Plain { first_lsn } => HEADER + lsn.saturating_sub(*first_lsn),
            Self::Runs(runs) => runs.offset_at_or_after(lsn),
        }
    }
}

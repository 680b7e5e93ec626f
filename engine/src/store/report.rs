//! What opening a store found and did.

use crate::codec::CorruptionKind;

/// The result of the recovery performed by `Store::open`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The checkpoint generation the state was loaded from, if any.
    pub checkpoint: Option<u64>,
    /// Checkpoints that were found unusable, with the reason, newest first.
    pub checkpoints_discarded: Vec<String>,
    /// Log records replayed after the checkpoint.
    pub records_replayed: u64,
    /// Bytes cut from a torn tail of the last segment.
    pub bytes_truncated: u64,
    /// Read-only opens: bytes after the last complete record of the last segment, left alone
    /// (a writer may be in the middle of appending them).
    pub torn_tail_ignored: u64,
    /// Segment files removed (a torn segment creation, or everything after salvaged
    /// corruption).
    pub segments_removed: Vec<String>,
    /// Sessions whose state changed during replay.
    pub sessions_touched: Vec<String>,
    /// With salvage: where the first corrupt record was and how much was dropped from there.
    pub salvaged: Option<Salvaged>,
}

/// What a salvaging open dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salvaged {
    /// The segment holding the first corrupt record.
    pub segment: String,
    /// Its offset in that segment.
    pub offset: u64,
    /// What was wrong.
    pub kind: CorruptionKind,
    /// Bytes dropped from there to the end of the log.
    pub bytes_dropped: u64,
}

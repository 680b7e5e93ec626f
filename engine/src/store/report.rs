//! What opening a store found and did.

use super::salvage::SalvageReport;

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
    /// Segment files removed (a torn segment creation).
    pub segments_removed: Vec<String>,
    /// Sessions whose state changed during replay.
    pub sessions_touched: Vec<String>,
    /// With salvage: what was damaged, which sessions lost which events, what was done.
    pub salvaged: Option<SalvageReport>,
}

//! Progress of a long export or import, for progress bars.

/// How far an export or import has come. Totals are 0 when unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Events written or read so far.
    pub events_done: u64,
    /// Events in all (0 if unknown).
    pub events_total: u64,
    /// Bytes written or read so far.
    pub bytes_done: u64,
    /// Bytes in all (0 if unknown).
    pub bytes_total: u64,
}

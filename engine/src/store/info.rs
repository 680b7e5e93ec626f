//! What the store reports about itself: session rows, figures, memory.

use crate::model::SessionHeader;

/// One row of [`Store::list`](crate::store::Store::list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The header.
    pub header: SessionHeader,
    /// Number of events.
    pub events: u64,
    /// Number of surface entries.
    pub surface_len: usize,
    /// Time of the last event.
    pub last_time: Option<i64>,
    /// Whether the last turn is open.
    pub turn_open: bool,
    /// Which creation of this id the session is: it changes when the id is deleted and
    /// created again, and never otherwise. A session only grows (a repair appends), so
    /// `(incarnation, events)` changes with every append and with a re-creation, and stays
    /// equal otherwise: a revision (the Node binding's, the PostgreSQL shipper's).
    pub incarnation: Incarnation,
}

/// One row of [`Store::list_each`](crate::store::Store::list_each): a listing row with the
/// header as the JSON line the store keeps (DSH's header line), borrowed for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedRow<'a> {
    /// The session id.
    pub id: &'a str,
    /// The header as its DSH JSON line (`{"type":"session",…}`).
    pub header_json: &'a [u8],
    /// Number of events.
    pub events: u64,
    /// Time of the last event.
    pub last_time: Option<i64>,
    /// Whether the last turn is open.
    pub turn_open: bool,
    /// As [`SessionInfo::incarnation`].
    pub incarnation: Incarnation,
}

/// Which creation of a session id a session is ([`SessionInfo::incarnation`]). Today the
/// log position of the record that created it: unique per creation within a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Incarnation(pub(crate) u64);

impl Incarnation {
    /// As a number (to store it elsewhere, e.g. a database column).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for Incarnation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What [`Store::checkpoint`](crate::store::Store::checkpoint) wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointInfo {
    /// Its generation (the file `checkpoints/<generation>.ckpt`).
    pub generation: u64,
    /// The log position it covers: an open replays the log from here.
    pub covered_lsn: u64,
    /// A full checkpoint (every session), not a delta on the previous one.
    pub full: bool,
}

/// Figures of [`Store::stats`](crate::store::Store::stats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStats {
    /// Live sessions.
    pub sessions: usize,
    /// Events over all sessions (inherited events counted in each fork).
    pub events: u64,
    /// Segment files.
    pub segments: usize,
    /// The log's end position: the LSN the next record takes. A position, not a size:
    /// compaction leaves gaps where records went, so it does not shrink (the bytes the
    /// store's files take are [`Store::disk_usage`](crate::store::Store::disk_usage)).
    pub end_lsn: u64,
    /// The log position covered by the newest checkpoint.
    pub checkpoint_lsn: u64,
    /// The newest checkpoint generation (0: none).
    pub checkpoint_generation: u64,
}

/// The bytes the store's files take, from their metadata ([`Store::disk_usage`](crate::store::Store::disk_usage)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Segment files: records, compaction's tables, and the space allocated ahead of the
    /// active segment's appends.
    pub segment_bytes: u64,
    /// Checkpoint files.
    pub checkpoint_bytes: u64,
}

impl DiskUsage {
    /// Every file's bytes.
    pub fn total(&self) -> u64 {
        self.segment_bytes + self.checkpoint_bytes
    }
}

/// Resident memory of the per-event index and the surfaces ([`Store::memory_usage`](crate::store::Store::memory_usage)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Live sessions decoded into memory (read or written since the open).
    pub decoded_sessions: usize,
    /// Live sessions still only in the checkpoint's index: a 64-byte mapped slot each, decoded
    /// when first read or written.
    pub undecoded_sessions: usize,
    /// Events of decoded sessions, each counted once even when forks share it.
    pub indexed_events: u64,
    /// Heap bytes of the per-event locations (shared chunks counted once).
    pub index_bytes: usize,
    /// Bytes of per-event locations of decoded sessions still only in the checkpoint file
    /// the open loaded them from (mapped, not on the heap; each session's decoded the first
    /// time it is read).
    pub mapped_index_bytes: usize,
    /// Surface entries over all sessions.
    pub surface_entries: usize,
    /// Heap bytes of the surfaces.
    pub surface_bytes: usize,
}

/// How [`Store::list_by`](crate::store::Store::list_by) orders sessions; ties go by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ListOrder {
    /// By id.
    #[default]
    Id,
    /// By the header's `createdAt`.
    Created,
    /// By the time of the last event (a session with none first).
    Updated,
    /// By number of events.
    Events,
    /// In the order the store keeps them (the sessions decoded since the open, then the
    /// index's, by a hash of the id): no order is promised and none is made, so a listing of
    /// every session reads each one's row once and sorts nothing (what a caller that puts its
    /// own order on the rows, or needs none, asks for).
    Stored,
}

/// Which end of the order a listing starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Smallest first.
    #[default]
    Ascending,
    /// Largest (newest, longest) first.
    Descending,
}

/// What [`Store::list_by`](crate::store::Store::list_by) lists: an order, a direction, and
/// at most `limit` sessions (`None`: all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ListOptions {
    /// The order.
    pub order: ListOrder,
    /// Which end first.
    pub direction: Direction,
    /// At most this many sessions.
    pub limit: Option<usize>,
}

impl ListOptions {
    /// All sessions in `order`, ascending.
    pub fn new(order: ListOrder) -> Self {
        Self {
            order,
            ..Self::default()
        }
    }

    /// Sets [`ListOptions::direction`].
    #[must_use]
    pub fn with_direction(mut self, direction: Direction) -> Self {
        self.direction = direction;
        self
    }

    /// Sets [`ListOptions::limit`].
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

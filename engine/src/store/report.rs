//! Every report the store hands out: what an open, a salvage and a verify found and did.
//! Plain data: nothing here depends on the store's machinery.

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
    /// Segment files removed (a torn segment creation).
    pub segments_removed: Vec<String>,
    /// Sessions whose state changed during replay.
    pub sessions_touched: Vec<String>,
    /// With salvage: what was damaged, which sessions lost which events, what was done.
    pub salvaged: Option<SalvageReport>,
}

/// What salvage found and what it does (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SalvageReport {
    /// Every damaged place, in log order.
    pub damage: Vec<Damage>,
    /// Every session that loses events, by id.
    pub sessions: Vec<SessionLoss>,
    /// Intact records dropped because their session was cut before them.
    pub records_dropped: u64,
    /// Checkpoint files removed (they may cover dropped records).
    pub checkpoints_removed: u64,
    /// Sessions whose last turn is open in the salvaged log (a cut one, or one a crash left
    /// open), by id: `sessdb repair --salvage` then closes each (repair closers, then an
    /// end-seed marker), writes a dry run shows too.
    pub open_turns: Vec<String>,
}

impl SalvageReport {
    /// Whether there is nothing to salvage.
    pub fn is_empty(&self) -> bool {
        self.damage.is_empty()
    }
}

/// One damaged place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The segment file.
    pub segment: String,
    /// Byte offset in that file.
    pub offset: u64,
    /// Bytes the damage spans (to the next valid record).
    pub bytes: u64,
    /// What was wrong.
    pub kind: CorruptionKind,
    /// What salvage does about it.
    pub repair: DamageRepair,
    /// The session whose record was damaged, when the damaged bytes still name one that
    /// exists; `None` when it cannot be read (a session may then have lost its last events
    /// without a later record to show it, unless a checkpoint remembers its length).
    pub session: Option<String>,
}

/// What salvage does with one damaged place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageRepair {
    /// The bytes become void records.
    Voided,
    /// The segment header is written anew (the records after it are scanned as usual).
    HeaderRewritten,
    /// The segment does not continue the log: it and every later segment are removed.
    SegmentRemoved,
    /// A torn tail beyond every durable mark, or the newest segment's zeros: cut.
    Cut,
    /// The log ends before a checkpoint's covered position: the checkpoints go, and the
    /// sessions they remember as longer are named as losses.
    CheckpointsRemoved,
}

/// A session that loses events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLoss {
    /// The session id.
    pub session: String,
    /// Events kept: seqs `0..kept` (0 when the session is lost whole).
    pub kept: u64,
    /// The last seq the log shows it had, when a readable record shows it.
    pub lost_through: Option<u64>,
}

/// What [`backup`](crate::store::backup) copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupReport {
    /// The log position the copy ends at: every record before it, none after.
    pub log_end: u64,
    /// Segment files copied.
    pub segments: usize,
    /// Bytes copied.
    pub bytes: u64,
    /// Records the copy's first open replayed (every one copied: each checked).
    pub records: u64,
    /// Sessions in the copy.
    pub sessions: usize,
}

/// What [`verify`](crate::store::verify) checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Segment files read.
    pub segments: usize,
    /// Records read and checked (checksums, decoding, acceptance).
    pub records: u64,
    /// The bytes of the log's records read (frames, not a compacted segment's tables; after
    /// damage, those salvage's walk reads intact).
    pub log_bytes: u64,
    /// Sessions compared.
    pub sessions: usize,
    /// Events over all sessions.
    pub events: u64,
    /// The checkpoint generation compared with the full replay — or, on a damaged log, the
    /// newest one there, not compared ([`VerifyReport::compared`] says which).
    pub checkpoint: Option<u64>,
    /// Whether `checkpoint` was compared with a full replay (not when the log is damaged:
    /// the full replay stops at the damage).
    pub compared: bool,
    /// Bytes after the last complete record (a torn tail, or a writer's append under way).
    pub incomplete_tail_bytes: u64,
    /// What is wrong; empty when everything checks out.
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What a compaction did ([`Store::compact`](crate::store::Store::compact)), or in a dry run would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Only planned: no file changed.
    pub dry_run: bool,
    /// The segments written again (or that would be), oldest first.
    pub segments: Vec<SegmentCompaction>,
    /// Deleted sessions of which no record is left.
    pub sessions_erased: usize,
    /// Deleted sessions of which records stay because a live fork reads them (the events it
    /// inherited, and its parent's first record); in a background compaction, also those
    /// with records in segments it did not write. They go when nothing reads them.
    pub sessions_kept: usize,
    /// Deletion records left out (their sessions were erased by an earlier pass).
    pub deletions_dropped: usize,
    /// Whether the active segment was sealed first, so that what it held could go too.
    pub rolled: bool,
    /// Segment files removed because their records were written into a neighbour's (small
    /// compacted segments merged).
    pub segments_merged: usize,
}

impl CompactReport {
    /// Bytes given back: record bytes before, less the file bytes after (run tables
    /// included); in a dry run, the record bytes that would go.
    pub fn reclaimed_bytes(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.bytes_before.saturating_sub(s.bytes_after))
            .sum()
    }
}

/// One segment of a [`CompactReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentCompaction {
    /// The segment file, relative to the store.
    pub segment: String,
    /// Its bytes after the header before: the records (and an earlier compaction's tables).
    pub bytes_before: u64,
    /// Its bytes after the header once written again: the records kept, the run and
    /// tombstone tables and the footer (in a dry run, the record bytes kept).
    pub bytes_after: u64,
    /// Records left out.
    pub records_dropped: u64,
}

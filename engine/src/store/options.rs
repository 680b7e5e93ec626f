//! How a store is opened.

use std::sync::Arc;

use crate::{Clock, Limits};

/// A callback that open's log scan calls with `(bytes scanned, bytes to scan)` about every
/// MiB: progress bars for long opens, `verify` and `repair`. Does nothing by default.
#[derive(Clone, Default)]
pub struct OpenProgress(Option<Arc<dyn Fn(u64, u64) + Send + Sync>>);

impl OpenProgress {
    /// Calls `f(done, total)` as the scan goes.
    pub fn new(f: impl Fn(u64, u64) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    pub(crate) fn report(&self, done: u64, total: u64) {
        if let Some(f) = &self.0 {
            f(done, total);
        }
    }
}

impl std::fmt::Debug for OpenProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OpenProgress(..)"
        } else {
            "OpenProgress(none)"
        })
    }
}

/// When an append is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// After the record is handed to the OS (copied into the active segment's shared mapping,
    /// or written with `pwrite`): survives a process crash, not a power loss.
    #[default]
    Buffered,
    /// After the record is on disk (`fdatasync`). Concurrent appenders share one sync (group
    /// commit).
    Sync,
}

/// Which thread writes the checkpoint an append finds due (`docs/DESIGN.md` §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CheckpointWrites {
    /// The checkpointer's own thread, started with the first one due: the append that found
    /// it due returns at once, and the checkpoint's encoding, log sync and file write run
    /// beside the appends that follow. A failure is reported by
    /// [`Store::maintenance`](crate::store::Store::maintenance); a failed write or sync
    /// poisons the store, as an append's would.
    #[default]
    Background,
    /// The append that found it due, before it returns (and its error is that append's).
    /// Storage operations then run in one order every time: for tests that fail each in
    /// turn.
    Inline,
}

/// Settings of a store: `StoreOptions::default()` and the `with_*` builder methods (the
/// struct is `#[non_exhaustive]`, so a field added later breaks no caller).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Segments roll over at this size. Default 64 MiB.
    pub segment_bytes_max: u64,
    /// Largest record payload this open writes. Default 128 MiB (a 64 MiB event plus its
    /// batch). It bounds writes only: a record a wider writer stored is read whatever this is.
    pub record_bytes_max: u32,
    /// A checkpoint is taken after this much log has been appended since the last one.
    /// Default 64 MiB.
    pub checkpoint_interval_bytes: u64,
    /// Every this many delta checkpoints, a full one is written instead. Default 8.
    pub checkpoint_merge_every: u32,
    /// Which thread writes a checkpoint that falls due. Default
    /// [`CheckpointWrites::Background`].
    pub checkpoint_writes: CheckpointWrites,
    /// With `true`, a writable open salvages instead of failing with `Corruption`: damaged
    /// records are skipped, only the sessions with events in them are cut (each at its last
    /// intact event), everything else is kept (`OpenReport::salvaged` says what was lost).
    pub salvage: bool,
    /// The active segment's space is allocated this far ahead of its appends (`fallocate`),
    /// so an append neither allocates blocks nor grows the file and `fdatasync` has no inode
    /// to write. 0: appends extend the file. Default 1 MiB.
    pub preallocate_bytes: u64,
    /// With `true`, open ignores checkpoints and replays the whole log (verification).
    pub ignore_checkpoints: bool,
    /// Bounds on accepted events.
    pub limits: Limits,
    /// Source of event times.
    pub clock: Clock,
    /// Told how far open's log scan has come.
    pub progress: OpenProgress,
    /// When the writer compacts in the background (`None`: only [`Store::compact`](crate::store::Store::compact)).
    /// Default: a segment is written again once half of its bytes are dead.
    pub compaction: Option<CompactionPolicy>,
    /// Which sessions the writer deletes by itself (`None`, the default: none).
    pub retention: Option<RetentionPolicy>,
    /// How many sessions reads may leave decoded before those not changed since the
    /// checkpoint go back to its index (`docs/DESIGN.md` §3.5): a session read costs its
    /// decoded entry (about a kilobyte for a short one) until then, so a read-only store, or a
    /// writer that reads more than it writes, holds a bounded number whatever it reads. A
    /// session read again after that is decoded again (about a microsecond). Default 16,384.
    pub resident_sessions: usize,
}

/// When a writer compacts by itself, on a thread of its own beside its appends and readers
/// (`docs/DESIGN.md` §3.7).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CompactionPolicy {
    /// A sealed segment is written again once this fraction of its record bytes is dead
    /// (records of deleted sessions no live fork reads, void space). In `(0, 1]`.
    pub dead_fraction: f64,
    /// ... and once its dead bytes are at least this many (a small segment is not written
    /// again for a few bytes).
    pub min_dead_bytes: u64,
    /// How long after the open the writer reads the whole log once to learn what earlier
    /// processes left dead (deletions it did not compact). After that it knows from its own
    /// deletions. A process that closes sooner never reads it. Default 10 s.
    pub first_check_after: std::time::Duration,
    /// How long the tombstones a compaction leaves (a record's position and checksum, 12
    /// bytes, so that a consumer remembering it tells a compacted log from another:
    /// `docs/FORMAT.md` §2.1) are kept. After it, they count as dead bytes and go at the
    /// segment's next compaction; a consumer whose remembered record went then takes its
    /// cautious path (the PostgreSQL shipper deletes nothing). Default 7 days.
    pub tombstone_ttl: std::time::Duration,
    /// How many bytes of new segment files a compaction (by this policy, or
    /// [`Store::compact`](crate::Store::compact) under it) writes ahead of the one it puts in
    /// place — one file at least. Ahead, the device writes while the next files are built;
    /// each byte is disk space taken beside the files they replace until then. Default
    /// 64 MiB.
    pub staged_bytes_max: u64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        Self {
            dead_fraction: 0.5,
            min_dead_bytes: 64 << 10,
            first_check_after: std::time::Duration::from_secs(10),
            tombstone_ttl: std::time::Duration::from_secs(7 * 86_400),
            staged_bytes_max: 64 << 20,
        }
    }
}

impl CompactionPolicy {
    /// A policy that writes a segment again once `fraction` of it is dead.
    pub fn dead_fraction(fraction: f64) -> Self {
        Self {
            dead_fraction: fraction,
            ..Self::default()
        }
    }

    /// Sets [`CompactionPolicy::min_dead_bytes`].
    #[must_use]
    pub fn with_min_dead_bytes(mut self, bytes: u64) -> Self {
        self.min_dead_bytes = bytes;
        self
    }

    /// Sets [`CompactionPolicy::tombstone_ttl`].
    #[must_use]
    pub fn with_tombstone_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.tombstone_ttl = ttl;
        self
    }

    /// Sets [`CompactionPolicy::staged_bytes_max`].
    #[must_use]
    pub fn with_staged_bytes_max(mut self, bytes: u64) -> Self {
        self.staged_bytes_max = bytes;
        self
    }

    /// Sets [`CompactionPolicy::first_check_after`].
    #[must_use]
    pub fn with_first_check_after(mut self, after: std::time::Duration) -> Self {
        self.first_check_after = after;
        self
    }

    /// Whether a segment of `size` record bytes, `dead` of them dead, is written again.
    pub(crate) fn wants(&self, dead: u64, size: u64) -> bool {
        dead > 0 && dead >= self.min_dead_bytes && dead as f64 >= self.dead_fraction * size as f64
    }
}

/// Which sessions a writer deletes by itself ([`Store::apply_retention`](crate::store::Store::apply_retention)),
/// at open and then every [`RetentionPolicy::check_every`]. A deleted session's bytes go at
/// the next compaction.
///
/// ```
/// use std::time::Duration;
/// use sessdb::{Clock, CompactionPolicy, RetentionPolicy, SessionHeader, Store, StoreOptions};
///
/// let dir = std::env::temp_dir().join(format!("sessdb-doc-retention-{}", std::process::id()));
/// // A session written in 1970, by a clock that says so.
/// let store = Store::open(&dir, StoreOptions::default().with_clock(Clock::fixed(0)))?;
/// store.create_session(SessionHeader::new("old", 0), Vec::new())?;
/// store.close()?;
/// drop(store);
///
/// let options = StoreOptions::default()
///     .with_retention(Some(RetentionPolicy::max_age(Duration::from_secs(30 * 86_400))))
///     .with_compaction(Some(CompactionPolicy::dead_fraction(0.25)));
/// let store = Store::open(&dir, options)?;
/// // The writer applies the policy at open, on a thread of its own.
/// assert!(store.wait_maintenance(Duration::from_secs(60)));
/// assert_eq!(store.maintenance().sessions_expired, 1);
/// assert!(store.list()?.is_empty());
/// store.close()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), sessdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionPolicy {
    /// A session whose last event (its creation, when it has none) is older than this goes.
    pub max_age: Option<std::time::Duration>,
    /// While the live sessions' bytes are more than this, the session with the oldest last
    /// event goes.
    pub max_live_bytes: Option<u64>,
    /// How often the writer applies the policy. Default one minute.
    pub check_every: std::time::Duration,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            max_age: None,
            max_live_bytes: None,
            check_every: std::time::Duration::from_secs(60),
        }
    }
}

impl RetentionPolicy {
    /// Sessions whose last event is older than `age` go.
    pub fn max_age(age: std::time::Duration) -> Self {
        Self {
            max_age: Some(age),
            ..Self::default()
        }
    }

    /// Sets [`RetentionPolicy::max_age`].
    #[must_use]
    pub fn with_max_age(mut self, age: std::time::Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// Sets [`RetentionPolicy::max_live_bytes`].
    #[must_use]
    pub fn with_max_live_bytes(mut self, bytes: u64) -> Self {
        self.max_live_bytes = Some(bytes);
        self
    }

    /// Sets [`RetentionPolicy::check_every`].
    #[must_use]
    pub fn with_check_every(mut self, every: std::time::Duration) -> Self {
        self.check_every = every;
        self
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Buffered,
            segment_bytes_max: 64 << 20,
            record_bytes_max: 128 << 20,
            checkpoint_interval_bytes: 64 << 20,
            checkpoint_merge_every: 8,
            checkpoint_writes: CheckpointWrites::Background,
            salvage: false,
            preallocate_bytes: 1 << 20,
            ignore_checkpoints: false,
            limits: Limits::default(),
            clock: Clock::default(),
            progress: OpenProgress::default(),
            compaction: Some(CompactionPolicy::default()),
            retention: None,
            resident_sessions: 16_384,
        }
    }
}

/// Builder methods: `StoreOptions::default().with_durability(Durability::Sync)` reads as
/// the struct-literal form does, and keeps compiling if fields are added.
///
/// ```
/// use sessdb::{Durability, StoreOptions};
/// let o = StoreOptions::default()
///     .with_durability(Durability::Sync)
///     .with_checkpoint_interval_bytes(16 << 20);
/// assert_eq!(o.durability, Durability::Sync);
/// assert_eq!(o.checkpoint_interval_bytes, 16 << 20);
/// ```
impl StoreOptions {
    /// Sets [`StoreOptions::durability`].
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets [`StoreOptions::segment_bytes_max`].
    #[must_use]
    pub fn with_segment_bytes_max(mut self, bytes: u64) -> Self {
        self.segment_bytes_max = bytes;
        self
    }

    /// Sets [`StoreOptions::record_bytes_max`].
    #[must_use]
    pub fn with_record_bytes_max(mut self, bytes: u32) -> Self {
        self.record_bytes_max = bytes;
        self
    }

    /// Sets [`StoreOptions::checkpoint_interval_bytes`].
    #[must_use]
    pub fn with_checkpoint_interval_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_interval_bytes = bytes;
        self
    }

    /// Sets [`StoreOptions::checkpoint_merge_every`].
    #[must_use]
    pub fn with_checkpoint_merge_every(mut self, every: u32) -> Self {
        self.checkpoint_merge_every = every;
        self
    }

    /// Sets [`StoreOptions::resident_sessions`] (at least 1).
    #[must_use]
    pub fn with_resident_sessions(mut self, sessions: usize) -> Self {
        self.resident_sessions = sessions.max(1);
        self
    }

    /// Sets [`StoreOptions::checkpoint_writes`].
    #[must_use]
    pub fn with_checkpoint_writes(mut self, writes: CheckpointWrites) -> Self {
        self.checkpoint_writes = writes;
        self
    }

    /// Sets [`StoreOptions::salvage`].
    #[must_use]
    pub fn with_salvage(mut self, salvage: bool) -> Self {
        self.salvage = salvage;
        self
    }

    /// Sets [`StoreOptions::preallocate_bytes`].
    #[must_use]
    pub fn with_preallocate_bytes(mut self, bytes: u64) -> Self {
        self.preallocate_bytes = bytes;
        self
    }

    /// Sets [`StoreOptions::ignore_checkpoints`].
    #[must_use]
    pub fn with_ignore_checkpoints(mut self, ignore: bool) -> Self {
        self.ignore_checkpoints = ignore;
        self
    }

    /// Sets [`StoreOptions::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`StoreOptions::clock`].
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sets [`StoreOptions::progress`].
    #[must_use]
    pub fn with_progress(mut self, progress: OpenProgress) -> Self {
        self.progress = progress;
        self
    }

    /// Sets [`StoreOptions::compaction`].
    #[must_use]
    pub fn with_compaction(mut self, policy: Option<CompactionPolicy>) -> Self {
        self.compaction = policy;
        self
    }

    /// Sets [`StoreOptions::retention`].
    #[must_use]
    pub fn with_retention(mut self, policy: Option<RetentionPolicy>) -> Self {
        self.retention = policy;
        self
    }
}

impl StoreOptions {
    /// Tiny segments and checkpoint interval, so tests and fuzzers reach rollover and
    /// checkpoint edges with little data.
    pub fn tiny() -> Self {
        Self {
            segment_bytes_max: 4096,
            checkpoint_interval_bytes: 8192,
            checkpoint_merge_every: 3,
            // Tests reason about file lengths; preallocation has its own tests.
            preallocate_bytes: 0,
            // ... and about which records the segments hold: background compaction is
            // tested where it is asked for.
            compaction: None,
            // ... and fail storage operations one by one: in one order every run.
            checkpoint_writes: CheckpointWrites::Inline,
            ..Self::default()
        }
    }
}

//! Bounds on what the engine accepts, and the clock it stamps events with.

use std::sync::Arc;

/// Bounds applied to every event (DESIGN §2; "put a limit on everything").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted `data` value, in bytes. Default 64 MiB.
    pub max_data_bytes: usize,
    /// Deepest accepted nesting of arrays and objects in `data`. Default 512.
    pub max_depth: u32,
}

impl Limits {
    /// The default data size limit: 64 MiB.
    pub const DEFAULT_MAX_DATA_BYTES: usize = 64 << 20;
    /// The default depth limit: 512 nested containers. DSH's loader reads deeper `data` than
    /// the 128 this once was (a 200-deep value in its conformance cases); the engine's
    /// recursive comparisons stay far from a thread's stack at 512.
    pub const DEFAULT_MAX_DEPTH: u32 = 512;

    /// The bounds a stored event is judged by when it is read back (an open's replay,
    /// `refresh`, `verify`, salvage, an export): none beyond what its record holds. What a
    /// store holds passed its writer's bounds, and those are an open's option
    /// ([`StoreOptions::with_limits`](crate::StoreOptions::with_limits)), not the store's: a
    /// reader judging it again by its own narrower bounds reported an intact store as
    /// damaged, and salvage would have dropped the event (`tests/tests/store_roundtrip.rs`,
    /// `events_a_wider_writer_accepted_are_not_damage_to_a_narrower_reader`). Nesting is
    /// walked without recursion everywhere a stored value is (2,000,000 deep measured).
    #[must_use]
    pub fn stored() -> Self {
        Self {
            max_data_bytes: usize::MAX,
            max_depth: u32::MAX,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_data_bytes: Self::DEFAULT_MAX_DATA_BYTES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
        }
    }
}

/// The clock of one write, read at most once and only when asked: a write whose events all
/// carry their time and that starts no segment reads no clock (DSH's events are all
/// stamped by the harness; PERFORMANCE.md, "The clock read only when needed").
pub(crate) struct Now<'a> {
    clock: &'a Clock,
    at: std::cell::Cell<Option<i64>>,
}

impl<'a> Now<'a> {
    /// Not read yet.
    pub(crate) fn new(clock: &'a Clock) -> Self {
        Self {
            clock,
            at: std::cell::Cell::new(None),
        }
    }

    /// The time of this write: the clock's answer the first time, the same answer after.
    pub(crate) fn get(&self) -> i64 {
        if let Some(t) = self.at.get() {
            return t;
        }
        let t = self.clock.now_ms();
        self.at.set(Some(t));
        t
    }
}

/// Where event times come from when the caller does not give one: Unix epoch milliseconds.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Arc::new(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        }))
    }

    /// A clock that always answers `ms`: deterministic tests and generators.
    pub fn fixed(ms: i64) -> Self {
        Self(Arc::new(move || ms))
    }

    /// A clock backed by any function.
    pub fn from_fn(f: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The current time in Unix epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// Settings of an in-memory session: limits and clock.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Bounds on accepted events.
    pub limits: Limits,
    /// Source of event times.
    pub clock: Clock,
}

/// The largest integer a JavaScript number represents exactly (`Number.MAX_SAFE_INTEGER`):
/// DSH requires seqs, times and header integers to be safe integers.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

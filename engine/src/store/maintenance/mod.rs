//! The writer's background work (`docs/DESIGN.md` §3.7), its shared state: one thread per
//! writable store (`background.rs`) that
//! applies the retention policy on a timer and compacts the segments the compaction policy
//! wants. It knows each segment's dead bytes exactly after a read of the log, and between two
//! reads adds an estimate of what each deletion left dead; a segment whose estimate passes
//! the policy wakes it to read the log again and compact.
//!
//! The thread holds the store open; [`Maintenance::stop`] (close, or the last handle dropped)
//! stops it between two steps — a compaction between two segments, every state of which
//! replays — and joins it before the writer lock is released.

pub(crate) mod background;
pub(crate) mod retention;

use std::collections::BTreeMap;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::store::options::{CompactionPolicy, RetentionPolicy};

/// What the background work has done since the open ([`Store::maintenance`](crate::store::Store::maintenance)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MaintenanceStatus {
    /// Background compactions that wrote at least one segment.
    pub compactions: u64,
    /// Segments they wrote again.
    pub segments_compacted: u64,
    /// Bytes they gave back.
    pub bytes_reclaimed: u64,
    /// Sessions the retention policy deleted.
    pub sessions_expired: u64,
    /// The last error of a background step — retention, compaction, or a checkpoint the
    /// checkpointer's thread took (the step is tried again at its next turn; a write error
    /// poisons the store as any write's does).
    pub last_error: Option<String>,
    /// The dead bytes the writer knows of (exact after a read of the log, estimated since).
    pub dead_bytes: u64,
}

#[derive(Debug, Default)]
struct State {
    stop: bool,
    /// Working on a step.
    busy: bool,
    /// Dead bytes by segment (first LSN).
    dead: BTreeMap<u64, u64>,
    /// Whether `dead` came from a read of the log (and then from this writer's deletions).
    known: bool,
    /// Compaction asked for by a deletion whose segment passed the policy.
    due: bool,
    /// Dead bytes of the deletions made while a compaction ran (its figures lack them).
    during: BTreeMap<u64, u64>,
    /// When retention is applied next.
    retention_at: Option<Instant>,
    /// When the log is first read (to learn what earlier processes left dead).
    first_read_at: Option<Instant>,
    status: MaintenanceStatus,
}

/// The shared half: what the store's paths tell the thread, and what it tells them.
#[derive(Debug, Default)]
pub(crate) struct Maintenance {
    state: Mutex<State>,
    cv: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// One compaction at a time (by the policy here, or asked for through the API).
    compacting: Mutex<()>,
}

impl State {
    /// Whether a step is due at `now`: (retention, compaction).
    fn due_at(&self, now: Instant) -> Due {
        let first = self.first_read_at.is_some_and(|t| t <= now);
        Due {
            retention: self.retention_at.is_some_and(|t| t <= now),
            compaction: first || self.due,
        }
    }
}

/// What a background compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// Segments written again.
    pub(crate) segments: u64,
    /// Bytes the store's files shrank by.
    pub(crate) reclaimed: u64,
    /// The dead bytes it left, by segment (first LSN): those its scope passed over.
    pub(crate) dead_left: BTreeMap<u64, u64>,
}

/// Which background steps are due ([`Maintenance::next_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// The retention policy's step.
    pub(crate) retention: bool,
    /// A compaction by the policy (its first read of the log, or dead bytes past the line).
    pub(crate) compaction: bool,
}

impl Maintenance {
    /// The turn of one compaction: held while it runs.
    pub(crate) fn compaction_turn(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.compacting.lock()
    }

    /// Sets the timers of a store about to start its thread.
    pub(crate) fn arm(
        &self,
        retention: Option<&RetentionPolicy>,
        compaction: Option<&CompactionPolicy>,
    ) {
        let now = Instant::now();
        let mut st = self.state.lock();
        st.retention_at = retention.map(|_| now);
        st.first_read_at = compaction.map(|p| now + p.first_check_after);
    }

    /// Keeps the thread's handle, to join it at [`Maintenance::stop`].
    pub(crate) fn started(&self, handle: std::io::Result<JoinHandle<()>>) {
        match handle {
            Ok(h) => *self.thread.lock() = Some(h),
            Err(e) => self.state.lock().status.last_error = Some(e.to_string()),
        }
    }

    /// Blocks until a step is due, and says which; `None` once stopped.
    pub(crate) fn next_step(&self) -> Option<Due> {
        let mut st = self.state.lock();
        loop {
            if st.stop {
                return None;
            }
            let due = st.due_at(Instant::now());
            if due.retention || due.compaction {
                st.busy = true;
                st.due = false;
                if due.compaction {
                    st.first_read_at = None;
                }
                return Some(due);
            }
            match [st.retention_at, st.first_read_at]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) => {
                    self.cv.wait_until(&mut st, t);
                }
                None => self.cv.wait(&mut st),
            }
        }
    }

    /// A retention step ended; the next is due `every` from now.
    pub(crate) fn retention_done(&self, expired: Result<u64, String>, every: Duration) {
        let mut st = self.state.lock();
        match expired {
            Ok(n) => st.status.sessions_expired += n,
            Err(e) => st.status.last_error = Some(e),
        }
        st.retention_at = Some(Instant::now() + every);
    }

    /// A compaction step ended: what it wrote, and the dead bytes it left by segment.
    pub(crate) fn compaction_done(&self, done: Result<Compacted, String>) {
        let mut st = self.state.lock();
        match done {
            Ok(Compacted {
                segments,
                reclaimed,
                dead_left,
            }) => {
                if segments > 0 {
                    st.status.compactions += 1;
                    st.status.segments_compacted += segments;
                    st.status.bytes_reclaimed += reclaimed;
                }
                st.dead = dead_left;
                for (seg, b) in std::mem::take(&mut st.during) {
                    *st.dead.entry(seg).or_default() += b;
                }
                st.known = true;
            }
            Err(e) => st.status.last_error = Some(e),
        }
    }

    /// A failure of work done beside the appends outside this thread's steps (a checkpoint
    /// the checkpointer's thread took), for [`MaintenanceStatus::last_error`].
    pub(crate) fn note_error(&self, e: String) {
        self.state.lock().status.last_error = Some(e);
    }

    /// The step ended.
    pub(crate) fn idle(&self) {
        let mut st = self.state.lock();
        st.busy = false;
        st.during.clear();
        drop(st);
        self.cv.notify_all();
    }

    /// Stops the thread (between two steps) and waits for it.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
        if let Some(handle) = self.thread.lock().take()
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
    }

    /// A deletion left `bytes` dead in the segment whose first LSN is the key; wakes the
    /// thread when that segment now passes the policy.
    pub(crate) fn left_dead(
        &self,
        policy: CompactionPolicy,
        bytes: &BTreeMap<u64, u64>,
        record_bytes: impl Fn(u64) -> u64,
    ) {
        let mut st = self.state.lock();
        let busy = st.busy;
        for (&seg, &b) in bytes {
            *st.dead.entry(seg).or_default() += b;
            if busy {
                *st.during.entry(seg).or_default() += b;
            }
        }
        // The estimate is at most what is dead: a segment it says passes, passes.
        if bytes.keys().any(|seg| {
            let dead = st.dead.get(seg).copied().unwrap_or(0);
            policy.wants(dead, record_bytes(*seg))
        }) {
            st.due = true;
            self.cv.notify_all();
        }
    }

    /// The dead bytes over the whole log, when the writer knows them.
    pub(crate) fn known_dead(&self) -> Option<u64> {
        let st = self.state.lock();
        st.known.then(|| st.dead.values().sum())
    }

    /// Replaces the estimate with exact figures from a read of the log.
    pub(crate) fn set_exact(&self, dead: BTreeMap<u64, u64>) {
        let mut st = self.state.lock();
        st.dead = dead;
        st.known = true;
    }

    /// What the background work has done.
    pub(crate) fn status(&self) -> MaintenanceStatus {
        let st = self.state.lock();
        let mut s = st.status.clone();
        s.dead_bytes = st.dead.values().sum();
        s
    }

    /// Waits until no step runs and none is due, or `timeout` passes (`false`).
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        let pending = |st: &State| {
            let due = st.due_at(Instant::now());
            st.busy || due.retention || due.compaction
        };
        while pending(&st) && !st.stop {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                return !pending(&st);
            }
        }
        true
    }
}

//! The prefault helper (`docs/DESIGN.md` §3.2): one thread per writable `Buffered` store that
//! faults the active segment's write window in, writable, while the writer fills it, so an
//! append does not take a page fault (page-cache allocation, zeroing, block mapping) every
//! 4 KiB on the writer's thread; and retires the windows the writer has filled — unmaps them
//! and starts their writeback — so neither the `munmap` nor, at the roll, the writing of the
//! whole segment falls on an append.
//!
//! Not used under `Sync`: pre-dirtied zero pages ahead of the log end would be written by the
//! next `fdatasync`, up to a window of extra I/O on a durable append's latency.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::storage::{Prefault, StorageFile, WriteWindow};

/// What the helper does.
pub(crate) enum Job {
    /// Fault a window in, writable.
    Populate(Prefault),
    /// Unmap a window the writer is done with; with a file, start the writeback of the
    /// range it filled.
    Retire(WriteWindow, Option<Arc<dyn StorageFile>>),
    /// A `Sync` store's space ahead of its appends: allocate the file to `to`, write
    /// `from..to` with zeros and start their writeback, never a sync
    /// (`StorageFile::preallocate_written`); the outcome
    /// goes to `done` (`true`: allocated and written).
    ZeroFill {
        /// The active segment.
        file: Arc<dyn StorageFile>,
        /// Where the zeros start: the end of the last record placed (which the appender may
        /// still be writing).
        from: u64,
        /// The length to allocate to.
        to: u64,
        /// Set once the job has run.
        done: Arc<std::sync::OnceLock<bool>>,
    },
}

impl Job {
    fn run(self) {
        match self {
            Job::Populate(p) => p.run(),
            Job::ZeroFill {
                file,
                from,
                to,
                done,
            } => {
                let _ = done.set(matches!(file.preallocate_written(from, to), Ok(true)));
            }
            Job::Retire(window, file) => {
                let (start, end) = window.range();
                // Unmapped first: the writeback then finds no mapping of the range.
                drop(window);
                if let Some(file) = file {
                    file.start_writeback(start, end - start);
                }
            }
        }
    }
}

/// Jobs not finished yet, and their condition variable.
type Pending = Arc<(Mutex<usize>, Condvar)>;

pub(crate) struct Prefaulter {
    tx: Option<mpsc::Sender<Job>>,
    pending: Pending,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Prefaulter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prefaulter")
    }
}

impl Prefaulter {
    /// Starts the helper thread; `None` if the system refuses a thread (the writer then
    /// faults its pages itself, as without the helper).
    pub(crate) fn spawn() -> Option<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let pending: Pending = Arc::new((Mutex::new(0), Condvar::new()));
        let done = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name("sessdb-prefault".into())
            .spawn(move || {
                for job in rx {
                    job.run();
                    let (count, cv) = &*done;
                    let mut n = count
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    *n = n.saturating_sub(1);
                    cv.notify_all();
                }
            })
            .ok()?;
        Some(Self {
            tx: Some(tx),
            pending,
            thread: Some(thread),
        })
    }

    /// Queues a job.
    pub(crate) fn submit(&self, job: Job) {
        let Some(tx) = &self.tx else { return };
        let (count, _) = &*self.pending;
        *count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        if tx.send(job).is_err() {
            // The helper is gone (it never panics; nothing else ends it): undo the count.
            let mut n = count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *n = n.saturating_sub(1);
        }
    }

    /// Waits until no job holds a window: before the segment under it is truncated.
    pub(crate) fn wait_idle(&self) {
        let (count, cv) = &*self.pending;
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n > 0 {
            n = cv
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl Drop for Prefaulter {
    fn drop(&mut self) {
        // Closing the channel ends the helper's loop once the queued jobs are done.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

//! The checkpointer's thread (`docs/DESIGN.md` §3.5): takes the checkpoint an append found
//! due, so that append returns at once instead of encoding the changed sessions, syncing the
//! log and writing the file (`CheckpointWrites::Background`).
//!
//! The thread is started by the first checkpoint due and holds no handle on the store
//! between two checkpoints (only a weak one); [`Worker::stop`] — at close, or when the last
//! handle is dropped — lets the checkpoint in progress finish and joins the thread before the
//! writer lock is released.

use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

/// The store the thread checkpoints, as the thread sees it (the open store implements it;
/// the checkpointer does not reach into the store's other owners).
pub(crate) trait DueCheckpoints: Send + Sync {
    /// Takes the checkpoint an append found due, as the appender would have.
    fn take_due_checkpoint(&self) -> crate::Result<()>;
    /// Reports a failure of one (where the background work's failures are reported).
    fn checkpoint_failed(&self, e: String);
}

/// What an append asks of the thread, and the thread's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// Nothing to do: the thread waits.
    Nothing,
    /// A checkpoint is due.
    Checkpoint,
    /// The store is closing: the thread ends.
    Stop,
}

/// Where the thread stands, for [`Worker::ask`].
#[derive(Debug)]
enum Thread {
    /// Not started: no checkpoint has fallen due yet.
    NotStarted,
    /// Running.
    Running(JoinHandle<()>),
    /// The system refused a thread, or the worker was stopped: appenders take their
    /// checkpoints themselves.
    Unavailable,
}

/// The state the appenders and the thread share.
#[derive(Debug)]
struct Shared {
    ask: Mutex<Ask>,
    cv: Condvar,
}

/// The checkpointer's thread.
#[derive(Debug)]
pub(crate) struct Worker {
    shared: Arc<Shared>,
    thread: Mutex<Thread>,
    /// The store the thread checkpoints (set once the store is built).
    store: OnceLock<Weak<dyn DueCheckpoints>>,
}

impl Default for Worker {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                ask: Mutex::new(Ask::Nothing),
                cv: Condvar::new(),
            }),
            thread: Mutex::new(Thread::NotStarted),
            store: OnceLock::new(),
        }
    }
}

impl Worker {
    /// The store this worker's thread is to checkpoint.
    pub(crate) fn attach(&self, store: Weak<dyn DueCheckpoints>) {
        let _ = self.store.set(store);
    }

    /// Hands the due checkpoint to the thread (started here the first time); `false` when
    /// there is no thread to take it (never attached, refused by the system, or stopped): the
    /// caller takes it itself.
    pub(crate) fn ask(&self) -> bool {
        let mut thread = self.thread.lock();
        if matches!(*thread, Thread::NotStarted) {
            *thread = match self.spawn() {
                Some(handle) => Thread::Running(handle),
                None => Thread::Unavailable,
            };
        }
        if !matches!(*thread, Thread::Running(_)) {
            return false;
        }
        drop(thread);
        let mut ask = self.shared.ask.lock();
        if *ask == Ask::Stop {
            return false;
        }
        *ask = Ask::Checkpoint;
        self.shared.cv.notify_one();
        true
    }

    fn spawn(&self) -> Option<JoinHandle<()>> {
        let store = self.store.get()?.clone();
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("sessdb-checkpoint".into())
            .spawn(move || run(&shared, &store))
            .ok()
    }

    /// Ends the thread: the checkpoint in progress finishes, none starts after; returns once
    /// the thread has ended. Appenders take due checkpoints themselves from now on.
    pub(crate) fn stop(&self) {
        *self.shared.ask.lock() = Ask::Stop;
        self.shared.cv.notify_all();
        let thread = std::mem::replace(&mut *self.thread.lock(), Thread::Unavailable);
        if let Thread::Running(handle) = thread
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
    }
}

/// The thread: waits for a due checkpoint, takes it (unless the store has closed or another
/// checkpoint is being written), and waits again; ends at [`Ask::Stop`] or when the store is
/// gone.
fn run(shared: &Shared, store: &Weak<dyn DueCheckpoints>) {
    loop {
        {
            let mut ask = shared.ask.lock();
            while *ask == Ask::Nothing {
                shared.cv.wait(&mut ask);
            }
            if *ask == Ask::Stop {
                return;
            }
            *ask = Ask::Nothing;
        }
        let Some(store) = store.upgrade() else {
            return;
        };
        match store.take_due_checkpoint() {
            // Closed meanwhile: the close takes the last checkpoint itself.
            Ok(()) | Err(crate::Error::Closed) => {}
            // A failed write or sync has poisoned the store (the next append says so); any
            // failure is told where the background work's are.
            Err(e) => store.checkpoint_failed(format!("checkpoint: {e}")),
        }
    }
}

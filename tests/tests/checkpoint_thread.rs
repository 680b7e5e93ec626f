//! `CheckpointWrites::Background`: a checkpoint an append finds due is written by the
//! checkpointer's thread, not by that append — which returns while the file is still being put
//! in place — and a failure there poisons the store as an append's own failed write would:
//! reported by `close` and `maintenance`, nothing acknowledged lost.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use sessdb::{CheckpointWrites, Clock, Error, Store, StoreOptions};

#[path = "support/renames.rs"]
mod renames;
#[path = "support/store.rs"]
mod support;

use renames::HookedRenames;

/// The name the checkpointer's thread runs under.
const CHECKPOINT_THREAD: &str = "sessdb-checkpoint";

/// What the held rename does once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    Rename,
    Fail,
}

/// Said when the rename is reached; waited on before it goes on.
type Armed = Option<(mpsc::Sender<()>, mpsc::Receiver<()>, Then)>;

/// A memory storage that notes which thread renames each checkpoint file into place, and
/// holds the next such rename until released (then renames, or fails with EIO).
#[derive(Clone)]
struct Gate {
    storage: HookedRenames,
    armed: Arc<Mutex<Armed>>,
    renamed_by: Arc<Mutex<Vec<String>>>,
}

impl Gate {
    fn new() -> Self {
        let armed: Arc<Mutex<Armed>> = Arc::new(Mutex::new(None));
        let renamed_by = Arc::new(Mutex::new(Vec::new()));
        let (held, by) = (Arc::clone(&armed), Arc::clone(&renamed_by));
        let storage = HookedRenames::new(Arc::new(move |_, to| {
            if !to.starts_with("checkpoints/") {
                return Ok(());
            }
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            by.lock().unwrap().push(thread.clone());
            let armed = held.lock().unwrap().take();
            if let Some((entered, release, then)) = armed {
                entered.send(()).unwrap();
                // Held only off the appender's thread: on it (the checkpoint taken inline) the
                // test would wait for itself; it fails on the thread's name instead.
                if thread == CHECKPOINT_THREAD {
                    release.recv().unwrap();
                }
                if then == Then::Fail {
                    return Err(io::Error::from_raw_os_error(5));
                }
            }
            Ok(())
        }));
        Self {
            storage,
            armed,
            renamed_by,
        }
    }

    /// Arms the next checkpoint rename to do `then`: what says it is reached, and its
    /// release.
    fn arm(&self, then: Then) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *self.armed.lock().unwrap() = Some((entered_tx, release_rx, then));
        (entered, release)
    }

    fn open(&self) -> Store {
        Store::open_with(Arc::new(self.storage.clone()), options()).unwrap()
    }
}

fn options() -> StoreOptions {
    StoreOptions::tiny()
        .with_clock(Clock::fixed(1_000))
        .with_checkpoint_writes(CheckpointWrites::Background)
}

/// Appends notes to `writer` until the armed rename is reached (on whichever thread);
/// returns how many were acknowledged.
fn append_until_entered(store: &Store, entered: &mpsc::Receiver<()>) -> usize {
    let mut n = 0;
    while entered.try_recv().is_err() {
        support::note(store, "writer", &format!("note {n}"));
        n += 1;
    }
    n
}

#[test]
fn a_due_checkpoint_is_written_on_the_checkpointers_thread_while_appends_go_on() {
    let gate = Gate::new();
    let store = gate.open();
    support::session_with(&store, "writer", "w", 0);
    let (entered, release) = gate.arm(Then::Rename);
    let before = append_until_entered(&store, &entered);
    assert!(before > 0);
    // The checkpoint's file is held: appends still return.
    for n in 0..20 {
        support::note(&store, "writer", &format!("beside {n}"));
    }
    // (Inline, the rename was not held: nothing waits for the release.)
    let _ = release.send(());
    let dump = support::dump(&store);
    store.close().unwrap();
    let by = gate.renamed_by.lock().unwrap().clone();
    assert_eq!(
        by.first().map(String::as_str),
        Some(CHECKPOINT_THREAD),
        "the due checkpoint's file was put in place by {by:?}"
    );
    drop(store);
    let reopened = gate.open();
    assert_eq!(support::dump(&reopened), dump);
    assert_eq!(
        reopened.events("writer", ..).unwrap().len(),
        before + 20 + 1,
        "every acknowledged note, after the session's first event"
    );
}

#[test]
fn a_failed_background_checkpoint_poisons_the_store_and_loses_nothing_acknowledged() {
    let gate = Gate::new();
    let store = gate.open();
    support::session_with(&store, "writer", "w", 0);
    let (entered, release) = gate.arm(Then::Fail);
    let acked = append_until_entered(&store, &entered);
    let dump = support::dump(&store);
    release.send(()).unwrap();
    // The close joins the thread after its failed checkpoint, and says the store is
    // poisoned; the failure is where the background work's are.
    let closed = store.close();
    assert!(
        matches!(closed, Err(Error::Poisoned { .. })),
        "close after a failed background checkpoint: {closed:?}"
    );
    let error = store.maintenance().last_error.unwrap_or_default();
    assert!(error.starts_with("checkpoint:"), "{error}");
    assert_eq!(
        gate.renamed_by.lock().unwrap().first().map(String::as_str),
        Some(CHECKPOINT_THREAD)
    );
    drop(store);
    let reopened = gate.open();
    assert_eq!(support::dump(&reopened), dump);
    assert_eq!(reopened.events("writer", ..).unwrap().len(), acked + 1);
}

//! A checkpoint's file is written beside the store's work, not in its way: while the file of
//! a checkpoint an append found due is being put in place, reads and appends from other
//! threads go on (the writer lock and the catalog are held only while it is encoded), and
//! what they wrote is in the next checkpoint and after a reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sessdb::{Clock, Store, StoreOptions};

#[path = "support/renames.rs"]
mod renames;
#[path = "support/store.rs"]
mod support;

use renames::HookedRenames;

/// Said when the rename is reached; waited on before it goes on.
type Armed = Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>;

/// A memory storage whose next rename into `checkpoints/` waits until released, saying so
/// first.
fn gate(armed: &Arc<Mutex<Armed>>) -> HookedRenames {
    let armed = Arc::clone(armed);
    HookedRenames::new(Arc::new(move |_, to| {
        if to.starts_with("checkpoints/") {
            let armed = armed.lock().unwrap().take();
            if let Some((entered, release)) = armed {
                entered.send(()).unwrap();
                release.recv().unwrap();
            }
        }
        Ok(())
    }))
}

fn options() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(1_000))
}

#[test]
fn reads_and_appends_go_on_while_a_due_checkpoint_is_written() {
    let armed = Arc::new(Mutex::new(None));
    let gate = gate(&armed);
    let store = Arc::new(Store::open_with(Arc::new(gate.clone()), options()).unwrap());
    support::session_with(&store, "writer", "w", 0);
    support::session_with(&store, "other", "o", 3);
    store.checkpoint().unwrap();
    let first = store.stats().checkpoint_generation;
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *armed.lock().unwrap() = Some((entered_tx, release_rx));
    // Appends until one finds a checkpoint due: that append stops in the checkpoint's rename.
    let writer = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let mut n = 0;
            while store.stats().checkpoint_generation == first {
                support::note(&store, "writer", &format!("note {n}"));
                n += 1;
            }
            n
        })
    };
    entered.recv().unwrap();
    // Meanwhile, on another thread: a read and appends. The wait below only tells a hang
    // (the read waiting for the checkpoint's file) from a pass.
    let (done_tx, done) = mpsc::channel();
    let beside = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let events = store.events("other", ..).map(|e| e.len());
            support::note(&store, "other", "written beside the checkpoint");
            let after = store.events("other", ..).map(|e| e.len());
            done_tx.send((events, after)).unwrap();
        })
    };
    let (before, after) = done
        .recv_timeout(Duration::from_secs(120))
        .expect("a read or an append waited for a checkpoint's file write");
    assert_eq!(after.unwrap(), before.unwrap() + 1);
    release.send(()).unwrap();
    let notes = writer.join().unwrap();
    assert!(notes > 0);
    // Joined, not only heard from: its clone of the store is dropped before the reopen below
    // (a clone left alive holds the writer lock: the reopen would be refused as locked).
    beside.join().unwrap();
    let dump = support::dump(&store);
    assert_eq!(
        Arc::strong_count(&store),
        1,
        "every other holder of the store is gone"
    );
    drop(store);
    let reopened = Store::open_with(Arc::new(gate.clone()), options()).unwrap();
    assert_eq!(support::dump(&reopened), dump);
    // The append made beside the checkpoint is in the next one: an open from it alone (the
    // log after it replayed) has it too.
    reopened.checkpoint().unwrap();
    drop(reopened);
    let again = Store::open_with(Arc::new(gate), options()).unwrap();
    assert_eq!(support::dump(&again), dump);
}

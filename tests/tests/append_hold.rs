//! How a one-event append holds the catalog (`engine/src/store/catalog/write.rs`, `Hold`):
//! the write lock from the start only where its record goes into the mapped log at once;
//! where the write waits — a roll's sync, a new segment — readers go on beside it, as they
//! do beside a batch's write. Each case: a writer appends one event at a time until a sync
//! of a segment file on its thread stops in a gate; meanwhile another thread reads; then
//! the gate opens and the store reopens to the same sessions. On the file system with
//! space allocated and mapped ahead (where the write lock is taken for the appends between
//! rolls) and in memory with none (every append upgradable).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use sessdb::{Clock, Durability, Store, StoreOptions};
use sessdb_tests::{Backend, SyncHooked};

#[path = "support/store.rs"]
mod support;

/// Said when a gated sync is reached; waited on before it goes on.
type Armed = Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>;

/// Stops the next sync of a segment file made on the `writer` thread, once armed.
#[derive(Debug, Default)]
struct Gate {
    armed: Mutex<Armed>,
    writer: Mutex<Option<ThreadId>>,
}

impl Gate {
    fn pass(&self, path: &str) {
        if !path.starts_with("segments/")
            || *self.writer.lock().unwrap() != Some(std::thread::current().id())
        {
            return;
        }
        let armed = self.armed.lock().unwrap().take();
        if let Some((entered, release)) = armed {
            entered.send(()).unwrap();
            release.recv().unwrap();
        }
    }
}

/// `Buffered` (its appends sync nothing: a segment sync on the writer's thread is a roll's
/// or a new segment's), no checkpoint due, small segments.
fn options(preallocate: u64) -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(1_000))
        .with_durability(Durability::Buffered)
        .with_segment_bytes_max(256 << 10)
        .with_preallocate_bytes(preallocate)
        .with_checkpoint_interval_bytes(1 << 40)
        .with_compaction(None)
}

fn reads_go_on_while_a_one_event_append_waits_in_its_write(backend: &Backend, preallocate: u64) {
    let gate = Arc::new(Gate::default());
    let storage = Arc::new(SyncHooked::new(backend.storage(), {
        let gate = Arc::clone(&gate);
        move |path, sync| {
            gate.pass(path);
            sync()
        }
    }));
    let store = Arc::new(Store::open_with(storage.clone(), options(preallocate)).unwrap());
    support::session_with(&store, "writer", "w", 0);
    support::session_with(&store, "other", "o", 3);
    let other_events = store.events("other", ..).unwrap().len();
    let writer_events = store.events("writer", ..).unwrap().len();
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *gate.armed.lock().unwrap() = Some((entered_tx, release_rx));
    let stop = Arc::new(AtomicBool::new(false));
    // One event at a time until the write rolls: that append stops in the segment's sync.
    let writer = {
        let (store, stop, gate) = (Arc::clone(&store), Arc::clone(&stop), Arc::clone(&gate));
        std::thread::spawn(move || {
            *gate.writer.lock().unwrap() = Some(std::thread::current().id());
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) {
                support::note(&store, "writer", &format!("note {n}"));
                n += 1;
            }
            n
        })
    };
    entered.recv().unwrap();
    // Meanwhile, on another thread: reads of the catalog. The wait below only tells a hang
    // (a read waiting for the append's write) from a pass.
    let (done_tx, done) = mpsc::channel();
    let beside = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let other = store.events("other", ..).map(|e| e.len());
            // The writer's own session, its appends so far (none half-way).
            let writer = store.events("writer", ..).map(|e| e.len());
            done_tx.send((other, writer)).unwrap();
        })
    };
    let (other, writer_then) = done
        .recv_timeout(Duration::from_secs(120))
        .expect("a read waited for a one-event append's write");
    assert_eq!(other.unwrap(), other_events);
    let writer_then = writer_then.unwrap();
    stop.store(true, Ordering::SeqCst);
    release.send(()).unwrap();
    let notes = writer.join().unwrap();
    beside.join().unwrap();
    let written = store.events("writer", ..).unwrap().len();
    assert_eq!(
        written,
        writer_events + notes as usize,
        "every note acknowledged is there"
    );
    // Read while the append waited: every note before it, not the one being written.
    assert_eq!(writer_then + 1, written);
    let dump = support::dump(&store);
    assert_eq!(Arc::strong_count(&store), 1);
    drop(store);
    let reopened = Store::open_with(storage, options(preallocate)).unwrap();
    assert_eq!(support::dump(&reopened), dump);
    drop(reopened);
    let verified = sessdb::store::verify(backend.storage()).unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
}

#[test]
fn on_files_mapped_ahead_reads_go_on_while_an_append_waits_for_its_roll() {
    reads_go_on_while_a_one_event_append_waits_in_its_write(&Backend::fs(), 64 << 10);
}

#[test]
fn in_memory_reads_go_on_while_an_append_waits_for_its_roll() {
    reads_go_on_while_a_one_event_append_waits_in_its_write(&Backend::mem(), 0);
}

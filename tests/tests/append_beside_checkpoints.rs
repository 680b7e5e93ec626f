//! Appends beside checkpoints on a store read from its checkpoint's index: an append decodes
//! its session from the index, and a checkpoint taken meanwhile hands clean sessions back to
//! the index it wrote (`Entries::adopt`). The two must never meet in between: an append then
//! found its session gone and failed with `SessionNotFound` though the session was there
//! (found by `sessdb stress --churn --threads 2`, 1 run in 15).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sessdb::storage::MemStorage;
use sessdb::{Clock, Draft, LogType, SessionHeader, Store, StoreOptions};

const SESSIONS: usize = 64;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(1_000))
        .with_checkpoint_interval_bytes(u64::MAX / 4)
}

fn note(i: usize) -> Draft {
    Draft::log(
        LogType::new("plugin/note").unwrap(),
        format!("{{\"n\":{i}}}").into_bytes(),
    )
    .ignorable()
}

#[test]
fn regression_an_append_beside_a_checkpoint_never_loses_its_session() {
    let storage = MemStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    for k in 0..SESSIONS {
        store
            .create_session(SessionHeader::new(format!("s{k}"), 0), Vec::new())
            .unwrap();
    }
    store.close().unwrap();
    drop(store);
    // Every session now in the index, none decoded.
    let store = Store::open_with(Arc::new(storage), options()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(AtomicU64::new(0));
    let checkpoints = {
        let (store, stop, taken) = (store.clone(), Arc::clone(&stop), Arc::clone(&taken));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                store.checkpoint().unwrap();
                taken.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // Rounds go on until enough checkpoints ran beside them, however the threads are
    // scheduled (on a loaded machine the checkpoints may start late).
    let mut rounds = 0usize;
    while rounds < 200 || taken.load(Ordering::Relaxed) <= 10 {
        for k in 0..SESSIONS {
            store.append(&format!("s{k}"), note(rounds)).unwrap();
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    checkpoints.join().unwrap();
    let taken = taken.load(Ordering::Relaxed);
    assert!(
        taken > 10,
        "{taken} checkpoints beside {rounds} rounds of appends"
    );
    for k in 0..SESSIONS {
        assert_eq!(
            store.session_len(&format!("s{k}")).unwrap(),
            1 + rounds as u64
        );
    }
}

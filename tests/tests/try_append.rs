//! `Store::try_append_events`: an append that waits for nothing — written at once, or, where
//! it would wait (a lock another write or a reader holds, a `Sync` store's sync, a roll, a
//! session still in its checkpoint file, an inline checkpoint), nothing written and the events
//! handed back unchanged, for `append_events`. Each scenario runs on memory and on real files;
//! a property test holds a store written by try-appends (and their fall-backs) beside
//! checkpoints, listings, rolls and reopens to the same store written by `append_events`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::{Arc, Mutex, OnceLock, Weak};

use proptest::prelude::*;
use sessdb::store::{ListOptions, ListOrder};
use sessdb::{
    CheckpointWrites, Durability, Error, Event, Limits, SessionHeader, Store, StoreOptions,
    TryAppend,
};
use sessdb_tests::{Backend, Hooked, on_both_storages};
use sessdb_workload::payload as p;

#[path = "support/store.rs"]
mod support;
use support::*;

/// The test options with checkpoints on their thread (inline ones make every append wait).
/// No checkpoint falls due by itself: its thread would hold the tail for a moment, and the
/// scenarios that expect an append at once would then see it wait.
fn at_once() -> StoreOptions {
    opts()
        .with_checkpoint_writes(CheckpointWrites::Background)
        .with_checkpoint_interval_bytes(u64::MAX)
}

/// `n` events from seq `from`: ignorable notes, every third a user message on the surface.
fn notes(from: u64, n: u64) -> Vec<Event> {
    (from..from + n)
        .map(|seq| {
            let line = if seq % 3 == 2 {
                let data = p::user_message(&format!("u{seq}"), "user", "hi");
                format!(
                    r#"{{"type":"user/message","seq":{seq},"time":1000,"data":{data},"surfaceOp":"append"}}"#
                )
            } else {
                format!(
                    r#"{{"type":"plugin/note","seq":{seq},"time":1000,"data":{{"note":"n{seq}"}},"ignorable":true}}"#
                )
            };
            Event::from_jsonl(line.as_bytes(), &Limits::default()).unwrap()
        })
        .collect()
}

fn with_session(storage: &Backend, options: StoreOptions) -> Store {
    let store = Store::open_with(storage.storage(), options).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    store
}

fn appended(r: TryAppend) -> std::ops::Range<u64> {
    match r {
        TryAppend::Appended(range) => range,
        TryAppend::WouldWait(events) => panic!("waited with {} events", events.len()),
    }
}

fn waited(r: TryAppend) -> Vec<Event> {
    match r {
        TryAppend::Appended(range) => panic!("appended {range:?}"),
        TryAppend::WouldWait(events) => events,
    }
}

fn appends_at_once_and_reads_back_as_appended(storage: &Backend) {
    let store = with_session(storage, at_once());
    let len = store.session_len("s").unwrap();
    let events = notes(len, 3);
    let range = appended(store.try_append_events("s", events.clone()).unwrap());
    assert_eq!(range, len..len + 3);
    assert_eq!(store.events("s", len..).unwrap(), events);
    let dump_now = dump(&store);
    store.close().unwrap();
    // The same record as `append_events` writes: the reopened store replays to the same.
    let again = Store::open_with(storage.storage(), at_once()).unwrap();
    assert_eq!(dump(&again), dump_now);
    let other = Backend::mem();
    let peer = with_session(&other, at_once());
    peer.append_events("s", events).unwrap();
    assert_eq!(dump(&peer), dump_now);
}

fn a_sync_store_and_inline_checkpoints_always_wait(storage: &Backend) {
    with_session(storage, at_once()).close().unwrap();
    for options in [
        at_once().with_durability(Durability::Sync),
        at_once().with_checkpoint_writes(CheckpointWrites::Inline),
    ] {
        let store = Store::open_with(storage.storage(), options).unwrap();
        let len = store.session_len("s").unwrap();
        let events = notes(len, 2);
        assert_eq!(
            waited(store.try_append_events("s", events.clone()).unwrap()),
            events
        );
        assert_eq!(store.session_len("s").unwrap(), len, "nothing written");
        store.append_events("s", events).unwrap();
        store.close().unwrap();
    }
}

fn a_reader_holding_the_catalog_is_not_waited_for(storage: &Backend) {
    let store = with_session(storage, at_once());
    let len = store.session_len("s").unwrap();
    let events = notes(len, 2);
    let mut inside = None;
    // The catalog is read-locked while the listing's callback runs: an append that waited
    // for the reader would wait for itself.
    store
        .list_each(ListOptions::new(ListOrder::Id), |_| {
            inside = Some(store.try_append_events("s", events.clone()).unwrap())
        })
        .unwrap();
    assert_eq!(waited(inside.expect("listed")), events);
    assert_eq!(store.session_len("s").unwrap(), len);
    assert_eq!(
        appended(store.try_append_events("s", events).unwrap()),
        len..len + 2
    );
}

fn a_write_holding_the_tail_is_not_waited_for(storage: &Backend) {
    // A hook on each segment file opened: while a write rolls the log and creates the next
    // segment (the tail lock held), an append from inside it must not wait for that lock.
    let store_slot: Arc<OnceLock<Weak<Store>>> = Arc::default();
    let seen: Arc<Mutex<Vec<TryAppend>>> = Arc::default();
    let hooked = {
        let (store_slot, seen) = (Arc::clone(&store_slot), Arc::clone(&seen));
        Hooked::new(storage.storage()).on_open(move |path| {
            if path.starts_with("segments/")
                && let Some(store) = store_slot.get().and_then(Weak::upgrade)
            {
                let len = store.session_len("s").unwrap();
                let r = store.try_append_events("s", notes(len, 1)).unwrap();
                seen.lock().unwrap().push(r);
            }
            Ok(())
        })
    };
    let store = Arc::new(Store::open_with(Arc::new(hooked), at_once()).unwrap());
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    store_slot.set(Arc::downgrade(&store)).unwrap();
    let segments = || segment_paths(storage).len();
    let before = segments();
    while segments() == before {
        let len = store.session_len("s").unwrap();
        store.append_events("s", notes(len, 4)).unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(
        !seen.is_empty(),
        "a segment was created after the hook was set"
    );
    for r in seen.iter() {
        assert!(
            matches!(r, TryAppend::WouldWait(e) if e.len() == 1),
            "{r:?}"
        );
    }
}

fn a_record_that_would_roll_waits_and_the_next_goes_at_once(storage: &Backend) {
    // Segments of 4 KiB, nothing preallocated, no checkpoint due: only a roll is in the way
    // of an append.
    let store = with_session(storage, at_once());
    let (mut at_once_count, mut rolls) = (0, 0);
    for _ in 0..200 {
        let len = store.session_len("s").unwrap();
        let events = notes(len, 2);
        match store.try_append_events("s", events.clone()).unwrap() {
            TryAppend::Appended(range) => {
                assert_eq!(range, len..len + 2);
                at_once_count += 1;
            }
            TryAppend::WouldWait(back) => {
                assert_eq!(back, events);
                assert_eq!(store.session_len("s").unwrap(), len, "nothing written");
                let segments = segment_paths(storage).len();
                store.append_events("s", back).unwrap();
                assert_eq!(
                    segment_paths(storage).len(),
                    segments + 1,
                    "it waited for a roll"
                );
                rolls += 1;
            }
        }
    }
    assert!(rolls >= 2, "rolls: {rolls}");
    assert!(
        at_once_count > rolls * 5,
        "{at_once_count} at once, {rolls} rolls"
    );
    assert_eq!(store.session_len("s").unwrap(), 1 + 400);
}

fn a_session_not_yet_read_waits_once(storage: &Backend) {
    let store = with_session(storage, at_once());
    let len = store.session_len("s").unwrap();
    store.append_events("s", notes(len, 3)).unwrap();
    store.checkpoint().unwrap();
    store.close().unwrap();
    let store = Store::open_with(storage.storage(), at_once()).unwrap();
    let events = notes(len + 3, 1);
    // Opened from the checkpoint: the session's entry is still in its file.
    let back = waited(store.try_append_events("s", events.clone()).unwrap());
    assert_eq!(back, events);
    store.append_events("s", back).unwrap();
    assert_eq!(
        appended(store.try_append_events("s", notes(len + 4, 1)).unwrap()),
        len + 4..len + 5
    );
}

fn a_refused_event_is_an_error_and_writes_nothing(storage: &Backend) {
    let store = with_session(storage, at_once());
    let len = store.session_len("s").unwrap();
    let err = store.try_append_events("s", notes(len + 1, 1)).unwrap_err();
    assert!(
        matches!(&err, Error::Rejected { seq, violation, .. }
            if *seq == len + 1 && violation.rule() == "seq-contiguity"),
        "{err}"
    );
    assert_eq!(store.session_len("s").unwrap(), len);
    assert!(matches!(
        store.try_append_events("none", notes(0, 1)),
        Ok(TryAppend::WouldWait(_)) | Err(Error::SessionNotFound { .. })
    ));
}

on_both_storages!(
    appends_at_once_and_reads_back_as_appended,
    a_sync_store_and_inline_checkpoints_always_wait,
    a_reader_holding_the_catalog_is_not_waited_for,
    a_write_holding_the_tail_is_not_waited_for,
    a_record_that_would_roll_waits_and_the_next_goes_at_once,
    a_session_not_yet_read_waits_once,
    a_refused_event_is_an_error_and_writes_nothing,
);

#[derive(Debug, Clone)]
enum Op {
    /// `try_append_events` of `n` events to session `s`, `append_events` when it waits.
    Try(u8, u8),
    /// The same, from inside a listing (the catalog read-locked): it always waits.
    TryListing(u8, u8),
    /// `append_events` alone.
    Append(u8, u8),
    Checkpoint,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..3, 1u8..8).prop_map(|(s, n)| Op::Try(s, n)),
        1 => (0u8..3, 1u8..4).prop_map(|(s, n)| Op::TryListing(s, n)),
        2 => (0u8..3, 1u8..8).prop_map(|(s, n)| Op::Append(s, n)),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

/// Small segments and a little space allocated ahead, so that rolls and allocations fall
/// between the appends.
fn prop_options() -> StoreOptions {
    at_once().with_preallocate_bytes(700)
}

fn reopen(storage: &Backend) -> Store {
    Store::open_with(storage.storage(), prop_options()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sessdb_tests::proptest_cases(64)))]

    /// Whatever waits, a store written by try-appends holds what `append_events` writes, and
    /// reopens (from its checkpoints, or replaying the whole log) to the same.
    #[test]
    fn try_appends_and_their_fall_backs_write_what_append_events_writes(
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let (storage, peer_storage) = (Backend::mem(), Backend::mem());
        let mut store = reopen(&storage);
        let peer = reopen(&peer_storage);
        for id in ["s0", "s1", "s2"] {
            store.create_session(SessionHeader::new(id, 0), Vec::new()).unwrap();
            peer.create_session(SessionHeader::new(id, 0), Vec::new()).unwrap();
        }
        for op in ops {
            match op {
                Op::Try(s, n) | Op::TryListing(s, n) | Op::Append(s, n) => {
                    let id = format!("s{s}");
                    let len = peer.session_len(&id).unwrap();
                    let events = notes(len, u64::from(n));
                    peer.append_events(&id, events.clone()).unwrap();
                    let back = match op {
                        Op::Try(..) => match store.try_append_events(&id, events).unwrap() {
                            TryAppend::Appended(range) => {
                                prop_assert_eq!(range, len..len + u64::from(n));
                                None
                            }
                            TryAppend::WouldWait(back) => Some(back),
                        },
                        Op::TryListing(..) => {
                            let mut inside = None;
                            store
                                .list_each(ListOptions::new(ListOrder::Id), |_| {
                                    if inside.is_none() {
                                        inside = Some(store.try_append_events(&id, events.clone()));
                                    }
                                })
                                .unwrap();
                            prop_assert!(matches!(
                                inside,
                                Some(Ok(TryAppend::WouldWait(ref back))) if *back == events
                            ));
                            Some(events)
                        }
                        _ => Some(events),
                    };
                    if let Some(back) = back {
                        prop_assert_eq!(store.session_len(&id).unwrap(), len, "nothing written");
                        store.append_events(&id, back).unwrap();
                    }
                }
                Op::Checkpoint => {
                    store.checkpoint().unwrap();
                }
                Op::Reopen => {
                    store.close().unwrap();
                    store = reopen(&storage);
                }
            }
        }
        prop_assert_eq!(dump(&store), dump(&peer));
        store.close().unwrap();
        let replayed = Store::open_with(
            storage.storage(),
            prop_options().with_ignore_checkpoints(true),
        )
        .unwrap();
        prop_assert_eq!(dump(&replayed), dump(&peer));
    }
}

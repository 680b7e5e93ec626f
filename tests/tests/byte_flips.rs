//! Every single byte of every segment and checkpoint file of a small checkpointed store,
//! changed one at a time: every read of every session returns the original bytes or an error,
//! and no writable open cuts a byte that a durable mark covers (here the close-time
//! checkpoint covers the whole log, so a writable open must leave every segment as it is).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use sessdb::storage::MemStorage;
use sessdb::{
    Clock, Draft, Event, ForkSpec, LogType, SessionHeader, SessionState, Store, StoreOptions,
    SurfaceIntent, SurfaceType,
};
use sessdb_workload::payload as p;

fn opts() -> StoreOptions {
    StoreOptions::tiny()
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(512)
}

/// What each session reads back: events as JSONL, messages, state.
type Readings = BTreeMap<String, (Vec<Vec<u8>>, Vec<sessdb::Message>, SessionState)>;

/// A store of a few sessions over several segments (sealed ones and a last one), with a
/// fork by reference, a full checkpoint, a delta, and the close-time checkpoint.
fn small_store() -> MemStorage {
    let storage = MemStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), opts()).unwrap();
    let turn = |id: &str, n: u64| {
        store
            .append(
                id,
                Draft::log(&LogType::TURN_START, p::turn_start(n).into_bytes()),
            )
            .unwrap();
        store
            .append(
                id,
                Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message(&format!("u{n}"), "user", "hi").into_bytes(),
                    SurfaceIntent::append(),
                ),
            )
            .unwrap();
        store
            .append(
                id,
                Draft::log(&LogType::TURN_END, p::turn_end(n).into_bytes()),
            )
            .unwrap();
    };
    for id in ["a", "b"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        turn(id, 1);
    }
    store.checkpoint().unwrap();
    let child = ForkSpec::default().with_child_id("c");
    store.fork("a", child).unwrap();
    turn("c", 2);
    turn("b", 2);
    store.close().unwrap();
    storage
}

fn readings(store: &Store) -> Readings {
    store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| {
            let id = i.header.id;
            let events = store
                .events(&id, ..)
                .unwrap()
                .iter()
                .map(Event::to_jsonl)
                .collect();
            let messages = store.messages(&id).unwrap();
            (id.clone(), (events, messages, store.state(&id).unwrap()))
        })
        .collect()
}

/// Every read of the damaged store is the original or an error. Returns how many reads were
/// refused.
fn check_reads(store: &Store, original: &Readings, what: &str) -> usize {
    let mut refused = 0;
    // A session's damaged checkpoint entry is found when it is first read: the listing that
    // meets it is refused, never short.
    match store.list() {
        Ok(listed) => assert_eq!(
            listed.into_iter().map(|i| i.header.id).collect::<Vec<_>>(),
            original.keys().cloned().collect::<Vec<_>>(),
            "{what}: the sessions listed"
        ),
        Err(_) => refused += 1,
    }
    for (id, (events, messages, state)) in original {
        match store.events(id, ..) {
            Ok(got) => assert_eq!(
                &got.iter().map(Event::to_jsonl).collect::<Vec<_>>(),
                events,
                "{what}: events of {id}"
            ),
            Err(_) => refused += 1,
        }
        match store.last_events(id, 3) {
            Ok(got) => {
                let tail = &events[events.len().saturating_sub(3)..];
                assert_eq!(
                    got.iter().map(Event::to_jsonl).collect::<Vec<_>>(),
                    tail,
                    "{what}: last events of {id}"
                );
            }
            Err(_) => refused += 1,
        }
        match store.messages(id) {
            Ok(got) => assert_eq!(&got, messages, "{what}: messages of {id}"),
            Err(_) => refused += 1,
        }
        match store.state(id) {
            Ok(got) => assert_eq!(&got, state, "{what}: state of {id}"),
            Err(_) => refused += 1,
        }
    }
    refused
}

#[test]
fn every_single_byte_change_reads_back_right_or_refused_and_nothing_durable_is_cut() {
    let storage = small_store();
    let files = storage.files();
    eprintln!(
        "{} bytes in {} files",
        files.iter().map(|(_, b)| b.len()).sum::<usize>(),
        files.len()
    );
    let original = readings(&Store::open_read_only_with(Arc::new(storage), opts()).unwrap());
    assert!(original.len() >= 3, "{} sessions", original.len());
    let segments = files
        .iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .count();
    let checkpoints = files
        .iter()
        .filter(|(p, _)| p.starts_with("checkpoints/"))
        .count();
    assert!(segments >= 3, "sealed segments and a last one: {segments}");
    assert!(checkpoints >= 2, "a chain of checkpoints: {checkpoints}");

    let (mut flips, mut open_refused, mut reads_refused) = (0, 0, 0);
    for (n, (path, bytes)) in files.iter().enumerate() {
        if !(path.starts_with("segments/") || path.starts_with("checkpoints/")) {
            continue;
        }
        for at in 0..bytes.len() {
            flips += 1;
            let mut damaged = files.clone();
            damaged[n].1[at] ^= 0x5a;
            let what = format!("{path} byte {at}");

            match Store::open_read_only_with(
                Arc::new(MemStorage::from_files(damaged.clone())),
                opts(),
            ) {
                Ok(store) => reads_refused += check_reads(&store, &original, &what),
                Err(_) => open_refused += 1,
            }

            let image = MemStorage::from_files(damaged.clone());
            match Store::open_with(Arc::new(image.clone()), opts()) {
                Ok(store) => {
                    reads_refused += check_reads(&store, &original, &what);
                    drop(store);
                }
                Err(_) => open_refused += 1,
            }
            let after: BTreeMap<String, Vec<u8>> = image.files().into_iter().collect();
            for (p, b) in damaged.iter().filter(|(p, _)| p.starts_with("segments/")) {
                assert_eq!(after.get(p), Some(b), "{what}: writable open changed {p}");
            }
        }
    }
    // Most flips land in event bytes, which reads refuse; the counts show both paths ran.
    assert!(flips > 1500, "{flips} flips");
    assert!(reads_refused > 0 && open_refused > 0);
    eprintln!("{flips} flips: {open_refused} opens refused, {reads_refused} reads refused");
}

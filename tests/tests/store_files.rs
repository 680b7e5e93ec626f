//! The store on real files: the writer lock, read-only opens beside a live writer, reads of
//! sealed segments through the memory map, concurrent appenders sharing fsyncs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Clock, Draft, Durability, Error, Event, LogType, SessionHeader, Store, StoreOptions};
use sessdb_workload::{WorkloadSpec, generate, payload as p};

fn options() -> StoreOptions {
    StoreOptions {
        clock: Clock::fixed(1_000),
        ..StoreOptions::tiny()
    }
}

#[test]
fn a_second_writer_gets_locked_naming_the_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let err = Store::open(dir.path(), options()).unwrap_err();
    match &err {
        Error::Locked { lock_file } => assert!(lock_file.ends_with("LOCK"), "{lock_file}"),
        other => panic!("expected Locked, got {other}"),
    }
    assert!(
        err.to_string().contains("read-only"),
        "the message says what to do: {err}"
    );
    store.close().unwrap();
    Store::open(dir.path(), options()).unwrap().close().unwrap();
}

#[test]
fn a_reader_opens_beside_a_live_writer_and_reads_sealed_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), options()).unwrap();
    let summary = generate(
        &WorkloadSpec {
            sessions: 2,
            max_turns: 3,
            max_chunks: 8,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    assert!(store.stats().segments > 2);
    let reader = Store::open_read_only(dir.path()).unwrap();
    for id in &summary.sessions {
        let ours = store.events(id, 0, u64::MAX).unwrap();
        let theirs = reader.events(id, 0, u64::MAX).unwrap();
        assert_eq!(theirs, ours, "{id}");
        assert_eq!(reader.messages(id).unwrap(), store.messages(id).unwrap());
    }
    // The writer goes on; the reader sees its snapshot and repairs nothing.
    let id = &summary.sessions[0];
    store
        .append(
            id,
            Draft::log(&LogType::new("plugin/note").unwrap(), &b"{}"[..]),
        )
        .unwrap();
    assert_eq!(
        reader.session_len(id).unwrap() + 1,
        store.session_len(id).unwrap()
    );
    assert_eq!(reader.open_report().bytes_truncated, 0);
    store.close().unwrap();
}

#[test]
fn concurrent_appenders_under_sync_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        StoreOptions {
            durability: Durability::Sync,
            ..options()
        },
    )
    .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let id = format!("t{t}");
                store
                    .create_session(SessionHeader::new(id.clone(), 0), Vec::new())
                    .unwrap();
                for turn in 1..=25 {
                    store
                        .append(
                            &id,
                            Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
                        )
                        .unwrap();
                    store
                        .append(
                            &id,
                            Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let before: Vec<Vec<Event>> = (0..4)
        .map(|t| store.events(&format!("t{t}"), 0, u64::MAX).unwrap())
        .collect();
    assert!(before.iter().all(|e| e.len() == 51));
    drop(store);
    let reopened = Store::open(dir.path(), options()).unwrap();
    let after: Vec<Vec<Event>> = (0..4)
        .map(|t| reopened.events(&format!("t{t}"), 0, u64::MAX).unwrap())
        .collect();
    assert_eq!(after, before);
}

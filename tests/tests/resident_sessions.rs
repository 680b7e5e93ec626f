//! Sessions read go back to the checkpoint's index (`StoreOptions::resident_sessions`): a
//! read-only store, and a writer that reads more than it writes, keep a bounded number of
//! sessions decoded however many they read — and every read, listing and append after that
//! gives what a store that keeps every session decoded gives.

#![allow(clippy::unwrap_used, reason = "test code fails loudly")]

use std::sync::Arc;

use sessdb::storage::MemStorage;
use sessdb::{Clock, Draft, LogType, SessionHeader, Store, StoreOptions};
use std::sync::atomic::{AtomicBool, Ordering};

use sessdb_tests::{Backend, Hooked, dump_store, on_both_storages};

const SESSIONS: u64 = 300;
const RESIDENT: usize = 16;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(7))
        .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
}

/// `SESSIONS` sessions of a few notes each, checkpointed: a reopen finds them in the index.
fn written() -> MemStorage {
    let storage = MemStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    let note = LogType::new("plugin/note").unwrap();
    for i in 0..SESSIONS {
        let id = format!("s{i:03}");
        store
            .create_session(SessionHeader::new(id.as_str(), i as i64), Vec::new())
            .unwrap();
        for k in 0..(i % 4) {
            let data = format!("{{\"k\":{k}}}");
            store
                .append(&id, Draft::log(&note, data.into_bytes()).ignorable())
                .unwrap();
        }
    }
    store.close().unwrap();
    storage
}

fn ids() -> impl Iterator<Item = String> {
    (0..SESSIONS).map(|i| format!("s{i:03}"))
}

#[test]
fn a_read_only_store_reading_every_session_keeps_a_bounded_number_decoded() {
    let storage = written();
    let keeps_all = Store::open_read_only_with(
        Arc::new(storage.clone()),
        options().with_resident_sessions(usize::MAX),
    )
    .unwrap();
    let bounded = Store::open_read_only_with(
        Arc::new(storage.clone()),
        options().with_resident_sessions(RESIDENT),
    )
    .unwrap();
    for round in 0..2 {
        let mut most = 0;
        for id in ids() {
            assert_eq!(
                bounded.events(&id, ..).unwrap(),
                keeps_all.events(&id, ..).unwrap(),
                "{id}, round {round}"
            );
            assert_eq!(bounded.info(&id), keeps_all.info(&id), "{id}");
            most = most.max(bounded.memory_usage().decoded_sessions);
        }
        // Every session read, never more than the bound (twice it: what a release keeps
        // doubles the next bound, and a read-only store's sessions are all clean).
        assert!(most <= RESIDENT, "round {round}: {most} decoded at once");
        assert_eq!(keeps_all.memory_usage().decoded_sessions, SESSIONS as usize);
    }
    assert_eq!(dump_store(&bounded), dump_store(&keeps_all));
    assert_eq!(bounded.list().unwrap(), keeps_all.list().unwrap());
}

#[test]
fn a_writer_lets_go_of_sessions_it_read_and_keeps_those_it_changed() {
    let storage = written();
    let store = Store::open_with(
        Arc::new(storage.clone()),
        options().with_resident_sessions(RESIDENT),
    )
    .unwrap();
    let note = LogType::new("plugin/note").unwrap();
    // Every tenth session changed (decoded for good until the next checkpoint), every one
    // read, twice.
    let changed: Vec<String> = ids().step_by(10).collect();
    for id in &changed {
        store
            .append(
                id,
                Draft::log(&note, b"{\"changed\":1}".as_slice()).ignorable(),
            )
            .unwrap();
    }
    let mut most = 0;
    for _ in 0..2 {
        for id in ids() {
            store.events(&id, ..).unwrap();
            most = most.max(store.memory_usage().decoded_sessions);
        }
    }
    // The changed ones stay; of the rest, a bounded number.
    assert!(
        most <= 2 * (changed.len() + RESIDENT),
        "{most} decoded at once"
    );
    // Appends to sessions let go of and read again, then everything as a full replay has it.
    for id in ids().step_by(7) {
        store
            .append(
                &id,
                Draft::log(&note, b"{\"after\":1}".as_slice()).ignorable(),
            )
            .unwrap();
    }
    let live = dump_store(&store);
    let listed = store.list().unwrap();
    store.close().unwrap();
    let replayed = Store::open_read_only_with(
        Arc::new(storage.clone()),
        options().with_ignore_checkpoints(true),
    )
    .unwrap();
    assert_eq!(live, dump_store(&replayed));
    assert_eq!(listed, replayed.list().unwrap());
}

fn a_reader_following_a_writer_takes_its_newer_checkpoints_and_keeps_a_bounded_number_decoded(
    storage: &Backend,
) {
    let writer = Store::open_with(
        storage.storage(),
        options()
            .with_checkpoint_interval_bytes(16 << 10)
            .with_resident_sessions(RESIDENT),
    )
    .unwrap();
    let reader = Store::open_read_only_with(
        storage.storage(),
        options().with_resident_sessions(RESIDENT),
    )
    .unwrap();
    let note = LogType::new("plugin/note").unwrap();
    let mut most = 0;
    let mut generations = std::collections::BTreeSet::new();
    // The writer creates and writes to ever new sessions (each changed once, never again),
    // checkpointing as it goes; the reader catches up every 40 of them.
    for i in 0..3_000u32 {
        let id = format!("w{i:05}");
        writer
            .create_session(SessionHeader::new(id.as_str(), 1), Vec::new())
            .unwrap();
        writer
            .append(&id, Draft::log(&note, b"{\"w\":1}".as_slice()).ignorable())
            .unwrap();
        if i % 40 == 39 {
            reader.refresh().unwrap();
            most = most.max(reader.memory_usage().decoded_sessions);
            generations.insert(reader.stats().checkpoint_generation);
            assert_eq!(reader.list().unwrap(), writer.list().unwrap(), "after {i}");
        }
    }
    // The reader took the writer's checkpoints as they came, and never held more than
    // what changed since one of them, twice (the bound doubles over changed sessions).
    assert!(generations.len() > 3, "checkpoints taken: {generations:?}");
    let interval = 16 << 10;
    assert!(
        most <= 4 * (RESIDENT + interval / 100),
        "{most} decoded at once"
    );
    reader.refresh().unwrap();
    assert_eq!(dump_store(&reader), dump_store(&writer));
}

on_both_storages!(
    a_reader_following_a_writer_takes_its_newer_checkpoints_and_keeps_a_bounded_number_decoded,
);

/// The same beside a writer on another thread, whose checkpoints (on its own thread) come and
/// whose old checkpoint files go while the reader builds its view again: every session the
/// reader lists reads back as a prefix of what the writer ends with, and once the writer
/// stops, one more refresh gives exactly the writer's store.
fn a_reader_rebuilding_beside_a_live_writer_reads_only_what_was_written(storage: &Backend) {
    let writer = Store::open_with(
        storage.storage(),
        StoreOptions::default()
            .with_checkpoint_interval_bytes(8 << 10)
            .with_checkpoint_merge_every(2)
            .with_resident_sessions(4),
    )
    .unwrap();
    let reader = Store::open_read_only_with(
        storage.storage(),
        StoreOptions::default().with_resident_sessions(4),
    )
    .unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let w = {
        let writer = writer.clone();
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let note = LogType::new("plugin/note").unwrap();
            for i in 0..6_000u32 {
                let id = format!("c{:04}", i % 1_000);
                if i < 1_000 {
                    writer
                        .create_session(SessionHeader::new(id.as_str(), 1), Vec::new())
                        .unwrap();
                }
                let data = format!("{{\"i\":{i}}}");
                writer
                    .append(&id, Draft::log(&note, data.into_bytes()).ignorable())
                    .unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let mut seen = Vec::new();
    let mut generations_in_order = Vec::new();
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        reader.refresh().unwrap();
        generations_in_order.push(reader.stats().checkpoint_generation);
        for row in reader.list().unwrap().into_iter().step_by(37) {
            let events = reader.events(&row.header.id, ..).unwrap();
            assert_eq!(events.len() as u64, row.events, "{}", row.header.id);
            seen.push((row.header.id, events));
        }
    }
    w.join().unwrap();
    // Generations only grow: a view is never built from an older checkpoint than before.
    let mut last = 0;
    for g in generations_in_order {
        assert!(
            g >= last,
            "the view went back from checkpoint {last} to {g}"
        );
        last = g;
    }
    for (id, events) in &seen {
        let now = writer.events(id, ..).unwrap();
        assert!(
            now.len() >= events.len() && now[..events.len()] == events[..],
            "{id}: the reader read what the writer never wrote"
        );
    }
    reader.refresh().unwrap();
    assert_eq!(dump_store(&reader), dump_store(&writer));
}

on_both_storages!(a_reader_rebuilding_beside_a_live_writer_reads_only_what_was_written);

/// Taking the writer's newer checkpoint is a saving, not part of catching up: when the
/// checkpoints cannot be read, the refresh still gives the writer's store (from the log), and
/// the next one that can read them takes the newer checkpoint.
#[test]
fn a_follower_that_cannot_read_the_newer_checkpoint_still_catches_up() {
    let inner = MemStorage::new();
    let writer = Store::open_with(
        Arc::new(inner.clone()),
        options().with_checkpoint_interval_bytes(16 << 10),
    )
    .unwrap();
    // The checkpoints cannot be listed or opened while `broken` is set.
    let broken = Arc::new(AtomicBool::new(false));
    let refuse = {
        let broken = Arc::clone(&broken);
        move |path: &str| {
            if broken.load(Ordering::SeqCst) && path.starts_with("checkpoints") {
                return Err(std::io::Error::other("EIO (injected)"));
            }
            Ok(())
        }
    };
    let refuse_list = refuse.clone();
    let reach = Hooked::new(Arc::new(inner.clone()))
        .on_list(move |dir, names| refuse_list(dir).map(|()| names))
        .on_open(refuse);
    let reader =
        Store::open_read_only_with(Arc::new(reach), options().with_resident_sessions(RESIDENT))
            .unwrap();
    let note = LogType::new("plugin/note").unwrap();
    let write = |from: u32, to: u32| {
        for i in from..to {
            let id = format!("o{i:05}");
            writer
                .create_session(SessionHeader::new(id.as_str(), 1), Vec::new())
                .unwrap();
            writer
                .append(&id, Draft::log(&note, b"{\"o\":1}".as_slice()).ignorable())
                .unwrap();
        }
    };
    write(0, 400);
    let before = reader.stats().checkpoint_generation;
    broken.store(true, Ordering::SeqCst);
    reader.refresh().unwrap();
    assert_eq!(reader.list().unwrap(), writer.list().unwrap());
    assert_eq!(reader.stats().checkpoint_generation, before);
    let held = reader.memory_usage().decoded_sessions;
    assert!(
        held >= 400,
        "{held}: every session written is decoded from the log"
    );
    broken.store(false, Ordering::SeqCst);
    write(400, 1_000);
    reader.refresh().unwrap();
    assert!(reader.stats().checkpoint_generation > before);
    assert!(reader.memory_usage().decoded_sessions < held);
    assert_eq!(dump_store(&reader), dump_store(&writer));
}

//! Crash consistency on a store of many sessions read from its checkpoint's index: a store of
//! 400 sessions (an index of several pages) is checkpointed and closed; a reopen then appends
//! to some sessions (each decoded from the index when first written), forks one, deletes one
//! whose fork shares its events, and takes checkpoints (deltas that write some pages again and
//! name the others where they are) — with the Nth storage operation of that second part
//! failing, for every N, as EIO, a full disk or a short write. After each failure the store is
//! powered off and reopened: every session must be a prefix of what the full run holds, every
//! event acknowledged under `Sync` must be there, and every session the second part did not
//! touch must be exactly as it was.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use sessdb::storage::{CrashStorage, Fault, Storage};
use sessdb::{
    Clock, Draft, Durability, Event, ForkSpec, LogType, SessionHeader, Store, StoreOptions,
    SurfaceIntent, SurfaceType,
};
use sessdb_workload::payload as p;

const SESSIONS: usize = 400;

type Dump = BTreeMap<String, Vec<Vec<u8>>>;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(64 * 1024)
        .with_checkpoint_interval_bytes(u64::MAX / 4)
        .with_checkpoint_merge_every(4)
        // No work on a thread of its own: the Nth operation is the same one in every run.
        .with_compaction(None)
}

fn id(k: usize) -> String {
    format!("s{k:03}")
}

/// The first part, never failed: the sessions, a full checkpoint, closed.
fn setup(storage: &CrashStorage) {
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    for k in 0..SESSIONS {
        store
            .create_session(SessionHeader::new(id(k), k as i64), Vec::new())
            .unwrap();
        let note = format!("{{\"note\":\"{k}\"}}");
        store
            .append(
                &id(k),
                Draft::log(LogType::new("plugin/note").unwrap(), note.into_bytes()).ignorable(),
            )
            .unwrap();
    }
    store.checkpoint().unwrap();
    store.close().unwrap();
}

fn dump(store: &Store) -> Dump {
    sessdb_tests::dump_store(store)
        .into_iter()
        .map(|(id, events, _)| (id, events))
        .collect()
}

/// The second part, on a reopen, until the first error: the events acknowledged per session
/// it wrote to, and the sessions it touched.
fn script(storage: &CrashStorage) -> (Dump, Vec<String>) {
    let mut acked = Dump::new();
    let mut touched = Vec::new();
    let Ok(store) = Store::open_with(Arc::new(storage.clone()), options()) else {
        return (acked, touched);
    };
    let mut run = || -> sessdb::Result<()> {
        for round in 0..3usize {
            // Sessions spread over the index (by id hash, so over its pages).
            for k in (round..SESSIONS).step_by(37) {
                let s = id(k);
                touched.push(s.clone());
                let draft = Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message(&format!("{s}-{round}"), "user", "words").into_bytes(),
                    SurfaceIntent::append(),
                );
                let seq = store.append(&s, draft)?;
                acked
                    .entry(s.clone())
                    .or_default()
                    .extend(store.events(&s, seq..=seq)?.iter().map(Event::to_jsonl));
            }
            if round == 1 {
                touched.push(id(5));
                touched.push("fork".to_owned());
                store.fork(&id(5), ForkSpec::default().with_child_id("fork"))?;
                store.delete_session(&id(5))?;
                acked.remove(&id(5));
            }
            store.checkpoint()?;
        }
        store.close()
    };
    let _ = run();
    (acked, touched)
}

fn check_every_failure_point(fault: Fault) {
    // The full run: the store before the second part, after it, and the operations of each.
    let storage = CrashStorage::new();
    setup(&storage);
    let before = dump(&Store::open_with(Arc::new(storage.crash()), options()).unwrap());
    let setup_ops = storage.ops();
    let (_, touched) = script(&storage);
    let full = dump(&Store::open_with(Arc::new(storage.crash()), options()).unwrap());
    let total = storage.ops();
    assert_eq!(before.len(), SESSIONS);
    assert!(total > setup_ops + 30, "{setup_ops} then {total}");
    let mut acked_somewhere = 0;
    for n in setup_ops + 1..=total {
        let storage = CrashStorage::new();
        setup(&storage);
        assert_eq!(storage.ops(), setup_ops, "the setup is deterministic");
        storage.fail_at_with(n, fault);
        let (acked, _) = script(&storage);
        let image: Arc<dyn Storage> = Arc::new(storage.crash());
        let recovered = Store::open_with(Arc::clone(&image), options())
            .unwrap_or_else(|e| panic!("fail at op {n}: reopen: {e}"));
        let got = dump(&recovered);
        for (s, events) in &got {
            // The deleted session may be back as it was (its deletion not yet durable); any
            // other session is a prefix of the full run's.
            let expected = full
                .get(s)
                .or_else(|| (s == &id(5)).then(|| &before[s]))
                .unwrap_or_else(|| panic!("fail at op {n}: unexpected session {s}"));
            assert!(
                events.len() <= expected.len() && events[..] == expected[..events.len()],
                "fail at op {n}: {s} is not a prefix"
            );
        }
        for (s, had) in before.iter().filter(|(s, _)| **s != id(5)) {
            let events = got
                .get(s)
                .unwrap_or_else(|| panic!("fail at op {n}: {s} lost"));
            if touched.contains(s) {
                assert!(events.len() >= had.len(), "fail at op {n}: {s} shrank");
            } else {
                assert_eq!(events, had, "fail at op {n}: untouched {s} changed");
            }
        }
        for (s, events) in &acked {
            let have = got.get(s).map_or(0, Vec::len);
            let had = before.get(s).map_or(0, Vec::len);
            assert!(
                have >= had + events.len(),
                "fail at op {n}: {s} lost acknowledged events ({have} < {had} + {})",
                events.len()
            );
            acked_somewhere += events.len();
        }
        drop(recovered);
        let again = Store::open_with(image, options()).unwrap();
        assert_eq!(dump(&again), got, "fail at op {n}: second reopen differs");
    }
    assert!(acked_somewhere > 0);
    eprintln!(
        "{fault:?}: a failure at each of {} operations after {setup_ops}, reopened",
        total - setup_ops
    );
}

#[test]
fn every_failure_point_on_a_store_read_from_its_index_keeps_acknowledged_events() {
    check_every_failure_point(Fault::Eio);
}

#[test]
fn a_full_disk_at_every_point_on_a_store_read_from_its_index_keeps_acknowledged_events() {
    check_every_failure_point(Fault::NoSpace);
}

#[test]
fn a_short_write_at_every_point_on_a_store_read_from_its_index_keeps_acknowledged_events() {
    check_every_failure_point(Fault::ShortWrite);
}

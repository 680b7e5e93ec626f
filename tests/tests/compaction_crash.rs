//! A compaction that fails at each of its storage operations (EIO, a full disk, a short
//! write), kept as the durable image (a power loss) and as the live one (a process crash):
//! the store reopens with every live session whole and the deleted one does not come back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use sessdb::storage::{CrashStorage, Fault, Storage};
use sessdb::{Clock, Draft, Durability, LogType, SessionHeader, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(2048)
        .with_checkpoint_interval_bytes(3000)
        .with_checkpoint_merge_every(2)
}

fn dump(store: &Store) -> BTreeMap<String, Vec<Vec<u8>>> {
    sessdb_tests::dump_store(store)
        .into_iter()
        .map(|(id, events, _)| (id, events))
        .collect()
}

/// Three sessions interleaved over several segments, the middle one deleted.
fn script(store: &Store) {
    for id in ["a", "b", "c"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    for round in 0..12 {
        for id in ["a", "b", "c"] {
            let data = format!("{{\"note\":\"{id}-{round}\"}}");
            store
                .append(
                    id,
                    Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
                )
                .unwrap();
        }
    }
    store.delete_session("b").unwrap();
}

fn check(fault: Fault) {
    let full = CrashStorage::new();
    let (start, expected) = {
        let store = Store::open_with(Arc::new(full.clone()), options()).unwrap();
        script(&store);
        let start = full.ops();
        let expected = dump(&store);
        store.compact().unwrap();
        assert_eq!(dump(&store), expected);
        (start, expected)
    };
    let end = full.ops();
    assert!(end > start + 5, "{start}..{end}");
    assert!(!expected.contains_key("b"));
    for n in start + 1..=end {
        let storage = CrashStorage::new();
        let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
        script(&store);
        storage.fail_at_with(n, fault);
        let _ = store.compact();
        for (what, image) in [("durable", storage.crash()), ("live", storage.live_image())] {
            let image: Arc<dyn Storage> = Arc::new(image);
            let reopened = Store::open_with(Arc::clone(&image), options())
                .unwrap_or_else(|e| panic!("{fault:?} at op {n} ({what}): reopen: {e}"));
            assert_eq!(dump(&reopened), expected, "{fault:?} at op {n} ({what})");
            // A compaction after it finishes the work, and the store stays the same.
            reopened.compact().unwrap();
            assert_eq!(
                dump(&reopened),
                expected,
                "{fault:?} at op {n} ({what}), again"
            );
            drop(reopened);
            let again = Store::open_with(image, options().with_ignore_checkpoints(true)).unwrap();
            assert_eq!(
                dump(&again),
                expected,
                "{fault:?} at op {n} ({what}), replayed"
            );
        }
    }
    eprintln!(
        "{fault:?}: a failure at each of {} compaction operations",
        end - start
    );
}

#[test]
fn an_eio_at_every_compaction_operation_loses_nothing_and_brings_nothing_back() {
    check(Fault::Eio);
}

#[test]
fn a_full_disk_at_every_compaction_operation_loses_nothing() {
    check(Fault::NoSpace);
}

#[test]
fn a_short_write_at_every_compaction_operation_loses_nothing() {
    check(Fault::ShortWrite);
}

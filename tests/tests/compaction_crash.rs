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
use sessdb::{
    Clock, CompactionPolicy, Draft, Durability, LogType, SessionHeader, Store, StoreOptions,
};

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(2048)
        .with_checkpoint_interval_bytes(3000)
        // Every storage operation in one order, run after run (the due checkpoints on the
        // appender): `checkpoint_thread.rs` tests the checkpointer's thread.
        .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
        .with_checkpoint_merge_every(2)
        .with_compaction(Some(staging(0)))
}

/// The default policy staging up to `bytes` ahead of each rename: 0 stages one file ahead, so
/// renames and staged files interleave and a failure lands between them; the default stages
/// every file of these small stores before the first rename.
fn staging(bytes: u64) -> CompactionPolicy {
    CompactionPolicy::default().with_staged_bytes_max(bytes)
}

fn dump(store: &Store) -> BTreeMap<String, Vec<Vec<u8>>> {
    sessdb_tests::dump_store(store)
        .into_iter()
        .map(|(id, events, _)| (id, events))
        .collect()
}

/// Five sessions interleaved over several segments, four deleted (what is left of each
/// segment is small: the compaction merges them).
fn script(store: &Store) {
    for id in ["a", "b", "c", "d", "e"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    for round in 0..18 {
        for id in ["a", "b", "c", "d", "e"] {
            let data = format!("{{\"note\":\"{id}-{round}\"}}");
            store
                .append(
                    id,
                    Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
                )
                .unwrap();
        }
    }
    for id in ["b", "c", "d", "e"] {
        store.delete_session(id).unwrap();
    }
}

/// The script written on 2 KiB segments, the store reopened to compact with 8 KiB ones:
/// what each segment keeps (a quarter of 8 KiB at most) is then small enough to merge.
fn written(storage: &CrashStorage, staged: CompactionPolicy) -> Store {
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    script(&store);
    store.close().unwrap();
    drop(store);
    Store::open_with(
        Arc::new(storage.clone()),
        options()
            .with_segment_bytes_max(8192)
            .with_compaction(Some(staged)),
    )
    .unwrap()
}

fn check(fault: Fault, staged: CompactionPolicy) {
    let full = CrashStorage::new();
    let (start, expected) = {
        let store = written(&full, staged);
        let start = full.ops();
        let expected = dump(&store);
        let report = store.compact().unwrap();
        assert_eq!(dump(&store), expected);
        // The operations include a merge of the small segments it leaves (a crash between
        // its rename and its removals leaves files the open must tell from damage).
        assert!(report.segments_merged > 0, "{report:?}");
        // More segments written than a compaction stages ahead of a rename (one, here): some
        // are renamed while others are staged, and a failure lands between.
        assert!(report.segments.len() > 3, "{report:?}");
        (start, expected)
    };
    let end = full.ops();
    assert!(end > start + 5, "{start}..{end}");
    assert!(!expected.contains_key("b"));
    for n in start + 1..=end {
        let storage = CrashStorage::new();
        let store = written(&storage, staged);
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
    check(Fault::Eio, staging(0));
}

#[test]
fn an_eio_at_every_operation_of_a_compaction_staging_every_file_first_loses_nothing() {
    check(Fault::Eio, CompactionPolicy::default());
}

#[test]
fn a_full_disk_at_every_compaction_operation_loses_nothing() {
    check(Fault::NoSpace, staging(0));
}

#[test]
fn a_short_write_at_every_compaction_operation_loses_nothing() {
    check(Fault::ShortWrite, staging(0));
}

/// A merge cut after its rename and before its removals leaves segment files wholly inside
/// the merged one: a read-only open and a salvage's plan tell them from damage (nothing lost,
/// no later segment removed) and a writable open removes them.
#[test]
fn a_merge_cut_before_its_removals_is_no_damage() {
    let full = CrashStorage::new();
    let (start, end, expected) = {
        let store = written(&full, staging(0));
        let start = full.ops();
        let expected = dump(&store);
        store.compact().unwrap();
        (start, full.ops(), expected)
    };
    let segment_files = |files: &[(String, Vec<u8>)]| {
        files
            .iter()
            .filter(|(p, _)| p.starts_with("segments/") && p.ends_with(".seg"))
            .count()
    };
    let mut found = 0;
    for n in start + 1..=end {
        let storage = CrashStorage::new();
        let store = written(&storage, staging(0));
        storage.fail_at_with(n, Fault::Eio);
        let report = store.compact();
        drop(store);
        let image = storage.live_image();
        // Only the images a merge left half done: the removal of a merged file failed.
        let Err(sessdb::Error::Io {
            op: "remove", path, ..
        }) = report
        else {
            continue;
        };
        if !path.starts_with("segments/") {
            continue;
        }
        found += 1;
        let before = segment_files(&image.files());
        let storage: Arc<dyn Storage> = Arc::new(image.clone());
        let reader = Store::open_read_only_with(Arc::clone(&storage), options()).unwrap();
        assert_eq!(dump(&reader), expected, "op {n}: read-only");
        drop(reader);
        let plan = sessdb::store::salvage_plan(&*storage, &options()).unwrap();
        assert!(
            plan.damage.is_empty() && plan.sessions.is_empty(),
            "op {n}: {plan:?}"
        );
        let writer = Store::open_with(Arc::clone(&storage), options()).unwrap();
        assert_eq!(dump(&writer), expected, "op {n}: writable");
        drop(writer);
        assert!(
            segment_files(&image.files()) < before,
            "op {n}: the writable open removed the merge's leftovers"
        );
        let v = sessdb::store::verify(storage).unwrap();
        assert!(v.problems.is_empty(), "op {n}: {v:?}");
    }
    assert!(
        found > 0,
        "no fault point fell between a merge's rename and its removals"
    );
}

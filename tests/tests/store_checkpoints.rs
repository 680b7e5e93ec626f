//! The checkpoint invariant: opening from any checkpoint — the newest, an older one, a stale
//! one from earlier in the log's life, a damaged one, one from another store — gives the
//! same state as replaying the whole log with no checkpoint at all.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;

use proptest::prelude::*;
use sessdb::storage::MemStorage;
use sessdb::{Clock, Store, StoreOptions};
use sessdb_tests::{StoreDump, dump_store};
use sessdb_workload::{WorkloadSpec, generate};

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(4096)
        .with_checkpoint_interval_bytes(2500)
        // Every storage operation in one order, run after run (the due checkpoints on the
        // appender): `checkpoint_thread.rs` tests the checkpointer's thread.
        .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
        .with_checkpoint_merge_every(3)
}

fn dump(store: &Store) -> StoreDump {
    dump_store(store)
}

fn segments_and(files: &[(String, Vec<u8>)], checkpoints: &[(String, Vec<u8>)]) -> MemStorage {
    MemStorage::from_files(
        files
            .iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .cloned()
            .chain(checkpoints.iter().cloned()),
    )
}

fn checkpoints(files: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    files
        .iter()
        .filter(|(p, _)| p.starts_with("checkpoints/") && p.ends_with(".ckpt"))
        .cloned()
        .collect()
}

fn open(image: MemStorage) -> Store {
    Store::open_with(Arc::new(image), options()).unwrap()
}

fn spec(seed: u64, sessions: usize, turns: u64) -> WorkloadSpec {
    WorkloadSpec {
        seed,
        sessions,
        max_turns: turns,
        max_chunks: 5,
        ..WorkloadSpec::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(16), ..ProptestConfig::default() })]

    #[test]
    fn any_checkpoint_gives_the_state_of_a_full_replay(seed in any::<u64>(), sessions in 1usize..4, turns in 1u64..4, flip in any::<prop::sample::Index>(), pick in any::<prop::sample::Index>()) {
        let storage = MemStorage::new();
        let mut store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
        generate(&spec(seed, sessions, turns), &mut store).unwrap();
        store.checkpoint().unwrap();
        let early = checkpoints(&storage.files());
        generate(&spec(seed ^ 0x5555, sessions, turns), &mut store).unwrap();
        drop(store);
        let files = storage.files();
        let reference = dump(&open(segments_and(&files, &[])));
        prop_assert!(!reference.is_empty());

        // The newest chain, and every shorter chain that the retained files allow.
        let late = checkpoints(&files);
        prop_assert!(!late.is_empty());
        for upto in 1..=late.len() {
            let store = open(segments_and(&files, &late[..upto]));
            prop_assert_eq!(dump(&store), reference.clone(), "chain up to {}", late[upto - 1].0);
        }
        // A stale checkpoint from earlier in the log's life.
        let store = open(segments_and(&files, &early));
        prop_assert!(store.open_report().checkpoint.is_some());
        prop_assert!(store.open_report().records_replayed > 0);
        prop_assert_eq!(dump(&store), reference.clone());
        // A damaged newest checkpoint falls back — at open when the damage is in its header or
        // table (or in a location run the open needed); else a location run is found damaged
        // when its session is first read, naming the file, and never read as locations. A
        // full replay (what `repair` does) then gives the reference state.
        let mut damaged = late.clone();
        let newest = damaged.len() - 1;
        let at = flip.index(damaged[newest].1.len());
        damaged[newest].1[at] ^= 0x10;
        let store = open(segments_and(&files, &damaged));
        match sessdb_tests::try_dump_store(&store) {
            Ok(got) => {
                prop_assert!(!store.open_report().checkpoints_discarded.is_empty() || at >= 64);
                prop_assert_eq!(got, reference.clone());
            }
            Err(sessdb::Error::Corruption { segment, kind, .. }) => {
                prop_assert!(matches!(kind, sessdb::CorruptionKind::CheckpointLocations | sessdb::CorruptionKind::CheckpointEntry | sessdb::CorruptionKind::CheckpointIndex), "{kind:?}");
                prop_assert_eq!(&segment, &damaged[newest].0);
                let problems = sessdb::store::verify(Arc::new(segments_and(&files, &damaged))).unwrap().problems;
                prop_assert!(problems.iter().any(|p| p.contains("location run") || p.contains("entry") || p.contains("index block")), "{problems:?}");
                let replayed = Store::open_with(Arc::new(segments_and(&files, &damaged)), options().with_ignore_checkpoints(true)).unwrap();
                prop_assert_eq!(dump(&replayed), reference.clone());
            }
            Err(e) => prop_assert!(false, "{e}"),
        }
        // A checkpoint from another store: where this log has another valid record at the
        // position it names, it is ignored; where it points past this log's end, it is
        // indistinguishable from a log that lost records it vouches for, and a writer refuses.
        let other = MemStorage::new();
        let mut other_store = Store::open_with(Arc::new(other.clone()), options()).unwrap();
        generate(&spec(seed.wrapping_add(1), 1, 2), &mut other_store).unwrap();
        other_store.close().unwrap();
        let foreign = checkpoints(&other.files());
        let chosen = foreign[pick.index(foreign.len())].clone();
        // The log's end (the active segment's file also holds allocated zeros beyond it).
        let log_end = Store::open_read_only_with(Arc::new(segments_and(&files, &[])), options())
            .unwrap()
            .stats()
            .end_lsn;
        let covered = u64::from_le_bytes(chosen.1[32..40].try_into().unwrap());
        match Store::open_with(Arc::new(segments_and(&files, &[chosen])), options()) {
            Ok(store) => {
                prop_assert!(covered <= log_end);
                prop_assert_eq!(dump(&store), reference);
            }
            Err(sessdb::Error::Corruption { .. }) => prop_assert!(covered > log_end),
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

/// Where the location runs of a checkpoint file start: after its header, index and entries.
fn runs_start(file: &[u8]) -> usize {
    let header = sessdb::codec::checkpoint::CHECKPOINT_HEADER_LEN;
    header
        + sessdb::codec::checkpoint::indexed::Regions::of(
            &file[header..],
            sessdb::codec::checkpoint::BodyLayout::CURRENT,
        )
        .unwrap()
        .runs_start
}

#[test]
fn regression_a_damaged_location_run_is_found_on_first_use_and_a_full_replay_rebuilds_it() {
    // An open reads no location run (that is what keeps it flat in the history); a run's own
    // CRC is checked when its session is first read, so damage there is an error naming the
    // checkpoint, never wrong locations; `verify` finds it; a full replay writes a new one.
    let storage = MemStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    for id in ["a", "b"] {
        let s = store
            .create_session(sessdb::SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        for turn in 1..=3 {
            s.append(sessdb::Draft::log(
                &sessdb::LogType::TURN_START,
                format!("{{\"turn\":{turn}}}").into_bytes(),
            ))
            .unwrap();
        }
    }
    store.close().unwrap();
    drop(store);
    let files = storage.files();
    let reference = dump(&open(segments_and(&files, &[])));
    let mut ckpts = checkpoints(&files);
    let newest = ckpts.len() - 1;
    let at = runs_start(&ckpts[newest].1) + 3;
    assert!(
        at < ckpts[newest].1.len(),
        "the newest checkpoint holds locations"
    );
    ckpts[newest].1[at] ^= 0x01;
    let damaged = segments_and(&files, &ckpts);

    let store = Store::open_with(Arc::new(damaged.clone()), options()).unwrap();
    assert_eq!(
        store.open_report().checkpoint,
        Some(
            sessdb::codec::checkpoint::parse_checkpoint_name(
                ckpts[newest].0.trim_start_matches("checkpoints/")
            )
            .unwrap()
        ),
        "the open used the damaged checkpoint: it read no run"
    );
    match sessdb_tests::try_dump_store(&store) {
        Err(sessdb::Error::Corruption { segment, kind, .. }) => {
            assert_eq!(segment, ckpts[newest].0);
            assert_eq!(kind, sessdb::CorruptionKind::CheckpointLocations);
        }
        other => panic!("{other:?}"),
    }
    store.close().unwrap();
    drop(store);
    let problems = sessdb::store::verify(Arc::new(damaged.clone()))
        .unwrap()
        .problems;
    assert!(
        problems.iter().any(|p| p.contains("location run")),
        "{problems:?}"
    );
    // What `sessdb repair` does: a full replay, and the full checkpoint its close writes.
    let repaired = Store::open_with(
        Arc::new(damaged.clone()),
        options().with_ignore_checkpoints(true),
    )
    .unwrap();
    assert_eq!(dump(&repaired), reference);
    repaired.close().unwrap();
    drop(repaired);
    let store = Store::open_with(Arc::new(damaged.clone()), options()).unwrap();
    assert_eq!(dump(&store), reference);
    assert!(
        sessdb::store::verify(Arc::new(damaged))
            .unwrap()
            .problems
            .is_empty()
    );
}

#[test]
fn a_checkpoint_of_the_earlier_body_layout_is_passed_over_and_the_log_replayed() {
    let storage = MemStorage::new();
    let mut store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    generate(&spec(11, 2, 2), &mut store).unwrap();
    store.close().unwrap();
    drop(store);
    let files = storage.files();
    let reference = dump(&open(segments_and(&files, &[])));
    // Every checkpoint relabelled body layout 1, its header checksum made valid again.
    let relabelled: Vec<(String, Vec<u8>)> = checkpoints(&files)
        .into_iter()
        .map(|(path, mut bytes)| {
            bytes[10..12].copy_from_slice(&1u16.to_le_bytes());
            let mut h = crc32fast::Hasher::new();
            h.update(&bytes[..12]);
            h.update(&bytes[16..64]);
            let crc = h.finalize();
            bytes[12..16].copy_from_slice(&crc.to_le_bytes());
            (path, bytes)
        })
        .collect();
    let image = segments_and(&files, &relabelled);
    let store = open(image.clone());
    let report = store.open_report();
    assert_eq!(report.checkpoint, None);
    assert!(
        report
            .checkpoints_discarded
            .iter()
            .any(|d| d.contains("body layout")),
        "{:?}",
        report.checkpoints_discarded
    );
    assert_eq!(dump(&store), reference);
    // Its close writes a checkpoint of the current layout, which the next open uses.
    store.close().unwrap();
    drop(store);
    let again = open(image);
    assert!(again.open_report().checkpoint.is_some());
    assert_eq!(dump(&again), reference);
}

/// Found by the compaction property (`compaction_props.rs`): a session deleted, its id
/// created again in a later process, then extended in a third — the open of the fourth
/// failed ("a delta extends a session the chain does not hold"): the chain's deletions were
/// left in the catalog's list of deletions since the last checkpoint, so the next delta
/// deleted the new session again before extending it.
#[test]
fn regression_a_deleted_id_created_again_extends_after_reopen() {
    let storage = MemStorage::new();
    let note = |store: &Store, text: &str| {
        let data = format!("{{\"note\":\"{text}\"}}");
        let t = sessdb::LogType::new("plugin/note").unwrap();
        store
            .append("s0", sessdb::Draft::log(t, data.as_bytes()).ignorable())
            .unwrap();
    };
    let reopen = |store: Store| {
        store.close().unwrap();
        drop(store);
        Store::open_with(Arc::new(storage.clone()), options()).unwrap()
    };
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    let header = || sessdb::SessionHeader::new("s0", 0);
    store.create_session(header(), Vec::new()).unwrap();
    note(&store, "first");
    let store = reopen(store);
    store.delete_session("s0").unwrap();
    let store = reopen(store);
    store.create_session(header(), Vec::new()).unwrap();
    note(&store, "again");
    let store = reopen(store);
    note(&store, "more");
    let expected = dump(&store);
    let store = reopen(store);
    assert_eq!(dump(&store), expected);
    assert_eq!(store.session_len("s0").unwrap(), 3);
}

#[test]
fn regression_a_reopened_stores_next_checkpoint_is_a_delta_on_its_chain() {
    // The open took the chain's layout from the body's parts, not its header, and so read a
    // layout-4 chain as one of layout 3: every checkpoint after an open was written full.
    let dir = tempfile::tempdir().unwrap();
    let opts = || options().with_checkpoint_merge_every(8);
    let store = Store::open(dir.path(), opts()).unwrap();
    for k in 0..300 {
        let header = sessdb::SessionHeader::new(format!("s{k}"), k);
        store.create_session(header, Vec::new()).unwrap();
    }
    store.checkpoint().unwrap();
    drop(store);
    for round in 0..3 {
        let store = Store::open(dir.path(), opts()).unwrap();
        for k in (0..300).step_by(30) {
            let header = sessdb::SessionHeader::new(format!("r{round}-{k}"), k);
            store.create_session(header, Vec::new()).unwrap();
        }
        let info = store.checkpoint().unwrap().unwrap();
        assert!(!info.full, "round {round}: {info:?}");
    }
}

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
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

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
        // A damaged newest checkpoint falls back.
        let mut damaged = late.clone();
        let newest = damaged.len() - 1;
        let at = flip.index(damaged[newest].1.len());
        damaged[newest].1[at] ^= 0x10;
        let store = open(segments_and(&files, &damaged));
        prop_assert!(!store.open_report().checkpoints_discarded.is_empty());
        prop_assert_eq!(dump(&store), reference.clone());
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
            .log_bytes;
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

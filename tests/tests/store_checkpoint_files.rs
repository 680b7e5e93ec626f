//! Checkpoint files: a flipped byte anywhere in one discards it; an interrupted one
//! leaves nothing behind after the next open.
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::Store;
use sessdb::codec::checkpoint::CHECKPOINT_HEADER_LEN;
use sessdb::codec::checkpoint::indexed::Regions;
use sessdb_tests::{Backend, on_both_storages};

#[path = "support/store.rs"]
mod support;
use support::*;

/// Regression (found by the `store_checkpoints` property test): a flipped byte in the
/// checkpoint header's reserved field went unnoticed, because nothing covered it. The header
/// now carries its own CRC; every byte of the header and of the index's prefix and block CRCs
/// is checked at open (a block of slots, an entry or a run when first used:
/// `store_checkpoints.rs`, `byte_flips.rs`).
fn regression_a_flipped_byte_anywhere_in_a_checkpoint_discards_it(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    let (path, bytes) = storage
        .files()
        .into_iter()
        .rfind(|(p, _)| p.starts_with("checkpoints/"))
        .unwrap();
    // The header's CRC covers the index's prefix and page table; the slots, entries and runs
    // are each checked when first read.
    let index_end = CHECKPOINT_HEADER_LEN
        + Regions::of(
            &bytes[CHECKPOINT_HEADER_LEN..],
            sessdb::codec::checkpoint::BodyLayout::CURRENT,
        )
        .unwrap()
        .slots_start;
    let at_all: Vec<usize> = (0..CHECKPOINT_HEADER_LEN)
        .chain([CHECKPOINT_HEADER_LEN + 3, index_end - 1])
        .collect();
    for at in at_all {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x04;
        let image = storage.image_with(&path, &damaged);
        let reopened = Store::open_with(image.storage(), opts()).unwrap();
        assert!(
            !reopened.open_report().checkpoints_discarded.is_empty(),
            "flip at byte {at} went unnoticed"
        );
    }
}

fn an_interrupted_checkpoint_leaves_no_garbage_after_the_next_open(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    storage.put(
        "checkpoints/00000000000000000099.ckpt.tmp",
        b"half a checkpoint".to_vec(),
    );
    let reopened = open(storage);
    assert!(reopened.open_report().checkpoints_discarded.is_empty());
    assert!(storage.files().iter().all(|(p, _)| !p.ends_with(".tmp")));
}

/// A store whose checkpoint files hold two chains (merged every 2): generations 1..=4, the
/// newest chain 3..=4, the previous one 1..=2 kept beside it. Returns the checkpoint paths,
/// oldest first, and the store's dump.
fn two_chains(storage: &Backend) -> (Vec<String>, sessdb_tests::StoreDump) {
    let store = Store::open_with(storage.storage(), opts().with_checkpoint_merge_every(2)).unwrap();
    for round in 0..4 {
        session_with(&store, &format!("s{round}"), "two chains", 3);
        let info = store.checkpoint().unwrap().unwrap();
        assert_eq!(info.full, round % 2 == 0, "round {round}: {info:?}");
    }
    let before = dump(&store);
    drop(store);
    let paths: Vec<String> = storage
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("checkpoints/"))
        .collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    (paths, before)
}

/// Flips a bit of checkpoint `path`'s header (in its covered LSN: the header's CRC then
/// fails); returns the bytes.
fn damage_header(storage: &Backend, path: &str) -> Vec<u8> {
    let mut bytes = storage.file(path);
    bytes[33] ^= 0x10;
    storage.put(path, bytes.clone());
    bytes
}

/// An open reads the headers of the chain it applies, newest first, not the previous chain's
/// kept beside it (a few microseconds a file); `verify` reads every header and names the
/// damaged one.
fn an_open_reads_only_its_chains_headers_and_verify_reads_every_one(storage: &Backend) {
    let (paths, before) = two_chains(storage);
    let oldest = &paths[0];
    damage_header(storage, oldest);
    let reader = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    assert!(
        reader.open_report().checkpoints_discarded.is_empty(),
        "{:?}",
        reader.open_report()
    );
    assert_eq!(reader.open_report().checkpoint, Some(4));
    assert_eq!(dump(&reader), before);
    drop(reader);
    let report = sessdb::store::verify(storage.storage()).unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains(oldest.as_str())),
        "{report:?}"
    );
}

/// A newest checkpoint whose header is damaged is passed over, and its generation is never
/// written again: the next checkpoint is numbered after it (a reader that listed the damaged
/// file never finds another file under its name).
fn a_damaged_newest_checkpoint_generation_is_not_written_again(storage: &Backend) {
    let (paths, before) = two_chains(storage);
    let newest = paths.last().unwrap();
    let bytes = damage_header(storage, newest);
    let store = Store::open_with(storage.storage(), opts().with_checkpoint_merge_every(2)).unwrap();
    assert!(
        store
            .open_report()
            .checkpoints_discarded
            .iter()
            .any(|why| why.contains(newest.as_str())),
        "{:?}",
        store.open_report()
    );
    assert_eq!(dump(&store), before);
    let info = store.checkpoint().unwrap().unwrap();
    assert_eq!(info.generation, 5, "{info:?}");
    assert!(info.full, "built on no chain the damaged file belonged to");
    drop(store);
    let damaged_kept = storage
        .files()
        .into_iter()
        .any(|(p, b)| p == *newest && b == bytes);
    assert!(damaged_kept, "the damaged file is not written over");
    let reopened = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    assert_eq!(reopened.open_report().checkpoint, Some(5));
    assert_eq!(dump(&reopened), before);
}

/// `verify` on a store whose log is damaged names the newest checkpoint whose header checks
/// out (one whose header is damaged is no checkpoint it can name).
fn verify_of_a_damaged_log_names_the_newest_readable_checkpoint(storage: &Backend) {
    let (paths, _) = two_chains(storage);
    damage_header(storage, paths.last().unwrap());
    let (segment, mut bytes) = last_segment(storage);
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    storage.put(&segment, bytes);
    let report = sessdb::store::verify(storage.storage()).unwrap();
    assert!(!report.ok(), "{report:?}");
    assert_eq!(report.checkpoint, Some(3), "{report:?}");
}

/// A store restored from an older copy of its files (two checkpoints back) opens as that copy
/// from its newest chain, writes on and numbers its next checkpoint after it; the copy with
/// a newer checkpoint of the store that went on carried into it is refused (that checkpoint
/// vouches for records this log does not hold), as before headers were read on first use.
fn a_store_restored_from_an_older_copy_opens_as_the_copy(storage: &Backend) {
    let (_, before) = two_chains(storage);
    let older = storage.files();
    let store = Store::open_with(storage.storage(), opts().with_checkpoint_merge_every(2)).unwrap();
    for (round, id) in ["later-1", "later-2"].into_iter().enumerate() {
        session_with(&store, id, "went on", 10);
        let info = store.checkpoint().unwrap().unwrap();
        assert_eq!(info.generation, 5 + round as u64);
    }
    drop(store);
    let carried = storage.file("checkpoints/00000000000000000006.ckpt");

    let restored = storage.image(older.clone());
    let reopened =
        Store::open_with(restored.storage(), opts().with_checkpoint_merge_every(2)).unwrap();
    assert!(
        reopened.open_report().checkpoints_discarded.is_empty(),
        "{:?}",
        reopened.open_report()
    );
    assert_eq!(reopened.open_report().checkpoint, Some(4));
    assert_eq!(dump(&reopened), before);
    session_with(&reopened, "after-restore", "restored", 3);
    let info = reopened.checkpoint().unwrap().unwrap();
    assert_eq!(info.generation, 5);
    let after = dump(&reopened);
    drop(reopened);
    let again = Store::open_read_only_with(restored.storage(), opts()).unwrap();
    assert_eq!(dump(&again), after);
    drop(again);

    let mut mixed = older;
    mixed.push(("checkpoints/00000000000000000006.ckpt".to_owned(), carried));
    let mixed = storage.image(mixed);
    let err = Store::open_read_only_with(mixed.storage(), opts()).unwrap_err();
    assert!(
        matches!(
            &err,
            sessdb::Error::Corruption {
                kind: sessdb::codec::CorruptionKind::MissingRecords { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

on_both_storages!(
    a_store_restored_from_an_older_copy_opens_as_the_copy,
    verify_of_a_damaged_log_names_the_newest_readable_checkpoint,
    regression_a_flipped_byte_anywhere_in_a_checkpoint_discards_it,
    an_interrupted_checkpoint_leaves_no_garbage_after_the_next_open,
    an_open_reads_only_its_chains_headers_and_verify_reads_every_one,
    a_damaged_newest_checkpoint_generation_is_not_written_again,
);

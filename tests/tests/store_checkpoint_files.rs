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

on_both_storages!(
    regression_a_flipped_byte_anywhere_in_a_checkpoint_discards_it,
    an_interrupted_checkpoint_leaves_no_garbage_after_the_next_open,
);

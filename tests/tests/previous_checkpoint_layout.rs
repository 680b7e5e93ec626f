//! Stores whose checkpoint chain earlier releases wrote — body layouts 2, 3 and 4, a full
//! checkpoint and deltas on it, with forks and a deletion in them — kept in
//! `tests/fixtures/store-checkpoint-layout2/`, `…-layout3/` and `…-layout4/` with what that
//! code read back (`expected.txt`). The current code opens each from its chain (no log replay
//! before it), reads exactly that, and writes its next checkpoint full in layout 5, then a
//! delta, from which it reopens the same.
//!
//! Each fixture was written by `write_the_fixture` below, run (`--ignored`) on the commit
//! before the next layout; the README beside it names that commit. The file is
//! self-contained (its helpers are its own, as in `previous_layout.rs`) so that it builds on
//! such a commit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

#[path = "support/store.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sessdb::{Clock, ForkSpec, Store, StoreOptions};
use sessdb_workload::{WorkloadSpec, generate};

/// The fixture of body layout `layout`.
fn fixture(layout: u16) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/store-checkpoint-layout{layout}"))
}

/// The layout this release writes.
const CURRENT: u16 = 5;

fn options() -> StoreOptions {
    StoreOptions::tiny()
        .with_clock(Clock::fixed(1_000))
        .with_checkpoint_merge_every(8)
}

/// The store as text: per live session its id, its events as DSH JSONL lines and its state.
fn dumped(store: &Store) -> String {
    let mut out = String::new();
    for (id, lines, state) in sessdb_tests::dump_store(store) {
        out.push_str(&format!("session {id}\n"));
        for l in lines {
            out.push_str(&String::from_utf8(l).unwrap());
            out.push('\n');
        }
        out.push_str(&format!("state {state:?}\n"));
    }
    out
}

/// Writes the fixture into `SESSDB_FIXTURE_OUT` (run on the release being kept).
#[test]
#[ignore = "writes the fixture; run by hand on the previous release's code"]
fn write_the_fixture() {
    let out = PathBuf::from(std::env::var("SESSDB_FIXTURE_OUT").unwrap());
    let store_dir = out.join("store");
    // Every checkpoint a delta on the first: the chain in use spans every file.
    let mut store = Store::open(&store_dir, options().with_checkpoint_merge_every(64)).unwrap();
    generate(
        &WorkloadSpec {
            sessions: 6,
            max_turns: 2,
            max_chunks: 4,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    store.checkpoint().unwrap();
    let ids: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    // A delta with a fork (sharing its parent's locations), one with a deletion of a parent
    // (its fork copies what it shared), one with appends only.
    // The first sessions that can be forked at their end (not inside an open turn).
    let mut forkable = ids.iter().filter(|id| {
        store
            .fork(id, ForkSpec::default().with_child_id(format!("probe-{id}")))
            .and_then(|_| store.delete_session(&format!("probe-{id}")))
            .is_ok()
    });
    let (a, b) = (forkable.next().unwrap(), forkable.next().unwrap());
    store
        .fork(a, ForkSpec::default().with_child_id("fork-a"))
        .unwrap();
    support::note(&store, "fork-a", "written to the fork");
    store.checkpoint().unwrap();
    store
        .fork(b, ForkSpec::default().with_child_id("fork-b"))
        .unwrap();
    store.delete_session(b).unwrap();
    store.checkpoint().unwrap();
    support::note(&store, &ids[ids.len() - 1], "in the last delta");
    support::note(&store, "fork-a", "in the last delta too");
    store.checkpoint().unwrap();
    // After the chain: an open replays it.
    support::note(&store, &ids[0], "after the chain");
    drop(store);
    let store = Store::open(&store_dir, options()).unwrap();
    std::fs::write(out.join("expected.txt"), dumped(&store)).unwrap();
}

/// A copy of the fixture's store in a temp dir (the tests write to it).
fn copy_of_fixture(layout: u16) -> tempfile::TempDir {
    sessdb_tests::copy_of_store_fixture(&fixture(layout))
}

/// `(generation, body layout, base)` of every checkpoint file, oldest first.
fn checkpoints(dir: &Path) -> Vec<(u64, u16, u64)> {
    let mut out: Vec<(u64, u16, u64)> = std::fs::read_dir(dir.join("checkpoints"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .map(|b| {
            let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
            (word(16), u16::from_le_bytes([b[10], b[11]]), word(24))
        })
        .collect();
    out.sort_unstable();
    out
}

fn expected(layout: u16) -> String {
    std::fs::read_to_string(fixture(layout).join("expected.txt")).unwrap()
}

#[test]
fn the_fixtures_are_chains_of_their_layout_with_deltas() {
    for layout in [2, 3, 4] {
        let chain = checkpoints(&fixture(layout).join("store"));
        assert!(chain.iter().all(|c| c.1 == layout), "{chain:?}");
        assert!(chain.iter().filter(|c| c.2 != 0).count() >= 3, "{chain:?}");
    }
}

/// Opens the fixture of `layout` from its chain, reads what its code read, then writes a full
/// checkpoint of the current layout and a delta on it and reopens from that.
fn upgrades(layout: u16) {
    let dir = copy_of_fixture(layout);
    let newest = checkpoints(dir.path()).last().unwrap().0;
    let store = Store::open(dir.path(), options()).unwrap();
    let report = store.open_report();
    assert_eq!(report.checkpoint, Some(newest), "{report:?}");
    assert!(report.checkpoints_discarded.is_empty(), "{report:?}");
    assert_eq!(dumped(&store), expected(layout));
    let id = store.list().unwrap()[0].header.id.clone();
    support::note(&store, &id, "after the upgrade");
    let dump = dumped(&store);
    store.checkpoint().unwrap();
    let written = *checkpoints(dir.path()).last().unwrap();
    assert_eq!(
        (written.1, written.2),
        (CURRENT, 0),
        "a full checkpoint of the current layout"
    );
    // A delta of the current layout on it, then a reopen from that chain.
    support::note(&store, "fork-a", "a delta of the current layout");
    let dump_after = dumped(&store);
    assert_ne!(dump_after, dump);
    store.checkpoint().unwrap();
    let delta = *checkpoints(dir.path()).last().unwrap();
    assert_eq!(
        (delta.1, delta.2),
        (CURRENT, written.0),
        "a delta of the current layout"
    );
    store.close().unwrap();
    drop(store);
    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(store.open_report().checkpoint, Some(delta.0));
    assert_eq!(store.open_report().records_replayed, 0);
    assert_eq!(dumped(&store), dump_after);
    drop(store);
    let v = sessdb::store::verify(Arc::new(sessdb::storage::FsStorage::new(dir.path()))).unwrap();
    assert!(v.ok() && v.compared, "{v:?}");
}

#[test]
fn a_layout_2_chain_opens_as_it_was_written_and_the_next_checkpoint_is_of_the_current_layout() {
    upgrades(2);
}

#[test]
fn a_layout_3_chain_opens_as_it_was_written_and_the_next_checkpoint_is_of_the_current_layout() {
    upgrades(3);
}

#[test]
fn a_layout_4_chain_opens_as_it_was_written_and_the_next_checkpoint_is_of_the_current_layout() {
    upgrades(4);
}

#[test]
fn a_read_only_open_of_an_earlier_layouts_chain_reads_the_same() {
    for layout in [2, 3, 4] {
        let dir = copy_of_fixture(layout);
        let ro = Store::open_read_only(dir.path(), options()).unwrap();
        assert!(ro.open_report().checkpoint.is_some());
        assert_eq!(dumped(&ro), expected(layout));
    }
}

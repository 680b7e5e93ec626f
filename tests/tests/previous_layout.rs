//! A store written by the previous release's code — segment format 3, a compacted segment of
//! format 5, every frame of layout 1 (a frame checksum over the whole payload) — kept in
//! `tests/fixtures/store-layout1/` with what that code read back from it (`expected.txt`).
//! The current code opens it, reads exactly that, appends to it (layout 1 into its active
//! segment of format 3, layout 2 into every segment it starts) and compacts it.
//!
//! The fixture was written by `write_the_fixture` below, run (`--ignored`) on the commit
//! before layout 2; the README beside it names that commit.

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

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/store-layout1")
}

fn options() -> StoreOptions {
    StoreOptions::tiny()
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(16 * 1024)
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
    let mut store = Store::open(&store_dir, options()).unwrap();
    generate(
        &WorkloadSpec {
            sessions: 4,
            max_turns: 3,
            max_chunks: 6,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    let ids: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    store
        .fork(&ids[0], ForkSpec::default().with_child_id("the-fork"))
        .unwrap();
    store.delete_session(&ids[1]).unwrap();
    store.compact().unwrap();
    // Records after the checkpoint the compaction wrote: an open replays them.
    support::note(&store, &ids[2], "after the compaction");
    support::note(&store, "the-fork", "written to the fork");
    drop(store);
    let store = Store::open(&store_dir, options()).unwrap();
    std::fs::write(out.join("expected.txt"), dumped(&store)).unwrap();
}

/// A copy of the fixture's store in a temp dir (the tests write to it).
fn copy_of_fixture() -> tempfile::TempDir {
    sessdb_tests::copy_of_store_fixture(&fixture())
}

/// The format version in each segment's header (bytes 8..10), oldest segment first.
fn segment_versions(dir: &Path) -> Vec<u16> {
    segment_files(dir)
        .iter()
        .map(|p| {
            let b = std::fs::read(p).unwrap();
            u16::from_le_bytes([b[8], b[9]])
        })
        .collect()
}

/// The flags byte of every frame of an uncompacted segment file, in order (a frame's length
/// is its first four bytes; the walk stops at the first zero header or the file's end).
fn frame_flags(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    let mut at = 40;
    let mut flags = Vec::new();
    while at + 16 <= b.len() && b[at..at + 16] != [0; 16] {
        flags.push(b[at + 9]);
        at += 16 + u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    }
    flags
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    names.sort();
    names
}

fn expected() -> String {
    std::fs::read_to_string(fixture().join("expected.txt")).unwrap()
}

#[test]
fn the_fixture_is_of_the_previous_layout() {
    let versions = segment_versions(&fixture().join("store"));
    assert!(versions.contains(&5), "a compacted segment: {versions:?}");
    assert!(versions.contains(&3), "segments of format 3: {versions:?}");
    assert!(versions.iter().all(|v| *v == 3 || *v == 5), "{versions:?}");
    // Every frame in it is of layout 1: its flags byte (frame offset 9) is zero. The first
    // frame of each uncompacted segment starts right after the 40-byte header.
    for entry in std::fs::read_dir(fixture().join("store/segments")).unwrap() {
        let b = std::fs::read(entry.unwrap().path()).unwrap();
        if u16::from_le_bytes([b[8], b[9]]) == 3 && b.len() > 56 {
            assert_eq!(b[40 + 9], 0, "layout 1");
        }
    }
}

#[test]
fn a_store_of_the_previous_layout_opens_and_reads_what_it_read() {
    let dir = copy_of_fixture();
    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(dumped(&store), expected());
    drop(store);
    let ro = Store::open_read_only(dir.path(), options()).unwrap();
    assert_eq!(dumped(&ro), expected());
    drop(ro);
    let v = sessdb::store::verify(Arc::new(sessdb::storage::FsStorage::new(dir.path()))).unwrap();
    assert!(v.ok() && v.compared, "{v:?}");
}

#[test]
fn appends_to_it_go_on_in_the_new_layout_once_its_active_segment_rolls() {
    let dir = copy_of_fixture();
    let store = Store::open(dir.path(), options()).unwrap();
    let id = store.list().unwrap()[0].header.id.clone();
    let before = segment_versions(dir.path());
    // Enough notes to roll the 16 KiB active segment twice.
    for i in 0..400 {
        support::note(&store, &id, &format!("appended after the upgrade {i}"));
    }
    let after = segment_versions(dir.path());
    assert_eq!(
        after[..before.len()],
        before[..],
        "old segments keep their format"
    );
    assert!(after.len() >= before.len() + 2, "{after:?}");
    assert!(after[before.len()..].iter().all(|v| *v == 6), "{after:?}");
    // The active segment of format 3 took the first notes in layout 1 (flags 0), every
    // segment started since takes layout 2 (flags 1) only.
    let files = segment_files(dir.path());
    let old_active = frame_flags(&files[before.len() - 1]);
    assert!(
        old_active.len() > 2 && old_active.iter().all(|f| *f == 0),
        "{old_active:?}"
    );
    for f in &files[before.len()..] {
        let flags = frame_flags(f);
        assert!(
            !flags.is_empty() && flags.iter().all(|f| *f == 1),
            "{flags:?}"
        );
    }
    let dump = dumped(&store);
    drop(store);
    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(dumped(&store), dump, "the same after a reopen");
    for id in store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect::<Vec<_>>()
    {
        if id != store.list().unwrap()[0].header.id {
            store.delete_session(&id).unwrap();
        }
    }
    store.compact().unwrap();
    let kept = dumped(&store);
    drop(store);
    let versions = segment_versions(dir.path());
    assert!(
        versions.contains(&8),
        "compaction writes format 8: {versions:?}"
    );
    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(dumped(&store), kept);
    drop(store);
    let v = sessdb::store::verify(Arc::new(sessdb::storage::FsStorage::new(dir.path()))).unwrap();
    assert!(v.ok() && v.compared, "{v:?}");
}

/// Tombstones still name what compaction leaves out of records written before epochs — this
/// fixture's, all of them — and expire as before: dead bytes after
/// `CompactionPolicy::tombstone_ttl`, gone at the next compaction, the record they named then
/// no longer held.
#[test]
fn records_from_before_epochs_keep_tombstones_until_they_expire() {
    use std::sync::atomic::{AtomicI64, Ordering};
    let dir = copy_of_fixture();
    let now = Arc::new(AtomicI64::new(1_000));
    let clock = {
        let now = Arc::clone(&now);
        Clock::from_fn(move || now.load(Ordering::SeqCst))
    };
    let ttl_options = options().with_clock(clock).with_compaction(Some(
        sessdb::CompactionPolicy::default()
            .with_tombstone_ttl(std::time::Duration::from_secs(3600))
            .with_first_check_after(std::time::Duration::from_secs(86_400)),
    ));
    let store = Store::open(dir.path(), ttl_options).unwrap();
    // The fixture's newest record: the note written to the fork, before epochs.
    let mark = store.last_record().unwrap();
    assert_eq!(mark.epoch, None, "{mark:?}");
    store.delete_session("the-fork").unwrap();
    store.compact().unwrap();
    assert!(store.holds_record(mark), "its tombstone names it");
    let tombstones = store.space().unwrap().tombstones();
    assert!(tombstones >= 2, "{tombstones}");
    assert_eq!(
        store.space().unwrap().dead_bytes(),
        0,
        "fresh ones are not dead"
    );
    let live = dumped(&store);
    now.store(1_000 + 2 * 3_600_000, Ordering::SeqCst);
    let dead = store.space().unwrap().dead_bytes();
    assert!(dead >= 12 * 2, "{dead}");
    let done = store.compact().unwrap();
    assert!(done.reclaimed_bytes() >= 12 * 2, "{done:?}");
    assert_eq!(store.space().unwrap().dead_bytes(), 0);
    assert!(!store.holds_record(mark), "its tombstone is gone");
    assert_eq!(dumped(&store), live);
    drop(store);
    let reopened = Store::open(dir.path(), options()).unwrap();
    assert_eq!(dumped(&reopened), live);
}

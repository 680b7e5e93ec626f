//! A store of more segment files than the process's soft limit on open files
//! (`RLIMIT_NOFILE`): found by attack, such a store failed to open with "Too many open files"
//! (the store keeps one file open per segment, and 1,024 is a common soft limit). The store
//! now raises the soft limit towards the hard one when an open meets it
//! (`engine/src/storage/open_files.rs`); where the hard limit leaves no room the error names
//! the limit and changes nothing. Each case runs in a child process (this test binary again)
//! whose limits it lowers, so that no other test shares them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::Path;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use sessdb::{SessionHeader, Store};

#[path = "support/child.rs"]
mod support;
use support::{image, note, options, run_child};

const CHILD_ENV: &str = "SESSDB_OPEN_FILES_CHILD_STORE";

/// The limit the children lower their soft limit to: far below the segments' count.
const LOW: u64 = 64;

/// A store of `events` notes in one session: about three a segment.
fn build(dir: &Path, events: u64) {
    let store = Store::open(dir, options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for i in 0..events {
        store.append("s", note(i)).unwrap();
    }
    store.close().unwrap();
}

fn segment_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("segments")).unwrap().count()
}

/// Checks that the session holds `events` notes, in order.
fn check(store: &Store, events: u64) {
    let got = store.events("s", 1..events + 1).unwrap();
    assert_eq!(got.len() as u64, events);
    for (i, e) in got.iter().enumerate() {
        let want = note(i as u64).into_event(i as u64 + 1, 0);
        assert_eq!(e.data(), want.data(), "seq {}", i + 1);
    }
}

fn verify_clean(dir: &Path) {
    let report =
        sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(dir))).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// What follows `tag` on its line of `stdout` (the harness prints the test's name before).
fn line<'a>(stdout: &'a str, tag: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no `{tag}` line in: {stdout}"))
}

#[test]
fn a_store_of_more_segments_than_the_soft_limit_opens_reads_and_rolls_on() {
    let _turn = support::one_at_a_time();
    const TEST: &str = "a_store_of_more_segments_than_the_soft_limit_opens_reads_and_rolls_on";
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let dir = Path::new(&dir);
        let Rlimit { maximum, .. } = getrlimit(Resource::Nofile);
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(LOW),
                maximum,
            },
        )
        .unwrap();
        let store = Store::open(dir, options()).unwrap();
        check(&store, 600);
        // Rolls past the limit it started with, each new segment one more open file.
        for i in 600..900 {
            store.append("s", note(i)).unwrap();
        }
        check(&store, 900);
        store.close().unwrap();
        let soft = getrlimit(Resource::Nofile).current;
        println!("soft limit now: {soft:?}");
        std::process::exit(0);
    }
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 600);
    let before = segment_files(dir.path());
    assert!(before as u64 > 2 * LOW, "{before} segment files");
    let stdout = run_child(TEST, CHILD_ENV, dir.path());
    let soft = line(&stdout, "soft limit now: ");
    assert_ne!(soft, format!("Some({LOW})"), "the soft limit was raised");
    assert!(segment_files(dir.path()) > before, "the child rolled on");
    let store = Store::open(dir.path(), options()).unwrap();
    check(&store, 900);
    store.close().unwrap();
    verify_clean(dir.path());
}

#[test]
fn where_the_hard_limit_leaves_no_room_the_open_says_so_and_changes_nothing() {
    let _turn = support::one_at_a_time();
    const TEST: &str = "where_the_hard_limit_leaves_no_room_the_open_says_so_and_changes_nothing";
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let dir = Path::new(&dir);
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(LOW),
                maximum: Some(LOW),
            },
        )
        .unwrap();
        // An open judges its newest segments only (DESIGN.md §3.6): it opens, and the first
        // read that needs the older ones meets the limit — writable and read-only alike.
        let writable = Store::open(dir, options()).and_then(|store| {
            let read = store.events("s", 1..601).map(drop);
            store.close()?;
            read
        });
        let read_only = Store::open_read_only(dir, options())
            .and_then(|view| view.events("s", 1..601).map(drop));
        for (mode, result) in [("writable", writable), ("read-only", read_only)] {
            match result {
                Ok(()) => println!("{mode} read"),
                Err(e) => println!("{mode} refused: {e}"),
            }
        }
        std::process::exit(0);
    }
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 600);
    let before = image(dir.path());
    let stdout = run_child(TEST, CHILD_ENV, dir.path());
    for mode in ["writable", "read-only"] {
        let refused = line(&stdout, &format!("{mode} refused: "));
        assert!(refused.contains("Too many open files"), "{refused}");
        assert!(
            refused.contains(&format!(
                "may hold {LOW} open files (RLIMIT_NOFILE, hard limit {LOW})"
            )),
            "{refused}"
        );
    }
    assert!(
        before == image(dir.path()),
        "the refused opens changed a file"
    );
    let store = Store::open(dir.path(), options()).unwrap();
    check(&store, 600);
    store.close().unwrap();
    verify_clean(dir.path());
}

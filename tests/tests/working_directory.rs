//! A store opened at a relative path, and the process's working directory changed after
//! (Node's `process.chdir()`, any host that moves between projects). Found by attack: the
//! storage resolved every file by its path, so the writer's next segment went into whatever
//! `store/segments` the new working directory held — another store's, unlocked — its
//! checkpoint too; every append was acknowledged and the close returned `Ok`, but the store
//! reopened without them, and the other store was refused at its next open ("segment does
//! not continue the log"). The storage now holds a handle on the store's directory
//! (`engine/src/storage/fs.rs`). The case runs in a child process (this test binary again):
//! the working directory is the whole process's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::Path;

use sessdb::{SessionHeader, Store};

#[path = "support/child.rs"]
mod support;
use support::{image, note, options, run_child};

const CHILD_ENV: &str = "SESSDB_WORKING_DIRECTORY_CHILD";

const NOTES: u64 = 20;

/// The child: a writer opened at `store` in `base/a`, then moved to `base/b`, which holds
/// another store at `store`; and a read-only store opened the same way.
fn child(base: &Path) {
    std::env::set_current_dir(base.join("a")).unwrap();
    let store = Store::open("store", options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let reader = Store::open_read_only("store", options()).unwrap();
    std::env::set_current_dir(base.join("b")).unwrap();
    for i in 0..NOTES {
        store.append("s", note(i)).unwrap();
    }
    store.checkpoint().unwrap();
    // The reader follows its own store, not the one now at its relative path.
    reader.refresh().unwrap();
    assert_eq!(reader.session_len("s").unwrap(), NOTES + 1);
    store.close().unwrap();
    println!("child done");
}

#[test]
fn a_store_opened_at_a_relative_path_stays_where_it_was_opened() {
    let _turn = support::one_at_a_time();
    if let Some(base) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&base));
        std::process::exit(0);
    }
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(base.path().join("a")).unwrap();
    let other = base.path().join("b/store");
    {
        let store = Store::open(&other, options()).unwrap();
        store
            .create_session(SessionHeader::new("other", 0), Vec::new())
            .unwrap();
        store.close().unwrap();
    }
    let before = image(&other);
    let stdout = run_child(
        "a_store_opened_at_a_relative_path_stays_where_it_was_opened",
        CHILD_ENV,
        base.path(),
    );
    assert!(
        stdout.contains("child done"),
        "the child did not finish: {stdout}"
    );
    // Every acknowledged note is in the store the writer opened.
    let store = Store::open(base.path().join("a/store"), options()).unwrap();
    let events = store.events("s", 1..).unwrap();
    assert_eq!(events.len() as u64, NOTES);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.data(), note(i as u64).into_event(1, 0).data(), "note {i}");
    }
    store.close().unwrap();
    // The other store is byte for byte as it was, and opens.
    assert!(before == image(&other), "a file of the other store changed");
    let ids: Vec<String> = Store::open_read_only(&other, options())
        .unwrap()
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    assert_eq!(ids, ["other"]);
}

/// The store's directory renamed while a writer has it open (a host moving a project): the
/// writer goes on in the directory it opened, under its new name. Before the handle, the next
/// roll failed (`create segments/…: No such file or directory`) and poisoned the store.
#[test]
fn a_store_whose_directory_is_renamed_while_open_goes_on_writing_there() {
    let _turn = support::one_at_a_time();
    let base = tempfile::tempdir().unwrap();
    let (old, new) = (base.path().join("old"), base.path().join("new"));
    let store = Store::open(&old, options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    std::fs::rename(&old, &new).unwrap();
    for i in 0..NOTES {
        store.append("s", note(i)).unwrap();
    }
    store.checkpoint().unwrap();
    store.close().unwrap();
    assert!(!old.exists(), "nothing was written at the old name");
    let reopened = Store::open(&new, options()).unwrap();
    let events = reopened.events("s", 1..).unwrap();
    assert_eq!(events.len() as u64, NOTES);
    assert_eq!(
        reopened.open_report().records_replayed,
        0,
        "from the checkpoint"
    );
}

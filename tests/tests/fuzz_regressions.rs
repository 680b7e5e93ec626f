//! Regressions found by the fuzz targets that span more than one module (the others live
//! beside the code they concern, named `regression_…`). Each names the target that found it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;

use sessdb::model::{ForkSpec, SessionSet};
use sessdb::storage::MemStorage;
use sessdb::{Clock, Config, Draft, LogType, SessionHeader, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(5))
}

/// `seed_rejection`: DSH's constructor appends `session/end-seed` only when the seed does not
/// end with one (reference §3.2 item 9), and a fork's child goes through that constructor, so
/// a fork whose boundary is an end-seed marker inherits it and adds none. sessdb added a
/// second marker. Checked in memory and in the store, before and after a reopen.
#[test]
fn regression_a_fork_at_an_end_seed_marker_adds_no_second_marker() {
    let seed = vec![Draft::log(&LogType::COMMAND_RUN, r#"{"command":"ls"}"#).into_event(0, 1)];
    let at = |boundary| {
        ForkSpec::default()
            .with_boundary(boundary)
            .with_child_id(format!("child-{boundary}"))
    };

    let mut set = SessionSet::new(Config {
        clock: Clock::fixed(5),
        ..Config::default()
    });
    // The created session: the seed, then its marker at seq 1.
    set.create(SessionHeader::new("s", 0), seed.clone())
        .unwrap();
    assert_eq!(
        set.fork("s", at(1)).unwrap().len(),
        2,
        "no marker after the marker"
    );
    assert_eq!(
        set.fork("s", at(0)).unwrap().len(),
        2,
        "a marker after seq 0"
    );

    let storage = Arc::new(MemStorage::new());
    let store = Store::open_with(storage.clone(), options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), seed)
        .unwrap();
    let child = store.fork("s", at(1)).unwrap();
    assert_eq!(store.session_len(&child).unwrap(), 2);
    let other = store.fork("s", at(0)).unwrap();
    assert_eq!(store.session_len(&other).unwrap(), 2);
    let types = |store: &Store, id: &str| -> Vec<String> {
        store
            .events(id, ..)
            .unwrap()
            .iter()
            .map(|e| e.event_type().to_owned())
            .collect()
    };
    assert_eq!(types(&store, &child), ["command/run", "session/end-seed"]);
    store.close().unwrap();
    let store = Store::open_with(storage, options()).unwrap();
    assert_eq!(types(&store, &child), ["command/run", "session/end-seed"]);
    assert_eq!(types(&store, &other), ["command/run", "session/end-seed"]);
    // The child goes on from there.
    store
        .append(
            &child,
            Draft::log(&LogType::COMMAND_RUN, r#"{"command":"pwd"}"#),
        )
        .unwrap();
    assert_eq!(store.session_len(&child).unwrap(), 3);
}

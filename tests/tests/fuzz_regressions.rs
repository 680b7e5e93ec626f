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

/// `store_open`: a segment compaction wrote, the newest of the log, was taken for the active
/// segment, so a damaged frame in it was a torn tail that a writable open cut — through the
/// run table at its end, leaving a store no open could read again ("the footer's magic is
/// wrong"). A compacted segment is sealed wherever it stands: the damage is refused, and the
/// refused open changes no file. The input is the fuzzer's, kept as it found it (its first
/// byte says where the segment ends and the checkpoint begins, as in the target).
#[test]
fn regression_a_compacted_newest_segment_is_never_cut_as_a_torn_tail() {
    let data = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/fuzz/store_open-compacted-newest-segment-cut.bin"),
    )
    .unwrap();
    let (&at, rest) = data.split_first().unwrap();
    let (segment, checkpoint) = rest.split_at(usize::from(at) * rest.len() / 256);
    let mut files = vec![
        (
            "segments/00000000000000000000.seg".to_owned(),
            segment.to_vec(),
        ),
        (
            "checkpoints/00000000000000000001.ckpt".to_owned(),
            checkpoint.to_vec(),
        ),
    ];
    files.sort();
    assert_eq!(&segment[8..10], &[5, 0], "a compacted segment of format 5");
    let storage = MemStorage::from_files(files.clone());
    match Store::open_with(Arc::new(storage.clone()), StoreOptions::tiny()) {
        Ok(store) => {
            drop(store);
            Store::open_with(Arc::new(storage), StoreOptions::tiny())
                .unwrap_or_else(|e| panic!("the store an open accepted does not reopen: {e}"));
        }
        Err(e) => {
            assert!(matches!(e, sessdb::Error::Corruption { .. }), "{e}");
            let mut after = storage.files();
            after.retain(|(p, _)| p != "LOCK");
            after.sort();
            assert!(after == files, "a refused open changed the files");
        }
    }
    // Salvage ends in a store that opens, as the target asks.
    let salvaged = MemStorage::from_files(files);
    drop(
        Store::open_with(
            Arc::new(salvaged.clone()),
            StoreOptions::tiny().with_salvage(true),
        )
        .unwrap(),
    );
    Store::open_with(Arc::new(salvaged), StoreOptions::tiny()).unwrap();
}

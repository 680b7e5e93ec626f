//! Forks and resume: a fork by reference is a small record, a fork inside the log replays
//! its prefix and survives reopen, resume appends its closers and marker once.
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{
    Draft, Error, ForkErrorCode, ForkSpec, LogType, ResumeReport, SessionHeader, Store,
    StoreOptions, SurfaceIntent, SurfaceType,
};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::payload as p;

#[path = "support/store.rs"]
mod support;
use support::*;

fn fork_by_reference_adds_a_small_record(storage: &Backend) {
    let mut store = open(storage);
    let summary = workload(&mut store);
    let parent = &summary.sessions[1];
    let before = store.stats().end_lsn;
    let parent_len = store.session_len(parent).unwrap();
    let child = store
        .fork(parent, ForkSpec::default().with_child_id("child"))
        .unwrap();
    let grown = store.stats().end_lsn - before;
    assert!(grown < 400, "the fork record is {grown} bytes");
    assert_eq!(store.session_len(&child).unwrap(), parent_len + 1);
    assert_eq!(
        store.events(&child, ..parent_len).unwrap(),
        store.events(parent, ..parent_len).unwrap()
    );
    // Deleting the parent keeps the child whole, also across reopen.
    store.delete_session(parent).unwrap();
    let child_events = store.events(&child, ..).unwrap();
    store.close().unwrap();
    let reopened = open(storage);
    assert_eq!(reopened.events(&child, ..).unwrap(), child_events);
    assert!(matches!(
        reopened.session_len(parent),
        Err(Error::SessionNotFound { .. })
    ));
    let err = reopened
        .fork("child", ForkSpec::default().with_boundary(10_000))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Fork {
            code: ForkErrorCode::InvalidBoundary,
            ..
        }
    ));
}

fn fork_inside_the_log_replays_the_prefix_and_survives_reopen(storage: &Backend) {
    let store = open(storage);
    store
        .create_session(SessionHeader::new("p", 0), Vec::new())
        .unwrap();
    for turn in 1..=3 {
        store
            .append(
                "p",
                Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
            )
            .unwrap();
        store
            .append(
                "p",
                Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message(&format!("u{turn}"), "user", "x").into_bytes(),
                    SurfaceIntent::append(),
                ),
            )
            .unwrap();
        store
            .append(
                "p",
                Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
            )
            .unwrap();
    }
    let err = store
        .fork("p", ForkSpec::default().with_boundary(5))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Fork {
                code: ForkErrorCode::OpenTurn,
                ..
            }
        ),
        "{err}"
    );
    let child = store
        .fork("p", ForkSpec::default().with_boundary(6).with_child_id("c"))
        .unwrap();
    assert_eq!(store.surface(&child).unwrap(), vec![2, 5]);
    assert_eq!(store.header(&child).unwrap().seed_length, Some(7));
    let before = dump(&store);
    drop(store);
    let image = storage.without_checkpoints();
    assert_eq!(
        dump(&Store::open_with(image.storage(), opts()).unwrap()),
        before
    );
}

fn resume_appends_closers_and_marker_once(storage: &Backend) {
    let mut store = open(storage);
    let summary = workload(&mut store);
    let id = &summary.interrupted[0];
    let len = store.session_len(id).unwrap();
    let report = store.resume(id).unwrap();
    assert!(!report.closers.is_empty());
    assert_eq!(report.end_seed, Some(len + report.closers.len() as u64));
    assert!(!store.state(id).unwrap().repair().turn_is_open());
    assert_eq!(store.resume(id).unwrap(), ResumeReport::default());
}

/// A chain of forks thousands deep (each session forked from the one before: a session
/// continued in a new one every day for years). Regression: the open decoded a session's
/// parent from inside its own decoding, as deep as the chain, and a chain of 6,000 overflowed
/// the stack — an abort, and a store no process could open.
fn a_chain_of_forks_thousands_deep_reopens(storage: &Backend) {
    const DEPTH: usize = 8_000;
    let options = || StoreOptions::default().with_clock(sessdb::Clock::fixed(1_000));
    let store = Store::open_with(storage.storage(), options()).unwrap();
    store
        .create_session(SessionHeader::new("s0", 0), Vec::new())
        .unwrap();
    store
        .append(
            "s0",
            Draft::log(LogType::TURN_START, p::turn_start(1).into_bytes()),
        )
        .unwrap();
    store
        .append(
            "s0",
            Draft::log(LogType::TURN_END, p::turn_end(1).into_bytes()),
        )
        .unwrap();
    for i in 1..=DEPTH {
        store
            .fork(
                &format!("s{}", i - 1),
                ForkSpec::default().with_child_id(format!("s{i}")),
            )
            .unwrap();
    }
    let root = store.events("s0", ..).unwrap();
    store.close().unwrap();
    drop(store);
    // From the checkpoint (the entries decoded on first read), then by replaying the log.
    for options in [options(), options().with_ignore_checkpoints(true)] {
        let store = Store::open_with(storage.storage(), options).unwrap();
        let deepest = format!("s{DEPTH}");
        assert_eq!(store.events(&deepest, ..3).unwrap(), root);
        assert_eq!(store.session_len(&deepest).unwrap(), 4);
        assert_eq!(
            store.header(&deepest).unwrap().parent_session,
            Some(format!("s{}", DEPTH - 1))
        );
    }
}

on_both_storages!(
    a_chain_of_forks_thousands_deep_reopens,
    fork_by_reference_adds_a_small_record,
    fork_inside_the_log_replays_the_prefix_and_survives_reopen,
    resume_appends_closers_and_marker_once,
);

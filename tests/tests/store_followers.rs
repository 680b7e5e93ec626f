//! Followers: subscribers see new events, a read-only reader catches up with a live writer.
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::time::Duration;

use sessdb::{Draft, Error, LogType, SessionHeader, Store};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::payload as p;

#[path = "support/store.rs"]
mod support;
use support::*;

fn subscribers_see_new_events(storage: &Backend) {
    let store = open(storage);
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let mut sub = store.subscribe("s", 0).unwrap();
    assert_eq!(sub.try_next().unwrap().map(|e| e.seq()), Some(0));
    assert_eq!(sub.try_next().unwrap(), None);
    let writer = store.clone();
    let t = std::thread::spawn(move || {
        writer
            .append("s", Draft::log(&LogType::TURN_START, &br#"{"turn":1}"#[..]))
            .unwrap();
    });
    let e = sub
        .next_timeout(Duration::from_secs(30))
        .unwrap()
        .expect("the appended event arrives");
    assert_eq!((e.seq(), e.event_type()), (1, "turn/start"));
    t.join().unwrap();
    store.close().unwrap();
    assert!(matches!(
        sub.next_timeout(Duration::from_secs(30)),
        Err(Error::Closed)
    ));
}

fn a_reader_catches_up_with_a_live_writer(storage: &Backend) {
    let writer = open(storage);
    writer
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let reader = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    let mut sub = reader.subscribe("s", 1).unwrap();
    assert_eq!(sub.try_next().unwrap(), None);
    for turn in 1..=40 {
        writer
            .append(
                "s",
                Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
            )
            .unwrap();
    }
    assert!(reader.refresh().unwrap() >= 40);
    let mut seen = 0;
    while let Some(e) = sub.try_next().unwrap() {
        assert_eq!(e.event_type(), "turn/start");
        seen += 1;
    }
    assert_eq!(seen, 40);
    assert_eq!(reader.refresh().unwrap(), 0);
}

on_both_storages!(
    subscribers_see_new_events,
    a_reader_catches_up_with_a_live_writer,
);

/// A subscription is an iterator: it blocks for each appended event and ends when the store
/// closes, after the events already there.
#[test]
fn a_subscription_iterates_until_the_store_closes() {
    let store = open(&Backend::mem());
    store
        .create_session(SessionHeader::new("it", 0), Vec::new())
        .unwrap();
    let sub = store.subscribe("it", 0).unwrap();
    let writer = store.clone();
    let t = std::thread::spawn(move || {
        for turn in 1..=3 {
            writer
                .append(
                    "it",
                    Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
                )
                .unwrap();
            writer
                .append(
                    "it",
                    Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
                )
                .unwrap();
        }
        writer.close().unwrap();
    });
    let seqs: Vec<u64> = sub.map(|e| e.unwrap().seq()).collect();
    t.join().unwrap();
    assert_eq!(seqs, (0..7).collect::<Vec<_>>());
}

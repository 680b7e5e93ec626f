//! One writer: a second one is locked out (a reader is not, a subscription holds no lock);
//! a failed write or sync poisons the store and nothing after it is acknowledged; a refused
//! event writes nothing; appends from many threads at once each get their own seqs.
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use sessdb::storage::CrashStorage;
use sessdb::{Draft, Error, LogType, SessionHeader, Store};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::payload as p;

#[path = "support/store.rs"]
mod support;
use support::*;

fn a_second_writer_is_locked_out_and_a_reader_is_not(storage: &Backend) {
    let store = open(storage);
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let err = Store::open_with(storage.storage(), opts()).unwrap_err();
    assert!(
        matches!(&err, Error::Locked { lock_file } if lock_file.contains("LOCK")),
        "{err}"
    );
    let reader = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    assert_eq!(reader.session_len("s").unwrap(), 1);
    assert!(matches!(
        reader.append("s", Draft::log(&LogType::TURN_START, &b"{}"[..])),
        Err(Error::ReadOnly)
    ));
    store.close().unwrap();
    Store::open_with(storage.storage(), opts()).unwrap();
}

fn regression_a_subscription_alone_does_not_keep_the_writer_lock(storage: &Backend) {
    let store = open(storage);
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let mut sub = store.subscribe("s", 0).unwrap();
    drop(store);
    // The last store handle is gone: the store reopens in this process, and the old
    // subscription is told its store closed instead of waiting forever.
    let again = open(storage);
    assert_eq!(again.session_len("s").unwrap(), 1);
    assert!(matches!(
        sub.next_timeout(Duration::from_secs(30)).map(|_| ()),
        Ok(()) | Err(Error::Closed)
    ));
    assert!(matches!(
        sub.next_timeout(Duration::from_secs(30)),
        Err(Error::Closed)
    ));
}

/// fsyncgate: after a failed `fdatasync`, a later one may report success although the pages
/// were dropped. No call may acknowledge data the failed sync should have covered.
#[test]
fn a_failed_sync_is_never_followed_by_an_acknowledgement() {
    let storage = CrashStorage::new();
    let options = opts().with_durability(sessdb::Durability::Sync);
    let store = Store::open_with(Arc::new(storage.clone()), options).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    // The append's write is the next operation, its group-commit sync the one after.
    storage.fail_at(storage.ops() + 2);
    let err = store
        .append("s", Draft::log(&LogType::TURN_START, &br#"{"turn":1}"#[..]))
        .unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(
        matches!(store.sync(), Err(Error::Poisoned { .. })),
        "sync after a failed sync"
    );
    assert!(matches!(store.checkpoint(), Err(Error::Poisoned { .. })));
    assert!(matches!(
        store.append("s", Draft::log(&LogType::TURN_START, &br#"{"turn":1}"#[..])),
        Err(Error::Poisoned { .. })
    ));
}

/// Group commit with eight appenders and one injected failure (each of the first operations in
/// turn, writes and syncs alike): after a power loss, every acknowledged event is there.
#[test]
fn concurrent_appenders_with_a_failed_operation_acknowledge_only_durable_events() {
    for nth in 1..=24 {
        let storage = CrashStorage::new();
        let options = opts().with_durability(sessdb::Durability::Sync);
        let store = Store::open_with(Arc::new(storage.clone()), options).unwrap();
        for t in 0..8 {
            store
                .create_session(SessionHeader::new(format!("s{t}"), 0), Vec::new())
                .unwrap();
        }
        storage.fail_at(storage.ops() + nth);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    let mut acked = None;
                    for turn in 1..=6 {
                        let draft =
                            Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes());
                        match store.append(&format!("s{t}"), draft) {
                            Ok(seq) => acked = Some(seq),
                            Err(_) => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<Option<u64>> = threads.into_iter().map(|h| h.join().unwrap()).collect();
        drop(store);
        let after = Store::open_with(Arc::new(storage.crash()), opts())
            .unwrap_or_else(|e| panic!("failure at op {nth}: reopen: {e}"));
        for (t, acked) in acked.iter().enumerate() {
            let len = after.session_len(&format!("s{t}")).unwrap();
            if let Some(seq) = acked {
                assert!(
                    len > *seq,
                    "failure at op {nth}: s{t} acknowledged seq {seq} but holds {len} events"
                );
            }
        }
        assert!(
            acked.iter().any(Option::is_none) || acked.iter().flatten().count() < 8 * 6,
            "failure at op {nth} was never hit"
        );
    }
}

#[test]
fn a_failed_write_poisons_the_store() {
    let storage = CrashStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), opts()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    storage.fail_at(storage.ops() + 1);
    let err = store
        .append("s", Draft::log(&LogType::TURN_START, &b"{}"[..]))
        .unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    let err = store
        .append("s", Draft::log(&LogType::TURN_START, &b"{}"[..]))
        .unwrap_err();
    assert!(matches!(err, Error::Poisoned { .. }), "{err}");
}

fn a_refused_event_writes_nothing(storage: &Backend) {
    let store = open(storage);
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let bytes = store.stats().end_lsn;
    let batch = vec![
        Draft::log(&LogType::TURN_START, &br#"{"turn":1}"#[..]),
        Draft::dynamic(
            "user/message",
            p::user_message("u", "user", "x").into_bytes(),
        ),
    ];
    assert!(matches!(
        store.append_batch("s", batch),
        Err(Error::Rejected { seq: 2, .. })
    ));
    assert_eq!(store.stats().end_lsn, bytes);
    assert_eq!(store.session_len("s").unwrap(), 1);
}

on_both_storages!(
    a_second_writer_is_locked_out_and_a_reader_is_not,
    regression_a_subscription_alone_does_not_keep_the_writer_lock,
    a_refused_event_writes_nothing,
);

/// Before: after `close()` appends said `Closed` but reads went on (`len`, `events`). One
/// rule now: every call that returns a `Result` is `Closed`, on every clone.
#[test]
fn regression_after_close_every_call_is_closed() {
    let store = open(&Backend::mem());
    let s = store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    assert_eq!(s.len().unwrap(), 1);
    let clone = store.clone();
    store.close().unwrap();
    assert!(clone.is_closed());
    let closed = |r: sessdb::Result<()>| assert!(matches!(r, Err(Error::Closed)), "{r:?}");
    closed(clone.session_len("s").map(drop));
    closed(clone.events("s", ..).map(drop));
    closed(clone.header("s").map(drop));
    closed(clone.surface("s").map(drop));
    closed(clone.messages("s").map(drop));
    closed(clone.last_events("s", 1).map(drop));
    closed(clone.visit_events("s", ..1, |_| Ok(())));
    closed(clone.refresh().map(drop));
    closed(clone.subscribe("s", 0).map(drop));
    closed(
        clone
            .append("s", Draft::log(&LogType::TURN_START, br#"{"turn":1}"#))
            .map(drop),
    );
    // Closing again is no error.
    clone.close().unwrap();
}

fn user_draft(text: &str) -> Draft {
    Draft::surface(
        sessdb::SurfaceType::UserMessage,
        p::user_message(text, "user", text).into_bytes(),
        sessdb::SurfaceIntent::append(),
    )
}

/// Threads appending to one session at once, each event's own rules checked before the
/// write lock and the session's under it: a refusal that depends on the seq (sources that do
/// not come before it) is decided at the seq the event would take, one on the bytes alone is
/// named with that seq too, and the log accepted this way is the log a replay (which checks
/// every rule in one pass) accepts, to the same state.
#[test]
fn appends_to_one_session_from_many_threads_are_decided_at_their_own_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let options = || {
        sessdb::StoreOptions::default()
            .with_durability(sessdb::Durability::Buffered)
            .with_clock(sessdb::Clock::fixed(5))
    };
    let store = Store::open(dir.path(), options()).unwrap();
    store
        .create_session(SessionHeader::new("shared", 0), Vec::new())
        .unwrap();
    let threads = 8;
    let per = 200u64;
    let assistant = |id: &str, sources: Vec<u64>| {
        Draft::surface(
            sessdb::SurfaceType::AssistantMessage,
            p::assistant_message(1, 1, id, Some("ok"), &[(&format!("c-{id}"), "bash", "{}")])
                .into_bytes(),
            sessdb::SurfaceIntent::append().with_sources(sources),
        )
    };
    std::thread::scope(|s| {
        for t in 0..threads {
            let store = &store;
            s.spawn(move || {
                for n in 0..per {
                    let user = store
                        .append("shared", user_draft(&format!("t{t}-{n}")))
                        .unwrap();
                    // Citing its own user message: accepted, whatever came between.
                    let cited = store
                        .append("shared", assistant(&format!("a{t}-{n}"), vec![user]))
                        .unwrap();
                    assert!(cited > user);
                    // Citing a seq past any it could take: refused (a rule that reads the
                    // event's seq), and named with a seq after the last it appended.
                    let ahead = cited + 1;
                    match store.append("shared", assistant(&format!("b{t}-{n}"), vec![1 << 40])) {
                        Err(Error::Rejected { seq, violation, .. }) => {
                            assert!(seq >= ahead, "t{t}: refused at {seq}");
                            assert!(
                                matches!(violation, sessdb::Violation::SourceNotEarlier { .. }),
                                "{violation:?}"
                            );
                        }
                        other => panic!("t{t}: {other:?}"),
                    }
                    // Broken bytes, in a batch after a good event: the whole batch refused,
                    // named with the broken event's seq.
                    let batch = vec![
                        user_draft(&format!("c{t}-{n}")),
                        Draft::log(&LogType::TOOL_CALL, br#"{"turn":1,"#.to_vec()),
                    ];
                    match store.append_batch("shared", batch) {
                        Err(Error::Rejected { seq, violation, .. }) => {
                            assert!(seq > cited, "t{t}: refused at {seq}");
                            assert!(
                                matches!(violation, sessdb::Violation::InvalidData(_)),
                                "{violation:?}"
                            );
                        }
                        other => panic!("t{t}: {other:?}"),
                    }
                }
            });
        }
    });
    let len = store.session_len("shared").unwrap();
    assert_eq!(len, 1 + 2 * threads as u64 * per);
    let state = store.state("shared").unwrap();
    let messages = store.messages("shared").unwrap().len();
    store.close().unwrap();
    drop(store);
    let replayed = Store::open(dir.path(), options().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(replayed.state("shared").unwrap(), state);
    assert_eq!(replayed.messages("shared").unwrap().len(), messages);
}

#[test]
fn many_threads_appending_at_once_each_get_their_own_seqs_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        sessdb::StoreOptions::default().with_durability(sessdb::Durability::Buffered),
    )
    .unwrap();
    let threads = 16;
    let per = 300u64;
    store
        .create_session(SessionHeader::new("shared", 0), Vec::new())
        .unwrap();
    for t in 0..threads {
        store
            .create_session(SessionHeader::new(format!("t{t}"), 0), Vec::new())
            .unwrap();
    }
    let shared_seqs: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let store = &store;
                s.spawn(move || {
                    let mut shared = Vec::new();
                    for n in 0..per {
                        // Each thread's own session: its seqs one after another.
                        let seq = store.append(&format!("t{t}"), user_draft(&format!("t{t}-{n}")));
                        assert_eq!(seq.unwrap(), n + 1, "t{t}");
                        shared.push(
                            store
                                .append("shared", user_draft(&format!("t{t}-{n}")))
                                .unwrap(),
                        );
                    }
                    shared
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // The shared session: every seq taken once, each thread's in its own order, and each
    // seq holds the event its thread appended.
    let mut all: Vec<u64> = shared_seqs.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (1..=threads as u64 * per).collect::<Vec<_>>());
    for (t, seqs) in shared_seqs.iter().enumerate() {
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "t{t}");
        for (n, &seq) in seqs.iter().enumerate() {
            let e = store.events("shared", seq..=seq).unwrap().remove(0);
            let text = format!("\"t{t}-{n}\"");
            assert!(
                String::from_utf8_lossy(e.data()).contains(&text),
                "seq {seq}: {:?}",
                String::from_utf8_lossy(e.data())
            );
        }
    }
}

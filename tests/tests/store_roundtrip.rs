//! Round trips: a workload reads back the same after reopen and matches the in-memory
//! model, a replay without checkpoints gives the same state, the resident index's cost after
//! an open, open's progress reports, `iter_events` beside `events`.
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;

use sessdb::{
    Clock, Config, Draft, Error, Event, Limits, LogType, SessionHeader, SessionSet, Store,
    StoreOptions,
};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::{WorkloadSpec, generate};

#[path = "support/store.rs"]
mod support;
use support::*;

fn a_workload_reads_back_the_same_after_reopen_and_matches_the_model(storage: &Backend) {
    let mut store = open(storage);
    let summary = workload(&mut store);
    let before = dump(&store);
    assert!(store.stats().segments > 3, "tiny segments roll");
    store.close().unwrap();

    let reopened = open(storage);
    assert_eq!(dump(&reopened), before);
    assert_eq!(
        reopened.open_report().records_replayed,
        0,
        "a clean close leaves nothing to replay"
    );
    assert!(reopened.open_report().checkpoint.is_some());

    // The same workload through the in-memory model gives the same events and surfaces.
    let mut set = SessionSet::new(Config {
        clock: Clock::fixed(1_000),
        ..Config::default()
    });
    generate(
        &WorkloadSpec {
            sessions: 3,
            max_turns: 3,
            max_chunks: 6,
            ..WorkloadSpec::default()
        },
        &mut set,
    )
    .unwrap();
    for (id, events, state) in &before {
        let s = set.get(id).unwrap();
        assert_eq!(
            &s.events().map(Event::to_jsonl).collect::<Vec<_>>(),
            events,
            "{id}"
        );
        assert_eq!(s.state(), state, "{id}");
        assert_eq!(reopened.messages(id).unwrap(), s.messages(), "{id}");
    }
    assert_eq!(summary.sessions.len(), before.len());
}

fn replay_without_any_checkpoint_gives_the_same_state(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    let before = dump(&store);
    drop(store); // no close: the lock goes with the last handle
    for (path, _) in storage.files() {
        if path.starts_with("checkpoints/") {
            storage.put(&path, b"garbage".to_vec());
        }
    }
    let reopened = open(storage);
    assert_eq!(dump(&reopened), before);
    assert!(reopened.open_report().checkpoint.is_none());
    assert!(!reopened.open_report().checkpoints_discarded.is_empty());
}

fn the_resident_index_costs_16_bytes_per_event_after_open(storage: &Backend) {
    let mut store = open(storage);
    generate(
        &WorkloadSpec {
            sessions: 6,
            max_turns: 8,
            max_chunks: 30,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    drop(store);
    // Replay the whole log (no checkpoint) and measure.
    let image = storage.without_checkpoints();
    let store = Store::open_with(image.storage(), opts()).unwrap();
    let m = store.memory_usage();
    assert!(m.indexed_events > 1000, "{m:?}");
    assert_eq!(m.index_bytes as u64, 16 * m.indexed_events, "{m:?}");
    assert_eq!(m.mapped_index_bytes, 0, "{m:?}");
    assert_eq!(m.surface_bytes, 8 * m.surface_entries, "{m:?}");
    // Opened from its checkpoint, a session stays in the checkpoint's index until it is read
    // or written (the log after the checkpoint decoded some), and its locations in the file's
    // map until they are read; reading every session brings them onto the heap.
    let store = Store::open_with(storage.storage(), opts()).unwrap();
    let m = store.memory_usage();
    assert!(store.open_report().checkpoint.is_some());
    assert!(m.undecoded_sessions > 0, "{m:?}");
    assert_eq!(
        m.decoded_sessions + m.undecoded_sessions,
        store.stats().sessions,
        "{m:?}"
    );
    assert_eq!(
        (m.index_bytes + m.mapped_index_bytes) as u64,
        16 * m.indexed_events,
        "{m:?}"
    );
    for s in store.list().unwrap() {
        store.events(&s.header.id, ..).unwrap();
    }
    let read = store.memory_usage();
    assert_eq!(read.undecoded_sessions, 0, "{read:?}");
    assert_eq!(read.mapped_index_bytes, 0, "{read:?}");
    assert!(
        read.index_bytes as u64 >= 16 * read.indexed_events,
        "{read:?}"
    );
}

/// Open's log scan tells `StoreOptions::progress` how far it has come: growing counts, never
/// past the total, ending near the log's end (progress bars of `verify` and `repair`).
#[test]
fn open_reports_its_scan_progress() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        StoreOptions::default().with_checkpoint_interval_bytes(u64::MAX),
    )
    .unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let data = format!("{{\"note\":\"{}\"}}", "x".repeat(4000));
    for _ in 0..1000 {
        store
            .append(
                "s",
                Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
            )
            .unwrap();
    }
    let log_bytes = store.stats().end_lsn;
    drop(store);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = StoreOptions::default()
        .with_ignore_checkpoints(true)
        .with_progress(sessdb::store::OpenProgress::new(move |done, total| {
            sink.lock().unwrap().push((done, total));
        }));
    let reopened = Store::open_read_only_with(
        Arc::new(sessdb::storage::FsStorage::new(dir.path())),
        options,
    )
    .unwrap();
    assert_eq!(
        reopened.session_len("s").unwrap(),
        1001,
        "end-seed and 1000 notes"
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.len() >= 3,
        "about one report per MiB of {log_bytes} bytes: {seen:?}"
    );
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
    assert!(seen.iter().all(|&(done, total)| done <= total), "{seen:?}");
    let (last, _) = seen[seen.len() - 1];
    assert!(last + (1 << 20) >= log_bytes, "{last} of {log_bytes}");
}

/// `iter_events` yields exactly what `events` returns, across window boundaries, and refuses a
/// missing session up front.
#[test]
fn iter_events_matches_events_across_windows() {
    let store = sessdb_tests::mem_store();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for i in 0..1500 {
        store
            .append(
                "s",
                Draft::log(
                    LogType::new("plugin/note").unwrap(),
                    format!("{{\"i\":{i}}}"),
                )
                .ignorable(),
            )
            .unwrap();
    }
    for (from, to) in [
        (0, u64::MAX),
        (3, 1030),
        (511, 513),
        (1400, 1400),
        (2000, 3000),
    ] {
        let iterated: Vec<Event> = store
            .iter_events("s", from..to)
            .unwrap()
            .collect::<sessdb::Result<_>>()
            .unwrap();
        assert_eq!(
            iterated,
            store.events("s", from..to).unwrap(),
            "{from}..{to}"
        );
    }
    assert!(matches!(
        store.iter_events("missing", ..1),
        Err(Error::SessionNotFound { .. })
    ));
}

/// A writer opened with wider bounds (`StoreOptions::with_limits`) than a later reader's.
/// Regression: the reader judged the stored events by its own bounds — `verify` reported an
/// intact store as damaged ("a stored event is refused"), salvage planned to drop the event,
/// and an open that replayed the log refused the store.
fn events_a_wider_writer_accepted_are_not_damage_to_a_narrower_reader(storage: &Backend) {
    let deep = format!("{{\"x\":{}1{}}}", "[".repeat(1_000), "]".repeat(1_000));
    let wide = Limits {
        max_depth: 2_000,
        ..Limits::default()
    };
    let store = Store::open_with(storage.storage(), opts().with_limits(wide)).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let note = || {
        Draft::log(
            LogType::new("plugin/deep").unwrap(),
            deep.clone().into_bytes(),
        )
        .ignorable()
    };
    store.append("s", note()).unwrap();
    store
        .fork("s", sessdb::ForkSpec::default().with_child_id("f"))
        .unwrap();
    let before = dump(&store);
    drop(store); // no close: the reader below replays the log
    // The default bounds refuse the event as a new one ...
    let narrow = open(storage);
    assert!(matches!(
        narrow.append("s", note()).unwrap_err(),
        Error::Rejected { .. }
    ));
    // ... and read it as stored: the open, a fork of it, verify, salvage's plan.
    assert_eq!(dump(&narrow), before);
    narrow
        .fork("s", sessdb::ForkSpec::default().with_child_id("g"))
        .unwrap();
    assert_eq!(
        narrow.events("g", 1..2).unwrap(),
        narrow.events("s", 1..2).unwrap()
    );
    drop(narrow);
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(replayed.events("s", ..).unwrap().len(), 2);
    drop(replayed);
    let report = sessdb::store::verify(storage.storage()).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    let plan = sessdb::store::salvage_plan(&*storage.storage(), &opts()).unwrap();
    assert!(plan.damage.is_empty(), "{plan:?}");
}

/// The same for the record size: `record_bytes_max` bounds what an open writes, not what it
/// reads. Regression: a reader opened with a smaller bound took a larger record a writer had
/// written for damage ("record length fails its check") — in its open's replay, `verify`,
/// salvage's plan and compaction.
fn records_a_wider_writer_wrote_are_not_damage_to_a_narrower_reader(storage: &Backend) {
    let big = format!("{{\"x\":\"{}\"}}", "y".repeat(600 << 10));
    let store = Store::open_with(storage.storage(), opts().with_record_bytes_max(1 << 20)).unwrap();
    for id in ["s", "t"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        store
            .append(
                id,
                Draft::log(
                    LogType::new("plugin/big").unwrap(),
                    big.clone().into_bytes(),
                )
                .ignorable(),
            )
            .unwrap();
    }
    let before = dump(&store);
    drop(store);
    let narrow = || opts().with_record_bytes_max(256 << 10);
    let plan = sessdb::store::salvage_plan(&*storage.storage(), &narrow()).unwrap();
    assert!(plan.damage.is_empty(), "{plan:?}");
    let reader =
        Store::open_with(storage.storage(), narrow().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&reader), before);
    // A compaction by the narrower writer reads every record and keeps the live one.
    reader.delete_session("t").unwrap();
    reader.compact().unwrap();
    let kept = dump(&reader);
    assert_eq!(kept.len(), 1);
    assert!(kept[0] == before[0], "s after the compaction");
    drop(reader);
    let report = sessdb::store::verify(storage.storage()).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

on_both_storages!(
    records_a_wider_writer_wrote_are_not_damage_to_a_narrower_reader,
    events_a_wider_writer_accepted_are_not_damage_to_a_narrower_reader,
    a_workload_reads_back_the_same_after_reopen_and_matches_the_model,
    replay_without_any_checkpoint_gives_the_same_state,
    the_resident_index_costs_16_bytes_per_event_after_open,
);

/// `last_record` names the newest record, `holds_record` finds it there — and not with
/// another checksum, past the log's end, or in a store that never wrote it (an older copy).
#[test]
fn the_log_holds_the_record_it_last_wrote_and_an_older_copy_does_not() {
    let storage = Backend::mem();
    let mut store = open(&storage);
    workload(&mut store);
    let mark = store.last_record().unwrap();
    assert!(store.holds_record(mark));
    assert!(!store.holds_record(sessdb::store::LogMark {
        crc: mark.crc ^ 1,
        ..mark
    }));
    assert!(!store.holds_record(sessdb::store::LogMark {
        lsn: store.stats().end_lsn + 1_000,
        ..mark
    }));
    store.close().unwrap();
    let older = storage.image(storage.files());
    let store = open(&storage);
    store
        .create_session(SessionHeader::new("later", 0), Vec::new())
        .unwrap();
    let later = store.last_record().unwrap();
    assert!(store.holds_record(mark) && store.holds_record(later));
    drop(store);
    let copy = open(&older);
    assert!(copy.holds_record(mark));
    assert!(!copy.holds_record(later), "the older copy never wrote it");
}

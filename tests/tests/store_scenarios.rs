//! Store scenarios, each run on memory and on real files (`on_both_storages!`): round trips
//! through reopen, locking, read-only opens, subscription, fork by reference, torn tails,
//! corruption, salvage, verify; and poisoning on the crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use sessdb::CorruptionKind;
use sessdb::codec::checkpoint::CHECKPOINT_HEADER_LEN;
use sessdb::codec::segment::SEGMENT_HEADER_LEN;
use sessdb::storage::CrashStorage;
use sessdb::store::verify;
use sessdb::{
    Clock, Config, Draft, Error, Event, ForkErrorCode, ForkSpec, LogType, ResumeReport,
    SessionHeader, SessionSet, Store, StoreOptions, SurfaceIntent, SurfaceType,
};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::{WorkloadSpec, generate, payload as p};

fn opts() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(1_000))
}

fn open(storage: &Backend) -> Store {
    Store::open_with(storage.storage(), opts()).unwrap()
}

fn open_salvaging(storage: &Backend) -> Store {
    let options = opts().with_salvage(true);
    Store::open_with(storage.storage(), options).unwrap()
}

/// Every session's events as JSONL lines plus its state, for whole-store comparisons.
fn dump(store: &Store) -> sessdb_tests::StoreDump {
    sessdb_tests::dump_store(store)
}

fn workload(store: &mut Store) -> sessdb_workload::WorkloadSummary {
    generate(
        &WorkloadSpec {
            sessions: 3,
            max_turns: 3,
            max_chunks: 6,
            ..WorkloadSpec::default()
        },
        store,
    )
    .unwrap()
}

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
    let bytes = store.stats().log_bytes;
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
    assert_eq!(store.stats().log_bytes, bytes);
    assert_eq!(store.session_len("s").unwrap(), 1);
}

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

fn fork_by_reference_adds_a_small_record(storage: &Backend) {
    let mut store = open(storage);
    let summary = workload(&mut store);
    let parent = &summary.sessions[1];
    let before = store.stats().log_bytes;
    let parent_len = store.session_len(parent).unwrap();
    let child = store
        .fork(
            parent,
            ForkSpec {
                child_id: Some("child".into()),
                ..ForkSpec::default()
            },
        )
        .unwrap();
    let grown = store.stats().log_bytes - before;
    assert!(grown < 400, "the fork record is {grown} bytes");
    assert_eq!(store.session_len(&child).unwrap(), parent_len + 1);
    assert_eq!(
        store.events(&child, 0, parent_len).unwrap(),
        store.events(parent, 0, parent_len).unwrap()
    );
    // Deleting the parent keeps the child whole, also across reopen.
    store.delete_session(parent).unwrap();
    let child_events = store.events(&child, 0, u64::MAX).unwrap();
    store.close().unwrap();
    let reopened = open(storage);
    assert_eq!(reopened.events(&child, 0, u64::MAX).unwrap(), child_events);
    assert!(matches!(
        reopened.session_len(parent),
        Err(Error::SessionNotFound { .. })
    ));
    let err = reopened
        .fork(
            "child",
            ForkSpec {
                boundary: Some(10_000),
                ..ForkSpec::default()
            },
        )
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Fork {
            code: ForkErrorCode::InvalidBoundary,
            ..
        }
    ));
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

/// The segment files and the byte offsets where each of the last segment's records starts.
fn last_segment(storage: &Backend) -> (String, Vec<u8>) {
    storage
        .files()
        .into_iter()
        .rfind(|(p, _)| p.starts_with("segments/"))
        .unwrap()
}

fn a_torn_tail_is_cut_at_every_offset_of_the_final_records(storage: &Backend) {
    let store = Store::open_with(
        storage.storage(),
        opts().with_checkpoint_interval_bytes(u64::MAX),
    )
    .unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let mut ends = vec![(1, last_segment(storage).1.len())];
    for turn in 1..=3 {
        store
            .append(
                "s",
                Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
            )
            .unwrap();
        ends.push((
            store.session_len("s").unwrap(),
            last_segment(storage).1.len(),
        ));
        store
            .append(
                "s",
                Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message("u", "user", "hello there").into_bytes(),
                    SurfaceIntent::append(),
                ),
            )
            .unwrap();
        ends.push((
            store.session_len("s").unwrap(),
            last_segment(storage).1.len(),
        ));
    }
    assert_eq!(
        storage
            .files()
            .iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .count(),
        1,
        "one segment"
    );
    drop(store);
    let (path, full) = last_segment(storage);
    for cut in ends[0].1..=full.len() {
        let image = storage.image_with(&path, &full[..cut]);
        let store = Store::open_with(image.storage(), opts())
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let (expected_len, kept_end) = *ends.iter().rfind(|(_, end)| *end <= cut).unwrap();
        assert_eq!(
            store.session_len("s").unwrap(),
            expected_len,
            "cut at {cut}"
        );
        assert_eq!(
            store.open_report().bytes_truncated as usize,
            cut - kept_end,
            "cut at {cut}"
        );
    }
    eprintln!(
        "{} torn cuts, each recovered to the last whole record",
        full.len() + 1 - ends[0].1
    );
}

fn a_flipped_byte_in_a_sealed_record_is_corruption_at_its_offset(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    drop(store);
    let segments: Vec<(String, Vec<u8>)> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .collect();
    assert!(segments.len() >= 3);
    let (path, bytes) = &segments[1];
    let at = SEGMENT_HEADER_LEN + 20; // inside the first record's payload
    let mut damaged = bytes.clone();
    damaged[at] ^= 0x01;
    let image = storage.without_checkpoints().image_with(path, &damaged);
    let err = Store::open_with(image.storage(), opts()).unwrap_err();
    match err {
        Error::Corruption {
            segment,
            offset,
            kind,
        } => {
            assert_eq!(&segment, path);
            assert_eq!(offset, SEGMENT_HEADER_LEN as u64);
            assert_eq!(kind, CorruptionKind::ChecksumMismatch);
        }
        other => panic!("expected corruption, got {other}"),
    }
    // Salvage voids the damaged record, cuts only the session it belonged to (at its last
    // intact event), and keeps every other session whole, byte for byte.
    let before = dump(&Store::open_read_only_with(storage.storage(), opts()).unwrap());
    let untouched = image.files();
    let dry = sessdb::store::salvage_plan(&*image.storage(), &opts()).unwrap();
    assert_eq!(image.files(), untouched, "a dry run changes nothing");
    let salvaged = open_salvaging(&image);
    let s = salvaged.open_report().salvaged.clone().unwrap();
    assert_eq!(s.damage, dry.damage, "the dry run plans what salvage does");
    assert_eq!(s.sessions, dry.sessions);
    assert_eq!(s.damage.len(), 1, "{s:?}");
    let d = &s.damage[0];
    assert_eq!(
        (d.segment.as_str(), d.offset, d.kind, d.repair),
        (
            path.as_str(),
            SEGMENT_HEADER_LEN as u64,
            CorruptionKind::ChecksumMismatch,
            sessdb::store::DamageRepair::Voided
        )
    );
    // The damaged record's session (its id was damaged too, so its next record shows the
    // gap) and the fork of it that inherits the lost events.
    assert!(!s.sessions.is_empty(), "{s:?}");
    let after: std::collections::BTreeMap<_, _> = dump(&salvaged)
        .into_iter()
        .map(|(id, events, state)| (id, (events, state)))
        .collect();
    let mut whole = 0;
    for (id, events, state) in &before {
        match s.sessions.iter().find(|l| &l.session == id) {
            Some(loss) if loss.kept == 0 => assert!(!after.contains_key(id), "{id} lost whole"),
            Some(loss) => {
                let (kept, _) = &after[id];
                assert_eq!(kept.len() as u64, loss.kept, "{id}");
                assert_eq!(&events[..kept.len()], &kept[..], "{id}: an intact prefix");
                assert!(loss.lost_through.unwrap() >= loss.kept, "{loss:?}");
            }
            None => {
                whole += 1;
                assert_eq!(
                    after.get(id),
                    Some(&(events.clone(), state.clone())),
                    "{id} kept whole"
                );
            }
        }
    }
    assert!(whole >= 2, "the other sessions are kept whole");
    let after = dump(&salvaged);
    drop(salvaged);
    let again = open(&image);
    assert!(again.open_report().salvaged.is_none());
    assert_eq!(dump(&again), after, "the salvaged store reopens the same");
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
    assert_eq!(m.surface_bytes, 8 * m.surface_entries, "{m:?}");
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
        .fork(
            "p",
            ForkSpec {
                boundary: Some(5),
                ..ForkSpec::default()
            },
        )
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
        .fork(
            "p",
            ForkSpec {
                boundary: Some(6),
                child_id: Some("c".into()),
                ..ForkSpec::default()
            },
        )
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

fn salvage_rewrites_a_damaged_segment_header_and_loses_nothing(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    let before = dump(&store);
    drop(store);
    let segments: Vec<String> = storage
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("segments/"))
        .collect();
    let victim = &segments[2];
    let image = storage.without_checkpoints();
    let mut header = image
        .files()
        .into_iter()
        .find(|(p, _)| p == victim)
        .unwrap()
        .1;
    header[0] = b'X';
    image.put(victim, header);
    let err = Store::open_with(image.storage(), opts()).unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { segment, offset: 0, kind: CorruptionKind::SegmentHeader(_) } if segment == victim),
        "{err}"
    );
    let salvaged = open_salvaging(&image);
    let report = salvaged.open_report().salvaged.clone().unwrap();
    assert_eq!(report.damage.len(), 1);
    assert_eq!(
        report.damage[0].repair,
        sessdb::store::DamageRepair::HeaderRewritten
    );
    assert!(report.sessions.is_empty(), "{report:?}");
    assert_eq!(dump(&salvaged), before);
    drop(salvaged);
    // The salvaged store opens cleanly and takes writes.
    let again = Store::open_with(image.storage(), opts()).unwrap();
    assert!(again.open_report().salvaged.is_none());
    assert_eq!(dump(&again), before);
}

fn verify_finds_nothing_on_a_sound_store_and_names_damage(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    let report = verify(storage.storage()).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert!(
        report.records > 10 && report.sessions == 4 && report.checkpoint.is_some(),
        "{report:?}"
    );
    // A byte flipped in a sealed segment, before the checkpoint: a normal open would not
    // look there, verify does.
    let (path, mut bytes) = storage
        .files()
        .into_iter()
        .find(|(p, _)| p.starts_with("segments/"))
        .unwrap();
    bytes[SEGMENT_HEADER_LEN + 30] ^= 0x20;
    storage.put(&path, bytes);
    let report = verify(storage.storage()).unwrap();
    assert!(!report.ok());
    assert!(report.problems[0].contains(&path), "{:?}", report.problems);
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

/// Regression (found by the `store_checkpoints` property test): a flipped byte in the
/// checkpoint header's reserved field went unnoticed, because nothing covered it. The header
/// now carries its own CRC; every byte of a checkpoint file is checked.
fn regression_a_flipped_byte_anywhere_in_a_checkpoint_discards_it(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    let (path, bytes) = storage
        .files()
        .into_iter()
        .rfind(|(p, _)| p.starts_with("checkpoints/"))
        .unwrap();
    let at_all: Vec<usize> = (0..CHECKPOINT_HEADER_LEN)
        .chain([CHECKPOINT_HEADER_LEN + 3, bytes.len() - 1])
        .collect();
    for at in at_all {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x04;
        let image = storage.image_with(&path, &damaged);
        let reopened = Store::open_with(image.storage(), opts()).unwrap();
        assert!(
            !reopened.open_report().checkpoints_discarded.is_empty(),
            "flip at byte {at} went unnoticed"
        );
    }
}

fn an_interrupted_checkpoint_leaves_no_garbage_after_the_next_open(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    storage.put(
        "checkpoints/00000000000000000099.ckpt.tmp",
        b"half a checkpoint".to_vec(),
    );
    let reopened = open(storage);
    assert!(reopened.open_report().checkpoints_discarded.is_empty());
    assert!(storage.files().iter().all(|(p, _)| !p.ends_with(".tmp")));
}

fn a_log_shorter_than_a_checkpoint_vouches_for_is_corruption_to_every_view(storage: &Backend) {
    // The older segments beside a newer checkpoint. A reader reads the checkpoint headers
    // before it lists the segments, so a live writer cannot make it see this: records a
    // checkpoint vouches for are gone, for readers, verify and writers alike.
    let mut store = open(storage);
    workload(&mut store);
    store.checkpoint().unwrap();
    let early = storage.files();
    generate(
        &WorkloadSpec {
            seed: 9,
            sessions: 2,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    store.checkpoint().unwrap();
    let late = storage.files();
    drop(store);
    let image = storage.image(
        early
            .into_iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .chain(
                late.into_iter()
                    .filter(|(p, _)| p.starts_with("checkpoints/")),
            ),
    );
    let missing = |r: Result<Store, Error>| match r {
        Err(Error::Corruption { kind, .. }) => {
            assert!(
                matches!(kind, CorruptionKind::MissingRecords { .. }),
                "{kind}"
            );
        }
        other => panic!("expected missing records, got {other:?}"),
    };
    missing(Store::open_read_only_with(image.storage(), opts()));
    let report = verify(image.storage()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("vouches for records up to LSN")),
        "{:?}",
        report.problems
    );
    let before = image.fingerprint();
    missing(Store::open_with(image.storage(), opts()));
    assert_eq!(image.fingerprint(), before, "a refused open writes nothing");
}

fn preallocated_space_is_a_clean_end_not_a_torn_tail(storage: &Backend) {
    let options = opts()
        .with_preallocate_bytes(4096)
        .with_segment_bytes_max(16_384);
    let mut store = Store::open_with(storage.storage(), options.clone()).unwrap();
    workload(&mut store);
    let before = dump(&store);
    let log_bytes = store.stats().log_bytes;
    drop(store);
    let mut segments: Vec<(String, Vec<u8>)> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 3, "rolls happened");
    // Sealed segments are exactly their records; the active one ends in allocated zeros.
    let lsn = |p: &str| -> u64 { p[9..29].parse().unwrap() };
    for pair in segments.windows(2) {
        assert_eq!(
            lsn(&pair[0].0) + pair[0].1.len() as u64 - SEGMENT_HEADER_LEN as u64,
            lsn(&pair[1].0),
            "{} is exact",
            pair[0].0
        );
    }
    let (last_path, last) = segments.last().unwrap().clone();
    let used = (log_bytes - lsn(&last_path)) as usize + SEGMENT_HEADER_LEN;
    assert!(last.len() > used, "the active segment has allocated space");
    assert!(last[used..].iter().all(|&b| b == 0));
    // A reader sees a clean end; a writer reopens without cutting anything.
    let reader = Store::open_read_only_with(storage.storage(), options.clone()).unwrap();
    assert_eq!(reader.open_report().torn_tail_ignored, 0);
    assert_eq!(reader.stats().log_bytes, log_bytes);
    assert_eq!(dump(&reader), before);
    drop(reader);
    let report = verify(storage.storage()).unwrap();
    assert!(
        report.ok() && report.incomplete_tail_bytes == 0,
        "{report:?}"
    );
    let store = Store::open_with(storage.storage(), options.clone()).unwrap();
    assert_eq!(store.open_report().bytes_truncated, 0);
    assert_eq!(dump(&store), before);
    drop(store);
    // A frame header torn inside the allocated space is still a torn tail, cut.
    let mut torn = last.clone();
    torn[used..used + 6].copy_from_slice(&[0x30, 0, 0, 0, 0x12, 0x34]);
    let image = storage.image_with(&last_path, &torn);
    let store = Store::open_with(image.storage(), options).unwrap();
    assert!(store.open_report().bytes_truncated > 0);
    assert_eq!(dump(&store), before);
}

on_both_storages!(
    preallocated_space_is_a_clean_end_not_a_torn_tail,
    a_log_shorter_than_a_checkpoint_vouches_for_is_corruption_to_every_view,
    regression_a_subscription_alone_does_not_keep_the_writer_lock,
    a_workload_reads_back_the_same_after_reopen_and_matches_the_model,
    replay_without_any_checkpoint_gives_the_same_state,
    a_second_writer_is_locked_out_and_a_reader_is_not,
    a_refused_event_writes_nothing,
    subscribers_see_new_events,
    fork_by_reference_adds_a_small_record,
    resume_appends_closers_and_marker_once,
    a_torn_tail_is_cut_at_every_offset_of_the_final_records,
    a_flipped_byte_in_a_sealed_record_is_corruption_at_its_offset,
    the_resident_index_costs_16_bytes_per_event_after_open,
    fork_inside_the_log_replays_the_prefix_and_survives_reopen,
    salvage_rewrites_a_damaged_segment_header_and_loses_nothing,
    verify_finds_nothing_on_a_sound_store_and_names_damage,
    a_reader_catches_up_with_a_live_writer,
    regression_a_flipped_byte_anywhere_in_a_checkpoint_discards_it,
    an_interrupted_checkpoint_leaves_no_garbage_after_the_next_open,
);

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
    let log_bytes = store.stats().log_bytes;
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
            .iter_events("s", from, to)
            .unwrap()
            .collect::<sessdb::Result<_>>()
            .unwrap();
        assert_eq!(
            iterated,
            store.events("s", from, to).unwrap(),
            "{from}..{to}"
        );
    }
    assert!(matches!(
        store.iter_events("missing", 0, 1),
        Err(Error::SessionNotFound { .. })
    ));
}

//! Crash consistency: a scripted workload on the crash-simulating backend, with the Nth
//! storage operation failing, for every N. After the failure the store is "powered off"
//! (only synced bytes and directory entries survive) and reopened. Reopen must succeed, every
//! session must be a prefix of what the full run appended, and under `Durability::Sync` every
//! acknowledged event must be there. The failure is EIO, ENOSPC, or a short write (half of
//! the bytes, then ENOSPC).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use sessdb::storage::{CrashStorage, Fault, MemStorage, Storage};
use sessdb::{
    CheckpointWrites, Clock, Draft, Durability, Event, ForkSpec, LogType, SessionHeader, Store,
    StoreOptions, SurfaceIntent, SurfaceType,
};
use sessdb_workload::payload as p;

fn options(durability: Durability) -> StoreOptions {
    options_with(durability, CheckpointWrites::Inline)
}

fn options_with(durability: Durability, writes: CheckpointWrites) -> StoreOptions {
    StoreOptions::default()
        .with_durability(durability)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(2048)
        .with_checkpoint_interval_bytes(3000)
        // Inline: every storage operation in one order, run after run (the due checkpoints
        // on the appender). On the checkpointer's thread the order varies from run to run:
        // a failure at the Nth operation is then at some operation, which is what the
        // `_on_the_checkpointers_thread` tests below ask no more of.
        .with_checkpoint_writes(writes)
        .with_checkpoint_merge_every(2)
}

/// One turn of session `s`: its start, a user message, its end.
fn turn_batch(s: &str, turn: u64) -> Vec<Draft> {
    vec![
        Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
        Draft::surface(
            SurfaceType::UserMessage,
            p::user_message(&format!("{s}{turn}"), "user", "some words of text").into_bytes(),
            SurfaceIntent::append(),
        ),
        Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
    ]
}

/// How the script appends its turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Appends {
    /// `append_batch`.
    Batch,
    /// `try_append_events` first, `append_events` with what it hands back.
    TryFirst,
}

/// Turn `turn` of session `s` as [`turn_batch`] makes it, as complete events from seq `from`.
fn turn_events(s: &str, turn: u64, from: u64) -> Vec<Event> {
    [
        Event::new("turn/start", 0, 1_000, p::turn_start(turn).into_bytes()),
        Event::new(
            "user/message",
            0,
            1_000,
            p::user_message(&format!("{s}{turn}"), "user", "some words of text").into_bytes(),
        )
        .with_surface_op(sessdb::SurfaceOp::Append),
        Event::new("turn/end", 0, 1_000, p::turn_end(turn).into_bytes()),
    ]
    .into_iter()
    .zip(from..)
    .map(|(e, seq)| e.with_seq(seq))
    .collect()
}

thread_local! {
    /// The turns this thread's scripts appended at once (`TryAppend::Appended`).
    static AT_ONCE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Appends turn `turn` to session `s` as `appends` says; returns the seqs taken.
fn append_turn(
    store: &Store,
    s: &str,
    turn: u64,
    appends: Appends,
) -> sessdb::Result<std::ops::Range<u64>> {
    match appends {
        Appends::Batch => store.append_batch(s, turn_batch(s, turn)),
        Appends::TryFirst => {
            let events = turn_events(s, turn, store.session_len(s)?);
            match store.try_append_events(s, events)? {
                sessdb::TryAppend::Appended(range) => {
                    AT_ONCE.with(|n| n.set(n.get() + 1));
                    Ok(range)
                }
                sessdb::TryAppend::WouldWait(back) => store.append_events(s, back),
            }
        }
    }
}

/// Runs the script until the first error; returns the events acknowledged per session.
fn script(store: &Store) -> BTreeMap<String, Vec<Vec<u8>>> {
    script_with(store, Appends::Batch)
}

fn script_with(store: &Store, appends: Appends) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut acked: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let mut run = || -> sessdb::Result<()> {
        for s in ["a", "b"] {
            store.create_session(SessionHeader::new(s, 0), Vec::new())?;
            acked.insert(
                s.to_owned(),
                store.events(s, ..)?.iter().map(Event::to_jsonl).collect(),
            );
        }
        for turn in 1..=6u64 {
            for s in ["a", "b"] {
                let range = append_turn(store, s, turn, appends)?;
                let events = store.events(s, range.start..range.end)?;
                acked
                    .entry(s.to_owned())
                    .or_default()
                    .extend(events.iter().map(Event::to_jsonl));
            }
            if turn == 3 {
                let child = store.fork("a", ForkSpec::default().with_child_id("c"))?;
                acked.insert(
                    child.clone(),
                    store
                        .events(&child, ..)?
                        .iter()
                        .map(Event::to_jsonl)
                        .collect(),
                );
            }
            if turn == 4 {
                store.checkpoint()?;
            }
            if turn == 5 {
                store.delete_session("b")?;
                acked.remove("b");
            }
        }
        store.close()
    };
    let _ = run();
    acked
}

/// The script's events of every session up to the deletion of "b".
fn script_until_delete(store: &Store, appends: Appends) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut out: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let acked = script_with(store, appends);
    out.extend(acked);
    // The full script deletes "b" at turn 5: read its log back from the records instead.
    let b: Vec<Vec<u8>> = (1..=5u64)
        .flat_map(|turn| turn_events("b", turn, 1 + 3 * (turn - 1)))
        .map(|e| e.to_jsonl())
        .collect();
    let mut all = vec![Event::new("session/end-seed", 0, 1_000, &b"{}"[..]).to_jsonl()];
    all.extend(b);
    out.insert("b".to_owned(), all);
    out
}

fn dump(store: &Store) -> BTreeMap<String, Vec<Vec<u8>>> {
    sessdb_tests::dump_store(store)
        .into_iter()
        .map(|(id, events, _)| (id, events))
        .collect()
}

/// Every event acknowledged before the failure at operation `n` is in the recovered store;
/// returns how many there were.
fn assert_acked_there(
    n: u64,
    acked: &BTreeMap<String, Vec<Vec<u8>>>,
    got: &BTreeMap<String, Vec<Vec<u8>>>,
) -> usize {
    let mut count = 0;
    for (id, events) in acked {
        let have = got.get(id).map_or(0, Vec::len);
        assert!(
            have >= events.len(),
            "fail at op {n}: {id} lost acknowledged events ({have} < {})",
            events.len()
        );
        count += events.len();
    }
    count
}

/// How the simulated files take a `Sync` store's space ahead of its appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ahead {
    /// Allocated on the appender's thread, as memory does (every operation in one order).
    Allocated,
    /// Written with zeros and synced on the store's helper thread, as real files are: the
    /// first record after an open or a roll extends the file itself while the helper writes
    /// zeros after it.
    ZerosOnTheHelper,
}

fn check_every_failure_point(durability: Durability, fault: Fault) {
    check_every_failure_point_with(durability, fault, CheckpointWrites::Inline);
}

fn check_every_failure_point_with(durability: Durability, fault: Fault, writes: CheckpointWrites) {
    check_every_failure_point_ahead(durability, fault, writes, Ahead::Allocated);
}

fn check_every_failure_point_ahead(
    durability: Durability,
    fault: Fault,
    writes: CheckpointWrites,
    ahead: Ahead,
) {
    check_every_failure_point_of(durability, fault, writes, ahead, Appends::Batch);
}

fn check_every_failure_point_of(
    durability: Durability,
    fault: Fault,
    writes: CheckpointWrites,
    ahead: Ahead,
    appends: Appends,
) {
    let options = |durability| {
        let options = options_with(durability, writes);
        match appends {
            Appends::Batch => options,
            // No checkpoint falls due (its thread would run it in an order that varies): only
            // the script's own. `try_append_events` writes at once beside a checkpointer's
            // thread only.
            Appends::TryFirst => options.with_checkpoint_interval_bytes(u64::MAX),
        }
    };
    let new_storage = || match ahead {
        Ahead::Allocated => CrashStorage::new(),
        Ahead::ZerosOnTheHelper => CrashStorage::writing_zeros_ahead(),
    };
    // The full run: what every session would hold, and how many operations it takes.
    let full_storage = new_storage();
    let full = {
        let store = Store::open_with(Arc::new(full_storage.clone()), options(durability)).unwrap();
        AT_ONCE.with(|n| n.set(0));
        script_with(&store, appends);
        // The path under test is taken: a buffered store writes most turns at once.
        let at_once = AT_ONCE.with(std::cell::Cell::get);
        match (appends, durability) {
            (Appends::TryFirst, Durability::Buffered) => assert!(at_once > 3, "{at_once}"),
            _ => assert_eq!(at_once, 0),
        }
        let reopened =
            Store::open_with(Arc::new(full_storage.crash()), options(durability)).unwrap();
        dump(&reopened)
    };
    let total_ops = full_storage.ops();
    // "b" as it was just before its deletion.
    let full_b = {
        let storage = new_storage();
        let store = Store::open_with(Arc::new(storage.clone()), options(durability)).unwrap();
        let mut acked = script_until_delete(&store, appends);
        acked.remove("b").unwrap()
    };
    assert!(total_ops > 30, "{total_ops}");
    let mut acked_somewhere = 0;
    // On the checkpointer's or the helper's thread the operations interleave differently
    // from run to run: every point is failed several times over.
    let rounds = match (writes, ahead, appends) {
        (CheckpointWrites::Inline, Ahead::Allocated, _)
        | (_, Ahead::Allocated, Appends::TryFirst) => 1,
        _ => 20,
    };
    for n in (1..=total_ops).flat_map(|n| std::iter::repeat_n(n, rounds)) {
        let storage = new_storage();
        storage.fail_at_with(n, fault);
        let acked = match Store::open_with(Arc::new(storage.clone()), options(durability)) {
            Ok(store) => script_with(&store, appends),
            Err(_) => BTreeMap::new(),
        };
        let image: Arc<dyn Storage> = Arc::new(storage.crash());
        let recovered = Store::open_with(Arc::clone(&image), options(durability))
            .unwrap_or_else(|e| panic!("fail at op {n}: reopen: {e}"));
        let got: BTreeMap<_, _> = sessdb_tests::try_dump_store(&recovered)
            .unwrap_or_else(|e| panic!("fail at op {n}: the recovered store reads back: {e}"))
            .into_iter()
            .map(|(id, events, _)| (id, events))
            .collect();
        for (id, events) in &got {
            if let Some(expected) = full.get(id) {
                assert!(
                    events.len() <= expected.len() && events[..] == expected[..events.len()],
                    "fail at op {n}: {id} is not a prefix"
                );
            } else {
                // Only "b" may be there without being in the full run: its deletion was not
                // yet durable. It must still be a prefix of what was appended to it.
                assert_eq!(id, "b", "fail at op {n}: unexpected session {id}");
                let b_full = &full_b;
                assert!(
                    events.len() <= b_full.len() && events[..] == b_full[..events.len()],
                    "fail at op {n}: b is not a prefix"
                );
            }
        }
        if durability == Durability::Sync {
            acked_somewhere += assert_acked_there(n, &acked, &got);
        }
        // A second open of the recovered image changes nothing.
        drop(recovered);
        let again = Store::open_with(image, options(durability)).unwrap();
        assert_eq!(dump(&again), got, "fail at op {n}: second reopen differs");
    }
    if durability == Durability::Sync {
        assert!(acked_somewhere > 0);
    }
    eprintln!(
        "{durability:?} {fault:?} {writes:?} {ahead:?} {appends:?}: a failure at each of {total_ops} operations, reopened"
    );
}

#[test]
fn every_failure_point_under_sync_keeps_acknowledged_events() {
    check_every_failure_point(Durability::Sync, Fault::Eio);
}

#[test]
fn a_full_disk_at_every_point_under_sync_keeps_acknowledged_events() {
    check_every_failure_point(Durability::Sync, Fault::NoSpace);
}

#[test]
fn a_short_write_at_every_point_under_sync_keeps_acknowledged_events() {
    // ENOSPC in the middle of a record: half of it reaches the file.
    check_every_failure_point(Durability::Sync, Fault::ShortWrite);
}

#[test]
fn a_short_write_at_every_point_under_buffered_recovers_a_prefix() {
    check_every_failure_point(Durability::Buffered, Fault::ShortWrite);
}

#[test]
fn every_failure_point_under_buffered_recovers_a_prefix() {
    check_every_failure_point(Durability::Buffered, Fault::Eio);
}

#[test]
fn every_failure_point_under_sync_keeps_acknowledged_events_on_the_checkpointers_thread() {
    check_every_failure_point_with(Durability::Sync, Fault::Eio, CheckpointWrites::Background);
}

#[test]
fn a_full_disk_at_every_point_under_buffered_recovers_a_prefix_on_the_checkpointers_thread() {
    check_every_failure_point_with(
        Durability::Buffered,
        Fault::NoSpace,
        CheckpointWrites::Background,
    );
}

#[test]
fn every_failure_point_under_sync_with_zeros_written_ahead_keeps_acknowledged_events() {
    check_every_failure_point_ahead(
        Durability::Sync,
        Fault::Eio,
        CheckpointWrites::Inline,
        Ahead::ZerosOnTheHelper,
    );
}

#[test]
fn a_short_write_at_every_point_under_sync_with_zeros_written_ahead_keeps_acknowledged_events() {
    check_every_failure_point_ahead(
        Durability::Sync,
        Fault::ShortWrite,
        CheckpointWrites::Inline,
        Ahead::ZerosOnTheHelper,
    );
}

#[test]
fn every_failure_point_under_buffered_with_appends_that_wait_for_nothing_recovers_a_prefix() {
    for fault in [Fault::Eio, Fault::ShortWrite] {
        check_every_failure_point_of(
            Durability::Buffered,
            fault,
            CheckpointWrites::Background,
            Ahead::Allocated,
            Appends::TryFirst,
        );
    }
}

#[test]
fn every_failure_point_under_sync_with_appends_that_hand_their_events_back_keeps_acknowledged_events()
 {
    // A `Sync` store's try-append always hands its events back: the fall-back path.
    check_every_failure_point_of(
        Durability::Sync,
        Fault::Eio,
        CheckpointWrites::Background,
        Ahead::Allocated,
        Appends::TryFirst,
    );
}

/// Two threads appending `Sync` batches to a session each until the first error; returns
/// the events each acknowledged. Group commit's leader and a roll's sync then meet on one
/// segment (`store/writer/syncs.rs`), as the one-thread script never makes them.
fn two_appenders(store: &Store) -> BTreeMap<String, Vec<Vec<u8>>> {
    let run = |s: &str| -> Vec<Vec<u8>> {
        let mut acked = Vec::new();
        let mut go = || -> sessdb::Result<()> {
            store.create_session(SessionHeader::new(s, 0), Vec::new())?;
            acked.extend(store.events(s, ..)?.iter().map(Event::to_jsonl));
            for turn in 1..=8u64 {
                let range = store.append_batch(s, turn_batch(s, turn))?;
                acked.extend(
                    store
                        .events(s, range.start..range.end)?
                        .iter()
                        .map(Event::to_jsonl),
                );
            }
            Ok(())
        };
        let _ = go();
        acked
    };
    std::thread::scope(|scope| {
        let threads: Vec<_> = ["x", "y"]
            .into_iter()
            .map(|s| scope.spawn(move || (s.to_owned(), run(s))))
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

#[test]
fn every_failure_point_with_two_sync_appenders_keeps_acknowledged_events() {
    let options = || options(Durability::Sync);
    // Each session's events do not depend on how the threads interleave: the full run's are
    // what every recovered session must be a prefix of.
    let full_storage = CrashStorage::new();
    let full = {
        let store = Store::open_with(Arc::new(full_storage.clone()), options()).unwrap();
        two_appenders(&store);
        store.close().unwrap();
        dump(&Store::open_with(Arc::new(full_storage.crash()), options()).unwrap())
    };
    let total_ops = full_storage.ops();
    assert!(total_ops > 30, "{total_ops}");
    assert!(full.values().all(|events| events.len() == 25), "{full:?}");
    let mut acked_somewhere = 0;
    // The interleaving differs run to run: every point failed several times over.
    for n in (1..=total_ops + 20).flat_map(|n| std::iter::repeat_n(n, 10)) {
        let storage = CrashStorage::new();
        storage.fail_at_with(n, Fault::Eio);
        let acked = match Store::open_with(Arc::new(storage.clone()), options()) {
            Ok(store) => two_appenders(&store),
            Err(_) => BTreeMap::new(),
        };
        let recovered = Store::open_with(Arc::new(storage.crash()), options())
            .unwrap_or_else(|e| panic!("fail at op {n}: reopen: {e}"));
        let got = dump(&recovered);
        for (id, events) in &got {
            let expected = full
                .get(id)
                .unwrap_or_else(|| panic!("fail at op {n}: unexpected session {id}"));
            assert!(
                events.len() <= expected.len() && events[..] == expected[..events.len()],
                "fail at op {n}: {id} is not a prefix"
            );
        }
        acked_somewhere += assert_acked_there(n, &acked, &got);
    }
    assert!(acked_somewhere > 0);
    eprintln!(
        "Sync Eio, two appenders: a failure at each of {total_ops} operations, 10 times, reopened"
    );
}

#[test]
fn a_process_crash_keeps_buffered_writes() {
    let storage = CrashStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), options(Durability::Buffered)).unwrap();
    let acked = script(&store);
    let image = MemStorage::from_files(storage.live_image().files());
    let recovered = Store::open_with(Arc::new(image), options(Durability::Buffered)).unwrap();
    assert_eq!(dump(&recovered), acked);
}

//! A checkpoint costs what changed, however long a session is (checkpoint body layout 5,
//! `docs/FORMAT.md` §5.4): a delta after one turn appended to a session writes that turn's
//! surface seq and turn marks and names the runs the chain holds for the rest — not the
//! session's whole surface and turn marks, as layout 4 did — and a store opened from such
//! a chain reads what a full replay of its log gives, also after any one storage operation
//! of its appends, deltas and merge failed (EIO, a full disk, a short write).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::path::Path;

use sessdb::{
    Clock, CorruptionKind, Draft, Error, LogType, SessionHeader, Store, StoreOptions,
    SurfaceIntent, SurfaceType,
};
use sessdb_tests::dump_store;
use sessdb_workload::payload as p;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(1_000))
        .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
        // Checkpoints only where the test takes them.
        .with_checkpoint_interval_bytes(1 << 40)
        .with_checkpoint_merge_every(64)
}

/// Turn `n` of session `id`: its start, a user message on the surface, its end.
fn turn(store: &Store, id: &str, n: u64) {
    store
        .append(id, Draft::log(LogType::TURN_START, p::turn_start(n)))
        .unwrap();
    store
        .append(
            id,
            Draft::surface(
                SurfaceType::UserMessage,
                p::user_message(&format!("u{n}"), "user", "hi"),
                SurfaceIntent::append(),
            ),
        )
        .unwrap();
    store
        .append(id, Draft::log(LogType::TURN_END, p::turn_end(n)))
        .unwrap();
}

/// The byte length of checkpoint `generation` of the store in `dir`.
fn checkpoint_len(dir: &Path, generation: u64) -> u64 {
    std::fs::metadata(dir.join(format!("checkpoints/{generation:020}.ckpt")))
        .unwrap()
        .len()
}

/// A store of one session of `turns` turns, checkpointed, then one turn more and a delta:
/// the delta's length, and the store's dump from the chain and from a full replay.
fn delta_after_one_turn(turns: u64) -> (u64, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for n in 1..=turns {
        turn(&store, "s", n);
    }
    let full = store.checkpoint().unwrap().unwrap();
    assert!(full.full);
    turn(&store, "s", turns + 1);
    let delta = store.checkpoint().unwrap().unwrap();
    assert!(!delta.full, "{delta:?}");
    let len = checkpoint_len(dir.path(), delta.generation);
    store.close().unwrap();
    drop(store);
    let from_chain = Store::open(dir.path(), options()).unwrap();
    assert_eq!(from_chain.open_report().records_replayed, 0);
    let chain = format!("{:?}", dump_store(&from_chain));
    drop(from_chain);
    let replayed = Store::open(dir.path(), options().with_ignore_checkpoints(true)).unwrap();
    let replay = format!("{:?}", dump_store(&replayed));
    (len, chain, replay)
}

#[test]
fn a_delta_after_one_turn_costs_the_turn_not_the_session() {
    let (short, chain, replay) = delta_after_one_turn(200);
    assert_eq!(chain, replay);
    let (long, chain, replay) = delta_after_one_turn(4_000);
    assert_eq!(chain, replay);
    // The same delta for both: one surface seq and two turn marks written, the earlier ones
    // named (in layout 4 the long session's delta held 8 bytes per surface seq and per turn
    // mark, 3 × 8 × 4,000 bytes more).
    assert_eq!(long, short, "a delta's length follows what changed");
    assert!(long < 4_096, "{long} bytes");
}

#[test]
fn a_chain_of_deltas_then_a_replace_then_a_merge_reads_as_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Store::open(dir.path(), options().with_checkpoint_merge_every(4)).unwrap();
    let mut store = open();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let mut n = 0;
    let mut lens = Vec::new();
    // Deltas naming more and more runs of the earlier files; one replace of the whole
    // surface (the next delta writes it again); reopens between them (the runs then named
    // from the entries read back); a full checkpoint every fourth (each array one run).
    for round in 0..10 {
        for _ in 0..50 {
            n += 1;
            turn(&store, "s", n);
        }
        if round == 5 || round == 7 {
            // Round 5: one node in the middle replaced (the surface keeps its length, its
            // replace generation tells it changed); round 7: the whole surface.
            let mut surface = store.surface("s").unwrap();
            if round == 5 {
                let middle = surface[surface.len() / 2];
                surface = vec![middle];
            }
            let (first, last) = (surface[0], surface[surface.len() - 1]);
            store
                .append(
                    "s",
                    Draft::surface(
                        SurfaceType::UserMessage,
                        p::user_message(&format!("c{round}"), "compaction", "so far"),
                        SurfaceIntent::replace(first..=last).with_sources(surface),
                    ),
                )
                .unwrap();
        }
        let info = store.checkpoint().unwrap().unwrap();
        lens.push((
            round,
            info.full,
            checkpoint_len(dir.path(), info.generation),
        ));
        if round % 3 == 2 {
            store.close().unwrap();
            store = open();
        }
        let from_chain = format!("{:?}", dump_store(&store));
        store.close().unwrap();
        drop(store);
        let replayed = Store::open(dir.path(), options().with_ignore_checkpoints(true)).unwrap();
        assert_eq!(
            from_chain,
            format!("{:?}", dump_store(&replayed)),
            "round {round}"
        );
        drop(replayed);
        store = open();
        assert_eq!(
            from_chain,
            format!("{:?}", dump_store(&store)),
            "round {round}"
        );
    }
    // Every delta stays small: the ones after a replace hold the surface again (at most the
    // 300 seqs of this session), the others what the round appended.
    let deltas: Vec<u64> = lens.iter().filter(|l| !l.1).map(|l| l.2).collect();
    assert!(deltas.iter().all(|&l| l < 16_384), "{lens:?}");
    drop(store);
    let v = sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(
        dir.path(),
    )))
    .unwrap();
    assert!(v.ok() && v.compared, "{v:?}");
}

/// A store in `dir` of one session of 60 turns — past what an entry holds inline, so its
/// arrays are in runs — checkpointed, one turn more and a delta naming the first file's runs,
/// closed. Returns the first checkpoint's path and the session as read before the close.
fn chain_of_two(dir: &Path) -> (std::path::PathBuf, String) {
    let store = Store::open(dir, options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for n in 1..=60 {
        turn(&store, "s", n);
    }
    let first = store.checkpoint().unwrap().unwrap();
    turn(&store, "s", 61);
    store.checkpoint().unwrap().unwrap();
    let read = format!("{:?}", dump_store(&store));
    store.close().unwrap();
    let path = dir.join(format!("checkpoints/{:020}.ckpt", first.generation));
    (path, read)
}

#[test]
fn a_damaged_run_of_an_earlier_file_is_refused_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = chain_of_two(dir.path());
    // The first file's runs region ends with the session's turn marks (120 values): change
    // the last byte of the last one, which only the delta's entry names now.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    match store.state("s") {
        Err(Error::Corruption { segment, kind, .. }) => {
            assert_eq!(kind, CorruptionKind::CheckpointEntry);
            assert!(path.ends_with(&segment), "{segment} names the damaged file");
        }
        other => panic!("the damaged run was read: {other:?}"),
    }
    drop(store);
    let report = sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(
        dir.path(),
    )))
    .unwrap();
    assert!(!report.ok(), "{report:?}");
}

#[test]
fn every_byte_of_the_array_runs_an_entry_names_changed_is_read_right_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, expected) = chain_of_two(dir.path());
    // The first file's runs region ends with the session's surface (60 seqs) and turn marks
    // (120), which the delta's entry names: every byte of them changed in turn.
    let original = std::fs::read(&path).unwrap();
    let arrays = (60 + 120) * 8;
    let (mut right, mut refused) = (0, 0);
    for at in original.len() - arrays..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let read = Store::open(dir.path(), options())
            .and_then(|s| sessdb_tests::try_dump_store(&s).map(|d| format!("{d:?}")));
        match read {
            Ok(seen) => {
                assert_eq!(seen, expected, "byte {at} changed, read otherwise");
                right += 1;
            }
            Err(_) => refused += 1,
        }
    }
    std::fs::write(&path, &original).unwrap();
    // Each change is in bytes a CRC covers and the chain reads: every one is refused.
    assert_eq!((right, refused), (0, arrays), "read right / refused");
}

/// The crash test's options: durable appends, checkpoints only where it takes them, written
/// inline and merged every third, no compaction (the Nth operation is the same in every run).
fn crash_options() -> StoreOptions {
    options()
        .with_durability(sessdb::Durability::Sync)
        .with_checkpoint_merge_every(3)
        .with_compaction(None)
}

/// Turn `n` of `id` as one batch (one record): its start, a user message, its end.
fn turn_batch(store: &Store, id: &str, n: u64) -> sessdb::Result<std::ops::Range<u64>> {
    store.append_batch(
        id,
        vec![
            Draft::log(LogType::TURN_START, p::turn_start(n)),
            Draft::surface(
                SurfaceType::UserMessage,
                p::user_message(&format!("{id}{n}"), "user", "hi"),
                SurfaceIntent::append(),
            ),
            Draft::log(LogType::TURN_END, p::turn_end(n)),
        ],
    )
}

/// The crash test's first part, never failed: two sessions of 40 turns (their arrays in runs)
/// and one of two (inline), a full checkpoint, a turn more to each long one, a delta naming
/// the first file's runs, closed.
fn arrays_setup(storage: &sessdb::storage::CrashStorage) {
    let store = Store::open_with(std::sync::Arc::new(storage.clone()), crash_options()).unwrap();
    for (id, turns) in [("a", 40), ("b", 40), ("c", 2)] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        for n in 1..=turns {
            turn_batch(&store, id, n).unwrap();
        }
    }
    assert!(store.checkpoint().unwrap().unwrap().full);
    for id in ["a", "b"] {
        turn_batch(&store, id, 41).unwrap();
    }
    assert!(!store.checkpoint().unwrap().unwrap().full);
    store.close().unwrap();
}

/// The second part, on a reopen: four rounds of a turn to each long session and a checkpoint
/// (deltas naming earlier runs, a merge), `b`'s whole surface replaced in the second (the
/// next delta writes it whole) and one node of `a`'s in the third — each step tried even
/// after one failed, as a caller that goes on would (a store that failed a write must refuse
/// what follows, or write it right). Returns the events acknowledged per session.
fn arrays_script(storage: &sessdb::storage::CrashStorage) -> BTreeMap<String, usize> {
    let mut acked = BTreeMap::new();
    let Ok(store) = Store::open_with(std::sync::Arc::new(storage.clone()), crash_options()) else {
        return acked;
    };
    for round in 0..4u64 {
        for id in ["a", "b"] {
            if let Ok(seqs) = turn_batch(&store, id, 42 + round) {
                *acked.entry(id.to_owned()).or_insert(0) += seqs.count();
            }
        }
        if round == 1 || round == 2 {
            let id = if round == 1 { "b" } else { "a" };
            if let Ok(mut surface) = store.surface(id) {
                if round == 2 {
                    surface = vec![surface[surface.len() / 2]];
                }
                let (first, last) = (surface[0], surface[surface.len() - 1]);
                let replace = Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message(&format!("r{round}"), "compaction", "so far"),
                    SurfaceIntent::replace(first..=last).with_sources(surface),
                );
                if store.append(id, replace).is_ok() {
                    *acked.entry(id.to_owned()).or_insert(0) += 1;
                }
            }
        }
        let _ = store.checkpoint();
    }
    let _ = store.close();
    acked
}

/// Every storage operation of the second part failed in turn, as `fault`: the store, powered
/// off and reopened from what its chain says, reads as a full replay of its log does; each
/// session is a prefix of the full run's, keeps every event acknowledged, and the untouched
/// one is as it was.
fn arrays_at_every_failure_point(fault: sessdb::storage::Fault) {
    use sessdb::storage::{CrashStorage, Storage};
    use std::sync::Arc;
    let events = |d: &sessdb_tests::StoreDump| -> BTreeMap<String, Vec<Vec<u8>>> {
        d.iter().map(|(id, e, _)| (id.clone(), e.clone())).collect()
    };
    let storage = CrashStorage::new();
    arrays_setup(&storage);
    let setup_ops = storage.ops();
    let before = events(&dump_store(
        &Store::open_with(Arc::new(storage.crash()), crash_options()).unwrap(),
    ));
    arrays_script(&storage);
    let total = storage.ops();
    let full = events(&dump_store(
        &Store::open_with(Arc::new(storage.crash()), crash_options()).unwrap(),
    ));
    assert!(total > setup_ops + 30, "{setup_ops} then {total}");
    let mut acked_somewhere = 0;
    for n in setup_ops + 1..=total {
        let storage = CrashStorage::new();
        arrays_setup(&storage);
        assert_eq!(storage.ops(), setup_ops, "the setup is deterministic");
        storage.fail_at_with(n, fault);
        let acked = arrays_script(&storage);
        let image: Arc<dyn Storage> = Arc::new(storage.crash());
        let recovered = Store::open_with(Arc::clone(&image), crash_options())
            .unwrap_or_else(|e| panic!("fail at op {n}: reopen: {e}"));
        let from_chain = dump_store(&recovered);
        drop(recovered);
        let replayed = Store::open_with(
            Arc::clone(&image),
            crash_options().with_ignore_checkpoints(true),
        )
        .unwrap();
        assert_eq!(
            format!("{from_chain:?}"),
            format!("{:?}", dump_store(&replayed)),
            "fail at op {n}: the chain reads otherwise than a replay"
        );
        drop(replayed);
        let got = events(&from_chain);
        assert!(
            got.keys().eq(before.keys()),
            "fail at op {n}: the sessions {:?}",
            got.keys()
        );
        for (id, events) in &got {
            let expected = &full[id];
            assert!(
                events.len() <= expected.len() && events[..] == expected[..events.len()],
                "fail at op {n}: {id} is not a prefix"
            );
        }
        assert_eq!(got["c"], before["c"], "fail at op {n}: untouched c changed");
        for (id, count) in &acked {
            assert!(
                got[id].len() >= before[id].len() + count,
                "fail at op {n}: {id} lost acknowledged events"
            );
            acked_somewhere += count;
        }
        let v = sessdb::store::verify(image).unwrap();
        assert!(v.ok(), "fail at op {n}: {v:?}");
    }
    assert!(acked_somewhere > 0);
    eprintln!(
        "{fault:?}: a failure at each of {} operations after {setup_ops}, reopened",
        total - setup_ops
    );
}

#[test]
fn arrays_in_runs_survive_an_eio_at_every_point() {
    arrays_at_every_failure_point(sessdb::storage::Fault::Eio);
}

#[test]
fn arrays_in_runs_survive_a_full_disk_at_every_point() {
    arrays_at_every_failure_point(sessdb::storage::Fault::NoSpace);
}

#[test]
fn arrays_in_runs_survive_a_short_write_at_every_point() {
    arrays_at_every_failure_point(sessdb::storage::Fault::ShortWrite);
}

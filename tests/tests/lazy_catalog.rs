//! The catalog read on demand equals the catalog decoded whole: after any sequence of creates,
//! appends (turns and surface replaces among them: each delta names the runs of a session's
//! surface and turn marks the chain holds, or writes the surface again after a replace),
//! forks, deletes, reads, checkpoints, compactions and reopens, a store opened from
//! its checkpoint's index (sessions decoded when first used) lists, orders, counts and reads
//! exactly what a full replay of the log gives — and so does the same store with every
//! session decoded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;

use proptest::prelude::*;
use sessdb::storage::MemStorage;
use sessdb::store::{Direction, ListOptions, ListOrder};
use sessdb::{
    Clock, Draft, ForkSpec, LogType, SessionHeader, Store, StoreOptions, SurfaceIntent, SurfaceType,
};
use sessdb_tests::dump_store;
use sessdb_workload::payload as p;

fn options(resident: usize) -> StoreOptions {
    StoreOptions::default()
        // Sessions read go back to the index past this many decoded (1: at almost every read).
        .with_resident_sessions(resident)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(4096)
        .with_checkpoint_interval_bytes(3000)
        // Every storage operation in one order, run after run (the due checkpoints on the
        // appender): `checkpoint_thread.rs` tests the checkpointer's thread.
        .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
        .with_checkpoint_merge_every(3)
}

#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    /// Many sessions at once: an index of several pages, which deltas split and rewrite.
    CreateMany(u8),
    Append(u8, u8),
    /// Turns: each its start, a user message, its end (two turn marks); enough of them take
    /// a session's surface and turn marks past what an entry holds inline, into runs.
    Turns(u8, u8),
    /// A compaction of the conversation: the whole surface, or its last node, replaced by one
    /// summary.
    Replace(u8),
    Fork(u8),
    Delete(u8),
    Read(u8),
    Checkpoint,
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u8>().prop_map(Op::Create),
        1 => any::<u8>().prop_map(Op::CreateMany),
        6 => (any::<u8>(), 1u8..6).prop_map(|(s, n)| Op::Append(s, n)),
        3 => (any::<u8>(), 1u8..40).prop_map(|(s, n)| Op::Turns(s, n)),
        1 => any::<u8>().prop_map(Op::Replace),
        2 => any::<u8>().prop_map(Op::Fork),
        2 => any::<u8>().prop_map(Op::Delete),
        2 => any::<u8>().prop_map(Op::Read),
        2 => Just(Op::Checkpoint),
        1 => Just(Op::Compact),
        3 => Just(Op::Reopen),
    ]
}

/// The live session picked by `n` (listed in id order), if any.
fn pick(store: &Store, n: u8) -> Option<String> {
    let all = store.list().unwrap();
    (!all.is_empty()).then(|| all[usize::from(n) % all.len()].header.id.clone())
}

fn apply(store: &mut Store, storage: &MemStorage, op: &Op, made: &mut u32, resident: usize) {
    // Each arm one operation of the store's API, as a user calls it.
    match *op {
        Op::Create(n) => {
            *made += 1;
            store
                .create_session(
                    SessionHeader::new(format!("s{made}-{n}"), i64::from(n)),
                    Vec::new(),
                )
                .unwrap();
        }
        Op::CreateMany(n) => {
            for k in 0..20 + u32::from(n) % 60 {
                *made += 1;
                let header = SessionHeader::new(format!("m{made}-{k}"), i64::from(k));
                store.create_session(header, Vec::new()).unwrap();
            }
        }
        Op::Append(n, k) => {
            if let Some(id) = pick(store, n) {
                for i in 0..k {
                    let draft = if i % 2 == 0 {
                        let data = format!("{{\"note\":\"{i}\"}}");
                        Draft::log(LogType::new("plugin/note").unwrap(), data.into_bytes())
                            .ignorable()
                    } else {
                        Draft::surface(
                            SurfaceType::UserMessage,
                            p::user_message(&format!("u{i}"), "user", "hi").into_bytes(),
                            SurfaceIntent::append(),
                        )
                    };
                    store.append(&id, draft).unwrap();
                }
            }
        }
        Op::Turns(n, k) => {
            let Some(id) = pick(store, n) else { return };
            for _ in 0..k {
                *made += 1;
                let turn = u64::from(*made);
                store
                    .append(&id, Draft::log(LogType::TURN_START, p::turn_start(turn)))
                    .unwrap();
                store
                    .append(
                        &id,
                        Draft::surface(
                            SurfaceType::UserMessage,
                            p::user_message(&format!("t{turn}"), "user", "hi"),
                            SurfaceIntent::append(),
                        ),
                    )
                    .unwrap();
                store
                    .append(&id, Draft::log(LogType::TURN_END, p::turn_end(turn)))
                    .unwrap();
            }
        }
        Op::Replace(n) => {
            if let Some(id) = pick(store, n) {
                let mut surface = store.surface(&id).unwrap();
                // The whole surface (it becomes one node), or its last node alone (its
                // length stays: only the replace generation tells the seqs changed).
                if n % 2 == 1 && surface.len() > 1 {
                    surface.drain(..surface.len() - 1);
                }
                if let (Some(&first), Some(&last)) = (surface.first(), surface.last()) {
                    *made += 1;
                    let summary = Draft::surface(
                        SurfaceType::UserMessage,
                        p::user_message(&format!("c{made}"), "compaction", "so far"),
                        SurfaceIntent::replace(first..=last).with_sources(surface),
                    );
                    store.append(&id, summary).unwrap();
                }
            }
        }
        Op::Fork(n) => {
            if let Some(id) = pick(store, n) {
                *made += 1;
                let spec = ForkSpec::default().with_child_id(format!("f{made}"));
                // A fork inside an open turn is refused, as DSH refuses it: nothing changes.
                let _ = store.fork(&id, spec);
            }
        }
        Op::Delete(n) => {
            if let Some(id) = pick(store, n) {
                store.delete_session(&id).unwrap();
            }
        }
        Op::Read(n) => {
            if let Some(id) = pick(store, n) {
                store.events(&id, ..).unwrap();
            }
        }
        Op::Checkpoint => {
            store.checkpoint().unwrap();
        }
        Op::Compact => {
            store.compact().unwrap();
        }
        Op::Reopen => {
            store.close().unwrap();
            *store = Store::open_with(Arc::new(storage.clone()), options(resident)).unwrap();
        }
    }
}

/// What a reader sees of a store: every listing order both ways, with and without a limit,
/// the counts, and every session's events and state.
fn seen(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for order in [
        ListOrder::Id,
        ListOrder::Created,
        ListOrder::Updated,
        ListOrder::Events,
    ] {
        for direction in [Direction::Ascending, Direction::Descending] {
            for limit in [None, Some(1), Some(3)] {
                let mut o = ListOptions::new(order).with_direction(direction);
                if let Some(n) = limit {
                    o = o.with_limit(n);
                }
                let rows = store.list_by(o).unwrap();
                out.push(format!("{order:?} {direction:?} {limit:?}: {rows:?}"));
            }
        }
    }
    // The store's own order promises none: as a set, every session, each row as by id.
    let mut stored = store.list_by(ListOptions::new(ListOrder::Stored)).unwrap();
    stored.sort_by(|a, b| a.header.id.cmp(&b.header.id));
    out.push(format!("Stored, sorted by id: {stored:?}"));
    // Rows with the header line as kept, streamed (the store's order) and by id: the same
    // rows as `list_by` gives, the header line its header's JSON.
    for order in [ListOrder::Stored, ListOrder::Id] {
        let mut rows = Vec::new();
        store
            .list_each(ListOptions::new(order), |r| {
                rows.push((
                    r.id.to_owned(),
                    String::from_utf8(r.header_json.to_vec()).unwrap(),
                    r.events,
                    r.last_time,
                    r.turn_open,
                    r.incarnation,
                ));
            })
            .unwrap();
        rows.sort();
        let from_list: Vec<_> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|i| {
                (
                    i.header.id.clone(),
                    String::from_utf8(i.header.to_json()).unwrap(),
                    i.events,
                    i.last_time,
                    i.turn_open,
                    i.incarnation,
                )
            })
            .collect();
        assert_eq!(rows, from_list, "{order:?}");
    }
    let stats = store.stats();
    out.push(format!(
        "{} sessions, {} events",
        stats.sessions, stats.events
    ));
    // Each state as what it is: the surface's seqs, not its vector's gap (a replace near the
    // front leaves one in the live store and none in a store that decoded the same surface).
    for (id, lines, st) in dump_store(store) {
        out.push(format!(
            "{id} {lines:?} next {} last {:?} surface {:?} generation {} {:?} {:?}",
            st.next_seq(),
            st.last_time(),
            st.surface().seqs(),
            st.surface().replace_generation(),
            st.repair(),
            st.turns(),
        ));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn a_catalog_read_on_demand_equals_one_decoded_whole(
        ops in proptest::collection::vec(op(), 1..40),
        resident in prop_oneof![Just(1usize), Just(4), Just(usize::MAX)],
    ) {
        let storage = MemStorage::new();
        let mut store = Store::open_with(Arc::new(storage.clone()), options(resident)).unwrap();
        let mut made = 0;
        for op in &ops {
            apply(&mut store, &storage, op, &mut made, resident);
        }
        let live = seen(&store);
        store.close().unwrap();
        drop(store);
        // The same log: opened from its checkpoint (sessions undecoded), then replayed whole.
        let lazy = Store::open_with(Arc::new(storage.clone()), options(resident)).unwrap();
        let replayed = Store::open_read_only_with(
            Arc::new(storage.clone()),
            options(usize::MAX).with_ignore_checkpoints(true),
        )
        .unwrap();
        let undecoded = lazy.memory_usage().undecoded_sessions;
        prop_assert_eq!(seen(&lazy), seen(&replayed));
        prop_assert_eq!(seen(&lazy), live);
        // Listing decodes nothing; the dump read every session: all decoded now, unless
        // sessions read went back to the index (how many stay: `resident_sessions.rs`).
        prop_assert!(undecoded <= lazy.stats().sessions);
        if resident == usize::MAX {
            prop_assert_eq!(lazy.memory_usage().undecoded_sessions, 0);
        }
    }
}

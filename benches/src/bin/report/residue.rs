//! The retention-residue rows (`--only residue`): what a store keeps after `compact` beside a
//! fresh store given only the live sessions' writes — under churn (short sessions, nine in ten
//! deleted as soon as they end, the writer's background compaction on beside the writes) and
//! after a purge of 90 % of DSH's mix. Files: segment bytes without the space allocated ahead
//! of the active segment's records (as the compaction rows count them), plus the checkpoint
//! files.

use std::path::Path;

use sessdb::{CompactionPolicy, Draft, Durability, LogType, SessionHeader, Store, StoreOptions};

use crate::compact::{deletable, segment_bytes, without};
use crate::measure::{Row, Rows, stat, temp};
use crate::mix::{Mix, apply};

/// One step of the churn.
#[derive(Clone)]
enum Churn {
    Create(String),
    Note(String, u64),
    Delete(String),
}

/// Sessions of `notes` one-event appends, `active` of them written at once in turn; every
/// session but each tenth is deleted right after its last note.
fn churn(sessions: u64, notes: u64, active: u64) -> Vec<Churn> {
    let mut out = Vec::new();
    let id = |n: u64| format!("churn-{n:07}");
    let mut next = 0u64;
    // (session number, notes written)
    let mut open: Vec<(u64, u64)> = Vec::new();
    while next < sessions || !open.is_empty() {
        while open.len() < active as usize && next < sessions {
            out.push(Churn::Create(id(next)));
            open.push((next, 0));
            next += 1;
        }
        for slot in &mut open {
            out.push(Churn::Note(id(slot.0), slot.1));
            slot.1 += 1;
        }
        open.retain(|&(n, written)| {
            let done = written == notes;
            if done && n % 10 != 0 {
                out.push(Churn::Delete(id(n)));
            }
            !done
        });
    }
    out
}

fn play(store: &Store, ops: &[Churn]) {
    let ty = LogType::new("plugin/note").expect("type");
    for op in ops {
        match op {
            Churn::Create(id) => {
                store
                    .create_session(SessionHeader::new(id.clone(), 0), Vec::new())
                    .expect("create");
            }
            Churn::Note(id, n) => {
                let data = format!("{{\"note\":\"{id} says {n}: a line of a chat\"}}");
                store
                    .append(id, Draft::log(ty.clone(), data.into_bytes()).ignorable())
                    .expect("append");
            }
            Churn::Delete(id) => store.delete_session(id).expect("delete"),
        }
    }
}

/// The churn's steps of the sessions it keeps, alone.
fn kept(ops: &[Churn]) -> Vec<Churn> {
    let deleted: std::collections::HashSet<&str> = ops
        .iter()
        .filter_map(|op| match op {
            Churn::Delete(id) => Some(id.as_str()),
            _ => None,
        })
        .collect();
    ops.iter()
        .filter(|op| match op {
            Churn::Create(id) | Churn::Note(id, _) => !deleted.contains(id.as_str()),
            Churn::Delete(_) => false,
        })
        .cloned()
        .collect()
}

fn options(compaction: Option<CompactionPolicy>) -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Buffered)
        .with_segment_bytes_max(1 << 20)
        .with_compaction(compaction)
}

/// Segment bytes (as the compaction rows count them) and checkpoint files.
fn files(dir: &Path) -> u64 {
    let checkpoints: u64 = std::fs::read_dir(dir.join("checkpoints"))
        .expect("checkpoints")
        .map(|e| e.expect("entry").metadata().expect("metadata").len())
        .sum();
    segment_bytes(dir) + checkpoints
}

/// Each session's event count, by id.
fn listing(store: &Store) -> Vec<(String, u64)> {
    let mut rows: Vec<(String, u64)> = store
        .list()
        .expect("list")
        .into_iter()
        .map(|i| (i.header.id, i.events))
        .collect();
    rows.sort();
    rows
}

/// The compacted store's files and the fresh store's, once both are closed; checks that they
/// hold the same sessions.
fn compare(compacted: &Store, a: &Path, fresh: &Store, f: &Path) -> (u64, u64) {
    assert_eq!(
        listing(compacted),
        listing(fresh),
        "the fresh store holds the live sessions"
    );
    compacted.close().expect("close");
    fresh.close().expect("close");
    (files(a), files(f))
}

/// A residue row: the files after `compact` beside the fresh store's.
fn row(what: &'static str, (after, baseline): (u64, u64), workload: String) -> Row {
    let one = |v: u64| stat(vec![v as f64]);
    Row {
        what,
        unit: "B",
        subject: one(after),
        baseline_name: "a fresh store of the live sessions' writes alone",
        baseline: one(baseline),
        goal: "<= 1.10x",
        workload,
    }
}

pub fn rows(quick: bool, mix: &Mix, rows: &mut Rows) {
    // 1. Churn, the background compaction beside the writes, then `compact`.
    let sessions = if quick { 2_000 } else { 20_000 };
    let ops = churn(sessions, 20, 16);
    let (a, f) = (temp(), temp());
    let store = Store::open(a.path(), options(Some(CompactionPolicy::default()))).expect("open");
    play(&store, &ops);
    store.compact().expect("compact");
    let fresh = Store::open(f.path(), options(None)).expect("open");
    play(&fresh, &kept(&ops));
    rows.push(row(
        "files after compact, under churn",
        compare(&store, a.path(), &fresh, f.path()),
        format!(
            "{sessions} sessions of 20 one-event appends, 16 at once, 9 in 10 deleted when they end; background compaction on, 1 MiB segments"
        ),
    ));
    // 2. 90 % of DSH's mix purged, then `compact`.
    let ids = deletable(mix);
    let doomed: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 0)
        .map(|(_, id)| id.clone())
        .collect();
    let (a, f) = (temp(), temp());
    let store = Store::open(a.path(), options(None)).expect("open");
    apply(&store, mix.ops.clone());
    for id in &doomed {
        store.delete_session(id).expect("delete");
    }
    store.compact().expect("compact");
    let fresh = Store::open(f.path(), options(None)).expect("open");
    apply(&fresh, without(mix, &doomed));
    rows.push(row(
        "files after compact, 90% purged",
        compare(&store, a.path(), &fresh, f.path()),
        format!(
            "{}, {} of {} sessions deleted, 1 MiB segments",
            mix.name(),
            doomed.len(),
            ids.len()
        ),
    ));
}

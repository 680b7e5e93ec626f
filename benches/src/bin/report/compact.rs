//! The compaction rows (`--only compact`), on DSH's mix with every other session deleted:
//! `Store::compact` beside a sequential copy of the same live bytes with one `fdatasync`;
//! buffered appends while the writer's background compaction runs beside the same appends
//! without it; the log after a compaction beside a fresh store of only the live sessions;
//! and the open of the compacted store beside the open of that fresh store.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sessdb::{CompactionPolicy, Durability, Store, StoreOptions};

use crate::measure::{Row, Rows, pair, temp};
use crate::mix::{Mix, apply};

/// Segments of 4 MiB: a compaction has several to write, a background one runs across the
/// appends.
fn options() -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Buffered)
        .with_segment_bytes_max(4 << 20)
        .with_compaction(None)
}

/// The sessions the rows delete: every other one that no fork names as its parent (so a
/// fresh store of the others is the same writes without them).
fn doomed(mix: &Mix) -> Vec<String> {
    deletable(mix).into_iter().step_by(2).collect()
}

/// The sessions no fork names as its parent, by id: those a row may delete.
pub(super) fn deletable(mix: &Mix) -> Vec<String> {
    use crate::mix::Op;
    let parents: Vec<&str> = mix
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Fork(p, _) => Some(p.as_str()),
            _ => None,
        })
        .collect();
    let mut ids: Vec<String> = mix
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Create(h) if !parents.contains(&h.id.as_str()) => Some(h.id.clone()),
            _ => None,
        })
        .collect();
    ids.sort();
    ids
}

/// A store of the mix with every other session deleted.
fn half_deleted(dir: &Path, mix: &Mix, options: StoreOptions) -> Store {
    let store = Store::open(dir, options).expect("open");
    apply(&store, mix.ops.clone());
    for id in doomed(mix) {
        store.delete_session(&id).expect("delete");
    }
    store
}

/// The mix's writes of the sessions [`half_deleted`] keeps, alone.
fn live_only(mix: &Mix) -> Vec<crate::mix::Op> {
    without(mix, &doomed(mix))
}

/// The mix's writes but those of the sessions `doomed`.
pub(super) fn without(mix: &Mix, doomed: &[String]) -> Vec<crate::mix::Op> {
    use crate::mix::Op;
    mix.ops
        .iter()
        .filter(|op| match op {
            Op::Create(h) => !doomed.contains(&h.id),
            Op::Append(s, _) | Op::Fork(s, _) => !doomed.contains(s),
        })
        .cloned()
        .collect()
}

/// Bytes the log takes: every segment file, less the space allocated ahead of the active
/// segment's records (a fresh store preallocates; compacted segments are exact).
pub(super) fn segment_bytes(dir: &Path) -> u64 {
    let files: u64 = std::fs::read_dir(dir.join("segments"))
        .expect("segments")
        .map(|e| e.expect("entry").metadata().expect("metadata").len())
        .sum();
    let store = Store::open_read_only(dir, StoreOptions::default()).expect("open");
    let segs = store.stats().segments as u64;
    let held: u64 = store
        .space()
        .expect("space")
        .segments
        .iter()
        .map(|s| s.record_bytes)
        .sum();
    // Headers and records; a compacted segment's tables count too (they are in its file).
    files.min(held + 40 * segs + tables(dir))
}

/// Bytes of the run and tombstone tables and footers of the compacted segments.
fn tables(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("segments"))
        .expect("segments")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let h = sessdb::codec::segment::SegmentHeader::decode(&bytes).ok()?;
            h.compacted.then(|| {
                let f = sessdb::codec::compacted::Footer::decode(
                    &bytes[bytes.len() - sessdb::codec::compacted::FOOTER_LEN..],
                    bytes.len() as u64,
                )
                .expect("footer");
                f.table_len() + sessdb::codec::compacted::FOOTER_LEN as u64
            })
        })
        .sum()
}

/// Seconds to copy `bytes` bytes of the store's segments into one new file, read and written
/// in 1 MiB pieces, and `fdatasync` it once: the physical floor of writing the live bytes.
fn sequential_copy(dir: &Path, bytes: u64) -> f64 {
    let out_dir = temp();
    let mut files: Vec<_> = std::fs::read_dir(dir.join("segments"))
        .expect("segments")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let t = Instant::now();
    let mut out = File::create(out_dir.path().join("copy")).expect("create");
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    for path in files {
        let mut f = File::open(path).expect("open");
        while left > 0 {
            let n = f.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            let n = n.min(usize::try_from(left).unwrap_or(usize::MAX));
            out.write_all(&buf[..n]).expect("write");
            left -= n as u64;
        }
    }
    out.sync_data().expect("sync");
    t.elapsed().as_secs_f64()
}

/// Seconds of one `Store::compact` of the mix with every other session deleted (the store
/// built and synced before the clock starts).
pub fn compact_once(mix: &Mix) -> f64 {
    let dir = temp();
    let store = half_deleted(dir.path(), mix, options());
    store.sync().expect("sync");
    let t = Instant::now();
    store.compact().expect("compact");
    t.elapsed().as_secs_f64()
}

pub fn rows(mix: &Mix, reps: usize, rows: &mut Rows) {
    let workload = format!(
        "{}, every other session deleted, 4 MiB segments",
        mix.name()
    );
    // 1. Compaction against a sequential copy of what it keeps.
    let mut live = 0u64;
    let (compact, copy) = pair(
        reps,
        || {
            let dir = temp();
            let store = half_deleted(dir.path(), mix, options());
            store.sync().expect("sync");
            live = store.space().expect("space").live_bytes();
            let t = Instant::now();
            store.compact().expect("compact");
            t.elapsed().as_secs_f64()
        },
        || {
            let dir = temp();
            let store = half_deleted(dir.path(), mix, options());
            store.sync().expect("sync");
            let live = store.space().expect("space").live_bytes();
            sequential_copy(dir.path(), live)
        },
    );
    rows.push(Row {
        what: "compaction (every segment, one call)",
        unit: "s",
        subject: compact,
        baseline_name: "a sequential copy of the live bytes + fdatasync",
        baseline: copy,
        goal: "<= 2x (>= 0.5x the copy's speed)",
        workload: format!("{workload}; {live} live bytes"),
    });
    // 2. Appends with a background compaction beside them.
    let policy = CompactionPolicy::dead_fraction(0.3).with_first_check_after(Duration::ZERO);
    let appends = |with: bool| {
        let dir = temp();
        let store = half_deleted(dir.path(), mix, options());
        store.close().expect("close");
        drop(store);
        let o = if with {
            options().with_compaction(Some(policy))
        } else {
            options()
        };
        let store = Store::open(dir.path(), o).expect("open");
        let t = Instant::now();
        apply(&store, renamed(mix));
        let secs = t.elapsed().as_secs_f64();
        let m = store.maintenance();
        assert!(!with || store.wait_maintenance(Duration::from_secs(600)));
        let compacted = store.maintenance().segments_compacted;
        assert!(
            !with || compacted > 0,
            "the background compaction ran: {m:?}"
        );
        mix.events as f64 / secs
    };
    let (with, without) = pair(reps, || appends(true), || appends(false));
    rows.push(Row {
        what: "buffered appends, background compaction beside",
        unit: "ev/s",
        subject: with,
        baseline_name: "the same appends, no compaction",
        baseline: without,
        goal: ">= 0.8x",
        workload: workload.clone(),
    });
    // 3. The log after compaction against a fresh store of the live sessions alone; 4. opens.
    let (compacted_log, fresh_log, compacted_dir, fresh_dir) = {
        let a = temp();
        let store = half_deleted(a.path(), mix, options());
        store.compact().expect("compact");
        // The same writes, of the live sessions alone.
        let fresh = temp();
        let f = Store::open(fresh.path(), options()).expect("open");
        apply(&f, live_only(mix));
        let rows = |s: &Store| {
            s.list()
                .expect("list")
                .into_iter()
                .map(|i| (i.header.id, i.events))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rows(&f),
            rows(&store),
            "the fresh store holds the live sessions"
        );
        store.close().expect("close");
        f.close().expect("close");
        (
            segment_bytes(a.path()),
            segment_bytes(fresh.path()),
            a,
            fresh,
        )
    };
    let one = |v: f64| crate::measure::stat(vec![v]);
    rows.push(Row {
        what: "segment bytes after compaction",
        unit: "B",
        subject: one(compacted_log as f64),
        baseline_name: "a fresh store of the live sessions' writes alone",
        baseline: one(fresh_log as f64),
        goal: "<= 1.10x",
        workload: workload.clone(),
    });
    let open = |dir: &Path| {
        let t = Instant::now();
        let s = Store::open_read_only(dir, StoreOptions::default()).expect("open");
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(
            s.open_report().records_replayed,
            0,
            "opened from its checkpoint"
        );
        secs
    };
    let (o1, o2) = pair(
        reps,
        || open(compacted_dir.path()),
        || open(fresh_dir.path()),
    );
    rows.push(Row {
        what: "open after compaction (from its checkpoint)",
        unit: "s",
        subject: o1,
        baseline_name: "open of a fresh store of the live sessions",
        baseline: o2,
        goal: "replays nothing (checked); <= 1.5x",
        workload,
    });
}

/// The mix's ops under other session ids, so they append beside the stored ones.
fn renamed(mix: &Mix) -> Vec<crate::mix::Op> {
    use crate::mix::Op;
    let r = |id: &str| format!("again-{id}");
    mix.ops
        .iter()
        .cloned()
        .map(|op| match op {
            Op::Create(mut h) => {
                h.id = r(&h.id);
                if let Some(p) = h.parent_session.as_mut() {
                    *p = r(p);
                }
                Op::Create(h)
            }
            Op::Append(s, d) => Op::Append(r(&s), d),
            Op::Fork(s, mut spec) => {
                spec.child_id = spec.child_id.map(|c| r(&c));
                Op::Fork(r(&s), spec)
            }
        })
        .collect()
}

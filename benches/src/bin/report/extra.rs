//! Rows whose workload is not the DSH mix, named for what they are: single durable user
//! messages, many `Sync` threads of user-message batches, and the in-memory surface
//! (user messages only, every event a surface entry).

use std::fs::File;
use std::io::Write;
use std::time::Instant;

use sessdb::{Draft, Durability, SessionHeader, Store, StoreOptions, SurfaceIntent, SurfaceType};
use sessdb_benches::user_draft;
use sessdb_workload::payload as p;

use crate::measure::{Row, Rows, pair, temp};

/// The report's `Sync` store options.
fn sync_options() -> StoreOptions {
    StoreOptions::default().with_durability(Durability::Sync)
}

/// A `Sync` store in a temp dir with one empty session `s`.
fn sync_store() -> (tempfile::TempDir, Store) {
    let dir = temp();
    let store = Store::open(dir.path(), sync_options()).expect("open");
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .expect("create");
    (dir, store)
}

/// p50 seconds of `n` single-event `Sync` appends.
fn durable_p50(n: u64) -> f64 {
    let (_dir, store) = sync_store();
    let mut lat: Vec<f64> = (0..n)
        .map(|i| {
            let d = user_draft(i);
            let t = Instant::now();
            store.append("s", d).expect("append");
            t.elapsed().as_secs_f64()
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    lat[lat.len() / 2]
}

/// p50 seconds of `n` appends of a 200-byte line, each followed by fdatasync.
fn raw_p50(n: u64) -> f64 {
    let dir = temp();
    let mut f = File::create(dir.path().join("raw")).expect("file");
    let line = [b'x'; 200];
    let mut lat: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f.write_all(&line).expect("write");
            f.sync_data().expect("sync");
            t.elapsed().as_secs_f64()
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    lat[lat.len() / 2]
}

/// Events/s with `threads` appenders of `batch`-event batches, `per_thread` batches each.
fn sessdb_threads(threads: u64, per_thread: u64, batch: u64, options: sessdb::StoreOptions) -> f64 {
    let dir = temp();
    let store = Store::open(dir.path(), options).expect("open");
    for t in 0..threads {
        store
            .create_session(SessionHeader::new(format!("t{t}"), 0), Vec::new())
            .expect("create");
    }
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let store = &store;
            s.spawn(move || {
                let session = format!("t{t}");
                for b in 0..per_thread {
                    if batch == 1 {
                        store.append(&session, user_draft(b)).expect("append");
                    } else {
                        let drafts = (0..batch).map(|i| user_draft(b * batch + i)).collect();
                        store.append_batch(&session, drafts).expect("append");
                    }
                }
            });
        }
    });
    (threads * per_thread * batch) as f64 / start.elapsed().as_secs_f64()
}

/// Surface operations on a long surface vs 1k entries; `Session::messages()` of 10k nodes
/// (borrowed slices) vs a memcpy of the same bytes.
fn surface_rows(quick: bool, reps: usize, rows: &mut Rows) {
    let workload = || "user messages only, in memory".to_owned();
    let long = if quick { 100_000 } else { 1_000_000 };
    let (l, sh) = pair(reps, || surface_ops(long, 300), || surface_ops(1_000, 300));
    rows.push(Row {
        what: "surface op on a long surface (s)",
        unit: "s",
        subject: l,
        baseline_name: "the same on 1k entries",
        baseline: sh,
        goal: "<= 2x",
        workload: workload(),
    });
    let mut s = sessdb::Session::create(SessionHeader::new("m", 0), [], sessdb::Config::default())
        .expect("session");
    for i in 0..10_000 {
        s.append(user_draft(i)).expect("append");
    }
    let bytes: Vec<u8> = s.messages().iter().flat_map(|m| m.json.to_vec()).collect();
    let (m, c) = pair(
        reps,
        || {
            let t = Instant::now();
            for _ in 0..20 {
                // Borrowed message bytes, as `Session::messages` hands them out.
                std::hint::black_box(s.messages());
            }
            t.elapsed().as_secs_f64() / 20.0
        },
        || {
            let t = Instant::now();
            for _ in 0..20 {
                std::hint::black_box(bytes.clone());
            }
            t.elapsed().as_secs_f64() / 20.0
        },
    );
    rows.push(Row {
        what: "messages() of a 10k-node surface (s)",
        unit: "s",
        subject: m,
        baseline_name: "memcpy of the same message bytes",
        baseline: c,
        goal: "time <= 2x",
        workload: workload(),
    });
}

/// Seconds per surface operation on a session whose surface holds `n` entries: an append, a
/// replace of the last two nodes, and a replace of the first two (each citing what it
/// shadows).
fn surface_ops(n: u64, ops: u64) -> f64 {
    let mut s = sessdb::Session::create(SessionHeader::new("s", 0), [], sessdb::Config::default())
        .expect("session");
    for i in 0..n {
        s.append(user_draft(i)).expect("append");
    }
    let t = Instant::now();
    for i in 0..ops {
        s.append(user_draft(n + i)).expect("append");
        let seqs = s.state().surface().seqs();
        let (a, b) = (seqs[seqs.len() - 2], seqs[seqs.len() - 1]);
        s.append(replace_draft(a, b, n + i)).expect("replace last");
        let seqs = s.state().surface().seqs();
        let (a, b) = (seqs[0], seqs[1]);
        s.append(replace_draft(a, b, n + i)).expect("replace first");
    }
    t.elapsed().as_secs_f64() / (3 * ops) as f64
}

fn replace_draft(start: u64, end: u64, n: u64) -> Draft {
    Draft::surface(
        SurfaceType::UserMessage,
        p::user_message(&format!("r{n}"), "compaction", "summary").into_bytes(),
        SurfaceIntent::replace(start..=end).with_sources(vec![start, end]),
    )
}

/// The durable-event and threads rows (user messages), and the surface rows.
pub fn rows(quick: bool, reps: usize, run: &dyn Fn(&str) -> bool, rows: &mut Rows) {
    if run("durable") {
        let n = if quick { 100 } else { 300 };
        let (d, r) = pair(reps, || durable_p50(n), || raw_p50(n));
        rows.push(Row {
            what: "one durable event, p50 latency (s)",
            unit: "s",
            subject: d,
            baseline_name: "raw small write+fdatasync, p50",
            baseline: r,
            goal: "<= 1.2x",
            workload: "single user messages, Sync".to_owned(),
        });
    }
    let threads = if quick { 16 } else { 64 };
    let per = if quick { 20 } else { 40 };
    if run("threads") {
        let (m, o) = pair(
            reps,
            || sessdb_threads(threads, per, 10, sync_options()),
            || sessdb_threads(1, per * 4, 10, sync_options()),
        );
        rows.push(Row {
            what: if quick {
                "Sync, 16 threads x 10-event batches (events/s)"
            } else {
                "Sync, 64 threads x 10-event batches (events/s)"
            },
            unit: "ev/s",
            subject: m,
            baseline_name: "the same, 1 thread",
            baseline: o,
            goal: ">= 4x",
            workload: "user messages, a session per thread".to_owned(),
        });
        // Buffered appends share the tail lock: many threads should cost nothing against
        // one (the harness read 0.84-1.02x; a row to keep it there).
        let buffered = || sync_options().with_durability(sessdb::Durability::Buffered);
        let (m, o) = pair(
            reps,
            || sessdb_threads(threads, per * 10, 10, buffered()),
            || sessdb_threads(1, per * 40, 10, buffered()),
        );
        rows.push(Row {
            what: if quick {
                "Buffered, 16 threads x 10-event batches (events/s)"
            } else {
                "Buffered, 64 threads x 10-event batches (events/s)"
            },
            unit: "ev/s",
            subject: m,
            baseline_name: "the same, 1 thread",
            baseline: o,
            goal: "held (>= 0.84x)",
            workload: "user messages, a session per thread".to_owned(),
        });
        // One event per append: every append meets the others at the tail (the write group's
        // row, `docs/PERFORMANCE.md`).
        let (m, o) = pair(
            reps,
            || sessdb_threads(threads, per * 25, 1, buffered()),
            || sessdb_threads(1, per * 25 * threads, 1, buffered()),
        );
        rows.push(Row {
            what: if quick {
                "Buffered, 16 threads x 1-event appends (events/s)"
            } else {
                "Buffered, 64 threads x 1-event appends (events/s)"
            },
            unit: "ev/s",
            subject: m,
            baseline_name: "the same, 1 thread",
            baseline: o,
            goal: ">= 0.9x",
            workload: "user messages, a session per thread".to_owned(),
        });
    }
    if run("surface") {
        surface_rows(quick, reps, rows);
    }
}

//! `cargo run --release -p sessdb-benches --bin report -- [--quick] [--json]`: the rows of
//! `docs/PERFORMANCE.md`, each subject beside its baseline in the same run (alternating),
//! median and min–max of the repetitions, and the ratio.

#![allow(
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::print_stdout,
    reason = "a benchmark report aborts on any failure and prints"
)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sessdb::{
    Draft, Durability, ForkSpec, SessionHeader, Store, StoreOptions, SurfaceIntent, SurfaceType,
};
use sessdb_benches::user_draft;
use sessdb_workload::{Sink, WorkloadSpec, generate, payload as p};

/// One recorded workload operation.
enum Op {
    Create(SessionHeader),
    Append(String, Draft),
    Fork(String, ForkSpec),
}

/// Records a generated workload, so generation stays out of every measurement.
#[derive(Default)]
struct Recorder {
    ops: Vec<Op>,
    next: HashMap<String, u64>,
}

impl Sink for Recorder {
    fn create(&mut self, header: SessionHeader) -> sessdb::Result<()> {
        self.next.insert(header.id.clone(), 1);
        self.ops.push(Op::Create(header));
        Ok(())
    }
    fn append(&mut self, session: &str, draft: Draft) -> sessdb::Result<u64> {
        let n = self.next.entry(session.to_owned()).or_insert(0);
        let seq = *n;
        *n += 1;
        self.ops.push(Op::Append(session.to_owned(), draft));
        Ok(seq)
    }
    fn fork(&mut self, source: &str, spec: ForkSpec) -> sessdb::Result<String> {
        let child = spec
            .child_id
            .clone()
            .unwrap_or_else(|| format!("{source}-fork"));
        let len = self.next.get(source).copied().unwrap_or(0);
        self.next.insert(child.clone(), len + 1);
        self.ops.push(Op::Fork(
            source.to_owned(),
            ForkSpec {
                child_id: Some(child.clone()),
                ..spec
            },
        ));
        Ok(child)
    }
}

/// Median, min, max of timings.
#[derive(Clone, Copy)]
struct Stat {
    median: f64,
    min: f64,
    max: f64,
}

fn stat(mut v: Vec<f64>) -> Stat {
    v.sort_by(f64::total_cmp);
    Stat {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// Runs subject and baseline alternately `reps` times; each returns a figure (higher better
/// when `rate`, else a time in seconds).
fn pair(reps: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (Stat, Stat) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        xs.push(a());
        ys.push(b());
    }
    (stat(xs), stat(ys))
}

struct Row {
    what: &'static str,
    unit: &'static str,
    subject: Stat,
    baseline_name: &'static str,
    baseline: Stat,
    goal: &'static str,
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn buffered() -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        checkpoint_interval_bytes: u64::MAX,
        ..StoreOptions::default()
    }
}

/// Events/s appending the recorded ops one event at a time, Buffered.
fn sessdb_append(ops: &[Op], events: u64) -> f64 {
    let dir = temp();
    let store = Store::open(dir.path(), buffered()).expect("open");
    let t = Instant::now();
    for op in ops {
        match op {
            Op::Create(h) => {
                store.create_session(h.clone(), Vec::new()).expect("create");
            }
            Op::Append(s, d) => {
                store.append(s, d.clone()).expect("append");
            }
            Op::Fork(s, spec) => {
                store.fork(s, spec.clone()).expect("fork");
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    drop(store);
    events as f64 / secs
}

/// Events/s writing the same events as DSH-style JSONL lines, one file per session, BufWriter.
fn jsonl_append(ops: &[Op], events: u64) -> f64 {
    let dir = temp();
    let mut files: HashMap<&str, (BufWriter<File>, u64)> = HashMap::new();
    let t = Instant::now();
    for op in ops {
        match op {
            Op::Create(h) => {
                let f = File::create(dir.path().join(&h.id)).expect("file");
                let mut w = BufWriter::new(f);
                w.write_all(&h.to_json()).expect("write");
                w.write_all(b"\n").expect("write");
                files.insert(&h.id, (w, 1));
            }
            Op::Fork(_, spec) => {
                let id = spec.child_id.as_deref().unwrap_or("fork");
                let f = File::create(dir.path().join(id)).expect("file");
                files.insert(id, (BufWriter::new(f), 1));
            }
            Op::Append(s, d) => {
                let (w, next) = files.get_mut(s.as_str()).expect("session");
                let mut line = d.clone().into_event(*next, 1).to_jsonl();
                line.push(b'\n');
                w.write_all(&line).expect("write");
                *next += 1;
            }
        }
    }
    for (w, _) in files.values_mut() {
        w.flush().expect("flush");
    }
    let secs = t.elapsed().as_secs_f64();
    events as f64 / secs
}

/// Events/s into SQLite, WAL, synchronous=NORMAL, 1000 rows per transaction.
fn sqlite_append(ops: &[Op], events: u64) -> f64 {
    let dir = temp();
    let conn = rusqlite::Connection::open(dir.path().join("db")).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
           time INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;",
    )
    .expect("schema");
    let mut next: HashMap<&str, i64> = HashMap::new();
    let t = Instant::now();
    conn.execute_batch("BEGIN").expect("begin");
    let mut in_tx = 0;
    for op in ops {
        if let Op::Append(s, d) = op {
            let n = next.entry(s.as_str()).or_insert(1);
            let e = d.clone().into_event(u64::try_from(*n).unwrap_or(0), 1);
            conn.prepare_cached("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5)")
                .and_then(|mut st| {
                    st.execute((
                        s,
                        *n,
                        e.event_type(),
                        1,
                        std::str::from_utf8(e.data()).unwrap_or(""),
                    ))
                })
                .expect("insert");
            *n += 1;
            in_tx += 1;
            if in_tx == 1000 {
                conn.execute_batch("COMMIT; BEGIN").expect("commit");
                in_tx = 0;
            }
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
    events as f64 / t.elapsed().as_secs_f64()
}

/// The report's `Sync` store options.
fn sync_options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        ..buffered()
    }
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

/// Events/s of `Sync` 1000-event batches.
fn sessdb_sync_batches(batches: u64) -> f64 {
    let (_dir, store) = sync_store();
    let drafts: Vec<Vec<Draft>> = (0..batches)
        .map(|b| (0..1000).map(|i| user_draft(b * 1000 + i)).collect())
        .collect();
    let t = Instant::now();
    for batch in drafts {
        store.append_batch("s", batch).expect("append");
    }
    (batches * 1000) as f64 / t.elapsed().as_secs_f64()
}

/// Events/s writing the same JSONL bytes in 1000-event chunks, each followed by fdatasync.
fn raw_sync_batches(batches: u64) -> f64 {
    let dir = temp();
    let mut f = File::create(dir.path().join("raw")).expect("file");
    let chunks: Vec<Vec<u8>> = (0..batches)
        .map(|b| {
            (0..1000)
                .flat_map(|i| {
                    let mut l = user_draft(b * 1000 + i).into_event(i, 1).to_jsonl();
                    l.push(b'\n');
                    l
                })
                .collect()
        })
        .collect();
    let t = Instant::now();
    for c in chunks {
        f.write_all(&c).expect("write");
        f.sync_data().expect("sync");
    }
    (batches * 1000) as f64 / t.elapsed().as_secs_f64()
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

/// Events/s with `threads` Sync appenders of 10-event batches, `per_thread` batches each.
fn sessdb_threads(threads: u64, per_thread: u64) -> f64 {
    let dir = temp();
    let store = Store::open(dir.path(), sync_options()).expect("open");
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
                for b in 0..per_thread {
                    let batch = (0..10).map(|i| user_draft(b * 10 + i)).collect();
                    store.append_batch(&format!("t{t}"), batch).expect("append");
                }
            });
        }
    });
    (threads * per_thread * 10) as f64 / start.elapsed().as_secs_f64()
}

/// Seconds to open a store of `events` events: from its checkpoint, or by full replay.
fn open_time(dir: &Path, from_checkpoint: bool) -> f64 {
    let t = Instant::now();
    let store = Store::open_read_only_with(
        std::sync::Arc::new(sessdb::storage::FsStorage::new(dir)),
        StoreOptions {
            ignore_checkpoints: !from_checkpoint,
            ..StoreOptions::default()
        },
    )
    .expect("open");
    let secs = t.elapsed().as_secs_f64();
    drop(store);
    secs
}

fn build_store(dir: &Path, events: u64) {
    let store = Store::open(dir, buffered()).expect("open");
    let sessions = 100;
    for s in 0..sessions {
        store
            .create_session(SessionHeader::new(format!("s{s}"), 0), Vec::new())
            .expect("create");
    }
    let mut n = 0;
    while n < events {
        for s in 0..sessions {
            let batch: Vec<Draft> = (0..100).map(|i| user_draft(n + i)).collect();
            store.append_batch(&format!("s{s}"), batch).expect("append");
            n += 100;
        }
    }
    store.close().expect("close");
}

/// Open growth (4x the events) and resident memory per event after open (fresh processes).
fn open_growth_and_memory(dir: &tempfile::TempDir, quick: bool, reps: usize, rows: &mut Vec<Row>) {
    let big = temp();
    build_store(big.path(), if quick { 800_000 } else { 4_000_000 });
    let (b, s) = pair(
        reps,
        || open_time(big.path(), true),
        || open_time(dir.path(), true),
    );
    rows.push(Row {
        what: "open from checkpoint, 4x the events (s)",
        unit: "s",
        subject: b,
        baseline_name: "the same at a quarter of the events",
        baseline: s,
        goal: "<= 1.5x",
    });
    let per_event = |d: &Path| -> f64 {
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args(["--open-rss", &d.display().to_string()])
            .output()
            .expect("child");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut it = text
            .split_whitespace()
            .map(|x| x.parse::<f64>().unwrap_or(0.0));
        let (bytes, events) = (it.next().unwrap_or(0.0), it.next().unwrap_or(1.0));
        bytes / events.max(1.0)
    };
    let (m4, m1) = pair(reps, || per_event(big.path()), || per_event(dir.path()));
    rows.push(Row {
        what: "resident memory after open, B/event, 4x store",
        unit: "B",
        subject: m4,
        baseline_name: "the same, the smaller store",
        baseline: m1,
        goal: "<= 20 B",
    });
}

/// One exported row of the analytics layout's three tables, as the bare loop inserts it.
type SqlRow = Vec<rusqlite::types::Value>;

/// SQLite export of the store (the analytics layout: one row per event, the surface) vs a
/// bare rusqlite loop inserting the same rows into the same schema, with the same pragmas, in
/// one transaction.
fn sqlite_export_row(dir: &tempfile::TempDir, reps: usize, rows: &mut Vec<Row>) {
    use sessdb_formats::sqlite::{SqliteExportOptions, SqliteLayout, export_sqlite};
    let store = Store::open_read_only(dir.path()).expect("open");
    let options = SqliteExportOptions {
        layout: SqliteLayout::Analytics,
        ..SqliteExportOptions::default()
    };
    let sample = temp();
    let db = sample.path().join("x.sqlite");
    export_sqlite(&store, &db, &options, &mut |_| {}).expect("export");
    let conn = rusqlite::Connection::open(&db).expect("open sample");
    let read = |table: &str| -> Vec<SqlRow> {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table}"))
            .expect("select");
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, rusqlite::types::Value>(i))
                .collect()
        })
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
    };
    let tables: Vec<(&str, Vec<SqlRow>)> = ["sessions", "events", "surface"]
        .into_iter()
        .map(|t| (t, read(t)))
        .collect();
    drop(conn);
    let (e, b) = pair(
        reps,
        || {
            let out = temp();
            let t = Instant::now();
            export_sqlite(&store, &out.path().join("x.sqlite"), &options, &mut |_| {})
                .expect("export");
            t.elapsed().as_secs_f64()
        },
        || {
            let out = temp();
            let t = Instant::now();
            let mut conn = rusqlite::Connection::open(out.path().join("x.sqlite")).expect("open");
            conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
                .expect("pragmas");
            let tx = conn.transaction().expect("tx");
            tx.execute_batch(sessdb_formats::sqlite::DDL)
                .expect("schema");
            for (table, table_rows) in &tables {
                let Some(first) = table_rows.first() else {
                    continue;
                };
                let marks = (1..=first.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>();
                let mut stmt = tx
                    .prepare(&format!(
                        "INSERT INTO {table} VALUES ({})",
                        marks.join(", ")
                    ))
                    .expect("insert");
                for row in table_rows {
                    stmt.execute(rusqlite::params_from_iter(row.iter()))
                        .expect("row");
                }
            }
            tx.commit().expect("commit");
            t.elapsed().as_secs_f64()
        },
    );
    rows.push(Row {
        what: "SQLite export of the store, analytics layout (s)",
        unit: "s",
        subject: e,
        baseline_name: "bare rusqlite insert loop, same schema and rows",
        baseline: b,
        goal: "time <= 1.11x",
    });
}

/// JSONL export of the store vs writing the same bytes, line by line, with a bare BufWriter.
fn export_row(dir: &tempfile::TempDir, reps: usize, rows: &mut Vec<Row>) {
    let store = Store::open_read_only(dir.path()).expect("open");
    let options = sessdb_formats::jsonl::ExportOptions::default();
    let sample = temp();
    let report = sessdb_formats::jsonl::export_jsonl(&store, sample.path(), &options, &mut |_| {})
        .expect("export");
    let contents: Vec<Vec<u8>> = report
        .files
        .iter()
        .map(|(_, f)| std::fs::read(f).expect("read"))
        .collect();
    let (e, b) = pair(
        reps,
        || {
            let out = temp();
            let t = Instant::now();
            sessdb_formats::jsonl::export_jsonl(&store, out.path(), &options, &mut |_| {})
                .expect("export");
            t.elapsed().as_secs_f64()
        },
        || {
            let out = temp();
            let t = Instant::now();
            for (i, c) in contents.iter().enumerate() {
                let f = File::create(out.path().join(i.to_string())).expect("file");
                let mut w = BufWriter::new(f);
                for line in c.split_inclusive(|&b| b == b'\n') {
                    w.write_all(line).expect("write");
                }
                w.flush().expect("flush");
            }
            t.elapsed().as_secs_f64()
        },
    );
    rows.push(Row {
        what: "JSONL export of the store (s)",
        unit: "s",
        subject: e,
        baseline_name: "bare BufWriter loop, same bytes",
        baseline: b,
        goal: "time <= 1.25x",
    });
}

/// Surface operations on a long surface vs 1k entries; `Session::messages()` of 10k nodes
/// (borrowed slices) vs a memcpy of the same bytes.
fn surface_rows(quick: bool, reps: usize, rows: &mut Vec<Row>) {
    let long = if quick { 100_000 } else { 1_000_000 };
    let (l, sh) = pair(reps, || surface_ops(long, 300), || surface_ops(1_000, 300));
    rows.push(Row {
        what: "surface op on a long surface (s)",
        unit: "s",
        subject: l,
        baseline_name: "the same on 1k entries",
        baseline: sh,
        goal: "<= 2x",
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
        SurfaceIntent::replace(start, end).with_sources(vec![start, end]),
    )
}

/// Resident bytes of this process (`VmRSS`).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    // `report --open-rss DIR`: a fresh process opens DIR and prints the resident bytes the
    // open added and the events it holds (the parent measures memory per event this way).
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--open-rss") {
        let before = rss();
        let store = Store::open_read_only(&args[i + 1]).expect("open");
        let after = rss();
        println!("{} {}", after.saturating_sub(before), store.stats().events);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
    let reps = if quick { 3 } else { 5 };
    // `--only ROW` (append, batch, durable, threads, open, tail, export, sqlite, surface): one
    // row (`export` runs both exports).
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let run = |row: &str| only.as_deref().is_none_or(|o| o == row);
    let mut rows = Vec::new();

    // 1. Buffered appends of a realistic workload.
    let mut rec = Recorder::default();
    let summary = generate(
        &WorkloadSpec {
            sessions: if quick { 20 } else { 100 },
            max_turns: 12,
            max_chunks: 60,
            ..WorkloadSpec::default()
        },
        &mut rec,
    )
    .expect("workload");
    let events = summary.events;
    // `--profile-append N`: the subject of the first row alone, N times (for `perf record`).
    if let Some(i) = args.iter().position(|a| a == "--profile-append") {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10);
        for _ in 0..n {
            println!("{:.0} events/s", sessdb_append(&rec.ops, events));
        }
        return;
    }
    if run("append") {
        let (s, j) = pair(
            reps,
            || sessdb_append(&rec.ops, events),
            || jsonl_append(&rec.ops, events),
        );
        rows.push(Row {
            what: "buffered append (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "JSONL file per session + BufWriter",
            baseline: j,
            goal: ">= 2x",
        });
        let (s, q) = pair(
            reps,
            || sessdb_append(&rec.ops, events),
            || sqlite_append(&rec.ops, events),
        );
        rows.push(Row {
            what: "buffered append (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "SQLite WAL, synchronous=NORMAL, 1000 rows/tx",
            baseline: q,
            goal: ">= 5x",
        });
    }

    // 2. Sync batches of 1000.
    let batches = if quick { 20 } else { 100 };
    if run("batch") {
        let (s, r) = pair(
            reps,
            || sessdb_sync_batches(batches),
            || raw_sync_batches(batches),
        );
        rows.push(Row {
            what: "Sync, 1000-event append_batch (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "raw write+fdatasync, same bytes, same chunks",
            baseline: r,
            goal: ">= 0.7x",
        });
    }

    // 2b. One durable event: p50 latency of single Sync appends vs a raw small write+fdatasync.
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
        });
    }

    // 3. Sync with many threads vs one.
    let threads = if quick { 16 } else { 64 };
    let per = if quick { 20 } else { 40 };
    if run("threads") {
        let (m, o) = pair(
            reps,
            || sessdb_threads(threads, per),
            || sessdb_threads(1, per * 4),
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
        });
    }

    // 4. Open from the checkpoint vs full replay.
    let dir = temp();
    if run("open") || run("tail") || run("export") || run("sqlite") {
        build_store(dir.path(), if quick { 200_000 } else { 1_000_000 });
    }
    if run("open") {
        let (c, f) = pair(
            reps,
            || open_time(dir.path(), true),
            || open_time(dir.path(), false),
        );
        rows.push(Row {
            what: if quick {
                "open, 200k events (s)"
            } else {
                "open, 1M events (s)"
            },
            unit: "s",
            subject: c,
            baseline_name: "full replay",
            baseline: f,
            goal: "<= 3%",
        });
        open_growth_and_memory(&dir, quick, reps, &mut rows);
    }
    if run("tail") {
        // 5. Tail-50 on a long session vs copying the same bytes.
        let store = Store::open_read_only(dir.path()).expect("open");
        let bytes: Vec<u8> = store
            .last_events("s0", 50)
            .expect("read")
            .iter()
            .flat_map(|e| e.data().to_vec())
            .collect();
        let time_n = |n: u32, f: &mut dyn FnMut()| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() / f64::from(n)
        };
        let (t, c) = pair(
            reps,
            || {
                time_n(2000, &mut || {
                    std::hint::black_box(store.last_events("s0", 50).expect("read"));
                })
            },
            || {
                time_n(2000, &mut || {
                    std::hint::black_box(bytes.clone());
                })
            },
        );
        rows.push(Row {
            what: "tail-50 of a long session (s)",
            unit: "s",
            subject: t,
            baseline_name: "copying the same data bytes",
            baseline: c,
            goal: "<= 10 us",
        });
    }

    if run("export") {
        export_row(&dir, reps, &mut rows);
    }
    if run("export") || run("sqlite") {
        sqlite_export_row(&dir, reps, &mut rows);
    }
    if run("surface") {
        surface_rows(quick, reps, &mut rows);
    }

    // Physical limits.
    let sync_lat = {
        let d = temp();
        let mut f = File::create(d.path().join("x")).expect("file");
        let mut v = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            f.write_all(&[7u8; 200]).expect("write");
            f.sync_data().expect("sync");
            v.push(t.elapsed().as_secs_f64());
        }
        stat(v)
    };

    if json {
        let out: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"what\":{:?},\"unit\":{:?},\"subject\":{},\"subject_min\":{},\"subject_max\":{},\"baseline\":{:?},\"baseline_median\":{},\"ratio\":{},\"goal\":{:?}}}",
                    r.what, r.unit, r.subject.median, r.subject.min, r.subject.max, r.baseline_name, r.baseline.median, r.subject.median / r.baseline.median, r.goal
                )
            })
            .collect();
        println!("[{}]", out.join(","));
        return;
    }
    println!(
        "sessdb report ({} repetitions, subject and baseline alternating; median [min-max])",
        reps
    );
    println!("workload: {events} events of a generated DSH workload");
    for r in &rows {
        let f = |s: Stat| {
            if r.unit == "s" {
                format!("{} [{}-{}]", dur(s.median), dur(s.min), dur(s.max))
            } else {
                format!("{:.0} [{:.0}-{:.0}]", s.median, s.min, s.max)
            }
        };
        println!(
            "{:<48} {:>34}  vs {:<46} {:>34}  ratio {:>6.3}  goal {}",
            r.what,
            f(r.subject),
            r.baseline_name,
            f(r.baseline),
            r.subject.median / r.baseline.median,
            r.goal
        );
    }
    println!(
        "physical: 200-byte write+fdatasync p50 {} [{}-{}]",
        dur(sync_lat.median),
        dur(sync_lat.min),
        dur(sync_lat.max)
    );
}

fn dur(s: f64) -> String {
    let d = Duration::from_secs_f64(s);
    if d < Duration::from_millis(1) {
        format!("{:.1}us", s * 1e6)
    } else {
        format!("{:.2}ms", s * 1e3)
    }
}

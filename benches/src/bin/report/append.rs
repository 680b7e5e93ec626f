//! The append rows: buffered appends of the DSH mix against a JSONL file per session and
//! SQLite, and `Sync` 1000-event batches against raw write+fdatasync of the same bytes. Each
//! repetition gets its own copy of the recorded drafts, made before the clock starts, and
//! moves them into the subject or the peer (no clone in a timed loop).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use sessdb::{CheckpointWrites, Config, Durability, Event, Session, Store, StoreOptions};

use crate::measure::{Row, Rows, pair, temp};
use crate::mix::{Mix, Op, Step, batches};

/// The buffered subject: the defaults a user gets (checkpoints on), `Buffered`.
pub fn buffered() -> StoreOptions {
    StoreOptions::default().with_durability(Durability::Buffered)
}

/// Events/s appending the ops one event at a time, `Buffered`. The store is dropped after the
/// clock stops: its bytes are in the page cache when `append` returns, as the JSONL peer's
/// are after its final flush (which the peer's figure includes).
pub fn sessdb_append(ops: Vec<Op>, events: u64) -> f64 {
    let dir = temp();
    let store = Store::open(dir.path(), buffered()).expect("open");
    let t = Instant::now();
    crate::mix::apply(&store, ops);
    let secs = t.elapsed().as_secs_f64();
    drop(store);
    events as f64 / secs
}

/// Each append's time in nanoseconds (creations and forks left out), the mix applied one
/// event at a time to a `Buffered` store whose due checkpoints `writes` says who writes: the
/// stall of the append that finds one due, against the thread taking it.
pub fn append_latencies(ops: Vec<Op>, writes: CheckpointWrites) -> Vec<u64> {
    let dir = temp();
    let store = Store::open(dir.path(), buffered().with_checkpoint_writes(writes)).expect("open");
    let mut took = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            Op::Create(h) => {
                store.create_session(h, Vec::new()).expect("create");
            }
            Op::Append(s, d) => {
                let t = Instant::now();
                store.append(&s, d).expect("append");
                took.push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
            Op::Fork(s, spec) => {
                store.fork(&s, spec).expect("fork");
            }
        }
    }
    drop(store);
    took
}

/// Events/s of DSH's rules alone: the ops applied one event at a time to in-memory
/// `Session`s — every acceptance rule, the session's state and its list of events, through
/// the acceptance function the store's append runs — and nothing encoded, checksummed or
/// written. What the buffered append cannot beat while the rules cost what they do. A fork's
/// child is a session created from the parent's events through the boundary (a created
/// session ends with `session/end-seed`, as the store's fork does).
pub fn rules_alone(ops: Vec<Op>, events: u64) -> f64 {
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let t = Instant::now();
    for op in ops {
        match op {
            Op::Create(h) => {
                let id = h.id.clone();
                let s = Session::create(h, Vec::new(), Config::default()).expect("create");
                sessions.insert(id, s);
            }
            Op::Append(s, d) => {
                sessions
                    .get_mut(&s)
                    .expect("session")
                    .append(d)
                    .expect("append");
            }
            Op::Fork(s, spec) => {
                let parent = sessions.get(&s).expect("parent");
                let through = spec.boundary.map_or(parent.len(), |b| b + 1);
                let inherited: Vec<Event> = parent
                    .events()
                    .take(usize::try_from(through).unwrap_or(usize::MAX))
                    .cloned()
                    .collect();
                let id = spec.child_id.expect("the mix names its forks");
                let mut header = parent.header().clone();
                header.id.clone_from(&id);
                let child = Session::create(header, inherited, Config::default()).expect("fork");
                sessions.insert(id, child);
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    drop(sessions);
    events as f64 / secs
}

/// Events/s writing the same events as DSH's JSONL lines, one file per session, a
/// `BufWriter` each, one line buffer reused for every event.
fn jsonl_append(ops: Vec<Op>, events: u64) -> f64 {
    let dir = temp();
    let mut files: HashMap<String, (BufWriter<File>, u64)> = HashMap::new();
    let mut line = Vec::with_capacity(4096);
    let t = Instant::now();
    for op in ops {
        match op {
            Op::Create(h) => {
                let f = File::create(dir.path().join(&h.id)).expect("file");
                let mut w = BufWriter::new(f);
                w.write_all(&h.to_json()).expect("write");
                w.write_all(b"\n").expect("write");
                files.insert(h.id, (w, 1));
            }
            Op::Fork(_, spec) => {
                let id = spec.child_id.unwrap_or_default();
                let f = File::create(dir.path().join(&id)).expect("file");
                files.insert(id, (BufWriter::new(f), 1));
            }
            Op::Append(s, d) => {
                let (w, next) = files.get_mut(&s).expect("session");
                line.clear();
                d.into_event(*next, 1).write_jsonl(&mut line);
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

/// Events/s into SQLite, WAL, synchronous=NORMAL, 1000 rows per transaction, one prepared
/// statement.
fn sqlite_append(ops: Vec<Op>, events: u64) -> f64 {
    let dir = temp();
    let conn = rusqlite::Connection::open(dir.path().join("db")).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
           time INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;",
    )
    .expect("schema");
    let mut next: HashMap<String, i64> = HashMap::new();
    let t = Instant::now();
    conn.execute_batch("BEGIN").expect("begin");
    let mut in_tx = 0;
    {
        let mut st = conn
            .prepare("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5)")
            .expect("prepare");
        for op in ops {
            if let Op::Append(s, d) = op {
                if !next.contains_key(&s) {
                    next.insert(s.clone(), 1);
                }
                let n = next.get_mut(&s).expect("session");
                let e = d.into_event(u64::try_from(*n).unwrap_or(0), 1);
                st.execute((
                    &s,
                    *n,
                    e.event_type(),
                    e.time(),
                    std::str::from_utf8(e.data()).unwrap_or(""),
                ))
                .expect("insert");
                *n += 1;
                in_tx += 1;
                if in_tx == 1000 {
                    conn.execute_batch("COMMIT; BEGIN").expect("commit");
                    in_tx = 0;
                }
            }
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
    events as f64 / t.elapsed().as_secs_f64()
}

/// Events/s of `Sync` batches of up to 1000 consecutive events of one session.
pub fn sessdb_sync_batches(steps: Vec<Step>, events: u64) -> f64 {
    let dir = temp();
    let store = Store::open(
        dir.path(),
        StoreOptions::default().with_durability(Durability::Sync),
    )
    .expect("open");
    let t = Instant::now();
    for step in steps {
        match step {
            Step::Create(h) => {
                store.create_session(h, Vec::new()).expect("create");
            }
            Step::Batch(s, drafts) => {
                store.append_batch(&s, drafts).expect("append");
            }
            Step::Fork(s, spec) => {
                store.fork(&s, spec).expect("fork");
            }
        }
    }
    events as f64 / t.elapsed().as_secs_f64()
}

/// Events/s writing the same events' JSONL bytes in the same batches to one file, each
/// batch one `write` followed by `fdatasync`.
fn raw_sync_batches(chunks: &[Vec<u8>], events: u64) -> f64 {
    let dir = temp();
    let mut f = File::create(dir.path().join("raw")).expect("file");
    let t = Instant::now();
    for c in chunks {
        f.write_all(c).expect("write");
        f.sync_data().expect("sync");
    }
    events as f64 / t.elapsed().as_secs_f64()
}

/// The rows of buffered appends and `Sync` batches on `mix`.
pub fn rows(mix: &Mix, reps: usize, run: &dyn Fn(&str) -> bool, rows: &mut Rows) {
    let events = mix.events;
    if run("append") {
        let (s, j) = pair(
            reps,
            || sessdb_append(mix.ops.clone(), events),
            || jsonl_append(mix.ops.clone(), events),
        );
        rows.push(Row {
            what: "buffered append (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "JSONL file per session + BufWriter, reused line buffer",
            baseline: j,
            goal: ">= 2x",
            workload: mix.name(),
        });
        let (s, q) = pair(
            reps,
            || sessdb_append(mix.ops.clone(), events),
            || sqlite_append(mix.ops.clone(), events),
        );
        rows.push(Row {
            what: "buffered append (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "SQLite WAL, synchronous=NORMAL, 1000 rows/tx",
            baseline: q,
            goal: ">= 5x",
            workload: mix.name(),
        });
        // The floor under the first row: the rules the append runs, alone.
        let (r, j) = pair(
            reps,
            || rules_alone(mix.ops.clone(), events),
            || jsonl_append(mix.ops.clone(), events),
        );
        rows.push(Row {
            what: "DSH's rules alone, in-memory sessions, nothing written (events/s)",
            unit: "ev/s",
            subject: r,
            baseline_name: "JSONL file per session + BufWriter, reused line buffer",
            baseline: j,
            goal: "",
            workload: mix.name(),
        });
    }
    if run("batch") {
        let chunks: Vec<Vec<u8>> = batches(mix.ops.clone(), 1000)
            .into_iter()
            .filter_map(|s| match s {
                Step::Batch(_, drafts) => Some(
                    drafts
                        .into_iter()
                        .enumerate()
                        .flat_map(|(i, d)| {
                            let mut l = d.into_event(i as u64 + 1, 1).to_jsonl();
                            l.push(b'\n');
                            l
                        })
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        let (s, r) = pair(
            reps,
            || sessdb_sync_batches(batches(mix.ops.clone(), 1000), events),
            || raw_sync_batches(&chunks, events),
        );
        rows.push(Row {
            what: "Sync, append_batch of <= 1000 events (events/s)",
            unit: "ev/s",
            subject: s,
            baseline_name: "raw write+fdatasync, same bytes, same batches",
            baseline: r,
            goal: ">= 0.7x",
            workload: mix.name(),
        });
    }
}

/// `--profile-reopen N`: a store of one session closed and opened again N times; each
/// time the first five single-event appends timed (`paced`: 5 ms apart, as a harness's
/// appends are, waiting on its model between them). Returns per round the open's time and
/// the five appends', in ns.
pub fn first_appends_after_open(
    rounds: usize,
    durability: Durability,
    paced: bool,
) -> Vec<[u64; 6]> {
    use sessdb::{Draft, LogType, SessionHeader};
    let dir = temp();
    let options = StoreOptions::default().with_durability(durability);
    let note = LogType::new("plugin/note").expect("type");
    let draft = |i: usize| {
        Draft::log(
            &note,
            format!("{{\"i\":{i},\"text\":\"a line of the model's answer\"}}"),
        )
        .ignorable()
    };
    let store = Store::open(dir.path(), options.clone()).expect("open");
    store
        .create_session(SessionHeader::new("s", 1_000), Vec::new())
        .expect("create");
    for i in 0..200 {
        store.append("s", draft(i)).expect("append");
    }
    store.close().expect("close");
    drop(store);
    let mut out = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut took = [0u64; 6];
        let t = Instant::now();
        let store = Store::open(dir.path(), options.clone()).expect("open");
        took[0] = t.elapsed().as_nanos() as u64;
        for (k, slot) in took.iter_mut().skip(1).enumerate() {
            if paced {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let t = Instant::now();
            store.append("s", draft(k)).expect("append");
            *slot = t.elapsed().as_nanos() as u64;
        }
        store.close().expect("close");
        out.push(took);
    }
    out
}

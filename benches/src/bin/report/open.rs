//! The open and read rows, on stores built from the DSH mix with the default options
//! (checkpoints on): open from the checkpoint against a full replay, open growth with four
//! times the history, resident memory per event, many short sessions against one long one,
//! and tail-50 of a long session.

use std::path::Path;
use std::time::Instant;

use sessdb::store::{Direction, ListOptions, ListOrder};
use sessdb::{Store, StoreOptions};
use sessdb_workload::{WorkloadSpec, generate};

use crate::append::buffered;
use crate::measure::{Row, Rows, pair, temp};

/// A built store and the name of what it holds.
pub struct Built {
    pub dir: tempfile::TempDir,
    pub name: String,
    /// Events appended to build it. (The store's own count is larger: the workload's fork
    /// shares its parent's events, which `stats().events` counts for the child too — for the
    /// one-session store that doubled its count.)
    pub events: u64,
}

/// Builds a store from the DSH mix of `spec`, streamed from the generator (nothing recorded),
/// and closes it (its checkpoint written).
pub fn build(spec: &WorkloadSpec) -> Built {
    let dir = temp();
    let mut store = Store::open(dir.path(), buffered()).expect("open");
    let summary = generate(spec, &mut store).expect("workload");
    store.close().expect("close");
    drop(store);
    let name = format!(
        "DSH mix: {} sessions, {} events",
        summary.sessions.len(),
        summary.events
    );
    Built {
        dir,
        name,
        events: summary.events,
    }
}

/// The store of the open, tail-of-many and export rows: 100 sessions, about 1M events
/// (`quick`: 20 sessions, about 40k).
pub fn main_spec(quick: bool) -> WorkloadSpec {
    crate::mix::append_spec(quick)
}

/// Seconds to open a store: from its checkpoint, or by full replay.
fn open_time(dir: &Path, from_checkpoint: bool) -> f64 {
    let t = Instant::now();
    let store = Store::open_read_only_with(
        std::sync::Arc::new(sessdb::storage::FsStorage::new(dir)),
        StoreOptions::default().with_ignore_checkpoints(!from_checkpoint),
    )
    .expect("open");
    let secs = t.elapsed().as_secs_f64();
    drop(store);
    secs
}

/// Seconds to open the store in `dir` writable, as an application's store is (its close
/// after is not counted). Background compaction off: its thread is the same for any store,
/// and it would judge every segment at once, beside the next open.
fn open_writable_time(dir: &Path) -> f64 {
    let t = Instant::now();
    let store = Store::open(dir, StoreOptions::default().with_compaction(None)).expect("open");
    let secs = t.elapsed().as_secs_f64();
    store.close().expect("close");
    secs
}

/// What a fresh process measured opening a store (`report --open-rss DIR`).
#[derive(Debug, Clone, Copy)]
struct Fresh {
    /// Resident bytes the open added.
    rss: f64,
    /// Seconds to open.
    open: f64,
    /// Seconds to list the 20 most recently updated sessions after it.
    newest_20: f64,
}

fn fresh(dir: &Path) -> Fresh {
    let v = probe(&["--open-rss", &dir.display().to_string()]);
    let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
    Fresh {
        rss: at(0),
        open: at(2),
        newest_20: at(3),
    }
}

/// What a fresh process measured reading sessions (`report --read-rss DIR N`): resident
/// bytes of its own memory the open added, those the reads of the first `n` sessions by
/// creation added, then the same with mapped file pages counted.
fn read_rss(dir: &Path, n: usize) -> [f64; 4] {
    let v = probe(&["--read-rss", &dir.display().to_string(), &n.to_string()]);
    let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
    [at(0), at(1), at(3), at(4)]
}

/// The numbers a fresh process of this program prints when run with `args` (a probe mode).
fn probe(args: &[&str]) -> Vec<f64> {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(args)
        .output()
        .expect("child");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse::<f64>().unwrap_or(0.0))
        .collect()
}

/// Seconds a fresh process takes for the first read of session `id` of the store in `dir`:
/// in all, and the part that found and decoded its entry.
fn first_read(dir: &Path, id: &str) -> (f64, f64) {
    let v = probe(&["--first-read", &dir.display().to_string(), id]);
    (
        v.first().copied().unwrap_or(0.0),
        v.get(1).copied().unwrap_or(0.0),
    )
}

/// A store under `target/bench-stores/NAME` holding copies of the first `n` sessions by
/// creation of the store in `from` (built the first time).
fn copied(name: &str, from: &Path, n: usize) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bench-stores")
        .join(name);
    let done = dir.join("BUILT");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let source = Store::open_read_only(from, StoreOptions::default()).expect("open");
    let store = Store::open(&dir, buffered()).expect("open");
    for info in source
        .list_by(sessdb::store::ListOptions::new(sessdb::store::ListOrder::Created).with_limit(n))
        .expect("list")
    {
        let events = source.events(&info.header.id, ..).expect("read");
        store.restore_session(info.header, events).expect("copy");
    }
    store.close().expect("close");
    std::fs::write(&done, "").expect("mark");
    dir
}

/// Resident bytes a fresh process adds by opening `built`, per appended event.
fn rss_per_event(built: &Built) -> f64 {
    fresh(built.dir.path()).rss / (built.events.max(1) as f64)
}

/// A store kept under `target/bench-stores/NAME` (built by `spec` the first time; the body
/// layout in the name, so that a store of another layout is not reused).
fn kept(name: &str, spec: &WorkloadSpec) -> (std::path::PathBuf, String, u64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-stores");
    let dir = root.join(name);
    let done = dir.join("BUILT");
    if let Ok(text) = std::fs::read_to_string(&done) {
        let mut it = text.splitn(2, ' ');
        let events = it.next().and_then(|e| e.parse().ok()).unwrap_or(0);
        return (dir, it.next().unwrap_or("").to_owned(), events);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut store = Store::open(&dir, buffered()).expect("open");
    let summary = generate(spec, &mut store).expect("workload");
    store.close().expect("close");
    let what = format!(
        "DSH mix: {} sessions, {} events",
        summary.sessions.len(),
        summary.events
    );
    std::fs::write(&done, format!("{} {what}", summary.events)).expect("mark");
    (dir, what, summary.events)
}

/// A store of `sessions` one-turn sessions of ~20 events (DSH mix), kept under
/// `target/bench-stores` (the million rows' and the idle ship round's).
pub fn kept_one_turn_sessions(sessions: usize) -> (std::path::PathBuf, String, u64) {
    let spec = WorkloadSpec {
        sessions,
        min_turns: 1,
        max_turns: 1,
        max_chunks: 2,
        ..WorkloadSpec::default()
    };
    kept(&format!("sessions-{sessions}-v5"), &spec)
}

/// A million sessions of ~20 events (DSH mix) against one session of the same events, each
/// opened in fresh processes, interleaved: open, resident memory, the newest 20 listed.
pub fn million_rows(quick: bool, reps: usize, rows: &mut Rows) {
    let sessions: usize = if quick { 100_000 } else { 1_000_000 };
    let (many_dir, many_name, many_events) = kept_one_turn_sessions(sessions);
    let (one_dir, one_name, _) = kept(
        &format!("one-session-{many_events}-v5"),
        &long_spec(many_events),
    );
    let (m, o) = pair(reps, || fresh(&many_dir).open, || fresh(&one_dir).open);
    rows.push(Row {
        what: "open in a fresh process, a million sessions (s)",
        unit: "s",
        subject: m,
        baseline_name: "one session of the same events",
        baseline: o,
        goal: "<= 2x",
        workload: format!("{many_name} against {one_name}"),
    });
    let per_session = |dir: &Path| fresh(dir).rss / sessions as f64;
    let (m, o) = pair(reps, || per_session(&many_dir), || per_session(&one_dir));
    rows.push(Row {
        what: "resident bytes after open, per session, a million sessions",
        unit: "B",
        subject: m,
        baseline_name: "one session of the same events, per the many's session",
        baseline: o,
        goal: "<= 64 B",
        workload: format!("{many_name} against {one_name}"),
    });
    let (m, o) = pair(
        reps,
        || {
            let f = fresh(&many_dir);
            f.open + f.newest_20
        },
        || {
            let f = fresh(&one_dir);
            f.open + f.newest_20
        },
    );
    rows.push(Row {
        what: "open + the 20 most recently updated (`ls -n 20 --sort updated -r`), fresh (s)",
        unit: "s",
        subject: m,
        baseline_name: "the same on one session of the same events",
        baseline: o,
        goal: "<= 50 ms",
        workload: many_name.clone(),
    });
    // Reading 1,000 of the million: what the reads add, against a store of those 1,000
    // alone (its open and the same reads); and the first read of one session against a
    // store holding only it.
    let thousand = copied(&format!("first-1000-of-{sessions}-v5"), &many_dir, 1000);
    let single = copied(&format!("first-1-of-{sessions}-v5"), &many_dir, 1);
    // The bound: own memory after the open and the reads of 1,000 sessions of the
    // million, against the million's index (its open alone) plus a store of those 1,000
    // opened and read.
    let (m, o) = pair(
        reps,
        || {
            let r = read_rss(&many_dir, 1000);
            r[0] + r[1]
        },
        || {
            let index = read_rss(&many_dir, 0)[0];
            let r = read_rss(&thousand, 1000);
            index + r[0] + r[1]
        },
    );
    rows.push(Row {
        what: "own memory (heap) after open and reading 1,000 of a million sessions (B)",
        unit: "B",
        subject: m,
        baseline_name: "the million's open alone + a store of those 1,000, opened and read",
        baseline: o,
        goal: "<= 1x",
        workload: many_name.clone(),
    });
    // Mapped pages of the log the reads touched count as resident too (the kernel drops
    // them under pressure): shown, no goal.
    let (m, o) = pair(
        reps,
        || read_rss(&many_dir, 1000)[3],
        || {
            let r = read_rss(&thousand, 1000);
            r[2] + r[3]
        },
    );
    rows.push(Row {
        what: "resident bytes with mapped file pages the same reads add (B)",
        unit: "B",
        subject: m,
        baseline_name: "a store of those 1,000 alone, opened and read",
        baseline: o,
        goal: "",
        workload: many_name.clone(),
    });
    let id = Store::open_read_only(&single, StoreOptions::default())
        .expect("open")
        .list()
        .expect("list")
        .first()
        .map(|s| s.header.id.clone())
        .expect("a session");
    for (what, part) in [
        ("the first read of a session's events, fresh (s)", 0),
        ("of it, finding and decoding its entry (s)", 1),
    ] {
        let pick = |r: (f64, f64)| if part == 0 { r.0 } else { r.1 };
        let (m, o) = pair(
            reps,
            || pick(first_read(&many_dir, &id)),
            || pick(first_read(&single, &id)),
        );
        rows.push(Row {
            what,
            unit: "s",
            subject: m,
            baseline_name: "the same in a store holding only that session",
            baseline: o,
            goal: if part == 0 { "<= 2x" } else { "" },
            workload: many_name.clone(),
        });
    }
}

/// The open rows on `main` (built from [`main_spec`]).
pub fn open_rows(main: &Built, quick: bool, reps: usize, rows: &mut Rows) {
    let (c, f) = pair(
        reps,
        || open_time(main.dir.path(), true),
        || open_time(main.dir.path(), false),
    );
    rows.push(Row {
        what: "open from the checkpoint (s)",
        unit: "s",
        subject: c,
        baseline_name: "full replay of the same store",
        baseline: f,
        goal: "<= 3%",
        workload: main.name.clone(),
    });
    let big = build(&WorkloadSpec {
        sessions: main_spec(quick).sessions * 4,
        ..main_spec(quick)
    });
    let (b, s) = pair(
        reps,
        || open_time(big.dir.path(), true),
        || open_time(main.dir.path(), true),
    );
    rows.push(Row {
        what: "open from the checkpoint, 4x the history (s)",
        unit: "s",
        subject: b,
        baseline_name: "the same at a quarter of the history",
        baseline: s,
        goal: "<= 1.5x",
        workload: format!("{} against {}", big.name, main.name),
    });
    let (b, s) = pair(
        reps,
        || open_writable_time(big.dir.path()),
        || open_writable_time(main.dir.path()),
    );
    rows.push(Row {
        what: "open writable, 4x the history (s)",
        unit: "s",
        subject: b,
        baseline_name: "the same at a quarter of the history",
        baseline: s,
        goal: "<= 1.5x",
        workload: format!("{} against {}", big.name, main.name),
    });
    let (m4, m1) = pair(reps, || rss_per_event(&big), || rss_per_event(main));
    rows.push(Row {
        what: "resident memory after open, B/event",
        unit: "B",
        subject: m4,
        baseline_name: "the same, the store of a quarter",
        baseline: m1,
        goal: "<= 20 B",
        workload: format!("{} against {}", big.name, main.name),
    });
}

/// One long session of about `events` events (the DSH mix's turns, one after another).
fn long_spec(events: u64) -> WorkloadSpec {
    // A turn of this mix is about 85 events.
    let turns = (events / 85).max(1);
    WorkloadSpec {
        sessions: 1,
        min_turns: turns,
        max_turns: turns,
        max_chunks: 60,
        ..WorkloadSpec::default()
    }
}

/// Many short sessions, about `events` in all (one turn of the mix each, ~85 events).
fn many_spec(events: u64) -> WorkloadSpec {
    WorkloadSpec {
        sessions: usize::try_from(events / 85).unwrap_or(1).max(2),
        min_turns: 1,
        max_turns: 1,
        max_chunks: 60,
        ..WorkloadSpec::default()
    }
}

/// Many sessions against one long session (open time per event), and tail-50 of the long one.
pub fn shape_rows(
    quick: bool,
    big: bool,
    reps: usize,
    run: &dyn Fn(&str) -> bool,
    rows: &mut Rows,
) {
    let events = if quick {
        100_000
    } else if big {
        10_000_000
    } else {
        1_000_000
    };
    let long = build(&long_spec(events));
    if run("open") {
        let many = build(&many_spec(events));
        let (many_n, long_n) = (many.events, long.events);
        let (m, l) = pair(
            reps,
            || open_time(many.dir.path(), true) / many_n as f64,
            || open_time(long.dir.path(), true) / long_n as f64,
        );
        rows.push(Row {
            what: "open per event, many short sessions (ns)",
            unit: "s/ev",
            subject: m,
            baseline_name: "the same, one long session",
            baseline: l,
            goal: "<= 2x",
            workload: format!("{} against {}", many.name, long.name),
        });
        let (mm, ml) = pair(reps, || rss_per_event(&many), || rss_per_event(&long));
        rows.push(Row {
            what: "resident memory after open, B/event, many sessions",
            unit: "B",
            subject: mm,
            baseline_name: "the same, one long session",
            baseline: ml,
            goal: "<= 2x",
            workload: format!("{} against {}", many.name, long.name),
        }); // `sessdb ls -n 20 --sort updated -r`: the 20 most recently updated sessions, against
        // the whole listing it used to take (every header copied, then sorted).
        let store =
            Store::open_read_only(many.dir.path(), sessdb::StoreOptions::default()).expect("open");
        let newest = ListOptions::new(ListOrder::Updated)
            .with_direction(Direction::Descending)
            .with_limit(20);
        let per_call = |f: &dyn Fn()| {
            let t = Instant::now();
            for _ in 0..20 {
                f();
            }
            t.elapsed().as_secs_f64() / 20.0
        };
        let (top, whole) = pair(
            reps,
            || per_call(&|| drop(std::hint::black_box(store.list_by(newest)))),
            || per_call(&|| drop(std::hint::black_box(store.list().expect("list")))),
        );
        rows.push(Row {
            what: "the 20 most recently updated sessions (s)",
            unit: "s",
            subject: top,
            baseline_name: "the whole listing, every session copied",
            baseline: whole,
            goal: "<= 10% (until the catalog is read on demand)",
            workload: many.name.clone(),
        });
    }
    if run("tail") {
        let store =
            Store::open_read_only(long.dir.path(), sessdb::StoreOptions::default()).expect("open");
        let id = store
            .list()
            .expect("list")
            .into_iter()
            .max_by_key(|s| s.events)
            .expect("session")
            .header
            .id;
        let bytes: Vec<u8> = store
            .last_events(&id, 50)
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
                    std::hint::black_box(store.last_events(&id, 50).expect("read"));
                })
            },
            || {
                time_n(2000, &mut || {
                    std::hint::black_box(bytes.clone());
                })
            },
        );
        rows.push(Row {
            what: "tail-50 of the long session (s)",
            unit: "s",
            subject: t,
            baseline_name: "copying the same data bytes",
            baseline: c,
            goal: "<= 10 us",
            workload: long.name.clone(),
        });
    }
}

/// Opens the many-sessions store (`big`: the open-growth row's 4x store) `n` times, printing
/// each open's time (for `perf`).
pub fn profile_many(quick: bool, big: bool, n: usize) {
    let many = if big {
        build(&WorkloadSpec {
            sessions: main_spec(quick).sessions * 4,
            ..main_spec(quick)
        })
    } else {
        build(&many_spec(if quick { 100_000 } else { 1_000_000 }))
    };
    println!("{}", many.name);
    for _ in 0..n {
        println!("{:.2} ms", open_time(many.dir.path(), true) * 1e3);
    }
}

/// The open-growth row's two stores (kept under `target/bench-stores`), opened read-only
/// alternately `n` times each: prints each one's median and their ratio (`big`: the larger
/// store alone, for `perf`).
pub fn profile_growth(quick: bool, big: bool, writable: bool, n: usize) {
    let mut keep = Vec::new();
    let one = main_spec(quick);
    let four = WorkloadSpec {
        sessions: one.sessions * 4,
        ..main_spec(quick)
    };
    let (one_dir, one_name, _) = kept(&format!("growth-1x-{}-v5", one.sessions), &one);
    let (four_dir, four_name, _) = kept(&format!("growth-4x-{}-v5", four.sessions), &four);
    // `--writable`: opened writable, each store a copy of the kept one (a writable open may
    // change its files), made once.
    let (four_dir, one_dir, open): (_, _, fn(&Path) -> f64) = if writable {
        let copies = tempfile::tempdir().expect("tempdir");
        let (four, one) = (copies.path().join("four"), copies.path().join("one"));
        copy_dir(&four_dir, &four);
        copy_dir(&one_dir, &one);
        keep.push(copies);
        (four, one, open_writable_time)
    } else {
        (four_dir, one_dir, |d| open_time(d, true))
    };
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        a.push(open(&four_dir));
        b.push(if big { 1.0 } else { open(&one_dir) });
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (median(&mut a), median(&mut b));
    println!("{four_name}: {:.1} us", a * 1e6);
    println!("{one_name}: {:.1} us", b * 1e6);
    println!("ratio {:.2}x", a / b);
}

/// Copies the store in `from` (its two directories of files) to `to`.
fn copy_dir(from: &Path, to: &Path) {
    for sub in ["segments", "checkpoints"] {
        std::fs::create_dir_all(to.join(sub)).expect("mkdir");
        for entry in std::fs::read_dir(from.join(sub)).expect("list") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), to.join(sub).join(entry.file_name())).expect("copy");
        }
    }
}

/// Time of one checkpoint of the store in `dir` after appending a note to every 100th
/// session: a delta, or (`merge_every` 1) a full one.
fn checkpoint_after_one_percent(dir: &Path, ids: &[String], merge_every: u32, round: u64) -> f64 {
    let store =
        Store::open(dir, buffered().with_checkpoint_merge_every(merge_every)).expect("open");
    for id in ids.iter().step_by(100) {
        let data = format!("{{\"note\":\"round {round}\"}}");
        store
            .append(
                id,
                sessdb::Draft::log(
                    sessdb::LogType::new("plugin/note").expect("type"),
                    data.into_bytes(),
                )
                .ignorable(),
            )
            .expect("append");
    }
    let t = Instant::now();
    let info = store.checkpoint().expect("checkpoint").expect("written");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(info.full, merge_every == 1, "{info:?}");
    drop(store);
    secs
}

/// The bytes of the delta checkpoint written after one event appended to the one session of
/// the store in `dir` (`round` makes each event its own).
fn delta_after_one_event(dir: &Path, round: u64) -> f64 {
    let store = Store::open(dir, buffered().with_checkpoint_merge_every(1_000)).expect("open");
    let id = store.list().expect("list")[0].header.id.clone();
    let data = format!("{{\"note\":\"round {round}\"}}");
    store
        .append(
            &id,
            sessdb::Draft::log(
                sessdb::LogType::new("plugin/note").expect("type"),
                data.into_bytes(),
            )
            .ignorable(),
        )
        .expect("append");
    let info = store.checkpoint().expect("checkpoint").expect("written");
    assert!(!info.full, "{info:?}");
    let path = dir.join(format!("checkpoints/{:020}.ckpt", info.generation));
    std::fs::metadata(path).expect("checkpoint file").len() as f64
}

/// A delta checkpoint's bytes after one event appended to a session of ~1M events, against
/// the same after one appended to a session of a hundredth of its turns: a checkpoint costs
/// what changed, not the session's length (checkpoint body layout 5).
fn long_session_delta_row(quick: bool, reps: usize, rows: &mut Rows) {
    let turns = if quick { 4_000 } else { 20_000 };
    let one = |turns| {
        build(&WorkloadSpec {
            sessions: 1,
            min_turns: turns,
            max_turns: turns,
            ..WorkloadSpec::default()
        })
    };
    let (long, short) = (one(turns), one(turns / 100));
    let round = std::cell::Cell::new(0);
    let next = || {
        round.set(round.get() + 1);
        round.get()
    };
    let (a, b) = pair(
        reps,
        || delta_after_one_event(long.dir.path(), next()),
        || delta_after_one_event(short.dir.path(), next()),
    );
    rows.push(Row {
        what: "delta checkpoint after one event, long session (B)",
        unit: "B",
        subject: a,
        baseline_name: "the same, a session of 1/100 the turns",
        baseline: b,
        goal: "<= 2x",
        workload: format!("{} against {}", long.name, short.name),
    });
}

/// A checkpoint where 1 % of the sessions changed, a delta against a full one, on a store of
/// many short sessions (100,000; `quick`: 20,000).
pub fn checkpoint_rows(quick: bool, reps: usize, rows: &mut Rows) {
    let sessions = if quick { 20_000 } else { 100_000 };
    let built = build(&WorkloadSpec {
        sessions,
        min_turns: 1,
        max_turns: 1,
        max_chunks: 10,
        ..WorkloadSpec::default()
    });
    let ids: Vec<String> = Store::open_read_only(built.dir.path(), StoreOptions::default())
        .expect("open")
        .list()
        .expect("list")
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    let round = std::cell::Cell::new(0);
    let next = || {
        round.set(round.get() + 1);
        round.get()
    };
    let (delta, full) = pair(
        reps,
        || checkpoint_after_one_percent(built.dir.path(), &ids, 8, next()),
        || checkpoint_after_one_percent(built.dir.path(), &ids, 1, next()),
    );
    long_session_delta_row(quick, reps, rows);
    rows.push(Row {
        what: "checkpoint, 1 % of the sessions changed (s)",
        unit: "s",
        subject: delta,
        baseline_name: "a full checkpoint of the same store",
        baseline: full,
        goal: "<= 5%",
        workload: built.name,
    });
}

//! The PostgreSQL rows: shipping a store against a bare `COPY` of the same rows into the same
//! tables, and the lag of `ship --follow`'s loop beside a steady writer. On a private cluster
//! (`sessdb_tests::pg`); skipped, and said so, without PostgreSQL's server binaries.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sessdb::store::{ListOptions, ListOrder};
use sessdb::{Draft, LogType, SessionHeader, Store, StoreOptions};
use sessdb_postgres::Shipper;
use sessdb_workload::WorkloadSpec;

use crate::measure::{Row, Rows, pair, stat};
use crate::open;

/// Drops the tables (a fresh database for each repetition), every one the schema makes,
/// then creates them empty.
fn reset(url: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    c.batch_execute(
        "DROP VIEW IF EXISTS sessdb_messages; DROP TABLE IF EXISTS sessdb_surface, sessdb_events, sessdb_sessions, sessdb_stores, sessdb_erased, sessdb_layout CASCADE;",
    )
    .expect("drop");
    drop(Shipper::new(url, "schema").expect("schema"));
    c.batch_execute("DELETE FROM sessdb_stores").expect("empty");
}

fn copy_out(c: &mut postgres::Client, table: &str) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut c
            .copy_out(&format!("COPY {table} TO STDOUT"))
            .expect("copy out"),
        &mut out,
    )
    .expect("read");
    out
}

fn copy_in(tx: &mut postgres::Transaction<'_>, table: &str, rows: &[u8]) {
    let mut w = tx
        .copy_in(&format!("COPY {table} FROM STDIN"))
        .expect("copy in");
    std::io::Write::write_all(&mut w, rows).expect("write");
    w.finish().expect("finish");
}

pub fn rows(quick: bool, reps: usize, rows: &mut Rows) {
    let Some(pg) = sessdb_tests::pg::Cluster::start() else {
        println!("postgres rows skipped: no PostgreSQL server binaries on this machine");
        return;
    };
    let url = pg.url();
    let built = open::build(&WorkloadSpec {
        sessions: if quick { 5 } else { 20 },
        ..open::main_spec(quick)
    });
    let store = Store::open_read_only(built.dir.path(), StoreOptions::default()).expect("open");
    let events = store.stats().events;
    // The rows a ship writes, captured once for the baseline.
    reset(&url);
    Shipper::new(&url, "bench")
        .expect("shipper")
        .ship(&store)
        .expect("ship");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let captured: Vec<(&str, Vec<u8>)> = [
        "sessdb_stores",
        "sessdb_sessions",
        "sessdb_events",
        "sessdb_surface",
    ]
    .into_iter()
    .map(|t| (t, copy_out(&mut c, t)))
    .collect();
    drop(c);
    let (s, b) = pair(
        reps,
        || {
            reset(&url);
            let t = Instant::now();
            let report = Shipper::new(&url, "bench")
                .expect("shipper")
                .ship(&store)
                .expect("ship");
            assert_eq!(report.events, events);
            events as f64 / t.elapsed().as_secs_f64()
        },
        || {
            reset(&url);
            let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            let t = Instant::now();
            let mut tx = c.transaction().expect("begin");
            for (table, bytes) in &captured {
                copy_in(&mut tx, table, bytes);
            }
            tx.commit().expect("commit");
            events as f64 / t.elapsed().as_secs_f64()
        },
    );
    rows.push(Row {
        what: "ship a store to PostgreSQL (events/s)",
        unit: "ev/s",
        subject: s,
        baseline_name: "bare COPY of the same rows, same tables, one tx",
        baseline: b,
        goal: ">= 0.8x",
        workload: built.name.clone(),
    });
    lag_rows(&url, quick, rows);
}

/// A ship round with nothing new on a store of many idle sessions: what a `ship --follow`
/// loop pays every interval while the store is idle, against listing the same sessions
/// (`Store::list_each` in the store's order: the least any round that looks at every session
/// reads). `--only ship-idle`; 100,000 sessions (20,000 with `--quick`), shipped once first.
pub fn idle_rows(quick: bool, reps: usize, rows: &mut Rows) {
    let Some(pg) = sessdb_tests::pg::Cluster::start() else {
        println!("postgres rows skipped: no PostgreSQL server binaries on this machine");
        return;
    };
    let url = pg.url();
    let sessions: usize = if quick { 20_000 } else { 100_000 };
    let (dir, name, _) = open::kept_one_turn_sessions(sessions);
    let store = Store::open_read_only(&dir, StoreOptions::default()).expect("open");
    reset(&url);
    let mut shipper = Shipper::new(&url, "bench-idle").expect("shipper");
    // The positions are checked against PostgreSQL once at the start, not within the rows.
    shipper.set_recheck_every(Duration::from_secs(24 * 3600));
    while shipper.ship(&store).expect("ship").transactions > 0 {}
    let (s, b) = pair(
        reps,
        || {
            let t = Instant::now();
            let report = shipper.ship(&store).expect("ship");
            assert_eq!((report.events, report.transactions), (0, 0));
            t.elapsed().as_secs_f64()
        },
        || {
            let t = Instant::now();
            let mut n = 0usize;
            store
                .list_each(ListOptions::new(ListOrder::Stored), |_| n += 1)
                .expect("list");
            assert!(n >= sessions);
            t.elapsed().as_secs_f64()
        },
    );
    rows.push(Row {
        what: "an idle ship round (nothing new), many sessions (s)",
        unit: "s",
        subject: s,
        baseline_name: "listing the same sessions (list_each)",
        baseline: b,
        goal: "<= 2x",
        workload: name,
    });
}

/// A writer appends at a steady rate while a follow loop (read-only store, refresh and ship
/// every 50 ms, as `ship --follow --interval-ms 50`) ships; the lag of an event is from its
/// acknowledgement to the commit of the round that shipped it.
fn lag_rows(url: &str, quick: bool, rows: &mut Rows) {
    reset(url);
    let dir = tempfile::tempdir().expect("dir");
    let writer = Store::open(dir.path(), StoreOptions::default()).expect("open");
    writer
        .create_session(SessionHeader::new("lag", 0), Vec::new())
        .expect("create");
    let acks: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(vec![Instant::now()]));
    let done = Arc::new(AtomicBool::new(false));
    let seconds = if quick { 2.0 } else { 5.0 };
    let interval = Duration::from_millis(50);
    let shipped: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let follower = {
        let (url, dir, done, shipped) = (
            url.to_owned(),
            dir.path().to_owned(),
            Arc::clone(&done),
            Arc::clone(&shipped),
        );
        std::thread::spawn(move || {
            let store = Store::open_read_only(&dir, StoreOptions::default()).expect("open");
            let mut shipper = Shipper::new(&url, "lag").expect("shipper");
            loop {
                let last = done.load(Ordering::Acquire);
                store.refresh().expect("refresh");
                shipper.ship(&store).expect("ship");
                let n = store.session_len("lag").expect("len");
                shipped.lock().expect("lock").push((Instant::now(), n));
                if last {
                    return;
                }
                std::thread::sleep(interval);
            }
        })
    };
    let start = Instant::now();
    let mut turn = 1u64;
    while start.elapsed().as_secs_f64() < seconds {
        // About 2,000 events a second, a turn marker each.
        for _ in 0..20 {
            writer
                .append(
                    "lag",
                    Draft::log(
                        &LogType::TURN_START,
                        format!("{{\"turn\":{turn}}}").into_bytes(),
                    ),
                )
                .expect("append");
            acks.lock().expect("lock").push(Instant::now());
            turn += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done.store(true, Ordering::Release);
    follower.join().expect("follower");
    let acks = acks.lock().expect("lock").clone();
    let shipped = shipped.lock().expect("lock").clone();
    let lags: Vec<f64> = acks
        .iter()
        .enumerate()
        .filter_map(|(seq, at)| {
            shipped
                .iter()
                .find(|(_, n)| *n > seq as u64)
                .map(|(t, _)| t.saturating_duration_since(*at).as_secs_f64())
        })
        .collect();
    let all = stat(lags.clone());
    let mut sorted = lags;
    sorted.sort_by(f64::total_cmp);
    let p99 = sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)];
    let interval_stat = stat(vec![interval.as_secs_f64()]);
    rows.push(Row {
        what: "ship --follow lag, p50 (s)",
        unit: "s",
        subject: all,
        baseline_name: "the follow interval",
        baseline: interval_stat,
        goal: "within a second",
        workload: format!(
            "{} turn markers over {seconds} s, ~2,000 events/s",
            acks.len() - 1
        ),
    });
    rows.push(Row {
        what: "ship --follow lag, p99 (s)",
        unit: "s",
        subject: stat(vec![p99]),
        baseline_name: "the follow interval",
        baseline: interval_stat,
        goal: "within a second",
        workload: format!("{} turn markers over {seconds} s", acks.len() - 1),
    });
}

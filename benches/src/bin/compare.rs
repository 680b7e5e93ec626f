//! `cargo run --release -p sessdb-benches --bin compare`: the same workload through sessdb,
//! DSH-style JSONL and SQLite, five runs each; prints median times and the ratios to sessdb.

#![allow(clippy::expect_used, reason = "a benchmark aborts on any failure")]

use std::time::{Duration, Instant};

use sessdb_benches::{JsonlPeer, NullPeer, SessdbPeer, SqlitePeer};
use sessdb_workload::{Sink, WorkloadSpec, generate};

fn median<S: Sink>(spec: &WorkloadSpec, make: impl Fn(&std::path::Path) -> S) -> (Duration, u64) {
    let mut times = Vec::new();
    let mut events = 0;
    for _ in 0..5 {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut sink = make(dir.path());
        let t = Instant::now();
        events = generate(spec, &mut sink).expect("workload").events;
        times.push(t.elapsed());
    }
    times.sort();
    (times[2], events)
}

fn main() {
    let spec = WorkloadSpec {
        sessions: 32,
        max_turns: 10,
        max_chunks: 60,
        ..WorkloadSpec::default()
    };
    let (s, events) = median(&spec, |d| SessdbPeer::open(&d.join("store")).expect("open"));
    let (j, _) = median(&spec, JsonlPeer::new);
    let (q, _) = median(&spec, |d| {
        SqlitePeer::open(&d.join("db.sqlite")).expect("open")
    });
    let (generation, _) = median(&spec, |_| NullPeer::default());
    println!("workload: {events} events, every turn made durable at its end; median of 5 runs");
    println!(
        "generating the workload alone takes {:.2} ms; the times below exclude it",
        generation.as_secs_f64() * 1e3
    );
    let (s, j, q) = (
        s.saturating_sub(generation),
        j.saturating_sub(generation),
        q.saturating_sub(generation),
    );
    for (name, t) in [("sessdb", s), ("jsonl (DSH-style)", j), ("sqlite", q)] {
        println!(
            "{name:<18} {:>9.2} ms  {:>8.0} events/s  {:>5.2}x sessdb's time",
            t.as_secs_f64() * 1e3,
            events as f64 / t.as_secs_f64(),
            t.as_secs_f64() / s.as_secs_f64()
        );
    }
}

//! Appending the same generated workload (every turn made durable at its end) to sessdb, to
//! DSH-style JSONL files and to SQLite, in one criterion group so the ratios read off directly.

#![allow(clippy::expect_used, reason = "a benchmark aborts on any failure")]

use criterion::{Criterion, criterion_group, criterion_main};
use sessdb_benches::{JsonlPeer, SessdbPeer, SqlitePeer};
use sessdb_workload::{Sink, WorkloadSpec, generate};

fn spec() -> WorkloadSpec {
    WorkloadSpec {
        sessions: 8,
        max_turns: 8,
        max_chunks: 40,
        ..WorkloadSpec::default()
    }
}

fn run<S: Sink>(make: impl Fn(&std::path::Path) -> S) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut sink = make(dir.path());
    generate(&spec(), &mut sink).expect("workload");
}

fn append(c: &mut Criterion) {
    let mut g = c.benchmark_group("append_workload_durable_per_turn");
    g.sample_size(10);
    g.bench_function("sessdb", |b| {
        b.iter(|| run(|d| SessdbPeer::open(&d.join("store")).expect("open")))
    });
    g.bench_function("jsonl", |b| b.iter(|| run(JsonlPeer::new)));
    g.bench_function("sqlite", |b| {
        b.iter(|| run(|d| SqlitePeer::open(&d.join("db.sqlite")).expect("open")))
    });
    g.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);

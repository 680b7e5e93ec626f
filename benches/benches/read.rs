//! Reading the last 50 events of a session of 1k and of 200k events, from a reopened store
//! (sealed segments mapped): every read checks each event's own CRC. Beside it, in the same
//! group, the two costs a read cannot avoid on the same bytes: copying them, and one CRC-32
//! over them — so the report shows what the checksum adds and that tail-50 does not grow
//! with the session's length.

#![allow(clippy::expect_used, reason = "a benchmark aborts on any failure")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use sessdb::{Draft, SessionHeader, Store, StoreOptions};
use sessdb_benches::user_draft;

fn store_with(dir: &std::path::Path, events: u64) -> Store {
    let store = Store::open(dir, StoreOptions::default()).expect("open");
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .expect("create");
    let mut i = 0;
    while i < events {
        let batch: Vec<Draft> = (i..(i + 1000).min(events)).map(user_draft).collect();
        i += batch.len() as u64;
        store.append_batch("s", batch).expect("append");
    }
    store.close().expect("close");
    drop(store);
    Store::open_read_only(dir, sessdb::StoreOptions::default()).expect("reopen")
}

fn tail(c: &mut Criterion) {
    let mut g = c.benchmark_group("tail_50");
    g.sample_size(30).measurement_time(Duration::from_secs(3));
    for n in [1_000u64, 200_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = store_with(dir.path(), n);
        let bytes: Vec<u8> = store
            .last_events("s", 50)
            .expect("read")
            .iter()
            .flat_map(|e| e.data().to_vec())
            .collect();
        g.bench_function(format!("sessdb_{n}"), |b| {
            b.iter(|| black_box(store.last_events("s", 50).expect("read")))
        });
        if n == 1_000 {
            g.bench_function("copy_same_data_bytes", |b| {
                b.iter(|| black_box(bytes.clone()))
            });
            g.bench_function("crc32_same_data_bytes", |b| {
                b.iter(|| black_box(crc32fast::hash(black_box(&bytes))))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, tail);
criterion_main!(benches);

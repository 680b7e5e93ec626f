//! The JSONL importer on arbitrary file contents, raw or zstd (by the zstd magic number): an import report or an error,
//! never a panic; an imported session reads back.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use sessdb::storage::MemStorage;
use sessdb::{Store, StoreOptions};
use sessdb_formats::jsonl::import_jsonl;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    // zstd frames start with their magic number; anything else is read as raw JSONL.
    let zstd = data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    let path = dir.path().join(if zstd {
        "session.jsonl.zstd"
    } else {
        "session.jsonl"
    });
    std::fs::write(&path, data).expect("write");
    let store =
        Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default()).expect("open");
    if let Ok(report) = import_jsonl(&store, &path) {
        for s in report.sessions {
            assert_eq!(
                store.events(&s.id, ..).expect("read").len() as u64,
                s.events
            );
        }
    }
});

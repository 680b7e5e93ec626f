//! The SQLite importer on arbitrary database files: a report or an error, never a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use sessdb::storage::MemStorage;
use sessdb::{Store, StoreOptions};
use sessdb_formats::sqlite::import_sqlite;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("in.sqlite");
    std::fs::write(&path, data).expect("write");
    let store =
        Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default()).expect("open");
    let _ = import_sqlite(&store, &path);
});

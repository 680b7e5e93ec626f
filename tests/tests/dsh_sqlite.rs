//! A database DSH's own SQLite backend wrote (schema 17; `tests/fixtures/dsh-sqlite/`, from
//! the conformance data DSH's code made): every session imports with DSH's event count and
//! DSH's surface, a second import skips them all, and a damaged row is refused naming it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use sessdb::json::JsonRef;
use sessdb_formats::Outcome;
use sessdb_formats::sqlite::import_sqlite;
use sessdb_tests::mem_store;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh-sqlite")
}

/// The fixture database, decompressed into `dir`.
fn database(dir: &Path) -> PathBuf {
    let packed = std::fs::read(fixtures().join("dsh-realistic-a.sqlite.zst")).unwrap();
    let db = dir.join("dsh.sqlite");
    std::fs::write(&db, zstd::stream::decode_all(&packed[..]).unwrap()).unwrap();
    db
}

#[test]
fn a_dsh_database_imports_as_dsh_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let expect = std::fs::read(fixtures().join("dsh-realistic-a.sqlite.expect.json")).unwrap();
    let expect = JsonRef::new(expect.trim_ascii());
    let store = mem_store();
    let report = import_sqlite(&store, &db, &mut |_| {}).unwrap();
    let want: Vec<_> = expect.elements().collect();
    assert_eq!(report.sessions.len(), want.len());
    for s in &want {
        let id = s.get("id").unwrap().as_str().unwrap().into_owned();
        let events = s.get("events").unwrap().as_i64().unwrap().unsigned_abs();
        let surface: Vec<u64> = s
            .get("surface")
            .unwrap()
            .elements()
            .map(|n| n.as_i64().unwrap().unsigned_abs())
            .collect();
        assert_eq!(store.session_len(&id).unwrap(), events, "{id}");
        assert_eq!(store.surface(&id).unwrap(), surface, "{id}");
    }
    // Again: nothing new.
    let again = import_sqlite(&store, &db, &mut |_| {}).unwrap();
    assert!(again.sessions.iter().all(|s| s.outcome == Outcome::Skipped));

    // A row whose packed payload is damaged: refused naming the row, nothing stored.
    let conn = Connection::open(&db).unwrap();
    let rowid: i64 = conn
        .query_row(
            "SELECT rowid FROM events WHERE type = 'text-chunks' ORDER BY rowid LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE events SET data = '{\"turn\":1}' WHERE rowid = ?1",
        [rowid],
    )
    .unwrap();
    drop(conn);
    let fresh = mem_store();
    let err = import_sqlite(&fresh, &db, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, sessdb_formats::Error::InvalidRow { rowid: r, .. } if *r == rowid),
        "{err}"
    );
    assert!(fresh.list().is_empty());
}

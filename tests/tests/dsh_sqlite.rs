//! The databases DSH's own SQLite backend wrote (schema 17; `tests/fixtures/dsh-sqlite/`,
//! from the conformance data DSH's code made): every session imports with DSH's event count
//! and DSH's surface, a second import skips them all, a damaged row is refused naming it, and
//! the export writes DSH's rows back.

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

/// The databases DSH wrote.
const DATABASES: [&str; 2] = ["dsh-realistic-a", "dsh-raw-pack-a"];

/// A fixture database, decompressed into `dir`.
fn database(dir: &Path, name: &str) -> PathBuf {
    let packed = std::fs::read(fixtures().join(format!("{name}.sqlite.zst"))).unwrap();
    let db = dir.join(format!("{name}.sqlite"));
    std::fs::write(&db, zstd::stream::decode_all(&packed[..]).unwrap()).unwrap();
    db
}

#[test]
fn every_dsh_database_imports_as_dsh_loads_it() {
    for name in DATABASES {
        imports_as_dsh_loads_it(name);
    }
}

fn imports_as_dsh_loads_it(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), name);
    let expect = std::fs::read(fixtures().join(format!("{name}.sqlite.expect.json"))).unwrap();
    let expect = JsonRef::new(expect.trim_ascii());
    let store = mem_store();
    let report = import_sqlite(&store, &db).unwrap();
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
        assert_eq!(store.session_len(&id).unwrap(), events, "{name} {id}");
        assert_eq!(store.surface(&id).unwrap(), surface, "{name} {id}");
    }
    // Again: nothing new.
    let again = import_sqlite(&store, &db).unwrap();
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
    let err = import_sqlite(&fresh, &db).unwrap_err();
    assert!(
        matches!(&err, sessdb_formats::Error::InvalidRow { rowid: r, .. } if *r == rowid),
        "{err}"
    );
    assert!(fresh.list().unwrap().is_empty());
}

/// `export --sqlite --dsh` writes what DSH's backend checks when it opens a database: its
/// application id and schema version, its schema 17 object for object, the bookkeeping rows,
/// a file only its owner may read; and the sessions read back unchanged.
#[test]
fn every_dsh_database_written_back_by_sessdb_is_one_dsh_opens() {
    for name in DATABASES {
        written_back_is_one_dsh_opens(name);
    }
}

fn written_back_is_one_dsh_opens(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let original = database(dir.path(), name);
    let store = mem_store();
    import_sqlite(&store, &original).unwrap();
    let written = dir.path().join("back.sqlite");
    // The default layout is DSH's.
    let options = sessdb_formats::sqlite::SqliteExportOptions::default();
    let report = sessdb_formats::sqlite::export_sqlite(&store, &written, &options).unwrap();
    assert_eq!(report.events, store.stats().events);
    assert_eq!(report.sessions.len(), store.list().unwrap().len());
    assert_eq!(report.file, written);
    assert_eq!(report.bytes, std::fs::metadata(&written).unwrap().len());
    assert!(
        !dir.path().join("back.sqlite-wal").exists(),
        "no log left beside it"
    );
    let schema = |db: &Path| -> (i64, i64, Vec<(String, String)>) {
        let c = Connection::open(db).unwrap();
        let app = c
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        let version = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        let mut stmt = c
            .prepare("SELECT name, coalesce(sql, '') FROM sqlite_schema ORDER BY name")
            .unwrap();
        let objects = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (app, version, objects)
    };
    assert_eq!(schema(&written), schema(&original));
    let c = Connection::open(&written).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let state: (i64, String) = c
        .query_row(
            "SELECT singleton, store_id FROM persistence_state",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((state.0, state.1.len()), (1, 36));
    let revisions: i64 = c
        .query_row("SELECT min(revision) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert!(revisions >= 1);
    // Rows with sources carry DSH's varint blobs.
    let blobs: i64 = c
        .query_row(
            "SELECT count(*) FROM events WHERE typeof(source_event_seqs) = 'blob'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(blobs > 0);
    drop(c);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&written).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    // Row for row DSH's: packed rows where DSH's batches put them, the same data text, the
    // same varint blobs (only the random ids and revision counts differ).
    let rows = |db: &Path| -> Vec<Vec<rusqlite::types::Value>> {
        let c = Connection::open(db).unwrap();
        let mut stmt = c
            .prepare("SELECT session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events ORDER BY session_id, seq")
            .unwrap();
        stmt.query_map([], |r| (0..8).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let (ours, theirs) = (rows(&written), rows(&original));
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b, "{name}");
    }
    let back = mem_store();
    import_sqlite(&back, &written).unwrap();
    for info in store.list().unwrap() {
        let id = &info.header.id;
        assert_eq!(back.header(id).unwrap(), info.header, "{id}");
        assert_eq!(
            back.events(id, ..).unwrap(),
            store.events(id, ..).unwrap(),
            "{id}"
        );
    }
}

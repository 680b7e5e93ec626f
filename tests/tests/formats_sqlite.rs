//! SQLite export and import: exact round trips, the fixtures through SQLite, JSON queries on
//! the export, and refusal of foreign or altered databases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb_tests::mem_store as store;
use std::path::Path;

use rusqlite::Connection;
use sessdb::Store;
use sessdb_formats::Error;
use sessdb_formats::jsonl::ExportOptions;
use sessdb_formats::sqlite::{SqliteExportOptions, export_sqlite, import_sqlite};
use sessdb_tests::FIXTURES;
use sessdb_workload::{WorkloadSpec, generate};

fn jsonl_bytes(store: &Store) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    sessdb_tests::export_jsonl_files(store, dir.path(), &ExportOptions::default())
}

fn through_sqlite(original: &Store) -> Store {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("export.sqlite");
    export_sqlite(original, &db, &analytics(), &mut |_| {}).unwrap();
    let copy = store();
    import_sqlite(&copy, &db, &mut |_| {}).unwrap();
    copy
}

#[test]
fn a_store_round_trips_through_sqlite_exactly() {
    let mut original = store();
    generate(&WorkloadSpec::default(), &mut original).unwrap();
    let copy = through_sqlite(&original);
    assert_eq!(jsonl_bytes(&copy), jsonl_bytes(&original));
    for info in original.list() {
        assert_eq!(
            copy.state(&info.header.id).unwrap(),
            original.state(&info.header.id).unwrap()
        );
    }
}

#[test]
fn every_fixture_survives_sqlite_byte_for_byte() {
    for name in FIXTURES {
        let s = store();
        let (text, _) = sessdb_tests::import_fixture(&s, name);
        let copy = through_sqlite(&s);
        let out = jsonl_bytes(&copy);
        assert_eq!(String::from_utf8(out[0].1.clone()).unwrap(), text, "{name}");
    }
}

#[test]
fn the_export_answers_json_queries() {
    let mut original = store();
    generate(&WorkloadSpec::default(), &mut original).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("export.sqlite");
    export_sqlite(&original, &db, &analytics(), &mut |_| {}).unwrap();
    let conn = Connection::open(&db).unwrap();
    let roles: Vec<String> = conn
        .prepare(
            "SELECT json_extract(data,'$.message.role') FROM events WHERE type='assistant/message'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(!roles.is_empty());
    assert!(roles.iter().all(|r| r == "assistant"));
    let replaces: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE json_extract(surface_op,'$.op') = 'replace'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // The compaction, the prune, and the fork child's inherited copy of the compaction.
    assert_eq!(replaces, 3);
    // The `messages` view gives each session's messages as `Session::messages` derives them:
    // the same seqs in surface order, the same JSON values.
    for info in original.list() {
        let id = &info.header.id;
        let viewed: Vec<(i64, String)> = conn
            .prepare("SELECT seq, message FROM messages WHERE session_id = ?1 ORDER BY position")
            .unwrap()
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let derived = original.messages(id).unwrap();
        assert_eq!(viewed.len(), derived.len(), "{id}");
        for ((seq, text), (want_seq, want)) in viewed.iter().zip(&derived) {
            assert_eq!(*seq as u64, *want_seq, "{id}");
            let (a, b) = (
                sessdb::json::JsonRef::new(text.as_bytes()),
                sessdb::json::JsonRef::new(want),
            );
            assert!(a.deep_eq(&b), "{id} seq {seq}");
        }
    }
    // The indexes answer the obvious queries.
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT seq FROM events WHERE session_id = 'x' AND type = 'tool/call'",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("events_by_session_type"), "{plan}");
}

/// A version-1 export (no indexes, surface or view) still imports.
#[test]
fn a_version_1_export_still_imports() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "DROP VIEW messages; DROP TABLE surface; DROP INDEX events_by_type;
             DROP INDEX events_by_session_type; PRAGMA user_version = 1;",
        )
        .unwrap();
    let s = store();
    import_sqlite(&s, &db, &mut |_| {}).unwrap();
    assert!(!s.list().is_empty());
}

fn exported(dir: &Path) -> std::path::PathBuf {
    let mut original = store();
    generate(
        &WorkloadSpec {
            sessions: 1,
            max_turns: 2,
            ..WorkloadSpec::default()
        },
        &mut original,
    )
    .unwrap();
    let db = dir.join("export.sqlite");
    export_sqlite(&original, &db, &analytics(), &mut |_| {}).unwrap();
    db
}

#[test]
fn foreign_or_altered_databases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    for (change, needle) in [
        ("PRAGMA application_id = 1146308688", "application_id"),
        ("PRAGMA user_version = 3", "user_version"),
        (
            "CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM sessions; END",
            "trigger t",
        ),
        ("CREATE VIEW v AS SELECT * FROM events", "view v"),
    ] {
        let copy = dir.path().join("altered.sqlite");
        std::fs::copy(&db, &copy).unwrap();
        Connection::open(&copy)
            .unwrap()
            .execute_batch(change)
            .unwrap();
        let err = import_sqlite(&store(), &copy, &mut |_| {}).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedFormat { .. }),
            "{change}: {err}"
        );
        assert!(err.to_string().contains(needle), "{change}: {err}");
    }
    // An index added for queries changes no row: the database still imports.
    let copy = dir.path().join("indexed.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    Connection::open(&copy)
        .unwrap()
        .execute_batch("CREATE INDEX i ON events(type); CREATE INDEX j ON events(session_id, type)")
        .unwrap();
    let indexed = store();
    import_sqlite(&indexed, &copy, &mut |_| {}).unwrap();
    assert!(!indexed.list().is_empty());
    let not_a_db = dir.path().join("junk.sqlite");
    std::fs::write(&not_a_db, b"this is not a database at all, just text").unwrap();
    // Refused as an input that is not an export, like a damaged JSONL file (not an I/O error).
    let err = import_sqlite(&store(), &not_a_db, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedFormat { found, .. } if found.contains("not a SQLite database")),
        "{err}"
    );
}

#[test]
fn an_invalid_row_is_named_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    let conn = Connection::open(&db).unwrap();
    let rowid: i64 = conn
        .query_row(
            "SELECT rowid FROM events WHERE type = 'user/message' ORDER BY seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE events SET surface_op = NULL WHERE rowid = ?1",
        [rowid],
    )
    .unwrap();
    drop(conn);
    let s = store();
    let err = import_sqlite(&s, &db, &mut |_| {}).unwrap_err();
    match &err {
        Error::InvalidRow {
            table: "events",
            rowid: r,
            ..
        } => assert_eq!(*r, rowid),
        other => panic!("expected InvalidRow, got {other}"),
    }
    assert!(err.to_string().contains("surface-op-required"), "{err}");
    assert!(s.list().is_empty());
}

#[test]
fn an_input_database_is_only_read_nothing_appears_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    // A name that needs escaping in a URI, and a database in WAL mode.
    let db = exported(dir.path());
    let odd = dir.path().join("in put?#%.sqlite");
    std::fs::rename(&db, &odd).unwrap();
    let conn = Connection::open(&odd).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let copy = store();
    let report = import_sqlite(&copy, &odd, &mut |_| {}).unwrap();
    assert!(!report.sessions.is_empty());
    let after: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "no -wal or -shm beside the input");

    // A write-ahead log with content holds rows the main file lacks: refused, not skipped.
    let live = Connection::open(&odd).unwrap();
    live.execute_batch(
        "PRAGMA wal_autocheckpoint = 0; CREATE TABLE extra(x); INSERT INTO extra VALUES (1);",
    )
    .unwrap();
    let err = import_sqlite(&store(), &odd, &mut |_| {}).unwrap_err();
    assert!(matches!(err, Error::UnsupportedFormat { .. }), "{err}");
    assert!(err.to_string().contains("write-ahead log"), "{err}");
    drop(live);
}

/// sessdb's own, lossless layout (the default writes DSH's schema 17).
fn analytics() -> SqliteExportOptions {
    SqliteExportOptions {
        layout: sessdb_formats::sqlite::SqliteLayout::Analytics,
        ..SqliteExportOptions::default()
    }
}

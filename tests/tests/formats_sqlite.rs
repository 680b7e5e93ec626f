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
    export_sqlite(original, &db, &analytics()).unwrap();
    let copy = store();
    import_sqlite(&copy, &db).unwrap();
    copy
}

#[test]
fn a_store_round_trips_through_sqlite_exactly() {
    let mut original = store();
    generate(&WorkloadSpec::default(), &mut original).unwrap();
    let copy = through_sqlite(&original);
    assert_eq!(jsonl_bytes(&copy), jsonl_bytes(&original));
    for info in original.list().unwrap() {
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

/// The default workload in a store, its analytics export, and a connection to it (the
/// directory holds the file).
fn demo_export() -> (Store, tempfile::TempDir, Connection) {
    let mut original = store();
    generate(&WorkloadSpec::default(), &mut original).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("export.sqlite");
    export_sqlite(&original, &db, &analytics()).unwrap();
    let conn = Connection::open(&db).unwrap();
    (original, dir, conn)
}

#[test]
fn the_export_answers_json_queries() {
    let (original, _dir, conn) = demo_export();
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
            "SELECT count(*) FROM events WHERE surface_op = 'replace'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // The compaction, the prune, and the fork child's inherited copy of the compaction.
    assert_eq!(replaces, 3);
    let own: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE surface_op = 'replace' AND inherited IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(own, 2, "the fork's copy is marked inherited");
    let inherited: i64 = conn
        .query_row("SELECT count(*) FROM events WHERE inherited = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    let seeds: i64 = conn
        .query_row(
            "SELECT sum(seed_length) FROM sessions WHERE parent_session IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(inherited, seeds);
    // The `messages` view gives each session's messages as `Session::messages` derives them:
    // the same seqs in surface order, the same JSON values.
    for info in original.list().unwrap() {
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
        for ((seq, text), want) in viewed.iter().zip(&derived) {
            assert_eq!(*seq as u64, want.seq, "{id}");
            let (a, b) = (
                sessdb::json::JsonRef::new(text.as_bytes()),
                sessdb::json::JsonRef::new(want.json()),
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

/// Exports of versions 1 and 2 (their `surface_op` JSON text, no `inherited`; version 1 with
/// no indexes, surface or view) still import, to the same events.
#[test]
fn version_1_and_2_exports_still_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    let want = {
        let s = store();
        import_sqlite(&s, &db).unwrap();
        s.list()
            .unwrap()
            .iter()
            .map(|i| s.events(&i.header.id, ..).unwrap())
            .collect::<Vec<_>>()
    };
    for (version, ddl) in [
        (1, sessdb_formats::sqlite::DDL_V1),
        (2, sessdb_formats::sqlite::DDL_V2),
    ] {
        let old = dir.path().join(format!("v{version}.sqlite"));
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(ddl).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {}; PRAGMA user_version = {version};",
            sessdb_formats::sqlite::APPLICATION_ID
        ))
        .unwrap();
        conn.execute("ATTACH ?1 AS v3", [db.to_str().unwrap()])
            .unwrap();
        conn.execute_batch(
            "INSERT INTO sessions SELECT * FROM v3.sessions;
             INSERT INTO events SELECT session_id, seq, type, time, data, source_event_seqs,
               CASE surface_op WHEN 'append' THEN '\"append\"'
                 WHEN 'replace' THEN json_object('op', 'replace', 'start', replace_start, 'end', replace_end)
               END, ignorable, key_order FROM v3.events;",
        )
        .unwrap();
        if version == 2 {
            conn.execute_batch("INSERT INTO surface SELECT * FROM v3.surface;")
                .unwrap();
        }
        conn.execute_batch("DETACH v3").unwrap();
        drop(conn);
        let s = store();
        import_sqlite(&s, &old).unwrap();
        let got: Vec<_> = s
            .list()
            .unwrap()
            .iter()
            .map(|i| s.events(&i.header.id, ..).unwrap())
            .collect();
        assert_eq!(got, want, "version {version}");
    }
}

/// The `inherited` column must say what the header says.
#[test]
fn a_wrong_inherited_mark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    let conn = Connection::open(&db).unwrap();
    let changed = conn
        .execute(
            "UPDATE events SET inherited = 1 WHERE rowid = (SELECT min(e.rowid) FROM events e JOIN sessions s ON s.id = e.session_id WHERE s.parent_session IS NULL AND e.seq = 1)",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let err = import_sqlite(&store(), &db).unwrap_err();
    assert!(err.to_string().contains("inherited must be NULL"), "{err}");
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
    export_sqlite(&original, &db, &analytics()).unwrap();
    db
}

#[test]
fn foreign_or_altered_databases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = exported(dir.path());
    for (change, needle) in [
        ("PRAGMA application_id = 1146308688", "application_id"),
        ("PRAGMA user_version = 4", "user_version"),
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
        let err = import_sqlite(&store(), &copy).unwrap_err();
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
    import_sqlite(&indexed, &copy).unwrap();
    assert!(!indexed.list().unwrap().is_empty());
    let not_a_db = dir.path().join("junk.sqlite");
    std::fs::write(&not_a_db, b"this is not a database at all, just text").unwrap();
    // Refused as an input that is not an export, like a damaged JSONL file (not an I/O error).
    let err = import_sqlite(&store(), &not_a_db).unwrap_err();
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
    let err = import_sqlite(&s, &db).unwrap_err();
    match &err {
        Error::InvalidRow {
            table: "events",
            rowid: r,
            ..
        } => assert_eq!(*r, rowid),
        other => panic!("expected InvalidRow, got {other}"),
    }
    assert!(err.to_string().contains("surface-op-required"), "{err}");
    assert!(s.list().unwrap().is_empty());
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
    let report = import_sqlite(&copy, &odd).unwrap();
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
    let err = import_sqlite(&store(), &odd).unwrap_err();
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

/// FORMATS.md §3.1: its DDL is the code's, and each of its example queries runs on an export
/// of the demo workload and returns rows.
#[test]
fn the_documented_queries_answer() {
    let doc = include_str!("../../docs/FORMATS.md");
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let section = sessdb_tests::sql_block(doc, "### 3.1 Schema (`--layout analytics`)", 1);
    let ddl: String = section
        .lines()
        .filter(|l| !l.starts_with("PRAGMA"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        norm(&ddl),
        norm(sessdb_formats::sqlite::DDL),
        "FORMATS.md §3.1 DDL"
    );
    let queries = doc
        .split("<!-- queries -->")
        .nth(1)
        .and_then(|s| s.split("<!-- /queries -->").next())
        .and_then(|s| s.split("```sql").nth(1))
        .and_then(|s| s.split("```").next())
        .unwrap();
    let (_original, _dir, conn) = demo_export();
    let statements: Vec<String> = queries
        .split(';')
        .map(|q| {
            q.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|q| !q.trim().is_empty())
        .collect();
    assert!(statements.len() >= 5, "{queries}");
    for q in &statements {
        let mut stmt = conn.prepare(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        let n = stmt.query_map([], |_| Ok(())).unwrap().count();
        assert!(n > 0, "no rows: {q}");
    }
}

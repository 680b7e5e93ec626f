//! The export rows on the main DSH-mix store: JSONL export against a bare `BufWriter` loop
//! writing the same bytes, SQLite export (analytics layout) against a bare rusqlite loop
//! inserting the same rows into the same schema.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use sessdb::Store;

use crate::measure::{Row, Rows, pair, temp};
use crate::open::Built;

/// One exported row of the analytics layout's three tables, as the bare loop inserts it.
type SqlRow = Vec<rusqlite::types::Value>;

/// SQLite export of the store (the analytics layout: one row per event, the surface) vs a
/// bare rusqlite loop inserting the same rows into the same schema, with the same pragmas, in
/// one transaction.
pub fn sqlite_export_row(built: &Built, reps: usize, rows: &mut Rows) {
    use sessdb_formats::sqlite::{SqliteExportOptions, SqliteLayout, export_sqlite};
    let store =
        Store::open_read_only(built.dir.path(), sessdb::StoreOptions::default()).expect("open");
    let options = SqliteExportOptions {
        layout: SqliteLayout::Analytics,
        ..SqliteExportOptions::default()
    };
    let sample = temp();
    let db = sample.path().join("x.sqlite");
    export_sqlite(&store, &db, &options).expect("export");
    let conn = rusqlite::Connection::open(&db).expect("open sample");
    let read = |table: &str| -> Vec<SqlRow> {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table}"))
            .expect("select");
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, rusqlite::types::Value>(i))
                .collect()
        })
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
    };
    let tables: Vec<(&str, Vec<SqlRow>)> = ["sessions", "events", "surface"]
        .into_iter()
        .map(|t| (t, read(t)))
        .collect();
    drop(conn);
    let (e, b) = pair(
        reps,
        || {
            let out = temp();
            let t = Instant::now();
            export_sqlite(&store, &out.path().join("x.sqlite"), &options).expect("export");
            t.elapsed().as_secs_f64()
        },
        || {
            let out = temp();
            let t = Instant::now();
            let mut conn = rusqlite::Connection::open(out.path().join("x.sqlite")).expect("open");
            conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
                .expect("pragmas");
            let tx = conn.transaction().expect("tx");
            tx.execute_batch(sessdb_formats::sqlite::DDL)
                .expect("schema");
            for (table, table_rows) in &tables {
                let Some(first) = table_rows.first() else {
                    continue;
                };
                let marks = (1..=first.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>();
                let mut stmt = tx
                    .prepare(&format!(
                        "INSERT INTO {table} VALUES ({})",
                        marks.join(", ")
                    ))
                    .expect("insert");
                for row in table_rows {
                    stmt.execute(rusqlite::params_from_iter(row.iter()))
                        .expect("row");
                }
            }
            tx.commit().expect("commit");
            t.elapsed().as_secs_f64()
        },
    );
    rows.push(Row {
        what: "SQLite export of the store, analytics layout (s)",
        unit: "s",
        subject: e,
        baseline_name: "bare rusqlite insert loop, same schema and rows",
        baseline: b,
        goal: "time <= 1.11x",
        workload: built.name.clone(),
    });
}

/// JSONL export of the store vs writing the same bytes, line by line, with a bare BufWriter.
pub fn export_row(built: &Built, reps: usize, rows: &mut Rows) {
    let store =
        Store::open_read_only(built.dir.path(), sessdb::StoreOptions::default()).expect("open");
    let options = sessdb_formats::jsonl::ExportOptions::default();
    let sample = temp();
    let report =
        sessdb_formats::jsonl::export_jsonl(&store, sample.path(), &options).expect("export");
    let contents: Vec<Vec<u8>> = report
        .files
        .iter()
        .map(|(_, f)| std::fs::read(f).expect("read"))
        .collect();
    let export = || {
        let out = temp();
        let t = Instant::now();
        sessdb_formats::jsonl::export_jsonl(&store, out.path(), &options).expect("export");
        t.elapsed().as_secs_f64()
    };
    let (e, b) = pair(reps, export, || bare_loop(&contents, false));
    rows.push(Row {
        what: "JSONL export of the store (s)",
        unit: "s",
        subject: e,
        baseline_name: "bare BufWriter loop, same bytes",
        baseline: b,
        goal: "time <= 1.25x",
        workload: built.name.clone(),
    });
    // The export makes every file durable before it reports it written (each synced, then
    // renamed into place); the bare loop above syncs nothing. The same loop made durable at
    // its best (every file written, then each synced: the early ones are on their way to the
    // device by then) says how much of the gap is the device.
    let (e, d) = pair(reps, export, || bare_loop(&contents, true));
    rows.push(Row {
        what: "JSONL export of the store (s)",
        unit: "s",
        subject: e,
        baseline_name: "the same loop, every file then synced (durable)",
        baseline: d,
        goal: "(the device's share)",
        workload: built.name.clone(),
    });
}

/// Seconds writing `contents` line by line, a file each, with a bare `BufWriter`; `durable`:
/// then every file synced, and the directory.
fn bare_loop(contents: &[Vec<u8>], durable: bool) -> f64 {
    let out = temp();
    let t = Instant::now();
    let mut files = Vec::with_capacity(contents.len());
    for (i, c) in contents.iter().enumerate() {
        let f = File::create(out.path().join(i.to_string())).expect("file");
        let mut w = BufWriter::new(f);
        for line in c.split_inclusive(|&b| b == b'\n') {
            w.write_all(line).expect("write");
        }
        files.push(w.into_inner().expect("flush"));
    }
    if durable {
        for f in &files {
            f.sync_data().expect("sync");
        }
        File::open(out.path())
            .and_then(|d| d.sync_all())
            .expect("sync dir");
    }
    drop(files);
    t.elapsed().as_secs_f64()
}

/// Seconds of one JSONL export of `built` into a fresh directory.
pub fn jsonl_export_once(built: &Built) -> f64 {
    let store =
        Store::open_read_only(built.dir.path(), sessdb::StoreOptions::default()).expect("open");
    let out = temp();
    let t = Instant::now();
    sessdb_formats::jsonl::export_jsonl(
        &store,
        out.path(),
        &sessdb_formats::jsonl::ExportOptions::default(),
    )
    .expect("export");
    t.elapsed().as_secs_f64()
}

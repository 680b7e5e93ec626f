//! Writing DSH's own SQLite schema 17 (`docs/FORMATS.md` §3.5): a database DSH's backend
//! opens. Every event is a scalar row (DSH reads packed rows and compressed `data` but never
//! needs them); the identity and version pragmas, the exact schema, the bookkeeping rows and
//! the file mode are what DSH's open sequence checks.

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, params};
use sessdb::json::JsonRef;
use sessdb::store::SessionInfo;
use sessdb::{Event, Limits, Store};

use super::columns::{create_schema, surface_op_json, to_i64};
use super::dsh::{DSH_APPLICATION_ID, DSH_DDL, DSH_SCHEMA_VERSION, encode_sources};
use super::schema::sqlite_err;
use crate::pack::{Packer, is_packed_row};
use crate::{Error, Progress, Result};
use sessdb::random_uuid;

const WINDOW: u64 = 1024;

/// DSH's bounds of one packed row.
const MAX_ROW_MEMBERS: usize = 1024;
const MAX_ROW_BYTES: usize = 1 << 20;

/// DSH compresses a row's `data` of this many bytes or more, when that makes it smaller.
const COMPRESS_FROM: usize = 4096;

enum Insert {
    Sqlite(rusqlite::Error),
    Store(sessdb::Error),
}

/// One JSONL line the packer wrote, as a row: a packed row (`ignorable = 0`, `data` the row's
/// payload) or one event.
fn insert_line(
    stmt: &mut rusqlite::Statement<'_>,
    session: &str,
    line: &[u8],
) -> std::result::Result<(), Insert> {
    let row = JsonRef::new(line);
    if is_packed_row(&row) {
        let [ty, seq0, time0, data] = row.fields(["type", "seq0", "time0", "data"]);
        // The packer wrote this row; a missing field is a bug, said as one, never a zero.
        let (Some(seq0), Some(ty), Some(time0), Some(data)) = (
            seq0.and_then(|v| v.as_i64()),
            ty.and_then(|t| t.as_str()),
            time0.and_then(|v| v.as_i64()),
            data,
        ) else {
            return Err(Insert::Store(sessdb::Error::InvalidEnvelope {
                seq: None,
                problem: "a packed row the export wrote lacks a field".into(),
            }));
        };
        stmt.execute(params![
            session,
            seq0,
            ty,
            time0,
            data_value(data.bytes()),
            Option::<Vec<u8>>::None,
            Option::<String>::None,
            0
        ])
        .map_err(Insert::Sqlite)?;
        return Ok(());
    }
    // A stored event: judged as stored, not by an import's bounds (`Limits::stored`).
    let e = Event::from_jsonl(line, &Limits::stored()).map_err(Insert::Store)?;
    stmt.execute(params![
        session,
        to_i64(e.seq()),
        e.event_type(),
        e.time(),
        data_value(e.data()),
        e.sources().map(encode_sources),
        surface_op_json(e.surface_op()),
        e.ignorable().then_some(1)
    ])
    .map_err(Insert::Sqlite)?;
    Ok(())
}

/// `data` as DSH stores it: JSON text, or from 4 KiB on a zstd frame (level 3) when smaller.
fn data_value(json: &[u8]) -> Value {
    if json.len() >= COMPRESS_FROM
        && let Ok(packed) = zstd::bulk::compress(json, 3)
        && packed.len() < json.len()
    {
        return Value::Blob(packed);
    }
    Value::Text(String::from_utf8_lossy(json).into_owned())
}

/// Writes `chosen` sessions of `store` into the new database file `tmp`; returns the events
/// written.
pub(super) fn write(
    store: &Store,
    tmp: &Path,
    chosen: &[SessionInfo],
    progress: &mut dyn FnMut(Progress),
) -> Result<u64> {
    let err = sqlite_err(tmp);
    let mut conn = Connection::open(tmp).map_err(&err)?;
    // DSH refuses a database file that its group or others may read or write.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::io("chmod", tmp, e))?;
    }
    // Built with a rollback journal and no syncs (the replacement's commit syncs the file);
    // switched to WAL, DSH's mode, at the end.
    conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF;")
        .map_err(&err)?;
    let tx = conn.transaction().map_err(&err)?;
    create_schema(&tx, DSH_DDL, DSH_APPLICATION_ID, DSH_SCHEMA_VERSION).map_err(&err)?;
    tx.execute(
        "INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?1)",
        [random_uuid()],
    )
    .map_err(&err)?;
    let mut done = Progress {
        events_total: chosen.iter().map(|i| i.events).sum(),
        ..Progress::default()
    };
    {
        let mut session_row = tx
            .prepare("INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision) VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1)")
            .map_err(&err)?;
        let mut event_row = tx
            .prepare("INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            .map_err(&err)?;
        for info in chosen {
            let h = &info.header;
            let c = h.columns();
            session_row
                .execute(params![
                    h.id,
                    c.created_at,
                    c.cwd,
                    c.parent_session,
                    c.seed_length,
                    c.origin,
                    c.delegation_depth,
                    c.agent_preset,
                    random_uuid()
                ])
                .map_err(&err)?;
            // Chunk runs become packed rows as DSH's backend writes them (3…1,024 members,
            // at most 1 MiB): where an imported session's rows began, as remembered, else as
            // runs allow. The JSONL packer decides; its lines are turned into rows.
            let mut packer = Packer::bounded(true, MAX_ROW_MEMBERS, MAX_ROW_BYTES);
            let mut lines = Vec::new();
            let mut from = 0;
            while from < info.events {
                let to = (from + WINDOW).min(info.events);
                store.visit_events(&h.id, from..to, |e| {
                    let closes_turn = e.event_type() == "turn/end";
                    packer.push_ref(&e, &mut lines);
                    if closes_turn {
                        packer.flush(&mut lines);
                    }
                    Ok(())
                })?;
                if to == info.events {
                    packer.flush(&mut lines);
                }
                for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    insert_line(&mut event_row, &h.id, line).map_err(|e| match e {
                        Insert::Sqlite(e) => err(e),
                        Insert::Store(e) => Error::Store(e),
                    })?;
                }
                lines.clear();
                done.events_done += to - from;
                progress(done);
                from = to;
            }
        }
    }
    tx.commit().map_err(&err)?;
    // DSH's default journal mode, recorded in the file header (the log is checkpointed and
    // removed when this connection closes).
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(&err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(err(rusqlite::Error::InvalidQuery));
    }
    conn.close().map_err(|(_, e)| err(e))?;
    Ok(done.events_done)
}

//! Writing DSH's own SQLite schema 17 (`docs/FORMATS.md` §3.5): a database DSH's backend
//! opens. Every event is a scalar row (DSH reads packed rows and compressed `data` but never
//! needs them); the identity and version pragmas, the exact schema, the bookkeeping rows and
//! the file mode are what DSH's open sequence checks.

use std::path::Path;

use rusqlite::{Connection, params};
use sessdb::Store;
use sessdb::store::SessionInfo;

use super::columns::surface_op_json;
use super::dsh::{DSH_APPLICATION_ID, DSH_DDL, DSH_SCHEMA_VERSION, encode_sources, random_uuid};
use super::schema::sqlite_err;
use crate::{Error, Progress, Result};

const WINDOW: u64 = 1024;

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
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
    tx.execute_batch(DSH_DDL).map_err(&err)?;
    tx.execute_batch(&format!(
        "PRAGMA application_id = {DSH_APPLICATION_ID}; PRAGMA user_version = {DSH_SCHEMA_VERSION};"
    ))
    .map_err(&err)?;
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
            session_row
                .execute(params![
                    h.id,
                    h.created_at,
                    h.cwd,
                    h.parent_session,
                    h.seed_length.map(to_i64),
                    h.origin.map(|_| "subagent"),
                    to_i64(h.delegation_depth),
                    h.agent_preset,
                    random_uuid()
                ])
                .map_err(&err)?;
            for e in store.iter_events(&h.id, 0, info.events)? {
                let e = e?;
                // Stored data is validated JSON: UTF-8 text, as DSH stores it.
                let data = String::from_utf8_lossy(e.data());
                event_row
                    .execute(params![
                        h.id,
                        to_i64(e.seq()),
                        e.event_type(),
                        e.time(),
                        data,
                        e.sources().map(encode_sources),
                        surface_op_json(&e),
                        e.ignorable().then_some(1)
                    ])
                    .map_err(&err)?;
                done.events_done += 1;
                done.bytes_done += e.data().len() as u64;
                if done.events_done.is_multiple_of(WINDOW) {
                    progress(done);
                }
            }
            progress(done);
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

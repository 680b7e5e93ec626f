//! Import of a SQLite export: identity and schema checked first (bump and reject), opened
//! with `trusted_schema=OFF`, every row validated through the engine's acceptance function,
//! each session stored whole or not at all.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use sessdb::event::envelope;
use sessdb::{Event, Origin, SessionHeader, Store, SurfaceOp};

use super::dsh::{DSH_APPLICATION_ID, DSH_SCHEMA_VERSION};
use super::listing::sessions_and_progress;
use super::schema::{
    APPLICATION_ID, DDL, DDL_V1, DDL_V2, SCHEMA_VERSION, SCHEMA_VERSION_V1, SCHEMA_VERSION_V2,
    immutable_uri, input_err, reference_objects, schema_objects, wal_path,
};
use crate::admit::{Places, admit};
use crate::report::ImportReport;
use crate::target::{DryRun, RestoreTarget};
use crate::{Error, Progress, Result};

/// Imports every session of the database at `file`.
///
/// # Errors
/// `UnsupportedFormat` for another application id, user version or schema; `InvalidRow`
/// naming the row, seq and rule; SQLite errors. Every session is validated before any is
/// stored: after an error nothing is.
pub fn import_sqlite(store: &Store, file: &Path) -> Result<ImportReport> {
    import_sqlite_with_progress(store, file, &mut |_| {})
}

/// As [`import_sqlite`], telling `progress` how far it has come (for progress bars).
///
/// # Errors
/// As [`import_sqlite`].
pub fn import_sqlite_with_progress(
    store: &Store,
    file: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportReport> {
    import_into(&DryRun::new(store), file, &mut |_| {})?;
    import_into(store, file, progress)
}

/// What [`import_sqlite`] would do, storing nothing.
///
/// # Errors
/// As [`import_sqlite`].
pub fn plan_sqlite(store: &Store, file: &Path) -> Result<ImportReport> {
    import_into(&DryRun::new(store), file, &mut |_| {})
}

fn import_into(
    store: &dyn RestoreTarget,
    file: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportReport> {
    let err = input_err(file);
    let conn = open_input(file)?;
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(&err)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(&err)?;
    if app == DSH_APPLICATION_ID && version == DSH_SCHEMA_VERSION {
        return super::dsh::import_into(store, &conn, file, progress);
    }
    if app != APPLICATION_ID
        || ![SCHEMA_VERSION, SCHEMA_VERSION_V2, SCHEMA_VERSION_V1].contains(&version)
    {
        return Err(Error::UnsupportedFormat {
            file: file.to_owned(),
            found: format!("application_id {app:#010x}, user_version {version}"),
            expected: format!(
                "a sessdb export (application_id {APPLICATION_ID:#010x}, user_version {SCHEMA_VERSION}) or a DSH database (application_id {DSH_APPLICATION_ID:#010x}, user_version {DSH_SCHEMA_VERSION})"
            ),
        });
    }
    check_schema(&conn, file, version)?;
    let mut report = ImportReport::default();
    let (ids, mut done) = sessions_and_progress(&conn, &err)?;
    let mut rows = SessionRows::prepare(&conn, file, version)?;
    for id in ids {
        let (header, events, rowids) = rows.read(&id)?;
        let count = events.len() as u64;
        let places = Places::Rows {
            header: rowids.header,
            events: &rowids.events,
        };
        report
            .sessions
            .push(admit(store, file, header, events, places)?);
        done.events_done += count;
        progress(done);
    }
    Ok(report)
}

/// The input database, opened read-only and immutable: SQLite creates no `-wal` or `-shm`
/// file beside it. Immutable means SQLite ignores a write-ahead log; one with content holds
/// committed rows the main file lacks, so it is refused, not skipped.
fn open_input(file: &Path) -> Result<Connection> {
    let err = input_err(file);
    if file.is_dir() {
        // Said as `--jsonl` says a path of the wrong kind: what it is (exit 4 in the CLI).
        return Err(Error::Layout {
            path: file.to_owned(),
            problem: "is a directory, not a SQLite database file (name the database file; a DSH sessions root is imported with --jsonl)".into(),
        });
    }
    if !file.is_file() {
        return Err(Error::io(
            "open",
            file,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    let wal = wal_path(file);
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Err(Error::UnsupportedFormat {
            file: file.to_owned(),
            found: format!("a write-ahead log beside it ({})", wal.display()),
            expected: "a database whose log is checkpointed (sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)')".into(),
        });
    }
    let conn = Connection::open_with_flags(
        immutable_uri(file),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(&err)?;
    conn.execute_batch("PRAGMA trusted_schema = OFF;")
        .map_err(&err)?;
    Ok(conn)
}

/// The schema of a sessdb export of `version`, exactly. An index a user added for their
/// queries changes no row: tolerated. Any other object (a trigger, a view, a table, a
/// changed definition) is refused.
fn check_schema(conn: &Connection, file: &Path, version: i64) -> Result<()> {
    let reference = reference_objects(match version {
        SCHEMA_VERSION_V1 => DDL_V1,
        SCHEMA_VERSION_V2 => DDL_V2,
        _ => DDL,
    })?;
    let found: Vec<_> = schema_objects(conn, file)?
        .into_iter()
        .filter(|o| o.0 != "index" || reference.contains(o))
        .collect();
    if found == reference {
        return Ok(());
    }
    let extra: Vec<String> = found
        .iter()
        .filter(|o| !reference.contains(o))
        .map(|(t, n, _)| format!("{t} {n}"))
        .collect();
    Err(Error::UnsupportedFormat {
        file: file.to_owned(),
        found: if extra.is_empty() {
            "a schema that differs from sessdb's".into()
        } else {
            format!("unexpected schema objects: {}", extra.join(", "))
        },
        expected: "exactly the sessdb export schema".into(),
    })
}

/// The rows a session was read from (what an import's refusal names).
struct RowIds {
    header: i64,
    events: Vec<i64>,
}

/// The prepared reads of one session's rows.
struct SessionRows<'c> {
    file: &'c Path,
    /// Version 3: the surface op in plain columns, and `inherited`.
    v3: bool,
    header: rusqlite::Statement<'c>,
    events: rusqlite::Statement<'c>,
}

impl<'c> SessionRows<'c> {
    fn prepare(conn: &'c Connection, file: &'c Path, version: i64) -> Result<Self> {
        let err = input_err(file);
        let header = conn
            .prepare("SELECT rowid, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset FROM sessions WHERE id = ?1")
            .map_err(&err)?;
        // Version 3 keeps the surface op as plain columns; 1 and 2 as JSON text. Either way
        // the row is read in one shape: the op columns, then the flags (`inherited` is 3's
        // alone).
        let v3 = version == SCHEMA_VERSION;
        let events = conn
            .prepare(if v3 {
                "SELECT rowid, seq, type, time, data, source_event_seqs, surface_op, ignorable, key_order, replace_start, replace_end, inherited FROM events WHERE session_id = ?1 ORDER BY seq"
            } else {
                "SELECT rowid, seq, type, time, data, source_event_seqs, surface_op, ignorable, key_order, NULL, NULL, NULL FROM events WHERE session_id = ?1 ORDER BY seq"
            })
            .map_err(&err)?;
        Ok(Self {
            file,
            v3,
            header,
            events,
        })
    }

    /// Session `id`: its header, its events, and the rows they came from.
    fn read(&mut self, id: &str) -> Result<(SessionHeader, Vec<Event>, RowIds)> {
        let file = self.file;
        let err = input_err(file);
        let (rowid, (version, header)) = self
            .header
            .query_row([id], |r| {
                let version: i64 = r.get(1)?;
                let mut h = SessionHeader::new(id.to_owned(), r.get(2)?);
                h.cwd = r.get(3)?;
                h.parent_session = r.get(4)?;
                h.seed_length = r.get::<_, Option<i64>>(5)?.map(|v| v.max(0).unsigned_abs());
                h.origin = match r.get::<_, Option<String>>(6)?.as_deref() {
                    Some("subagent") => Some(Origin::Subagent),
                    _ => None,
                };
                h.delegation_depth = r.get::<_, i64>(7)?.max(0).unsigned_abs();
                h.agent_preset = r.get(8)?;
                Ok((r.get::<_, i64>(0)?, (version, h)))
            })
            .map_err(&err)?;
        if version != 0 {
            return Err(Error::UnsupportedFormat {
                file: file.to_owned(),
                found: format!("session {id:?} of format version {version}"),
                expected: "version 0".into(),
            });
        }
        let mut events = Vec::new();
        let mut rowids = Vec::new();
        let mut rows = self.events.query([id]).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            let rowid: i64 = r.get(0).map_err(&err)?;
            let invalid = |problem: String| Error::InvalidRow {
                file: file.to_owned(),
                table: "events",
                rowid,
                source: sessdb::Error::InvalidEnvelope { seq: None, problem },
            };
            let event = event_of(r, self.v3).map_err(invalid)?;
            if self.v3 {
                // `inherited` says what the header says: the fork's first seedLength rows.
                let inherited = r.get::<_, Option<i64>>(11).map_err(&err)? == Some(1);
                let expected = header.parent_session.is_some()
                    && event.seq() < header.seed_length.unwrap_or(0);
                if inherited != expected {
                    return Err(invalid(format!(
                        "inherited must be {} for seq {} of this session (its header's parentSession and seedLength)",
                        if expected { "1" } else { "NULL" },
                        event.seq()
                    )));
                }
            }
            events.push(event);
            rowids.push(rowid);
        }
        let ids = RowIds {
            header: rowid,
            events: rowids,
        };
        Ok((header, events, ids))
    }
}

/// One `events` row as an event (`v3`: the surface op in version 3's columns); `Err` says
/// which column is malformed.
fn event_of(r: &rusqlite::Row<'_>, v3: bool) -> std::result::Result<Event, String> {
    let col = |e: rusqlite::Error| format!("unreadable column: {e}");
    let seq: i64 = r.get(1).map_err(col)?;
    let seq = envelope::checked_seq(seq).ok_or("seq must be a non-negative safe integer")?;
    let ty: String = r.get(2).map_err(col)?;
    let time: i64 = r.get(3).map_err(col)?;
    let time = envelope::checked_time(time).ok_or("time must be a safe integer")?;
    let data = r
        .get_ref(4)
        .map_err(col)?
        .as_bytes()
        .map_err(|e| format!("data: {e}"))?
        .to_vec();
    let sources = match r
        .get_ref(5)
        .map_err(col)?
        .as_bytes_or_null()
        .map_err(|e| format!("source_event_seqs: {e}"))?
    {
        None => None,
        Some(text) => Some(
            envelope::seqs_from_json_text(text).map_err(|e| format!("source_event_seqs: {e}"))?,
        ),
    };
    let op_text = r
        .get_ref(6)
        .map_err(col)?
        .as_bytes_or_null()
        .map_err(|e| format!("surface_op: {e}"))?;
    let op = match op_text {
        _ if v3 => SurfaceOp::from_columns(
            op_text,
            r.get::<_, Option<i64>>(9).map_err(col)?,
            r.get::<_, Option<i64>>(10).map_err(col)?,
        )?,
        None => None,
        Some(text) => {
            Some(SurfaceOp::from_json_text(text).map_err(|e| format!("surface_op: {e}"))?)
        }
    };
    let flag = |i: usize| -> std::result::Result<bool, String> {
        Ok(r.get::<_, Option<i64>>(i).map_err(col)? == Some(1))
    };
    let ignorable = flag(7)?;
    let key_order = flag(8)?;
    let event = Event::new(ty, seq, time, data)
        .with_sources_opt(sources.map(Into::into))
        .with_surface_op_opt(op)
        .with_ignorable(ignorable);
    Ok(event.with_surface_op_first(key_order))
}

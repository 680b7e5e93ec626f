//! Export of a store to a SQLite database, written to a temp file beside the target and
//! renamed into place.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use sessdb::storage::{FsStorage, Replacement};
use sessdb::{Store, SurfaceOp};

use super::columns::{create_schema, sources_json, to_i64};
use super::schema::{APPLICATION_ID, DDL, SCHEMA_VERSION, sqlite_err};
use crate::{Error, Progress, Result};

const WINDOW: u64 = 1024;

/// Which schema an SQLite export writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqliteLayout {
    /// DSH's own schema 17 (`docs/FORMATS.md` §3.5): a database DSH's SQLite backend opens.
    #[default]
    Dsh,
    /// sessdb's one-row-per-event schema (§3.1), lossless and queryable with SQLite's JSON
    /// functions.
    Analytics,
}

/// How to export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqliteExportOptions {
    /// Only these sessions (all when empty).
    pub sessions: Vec<String>,
    /// The schema written.
    pub layout: SqliteLayout,
    /// Replace an existing file that is not an earlier analytics export holding only its
    /// schema (a DSH database, another database, any regular file). Without it such a file
    /// is refused (`Layout`) and left as it is.
    pub force: bool,
}

/// What a SQLite export wrote (as [`crate::jsonl::ExportReport`] for JSONL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqliteExportReport {
    /// The database written.
    pub file: PathBuf,
    /// The sessions in it, in the order written.
    pub sessions: Vec<String>,
    /// Events written.
    pub events: u64,
    /// The database's size in bytes.
    pub bytes: u64,
}

/// Exports sessions of `store` into a new database at `target`, built beside it and renamed
/// into place. An existing `target` is replaced only when it is empty or an earlier analytics
/// export holding exactly its schema, or with [`SqliteExportOptions::force`].
///
/// # Errors
/// `Layout` for a target that is not replaced (what it is, and how to go on);
/// `SessionNotFound` for a chosen session that does not exist, SQLite and I/O errors.
pub fn export_sqlite(
    store: &Store,
    target: &Path,
    options: &SqliteExportOptions,
) -> Result<SqliteExportReport> {
    export_sqlite_with_progress(store, target, options, &mut |_| {})
}

/// As [`export_sqlite`], telling `progress` how far it has come (for progress bars).
///
/// # Errors
/// As [`export_sqlite`].
pub fn export_sqlite_with_progress(
    store: &Store,
    target: &Path,
    options: &SqliteExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SqliteExportReport> {
    let chosen = crate::select::chosen_sessions(store, &options.sessions)?;
    let events = write(store, target, options, &chosen, progress)?;
    Ok(SqliteExportReport {
        file: target.to_owned(),
        sessions: chosen.iter().map(|i| i.header.id.clone()).collect(),
        events,
        bytes: std::fs::metadata(target).map_or(0, |m| m.len()),
    })
}

/// The export itself; returns the events written.
/// The prepared inserts of one export.
struct Inserts<'t> {
    tmp: &'t Path,
    session_row: rusqlite::Statement<'t>,
    event_row: rusqlite::Statement<'t>,
    surface_row: rusqlite::Statement<'t>,
}

impl<'t> Inserts<'t> {
    fn prepare(tx: &'t rusqlite::Transaction<'_>, tmp: &'t Path) -> Result<Self> {
        let err = sqlite_err(tmp);
        Ok(Self {
            tmp,
            session_row: tx
                .prepare("INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset) VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .map_err(&err)?,
            event_row: tx
                .prepare("INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, replace_start, replace_end, ignorable, key_order, inherited) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")
                .map_err(&err)?,
            surface_row: tx
                .prepare("INSERT INTO surface (session_id, position, seq) VALUES (?1, ?2, ?3)")
                .map_err(&err)?,
        })
    }

    /// One session: its row, its events' rows (a window of borrowed events at a time), its
    /// surface in order (for the `messages` view).
    fn session(
        &mut self,
        store: &Store,
        info: &sessdb::store::SessionInfo,
        done: &mut Progress,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<()> {
        let err = sqlite_err(self.tmp);
        let h = &info.header;
        let c = h.columns();
        self.session_row
            .execute(params![
                h.id,
                c.created_at,
                c.cwd,
                c.parent_session,
                c.seed_length,
                c.origin,
                c.delegation_depth,
                c.agent_preset
            ])
            .map_err(&err)?;
        let mut from = 0;
        while from < info.events {
            let read = self.events(store, info, from, done)?;
            if read == 0 {
                break;
            }
            from += read;
            progress(*done);
        }
        for (position, seq) in store.surface(&h.id)?.into_iter().enumerate() {
            self.surface_row
                .execute(params![h.id, to_i64(position as u64), to_i64(seq)])
                .map_err(&err)?;
        }
        Ok(())
    }

    /// The rows of one window of a session's events from `from`; returns how many it read.
    fn events(
        &mut self,
        store: &Store,
        info: &sessdb::store::SessionInfo,
        from: u64,
        done: &mut Progress,
    ) -> Result<u64> {
        let err = sqlite_err(self.tmp);
        let h = &info.header;
        // A fork's first `seedLength` events are its parent's, repeated in its rows.
        let inherited = if h.parent_session.is_some() {
            h.seed_length.unwrap_or(0)
        } else {
            0
        };
        let mut sources_buf = String::new();
        let mut read = 0u64;
        let mut failed: Option<Error> = None;
        let event_row = &mut self.event_row;
        // Borrowed events, a window at a time: no owned copy of each event.
        let visited = store.visit_events(&h.id, from..from + WINDOW, |e| {
            read += 1;
            // Bound as TEXT without a second UTF-8 pass: the validator checked it on the way
            // in, and the read checked the event's checksum.
            let data =
                rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(e.data()));
            let (op, start, end) = match e.surface_op() {
                None => (None, None, None),
                Some(SurfaceOp::Append) => (Some("append"), None, None),
                Some(SurfaceOp::Replace { start, end }) => {
                    (Some("replace"), Some(to_i64(start)), Some(to_i64(end)))
                }
            };
            let inserted = event_row.execute(params![
                h.id,
                to_i64(e.seq()),
                e.event_type(),
                e.time(),
                data,
                sources_json(e.sources(), &mut sources_buf),
                op,
                start,
                end,
                e.ignorable().then_some(1),
                e.surface_op_first().then_some(1),
                (e.seq() < inherited).then_some(1)
            ]);
            if let Err(source) = inserted {
                failed = Some(err(source));
                // Stops the visit; the SQLite error above is the one reported.
                return Err(sessdb::Error::Closed);
            }
            done.events_done += 1;
            done.bytes_done += e.data().len() as u64;
            Ok(())
        });
        if let Some(failure) = failed {
            return Err(failure);
        }
        visited?;
        Ok(read)
    }
}

fn write(
    store: &Store,
    target: &Path,
    options: &SqliteExportOptions,
    chosen: &[sessdb::store::SessionInfo],
    progress: &mut dyn FnMut(Progress),
) -> Result<u64> {
    crate::jsonl::export::refuse_links_on_path(target)?;
    super::replace::check_replaceable(target, options.force)?;
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export.sqlite".into());
    let storage = FsStorage::new(dir);
    let file = Replacement::create(&storage, &name).map_err(|e| Error::io("create", target, e))?;
    let tmp: PathBuf = dir.join(file.temp_path());
    if options.layout == SqliteLayout::Dsh {
        // DSH's writer opens the database itself, with DSH's pragmas.
        let written = super::dsh_export::write(store, &tmp, chosen, progress)?;
        file.commit().map_err(|e| Error::io("replace", target, e))?;
        return Ok(written);
    }
    let err = sqlite_err(&tmp);
    let mut conn = Connection::open(&tmp).map_err(&err)?;
    conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
        .map_err(&err)?;
    let tx = conn.transaction().map_err(&err)?;
    create_schema(&tx, DDL, APPLICATION_ID, SCHEMA_VERSION).map_err(&err)?;
    let mut done = Progress {
        events_total: chosen.iter().map(|i| i.events).sum(),
        ..Progress::default()
    };
    {
        let mut rows = Inserts::prepare(&tx, &tmp)?;
        for info in chosen {
            rows.session(store, info, &mut done, progress)?;
        }
    }
    tx.commit().map_err(&err)?;
    conn.close().map_err(|(_, e)| err(e))?;
    // The replacement's file is the same inode SQLite wrote: its sync covers SQLite's writes.
    file.commit().map_err(|e| Error::io("replace", target, e))?;
    Ok(done.events_done)
}

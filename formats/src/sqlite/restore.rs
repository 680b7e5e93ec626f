//! One session read from a database into the store (or the dry run), a refusal placed at its
//! row: shared by the readers of sessdb's schema and of DSH's.

use std::path::Path;

use sessdb::{Event, SessionHeader};

use crate::jsonl::{ImportReport, ImportedSession};
use crate::target::{Refusal, RestoreTarget};
use crate::{Error, Result};

/// One session into `store` (or the dry run), its refusal placed at its row; the outcome
/// joins `report`. `rowids[i]` is the row of event `i`, `header_rowid` the session's row.
pub(super) fn restore_one(
    store: &dyn RestoreTarget,
    file: &Path,
    header: SessionHeader,
    events: Vec<Event>,
    rowids: &[i64],
    header_rowid: i64,
    report: &mut ImportReport,
) -> Result<()> {
    let id = header.id.clone();
    let count = events.len() as u64;
    let outcome = store.restore(header, events).map_err(|e| match e {
        Refusal::Conflict(problem) => Error::Conflict {
            file: file.to_owned(),
            id: id.clone(),
            problem,
        },
        Refusal::Store(e @ sessdb::Error::Rejected { .. }) => Error::InvalidRow {
            file: file.to_owned(),
            table: "events",
            rowid: rejected_seq(&e)
                .and_then(|seq| rowids.get(usize::try_from(seq).ok()?).copied())
                .unwrap_or(0),
            source: e,
        },
        Refusal::Store(
            e @ (sessdb::Error::InvalidHeader { .. } | sessdb::Error::SessionExists { .. }),
        ) => Error::InvalidRow {
            file: file.to_owned(),
            table: "sessions",
            rowid: header_rowid,
            source: e,
        },
        Refusal::Store(other) => Error::Store(other),
    })?;
    report.sessions.push(ImportedSession {
        id,
        file: file.to_owned(),
        events: count,
        outcome,
        torn: None,
        invalid_utf8_lines: Vec::new(),
        migrated: Vec::new(),
    });
    Ok(())
}

/// The seq a `Rejected` error names.
fn rejected_seq(e: &sessdb::Error) -> Option<u64> {
    match e {
        sessdb::Error::Rejected { seq, .. } => Some(*seq),
        _ => None,
    }
}

/// The ids of a database's sessions in order, and a progress report with its event rows as
/// the total: where both readers start.
pub(super) fn sessions_and_progress(
    conn: &rusqlite::Connection,
    err: &dyn Fn(rusqlite::Error) -> Error,
) -> Result<(Vec<String>, crate::Progress)> {
    let total: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .map_err(err)?;
    let mut stmt = conn
        .prepare("SELECT id FROM sessions ORDER BY id")
        .map_err(err)?;
    let ids = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(err)?;
    Ok((
        ids,
        crate::Progress {
            events_total: total.try_into().unwrap_or(0),
            ..crate::Progress::default()
        },
    ))
}

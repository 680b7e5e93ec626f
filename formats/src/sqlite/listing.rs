//! Where both database readers start: the sessions to read and the progress total.

use crate::{Error, Result};

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

//! Which existing file a SQLite export may replace (`docs/FORMATS.md` §3.2): only one that
//! holds nothing but an earlier analytics export, unless forced. A DSH database is never
//! replaced unforced: DSH's own database and an export in DSH's layout have the same schema,
//! so nothing tells a user's live DSH database from a copy this tool wrote.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::dsh::DSH_APPLICATION_ID;
use super::schema::{
    APPLICATION_ID, DDL, DDL_V1, DDL_V2, immutable_uri, reference_objects, schema_objects, wal_path,
};
use crate::{Error, Result};

/// The magic a SQLite file starts with; `application_id` is big-endian at byte 68.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Refuses a target whose replacement could lose data; `Ok` for a missing or empty file, an
/// earlier analytics export holding exactly its schema, or anything regular under `force`.
///
/// # Errors
/// `Layout` naming what the file is and how to go on; `Io` when it cannot be looked at.
#[allow(
    clippy::big_endian_bytes,
    reason = "SQLite's file header is big-endian"
)]
pub(crate) fn check_replaceable(target: &Path, force: bool) -> Result<()> {
    let refuse = |problem: String| {
        Err(Error::Layout {
            path: target.to_owned(),
            problem,
        })
    };
    let meta = match std::fs::symlink_metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("look at", target, e)),
    };
    if !meta.is_file() {
        return refuse("exists and is not a regular file: refused".into());
    }
    if force || meta.len() == 0 {
        return Ok(());
    }
    let mut head = [0u8; 72];
    let read = std::fs::File::open(target)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io("read", target, e))?;
    let app = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    if read < head.len() || !head.starts_with(SQLITE_MAGIC) {
        return refuse(
            "exists and is not a SQLite database: refused (pass --force to replace it)".into(),
        );
    }
    if app == DSH_APPLICATION_ID {
        return refuse(
            "is a DSH database (application id DSHP): an export does not replace one unforced, \
             since DSH's own database and an earlier export look the same; export to a new \
             file, or pass --force to replace it"
                .into(),
        );
    }
    if app != APPLICATION_ID {
        return refuse(format!(
            "is a SQLite database of another application (id {app:#010x}): refused (pass --force to replace it)"
        ));
    }
    if std::fs::metadata(wal_path(target)).is_ok_and(|m| m.len() > 0) {
        return refuse(
            "has a write-ahead log beside it (someone has it open or wrote to it): refused (pass --force to replace it)"
                .into(),
        );
    }
    let conn = Connection::open_with_flags(
        immutable_uri(target),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(super::schema::sqlite_err(target))?;
    let found = schema_objects(&conn, target)?;
    let mut ours = false;
    for ddl in [DDL, DDL_V2, DDL_V1] {
        ours |= found == reference_objects(ddl)?;
    }
    if !ours {
        let reference = reference_objects(DDL)?;
        let extra: Vec<String> = found
            .iter()
            .filter(|o| !reference.contains(o))
            .map(|(t, n, _)| format!("{t} {n}"))
            .collect();
        return refuse(format!(
            "is a sessdb export that holds more than the export wrote ({}): refused (pass --force to replace it)",
            if extra.is_empty() {
                "a schema of another version".to_owned()
            } else {
                extra.join(", ")
            }
        ));
    }
    Ok(())
}

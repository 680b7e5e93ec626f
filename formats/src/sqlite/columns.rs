//! Event fields as SQLite column values, and the start of a database, for both schemas'
//! writers.

use rusqlite::Transaction;
use sessdb::SurfaceOp;

/// A seq, count or length as SQLite's signed integer (saturating: every value sessdb stores
/// is a safe integer far below the limit).
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Creates `ddl`'s objects and sets the database's identity and schema version.
pub(crate) fn create_schema(
    tx: &Transaction<'_>,
    ddl: &str,
    application_id: i32,
    user_version: i64,
) -> rusqlite::Result<()> {
    tx.execute_batch(ddl)?;
    tx.execute_batch(&format!(
        "PRAGMA application_id = {application_id}; PRAGMA user_version = {user_version};"
    ))
}

/// `[1,2,3]`.
pub(crate) fn sources_json(sources: Option<impl Iterator<Item = u64>>) -> Option<String> {
    sources.map(|s| {
        format!(
            "[{}]",
            s.map(|v| v.to_string()).collect::<Vec<_>>().join(",")
        )
    })
}

/// `"append"` or `{"op":"replace","start":S,"end":E}`.
pub(crate) fn surface_op_json(op: Option<SurfaceOp>) -> Option<String> {
    op.map(|op| match op {
        SurfaceOp::Append => "\"append\"".to_owned(),
        SurfaceOp::Replace { start, end } => {
            format!("{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}")
        }
    })
}

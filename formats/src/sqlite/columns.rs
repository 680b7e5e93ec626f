//! Event fields as SQLite column values, and the start of a database, for both schemas'
//! writers.

use std::borrow::Cow;

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

/// `[1,2,3]`, written into `buf` (reused across rows); `None` without sources.
pub(crate) fn sources_json(
    sources: Option<impl Iterator<Item = u64>>,
    buf: &mut String,
) -> Option<&str> {
    use std::fmt::Write;
    let sources = sources?;
    buf.clear();
    buf.push('[');
    for (i, v) in sources.enumerate() {
        if i > 0 {
            buf.push(',');
        }
        // Writing to a `String` cannot fail.
        let _ = write!(buf, "{v}");
    }
    buf.push(']');
    Some(buf)
}

/// `"append"` (not allocated: most surface events) or `{"op":"replace","start":S,"end":E}`.
pub(crate) fn surface_op_json(op: Option<SurfaceOp>) -> Option<Cow<'static, str>> {
    op.map(|op| match op {
        SurfaceOp::Append => Cow::Borrowed("\"append\""),
        SurfaceOp::Replace { start, end } => Cow::Owned(format!(
            "{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_texts() {
        let mut buf = String::from("stale");
        assert_eq!(
            sources_json(Some([1u64, 22, 3].into_iter()), &mut buf),
            Some("[1,22,3]")
        );
        assert_eq!(sources_json(Some(std::iter::empty()), &mut buf), Some("[]"));
        assert_eq!(sources_json(None::<std::iter::Empty<u64>>, &mut buf), None);
        assert_eq!(
            surface_op_json(Some(SurfaceOp::Append)).as_deref(),
            Some("\"append\"")
        );
        assert_eq!(
            surface_op_json(Some(SurfaceOp::Replace { start: 2, end: 5 })).as_deref(),
            Some(r#"{"op":"replace","start":2,"end":5}"#)
        );
    }
}

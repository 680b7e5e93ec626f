//! The envelope's field rules, in one place for every reader of events: a JSONL line, a
//! SQLite analytics row, a DSH database row (`docs/FORMATS.md` §1.1).
//!
//! Each rule is DSH's loader's, which reads a field after `JSON.parse`: an integer however
//! it is spelled (`3.0` is 3), within ±(2^53 − 1); `surfaceOp` exactly `"append"` or an object
//! of exactly `op: "replace"`, `start`, `end`. A reader whose column already holds an integer
//! checks it with [`checked_seq`] / [`checked_time`], one whose column holds JSON text with
//! [`SurfaceOp::from_json_text`] / [`seqs_from_json_text`]: every reader decides alike.

use super::SurfaceOp;
use crate::json::{JsonKind, JsonRef, validate};
use crate::{Limits, MAX_SAFE_INTEGER};

/// What a malformed `surfaceOp` is told.
pub const SURFACE_OP_RULE: &str =
    "\"surfaceOp\" must be \"append\" or {\"op\":\"replace\",\"start\":S,\"end\":E}";

/// What a malformed `sourceEventSeqs` is told.
pub const SOURCES_RULE: &str = "\"sourceEventSeqs\" must be an array of non-negative safe integers";

/// A seq: a non-negative safe integer.
pub fn checked_seq(v: i64) -> Option<u64> {
    u64::try_from(v)
        .ok()
        .filter(|s| *s <= MAX_SAFE_INTEGER.unsigned_abs())
}

/// A time: a safe integer.
pub fn checked_time(v: i64) -> Option<i64> {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER)
        .contains(&v)
        .then_some(v)
}

/// A JSON number read as a seq: a non-negative safe integer however spelled.
pub fn seq_from_json(v: &JsonRef<'_>) -> Option<u64> {
    v.as_safe_integer().and_then(|s| u64::try_from(s).ok())
}

/// `sourceEventSeqs` from its JSON value: an array of seqs.
pub fn seqs_from_json(v: &JsonRef<'_>) -> Option<Vec<u64>> {
    if v.kind() != JsonKind::Array {
        return None;
    }
    v.elements().map(|e| seq_from_json(&e)).collect()
}

/// `sourceEventSeqs` from JSON text (a SQLite column).
///
/// # Errors
/// What is wrong with the text, for an error message.
pub fn seqs_from_json_text(text: &[u8]) -> Result<Vec<u64>, String> {
    validate(text, &Limits::default()).map_err(|e| format!("{SOURCES_RULE}: {e}"))?;
    seqs_from_json(&JsonRef::new(text)).ok_or_else(|| SOURCES_RULE.to_owned())
}

impl SurfaceOp {
    /// `surfaceOp` from its JSON value: `"append"` or an object of exactly `op: "replace"`,
    /// `start` and `end` (a repeated key counts once, its last value winning, as in
    /// `JSON.parse`).
    pub fn from_json(v: &JsonRef<'_>) -> Option<SurfaceOp> {
        if v.str_eq("append") {
            return Some(SurfaceOp::Append);
        }
        if v.kind() != JsonKind::Object {
            return None;
        }
        let known = |key: &JsonRef<'_>| ["op", "start", "end"].iter().any(|k| key.str_eq(k));
        if !v.members().all(|(key, _)| known(&key)) || !v.get("op")?.str_eq("replace") {
            return None;
        }
        Some(SurfaceOp::Replace {
            start: seq_from_json(&v.get("start")?)?,
            end: seq_from_json(&v.get("end")?)?,
        })
    }

    /// `surfaceOp` from the three columns a table keeps it in (the SQLite analytics layout,
    /// PostgreSQL): `NULL`s for none, `'append'`, or `'replace'` with both bounds (set only
    /// for `'replace'`).
    ///
    /// # Errors
    /// What is wrong, for an error message.
    pub fn from_columns(
        op: Option<&[u8]>,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Result<Option<SurfaceOp>, &'static str> {
        const BOUND: &str = "replace_start and replace_end must be non-negative safe integers";
        let bound = |v: Option<i64>| v.map(|v| checked_seq(v).ok_or(BOUND)).transpose();
        match (op, bound(start)?, bound(end)?) {
            (None, None, None) => Ok(None),
            (Some(b"append"), None, None) => Ok(Some(SurfaceOp::Append)),
            (Some(b"replace"), Some(start), Some(end)) => {
                Ok(Some(SurfaceOp::Replace { start, end }))
            }
            _ => Err(
                "surface_op must be NULL, 'append', or 'replace' with replace_start and replace_end (set only for 'replace')",
            ),
        }
    }

    /// `surfaceOp` from JSON text (a SQLite column).
    ///
    /// # Errors
    /// What is wrong with the text, for an error message.
    pub fn from_json_text(text: &[u8]) -> Result<SurfaceOp, String> {
        validate(text, &Limits::default()).map_err(|e| format!("{SURFACE_OP_RULE}: {e}"))?;
        SurfaceOp::from_json(&JsonRef::new(text)).ok_or_else(|| SURFACE_OP_RULE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(text: &str) -> Option<SurfaceOp> {
        SurfaceOp::from_json_text(text.as_bytes()).ok()
    }

    #[test]
    fn surface_ops_from_columns() {
        let c = |op: Option<&str>, s, e| SurfaceOp::from_columns(op.map(str::as_bytes), s, e);
        assert_eq!(c(None, None, None), Ok(None));
        assert_eq!(c(Some("append"), None, None), Ok(Some(SurfaceOp::Append)));
        assert_eq!(
            c(Some("replace"), Some(2), Some(5)),
            Ok(Some(SurfaceOp::Replace { start: 2, end: 5 }))
        );
        for (op, s, e) in [
            (Some("append"), Some(1), None),
            (Some("replace"), Some(1), None),
            (None, None, Some(1)),
            (Some("Append"), None, None),
            (Some("replace"), Some(-1), Some(2)),
        ] {
            assert!(c(op, s, e).is_err(), "{op:?} {s:?} {e:?}");
        }
    }

    #[test]
    fn surface_ops_decide_as_dshs_loader() {
        let replace = |start, end| Some(SurfaceOp::Replace { start, end });
        assert_eq!(op(r#""append""#), Some(SurfaceOp::Append));
        assert_eq!(op(r#"{"op":"replace","start":4,"end":6}"#), replace(4, 6));
        assert_eq!(op(r#"{"end":6,"start":4,"op":"replace"}"#), replace(4, 6));
        // `JSON.parse` reads 3.0 as 3, and the last of repeated keys.
        assert_eq!(op(r#"{"op":"replace","start":3.0,"end":4}"#), replace(3, 4));
        assert_eq!(
            op(r#"{"op":"replace","start":1,"end":4,"start":2}"#),
            replace(2, 4)
        );
        for bad in [
            r#""replace""#,
            r#"{"op":"replace","start":1,"end":2,"x":1}"#,
            r#"{"op":"append","start":1,"end":2}"#,
            r#"{"op":"replace","start":1}"#,
            r#"{"op":"replace","start":-1,"end":2}"#,
            r#"{"op":"replace","start":1.5,"end":2}"#,
            r#"{"op":"replace","start":9007199254740992,"end":2}"#,
            r#"["append"]"#,
            "append",
        ] {
            assert_eq!(op(bad), None, "{bad}");
        }
    }

    #[test]
    fn sources_and_integers_decide_as_dshs_loader() {
        assert_eq!(seqs_from_json_text(b"[1,2.0,3]"), Ok(vec![1, 2, 3]));
        assert_eq!(seqs_from_json_text(b"[]"), Ok(vec![]));
        for bad in [
            "[-1]",
            "[1.5]",
            "{}",
            "[\"1\"]",
            "[9007199254740992]",
            "[1,",
        ] {
            assert!(seqs_from_json_text(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(checked_seq(-1), None);
        assert_eq!(
            checked_seq(MAX_SAFE_INTEGER),
            Some(MAX_SAFE_INTEGER.unsigned_abs())
        );
        assert_eq!(checked_seq(MAX_SAFE_INTEGER + 1), None);
        assert_eq!(checked_time(-MAX_SAFE_INTEGER), Some(-MAX_SAFE_INTEGER));
        assert_eq!(checked_time(-MAX_SAFE_INTEGER - 1), None);
    }
}

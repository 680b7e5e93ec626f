//! One event as one row of `sessdb_events`, in `COPY`'s text format (`docs/FORMATS.md` §4.1).

use sessdb::{EventRef, SurfaceOp};

/// Appends `text` as one `COPY` text field: backslash, newline, carriage return and tab
/// escaped (JSON text holds no other control byte: the validator refuses them raw).
pub(crate) fn field(out: &mut Vec<u8>, text: &[u8]) {
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => continue,
        };
        out.extend_from_slice(&text[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&text[start..]);
}

fn int(out: &mut Vec<u8>, v: impl std::fmt::Display) {
    out.extend_from_slice(v.to_string().as_bytes());
}

const NULL: &[u8] = b"\\N";

/// Whether PostgreSQL's `jsonb` can hold `data`: it refuses the escape `\u0000` and escaped
/// surrogates it cannot pair. Conservative: any `\u0000` or surrogate escape (even a valid
/// pair, or one preceded by an escaped backslash) keeps `data` out of the `jsonb` column;
/// `data_text` always holds the exact bytes.
pub(crate) fn jsonb_holds(data: &[u8]) -> bool {
    let mut rest = data;
    while let Some(i) = rest.windows(2).position(|w| w == b"\\u") {
        let hex = rest.get(i + 2..i + 6).unwrap_or_default();
        if hex == b"0000"
            || matches!(
                hex,
                [b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F', ..]
            )
        {
            return false;
        }
        rest = &rest[i + 2..];
    }
    true
}

/// Appends one `sessdb_events` row for `e` of `session` (`inherited`: a fork's inherited
/// event), columns in the order of [`COLUMNS`].
pub(crate) fn event_row(out: &mut Vec<u8>, session: &str, e: &EventRef<'_>, inherited: bool) {
    field(out, session.as_bytes());
    out.push(b'\t');
    int(out, e.seq());
    out.push(b'\t');
    field(out, e.event_type().as_bytes());
    out.push(b'\t');
    int(out, e.time());
    out.push(b'\t');
    if jsonb_holds(e.data()) {
        field(out, e.data());
    } else {
        out.extend_from_slice(NULL);
    }
    out.push(b'\t');
    field(out, e.data());
    out.push(b'\t');
    match e.sources() {
        None => out.extend_from_slice(NULL),
        Some(seqs) => {
            out.push(b'{');
            for (i, s) in seqs.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                int(out, s);
            }
            out.push(b'}');
        }
    }
    let (op, start, end) = match e.surface_op() {
        None => (None, None, None),
        Some(SurfaceOp::Append) => (Some("append"), None, None),
        Some(SurfaceOp::Replace { start, end }) => (Some("replace"), Some(start), Some(end)),
    };
    for v in [
        op.map(str::to_owned),
        start.map(|s| s.to_string()),
        end.map(|s| s.to_string()),
    ] {
        out.push(b'\t');
        match v {
            None => out.extend_from_slice(NULL),
            Some(v) => out.extend_from_slice(v.as_bytes()),
        }
    }
    for flag in [e.ignorable(), e.surface_op_first(), inherited] {
        out.push(b'\t');
        out.push(if flag { b't' } else { b'f' });
    }
    out.push(b'\n');
}

/// The columns [`event_row`] writes, in order.
pub(crate) const COLUMNS: &str = "session_id, seq, type, time, data, data_text, source_event_seqs, surface_op, replace_start, replace_end, ignorable, key_order, inherited";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_escape_what_copy_reads_as_separators() {
        let mut out = Vec::new();
        field(&mut out, b"a\\b\tc\nd\re");
        assert_eq!(out, b"a\\\\b\\tc\\nd\\re");
    }

    #[test]
    fn jsonb_holds_all_but_nul_and_surrogate_escapes() {
        assert!(jsonb_holds(br#"{"t":"a\n\u00e9"}"#));
        assert!(!jsonb_holds(br#"{"t":"\u0000"}"#));
        assert!(!jsonb_holds(br#"{"t":"\ud800"}"#));
        assert!(!jsonb_holds(br#"{"t":"\uDFFF"}"#));
        assert!(jsonb_holds(br#"{"t":"\u","u":1}"#));
    }
}

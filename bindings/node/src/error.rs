//! sessdb's errors as JavaScript sees them. A task can only reject with a `napi::Error`, whose
//! code is a Node-API status; so the addon puts the stable code and the facts in the message,
//! as one JSON object after a marker byte, and `index.js` turns that into an `Error` with
//! `code`, `rule`, `session`, `seq`, `segment`, `offset`.

use napi::Status;
use sessdb::json::write_str;

/// The marker that starts an encoded error message.
pub const MARKER: char = '\u{1}';

/// The stable code of an error: the rule name for a refused event, the fork code for a refused
/// fork, else one name per kind of failure.
fn code(e: &sessdb::Error) -> String {
    use sessdb::Error as E;
    match e {
        E::Rejected { violation, .. } => violation.rule().to_owned(),
        E::Fork { code, .. } => code.to_string(),
        E::InvalidEnvelope { .. } => "INVALID_EVENT".into(),
        E::InvalidHeader { .. } => "INVALID_HEADER".into(),
        E::InvalidType { .. } => "INVALID_TYPE".into(),
        E::UnsupportedFormat { .. } => "UNSUPPORTED_FORMAT".into(),
        E::UnsupportedStore { .. } => "UNSUPPORTED_STORE".into(),
        E::SessionExists { .. } => "EXISTS".into(),
        E::SessionNotFound { .. } => "NOT_FOUND".into(),
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => "NOT_FOUND".into(),
        E::Io { .. } => "IO".into(),
        E::NoSpace { .. } => "NO_SPACE".into(),
        E::Corruption { .. } => "CORRUPTION".into(),
        E::SalvageInterrupted { .. } => "SALVAGE_INTERRUPTED".into(),
        E::Locked { .. } => "LOCKED".into(),
        E::Poisoned { .. } => "POISONED".into(),
        E::ReadOnly => "READ_ONLY".into(),
        E::Closed => "CLOSED".into(),
        E::RecordTooLarge { .. } => "TOO_LARGE".into(),
        E::NotAStore { .. } => "NOT_A_STORE".into(),
        E::Overtaken { .. } => "OVERTAKEN".into(),
        _ => "ERROR".into(),
    }
}

/// A JSON member `"key":"value"` (with the comma before it).
fn member(out: &mut Vec<u8>, key: &str, value: &str) {
    out.push(b',');
    write_str(out, key);
    out.push(b':');
    write_str(out, value);
}

/// A JSON member `"key":number`.
fn number(out: &mut Vec<u8>, key: &str, value: u64) {
    out.push(b',');
    write_str(out, key);
    out.extend_from_slice(format!(":{value}").as_bytes());
}

/// One encoded error: `{"code": …, "message": …, …}` after the marker, the facts `more`
/// adds between — the one place the encoding is written.
fn encoded(
    status: Status,
    code: &str,
    message: &str,
    more: impl FnOnce(&mut Vec<u8>),
) -> napi::Error {
    let mut out = Vec::new();
    out.extend_from_slice(b"{");
    write_str(&mut out, "code");
    out.push(b':');
    write_str(&mut out, code);
    member(&mut out, "message", message);
    more(&mut out);
    out.push(b'}');
    napi::Error::new(status, format!("{MARKER}{}", String::from_utf8_lossy(&out)))
}

/// The error, encoded for `index.js`.
pub fn to_js(e: &sessdb::Error) -> napi::Error {
    use sessdb::Error as E;
    encoded(
        Status::GenericFailure,
        &code(e),
        &e.to_string(),
        |out| match e {
            E::Rejected {
                session,
                seq,
                violation,
            } => {
                member(out, "session", session);
                number(out, "seq", *seq);
                member(out, "rule", violation.rule());
            }
            E::Corruption {
                segment,
                offset,
                kind,
            } => {
                member(out, "segment", segment);
                number(out, "offset", *offset);
                member(out, "kind", &kind.to_string());
            }
            E::SessionNotFound { id } | E::SessionExists { id } => member(out, "session", id),
            E::Locked { lock_file } => member(out, "lockFile", lock_file),
            E::Overtaken { segment } => member(out, "segment", segment),
            _ => {}
        },
    )
}

/// An error of the formats crate: the store's own errors keep their codes.
pub fn formats_to_js(e: &sessdb_formats::Error) -> napi::Error {
    match e {
        sessdb_formats::Error::Store(inner) => to_js(inner),
        other => encoded(Status::GenericFailure, "FORMAT", &other.to_string(), |_| {}),
    }
}

/// A usage error of the binding itself (a bad argument).
pub fn invalid(message: impl Into<String>) -> napi::Error {
    encoded(
        Status::InvalidArg,
        "INVALID_ARGUMENT",
        &message.into(),
        |_| {},
    )
}

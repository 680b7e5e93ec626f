//! The session header rules (reference §2.2, and what DSH's loader refuses of a header line).

use serde_json::Value;

use crate::value::safe_uint;

/// Checks a header line: `Err("unsupported-format")` for a version other than 0, else
/// `Err("invalid-header")` for any other broken rule.
///
/// # Errors
/// The class of refusal.
pub fn check_header(line: &[u8]) -> Result<(), &'static str> {
    let invalid = Err("invalid-header");
    let Ok(Value::Object(h)) = serde_json::from_slice::<Value>(line) else {
        return invalid;
    };
    match h.get("version") {
        None => return invalid,
        Some(v) if safe_uint(v) != Some(0) => return Err("unsupported-format"),
        Some(_) => {}
    }
    if h.get("type").and_then(Value::as_str) != Some("session") {
        return invalid;
    }
    if !h
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| !id.is_empty() && id.len() <= 65_535)
    {
        return invalid;
    }
    // safe_uint already bounds the value by MAX_SAFE.
    if h.get("createdAt").and_then(safe_uint).is_none() {
        return invalid;
    }
    let string_or_absent = |key: &str| h.get(key).is_none_or(Value::is_string);
    let uint_or_absent = |key: &str| h.get(key).is_none_or(|v| safe_uint(v).is_some());
    if !string_or_absent("cwd")
        || !string_or_absent("parentSession")
        || !string_or_absent("agentPreset")
        || !uint_or_absent("seedLength")
        || !uint_or_absent("delegationDepth")
    {
        return invalid;
    }
    if h.get("cwd")
        .and_then(Value::as_str)
        .is_some_and(|c| !absolute(c))
    {
        return invalid;
    }
    if h.get("origin")
        .is_some_and(|o| o.as_str() != Some("subagent"))
    {
        return invalid;
    }
    if h.contains_key("sandboxMode") || h.contains_key("approvalPolicy") {
        return invalid;
    }
    Ok(())
}

/// A POSIX absolute path, a UNC or rooted Windows path, or a drive path.
fn absolute(path: &str) -> bool {
    let mut chars = path.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some('/' | '\\'), _, _) => true,
        (Some(d), Some(':'), Some('/' | '\\')) => d.is_ascii_alphabetic(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let ok = br#"{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}"#;
        assert_eq!(check_header(ok), Ok(()));
        assert_eq!(
            check_header(br#"{"type":"session","version":1,"id":"s","createdAt":1}"#),
            Err("unsupported-format")
        );
        for bad in [
            &br#"{"version":0,"id":"s","createdAt":1}"#[..],
            br#"{"type":"session","version":0,"id":"","createdAt":1}"#,
            br#"{"type":"session","version":0,"id":"s","createdAt":-1}"#,
            br#"{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"rel"}"#,
            br#"{"type":"session","version":0,"id":"s","createdAt":1,"origin":"user"}"#,
        ] {
            assert_eq!(check_header(bad), Err("invalid-header"));
        }
    }
}

//! JSON helpers over `serde_json` trees: JavaScript's equality of numbers, raw members.

use serde_json::Value;
use serde_json::value::RawValue;

/// `2^53 - 1`, JavaScript's largest safe integer.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// Deep equality as DSH compares `data`: numbers by value (`1` equals `1.0`), objects
/// regardless of key order.
pub fn deep_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The exact text of the member `key` of the JSON object `text` (the last one, as
/// `JSON.parse` keeps), if it is an object with that member.
pub fn raw_member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let map: std::collections::BTreeMap<String, &'a RawValue> = raw_object(text)?;
    map.get(key).map(|r| r.get())
}

/// An object's members as raw text, the last of repeated keys winning.
fn raw_object(text: &str) -> Option<std::collections::BTreeMap<String, &RawValue>> {
    serde_json::from_str(text).ok()
}

/// A non-empty string member.
pub fn nonempty_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A JSON number that is a non-negative safe integer (`3.0` counts, as in JavaScript).
pub fn safe_uint(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return (u <= MAX_SAFE).then_some(u);
    }
    let f = n.as_f64()?;
    // Exact in f64: every integer up to 2^53 is representable.
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_SAFE as f64).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn numbers_compare_by_value_and_objects_by_members() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":[2.0]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":[2],"a":1.0}"#).unwrap();
        assert!(deep_eq(&a, &b));
        let c: Value = serde_json::from_str(r#"{"b":[2],"a":1.5}"#).unwrap();
        assert!(!deep_eq(&a, &c));
    }

    #[test]
    fn raw_members_keep_their_text() {
        let text = r#"{"turn":1,"message":{"id":"x" ,"n":1.50}}"#;
        assert_eq!(raw_member(text, "message"), Some(r#"{"id":"x" ,"n":1.50}"#));
        assert_eq!(raw_member(text, "none"), None);
        assert_eq!(raw_member("[1]", "message"), None);
    }

    #[test]
    fn safe_integers_as_javascript_reads_them() {
        let n = |s: &str| safe_uint(&serde_json::from_str(s).unwrap());
        assert_eq!(n("3"), Some(3));
        assert_eq!(n("3.0"), Some(3));
        assert_eq!(n("1.2e1"), Some(12));
        assert_eq!(n("-1"), None);
        assert_eq!(n("1.5"), None);
        assert_eq!(n("9007199254740992"), None);
    }
}

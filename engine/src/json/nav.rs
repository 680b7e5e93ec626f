//! Allocation-free navigation over validated JSON bytes.
//!
//! A [`JsonRef`] is a view of exactly one value inside bytes that passed
//! [`validate`](super::validate). Lookups follow `JSON.parse`: when an object repeats a key,
//! the last occurrence wins. On bytes that were not validated the methods never panic; they
//! may answer `None` or nonsense.

use std::borrow::Cow;

/// The six JSON value kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

/// A borrowed view of one validated JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonRef<'a> {
    bytes: &'a [u8],
}

impl<'a> JsonRef<'a> {
    /// Views `bytes`, which must hold exactly one value that passed
    /// [`validate`](super::validate).
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The exact bytes of this value.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The kind of this value.
    pub fn kind(&self) -> JsonKind {
        match self.bytes.first() {
            Some(b'{') => JsonKind::Object,
            Some(b'[') => JsonKind::Array,
            Some(b'"') => JsonKind::String,
            Some(b't' | b'f') => JsonKind::Bool,
            Some(b'n') => JsonKind::Null,
            _ => JsonKind::Number,
        }
    }

    /// The members of an object in document order (empty for any other kind).
    pub fn members(&self) -> Members<'a> {
        let pos = if self.kind() == JsonKind::Object {
            1
        } else {
            self.bytes.len()
        };
        Members { b: self.bytes, pos }
    }

    /// The elements of an array in order (empty for any other kind).
    pub fn elements(&self) -> Elements<'a> {
        let pos = if self.kind() == JsonKind::Array {
            1
        } else {
            self.bytes.len()
        };
        Elements { b: self.bytes, pos }
    }

    /// The values of several members in one pass over the object (as many `get`s, the last
    /// of duplicate keys winning): the acceptance rules read a handful of keys per event.
    pub fn fields<const N: usize>(&self, keys: [&str; N]) -> [Option<JsonRef<'a>>; N] {
        let mut out = [None; N];
        for (k, v) in self.members() {
            // The key's raw text once per member; an escaped key (rare) is decoded once.
            let inner = k
                .bytes
                .strip_prefix(b"\"")
                .and_then(|b| b.strip_suffix(b"\""))
                .unwrap_or_default();
            if inner.contains(&b'\\') {
                let decoded = k.as_str();
                for (slot, key) in out.iter_mut().zip(keys) {
                    if decoded.as_deref() == Some(key) {
                        *slot = Some(v);
                    }
                }
                continue;
            }
            for (slot, key) in out.iter_mut().zip(keys) {
                if inner == key.as_bytes() {
                    *slot = Some(v);
                }
            }
        }
        out
    }

    /// The value of member `key` of an object (the last one if the key repeats).
    pub fn get(&self, key: &str) -> Option<JsonRef<'a>> {
        self.members()
            .filter(|(k, _)| k.str_eq(key))
            .last()
            .map(|(_, v)| v)
    }

    /// The decoded text of a string.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        let inner = self.bytes.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if !inner.contains(&b'\\') {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        decode_escaped(inner).map(Cow::Owned)
    }

    /// Whether this is a string equal to `s`, without allocating when no escapes are used.
    pub fn str_eq(&self, s: &str) -> bool {
        match self
            .bytes
            .strip_prefix(b"\"")
            .and_then(|b| b.strip_suffix(b"\""))
        {
            // Bytes without an escape are their text: compared as they are.
            Some(inner) if !inner.contains(&b'\\') => inner == s.as_bytes(),
            Some(_) => self.as_str().is_some_and(|d| d == s),
            None => false,
        }
    }

    /// Whether this is a non-empty string, without decoding it (validated JSON: any escape
    /// decodes to at least one character, so only `""` is empty).
    pub fn is_nonempty_str(&self) -> bool {
        self.bytes.len() > 2 && self.bytes.first() == Some(&b'"')
    }

    /// A non-empty string.
    pub fn as_nonempty_str(&self) -> Option<Cow<'a, str>> {
        self.as_str().filter(|s| !s.is_empty())
    }

    /// The number as `JSON.parse` reads it, when that is an integer of at most 2^53 − 1 in
    /// magnitude: `3`, and also `3.0`, `1.2e1` or `-0` (as 0), which JavaScript reads as the
    /// same integers. DSH's readers compare such values as numbers, so an envelope field
    /// spelled this way means what the integer means.
    pub fn as_safe_integer(&self) -> Option<i64> {
        const MAX: i64 = crate::MAX_SAFE_INTEGER;
        if let Some(v) = self.as_i64() {
            return (-MAX..=MAX).contains(&v).then_some(v);
        }
        let f = self.as_f64()?;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_precision_loss,
            reason = "checked: an integral double within ±(2^53 − 1) converts exactly"
        )]
        let v = (f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX as f64).then_some(f as i64);
        v
    }

    /// A number as a double.
    pub fn as_f64(&self) -> Option<f64> {
        if self.kind() != JsonKind::Number {
            return None;
        }
        std::str::from_utf8(self.bytes).ok()?.parse().ok()
    }

    /// A number written as a plain integer token (no fraction or exponent).
    pub fn as_i64(&self) -> Option<i64> {
        std::str::from_utf8(self.bytes).ok()?.parse().ok()
    }

    /// `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self.bytes {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// Equality of the values as `JSON.parse` would produce them: member order does not
    /// matter, repeated keys resolve to their last value, numbers compare as doubles and
    /// strings after unescaping.
    pub fn deep_eq(&self, other: &JsonRef<'_>) -> bool {
        match (self.kind(), other.kind()) {
            (JsonKind::Object, JsonKind::Object) => {
                object_eq_with(self, other, |_, a, b| a.deep_eq(&b))
            }
            (JsonKind::Array, JsonKind::Array) => {
                let mut a = self.elements();
                let mut b = other.elements();
                loop {
                    match (a.next(), b.next()) {
                        (None, None) => return true,
                        (Some(x), Some(y)) if x.deep_eq(&y) => {}
                        _ => return false,
                    }
                }
            }
            (JsonKind::String, JsonKind::String) => self.as_str() == other.as_str(),
            (JsonKind::Number, JsonKind::Number) => match (self.as_f64(), other.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
            (a, b) => a == b && self.bytes == other.bytes,
        }
    }
}

/// Whether two objects have the same keys (last occurrence wins) and `same(key, a, b)` holds
/// for the values of every key.
pub(crate) fn object_eq_with<'a, 'b>(
    a: &JsonRef<'a>,
    b: &JsonRef<'b>,
    same: impl Fn(&str, JsonRef<'a>, JsonRef<'b>) -> bool,
) -> bool {
    let unique = |v: &JsonRef<'_>| {
        let all: Vec<_> = v.members().map(|(k, _)| k.as_str()).collect();
        all.iter()
            .enumerate()
            .filter(|(i, k)| !all[i + 1..].contains(k))
            .count()
    };
    if unique(a) != unique(b) {
        return false;
    }
    a.members().all(|(k, _)| {
        let Some(key) = k.as_str() else { return false };
        match (a.get(&key), b.get(&key)) {
            (Some(va), Some(vb)) => same(&key, va, vb),
            _ => false,
        }
    })
}

/// Iterator over an object's `(key, value)` pairs; keys are string values.
#[derive(Debug, Clone)]
pub struct Members<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (JsonRef<'a>, JsonRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.b;
        let mut pos = skip_ws(b, self.pos);
        if b.get(pos) != Some(&b'"') {
            self.pos = b.len();
            return None;
        }
        let key_end = skip_value(b, pos);
        let key = JsonRef::new(b.get(pos..key_end)?);
        pos = skip_ws(b, key_end);
        if b.get(pos) != Some(&b':') {
            self.pos = b.len();
            return None;
        }
        pos = skip_ws(b, pos + 1);
        let value_end = skip_value(b, pos);
        let value = JsonRef::new(b.get(pos..value_end)?);
        pos = skip_ws(b, value_end);
        self.pos = if b.get(pos) == Some(&b',') {
            pos + 1
        } else {
            b.len()
        };
        Some((key, value))
    }
}

/// Iterator over an array's elements.
#[derive(Debug, Clone)]
pub struct Elements<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = JsonRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.b;
        let pos = skip_ws(b, self.pos);
        if matches!(b.get(pos), None | Some(b']')) {
            self.pos = b.len();
            return None;
        }
        let end = skip_value(b, pos);
        let value = JsonRef::new(b.get(pos..end)?);
        let next = skip_ws(b, end);
        self.pos = if b.get(next) == Some(&b',') {
            next + 1
        } else {
            b.len()
        };
        Some(value)
    }
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// The end (exclusive) of the value that starts at `pos`.
pub(crate) fn skip_value(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(b'"') => skip_string(b, pos),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = pos;
            while let Some(&c) = b.get(i) {
                match c {
                    b'"' => {
                        i = skip_string(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = pos;
            while !matches!(
                b.get(i),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                i += 1;
            }
            i
        }
    }
}

fn skip_string(b: &[u8], pos: usize) -> usize {
    let mut i = pos + 1;
    loop {
        // Eight bytes at a time to the next quote or backslash (validated bytes: no other
        // byte matters here).
        while let Some(word) = super::swar::word_at(b, i) {
            let mask = super::swar::quote_or_backslash(word);
            if mask != 0 {
                i += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match b.get(i) {
            Some(b'"') => return i + 1,
            Some(b'\\') => i += 2,
            Some(_) => i += 1,
            None => return b.len(),
        }
    }
}

/// The text of a string's escaped contents. A lone UTF-16 surrogate (which `JSON.parse` keeps
/// and Rust strings cannot hold) becomes U+FFFD.
fn decode_escaped(inner: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(inner).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    // A high surrogate waiting for its low half.
    let mut pending_high: Option<u16> = None;
    while let Some(c) = chars.next() {
        let decoded = if c == '\\' {
            match chars.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 {
                        return None;
                    }
                    let unit = u16::from_str_radix(&hex, 16).ok()?;
                    match (pending_high.take(), unit) {
                        (Some(high), 0xDC00..=0xDFFF) => {
                            out.extend(
                                char::decode_utf16([high, unit]).map(|r| r.unwrap_or('\u{fffd}')),
                            );
                        }
                        (high, _) => {
                            if high.is_some() {
                                out.push('\u{fffd}');
                            }
                            if (0xD800..0xDC00).contains(&unit) {
                                pending_high = Some(unit);
                            } else {
                                out.push(char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}'));
                            }
                        }
                    }
                    continue;
                }
                _ => return None,
            }
        } else {
            c
        };
        if pending_high.take().is_some() {
            out.push('\u{fffd}');
        }
        out.push(decoded);
    }
    if pending_high.is_some() {
        out.push('\u{fffd}');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> JsonRef<'_> {
        JsonRef::new(s.as_bytes())
    }

    #[test]
    fn non_empty_strings_are_told_without_decoding() {
        for (json, nonempty) in [
            (r#""""#, false),
            (r#""a""#, true),
            (r#""\u0000""#, true),
            (r#""\ud800""#, true),
            ("1", false),
            ("[\"a\"]", false),
        ] {
            assert_eq!(j(json).is_nonempty_str(), nonempty, "{json}");
            assert_eq!(j(json).as_nonempty_str().is_some(), nonempty, "{json}");
        }
    }

    #[test]
    fn lone_surrogates_decode_to_the_replacement_character() {
        for (json, text) in [
            (r#""a\ud800b""#, "a\u{fffd}b"),
            (r#""\ud800""#, "\u{fffd}"),
            (r#""\udc00x""#, "\u{fffd}x"),
            (r#""\ud800\n""#, "\u{fffd}\n"),
            (r#""\ud800\ud83d\ude00""#, "\u{fffd}\u{1f600}"),
            (r#""\ud83d\ude00""#, "\u{1f600}"),
            (r#""\ud800\u0041""#, "\u{fffd}A"),
        ] {
            assert_eq!(j(json).as_str().as_deref(), Some(text), "{json}");
        }
    }

    #[test]
    fn fields_reads_what_get_reads_in_one_pass() {
        for text in [
            r#"{"a":1,"b":{"a":2},"c":"x","a":3}"#,
            r#"{"b":[1,{"c":2}],"\u0061":"escaped key"}"#,
            r#"{}"#,
            r#"[1,2]"#,
            r#""not an object""#,
        ] {
            let v = j(text);
            let keys = ["a", "b", "c", "missing"];
            let got = v.fields(keys).map(|f| f.map(|x| x.bytes().to_vec()));
            let want = keys.map(|k| v.get(k).map(|x| x.bytes().to_vec()));
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn navigates_objects_and_arrays() {
        let v = j(r#"{"a": [1, "x", {"b": null}], "c" :true, "a2":{}}"#);
        assert_eq!(v.kind(), JsonKind::Object);
        let a = v.get("a").unwrap();
        assert_eq!(a.bytes(), br#"[1, "x", {"b": null}]"#);
        let els: Vec<_> = a.elements().map(|e| e.bytes()).collect();
        assert_eq!(els, vec![&b"1"[..], b"\"x\"", br#"{"b": null}"#]);
        assert_eq!(v.get("c").and_then(|c| c.as_bool()), Some(true));
        assert_eq!(v.get("a2").map(|x| x.bytes()), Some(&b"{}"[..]));
        assert!(v.get("zz").is_none());
        assert_eq!(j("[]").elements().count(), 0);
        assert_eq!(j("{}").members().count(), 0);
        assert_eq!(j("3").members().count(), 0);
    }

    #[test]
    fn last_duplicate_key_wins_and_escaped_keys_match() {
        let v = j(r#"{"id":"a","\u0069d":"b"}"#);
        assert_eq!(v.get("id").unwrap().as_str().unwrap(), "b");
    }

    #[test]
    fn strings_decode_escapes() {
        assert_eq!(
            j(r#""a\"\\\/\b\f\n\r\t""#).as_str().unwrap(),
            "a\"\\/\u{8}\u{c}\n\r\t"
        );
        assert_eq!(j(r#""\u00e9\ud83d\ude00""#).as_str().unwrap(), "é😀");
        assert!(j(r#""\u0041""#).str_eq("A"));
        assert!(!j("1").str_eq("1"));
    }

    #[test]
    fn deep_equality_at_the_default_depth_limit_fits_a_test_thread() {
        let depth = crate::Limits::DEFAULT_MAX_DEPTH as usize;
        let deep = format!(
            "{}1{}",
            "[{\"a\":".repeat(depth / 2),
            "}]".repeat(depth / 2)
        );
        crate::json::validate(deep.as_bytes(), &crate::Limits::default()).unwrap();
        assert!(j(&deep).deep_eq(&j(&deep)));
    }

    #[test]
    fn deep_equality_is_json_parse_equality() {
        assert!(j(r#"{"a":1,"b":[1,2]}"#).deep_eq(&j(r#"{"b":[1,2.0],"a":1e0}"#)));
        assert!(j(r#"{"a":1,"a":2}"#).deep_eq(&j(r#"{"a":2}"#)));
        assert!(!j(r#"{"a":1}"#).deep_eq(&j(r#"{"a":1,"b":2}"#)));
        assert!(!j(r#"{"a":1,"b":2}"#).deep_eq(&j(r#"{"a":1}"#)));
        assert!(!j("[1,2]").deep_eq(&j("[1]")));
        assert!(!j("true").deep_eq(&j("false")));
        assert!(!j("null").deep_eq(&j("0")));
        assert!(j(r#""\u0041""#).deep_eq(&j(r#""A""#)));
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            "", "{", "{\"a\"", "{\"a\":", "[1,", "\"\\", "}", "]", "{\"a\"1}", "\"\\u12",
        ] {
            let v = j(s);
            let _ = v.get("a");
            let _ = v.elements().count();
            let _ = v.as_str();
            let _ = v.deep_eq(&v);
        }
    }
}

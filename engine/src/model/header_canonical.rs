//! A session header in the one byte form sessdb writes (`SessionHeader::to_json`), read
//! without the general JSON reader: opening a store of many sessions parses every header, and
//! validating and walking each was most of such an open.
//!
//! Only a subset is taken: the keys in `to_json`'s order, integers as `to_json` writes them,
//! and strings without escapes or control characters. For those bytes the general reader
//! decides exactly the same header (they are valid JSON by construction, each key once); any
//! other input returns `None` and goes the general way (`SessionHeader::from_json`), which
//! names its refusals.

use crate::MAX_SAFE_INTEGER;

/// The fields of a header in the canonical form (`SessionHeader` builds itself from them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fields {
    pub(super) id: String,
    pub(super) created_at: i64,
    pub(super) cwd: Option<String>,
    pub(super) parent_session: Option<String>,
    pub(super) seed_length: Option<u64>,
    pub(super) subagent: bool,
    pub(super) delegation_depth: u64,
    pub(super) agent_preset: Option<String>,
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn lit<const N: usize>(&mut self, word: &[u8; N]) -> Option<()> {
        let got: &[u8; N] = self.b.get(self.at..self.at + N)?.try_into().ok()?;
        (got == word).then(|| self.at += N)
    }

    /// `0` or digits without a leading zero, at most 2^53 − 1.
    fn uint(&mut self) -> Option<u64> {
        let start = self.at;
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = self.b.get(start..self.at)?;
        if digits.is_empty() || digits.len() > 16 || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        let n = digits
            .iter()
            .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
        (n <= MAX_SAFE_INTEGER.unsigned_abs()).then_some(n)
    }

    /// A string with no backslash and no control character, as UTF-8.
    fn string(&mut self) -> Option<String> {
        self.lit(b"\"")?;
        let start = self.at;
        let rest = self.b.get(start..)?;
        let len = rest.iter().position(|&c| c == b'"')?;
        let inner = rest.get(..len)?;
        if inner.iter().any(|&c| c == b'\\' || c < 0x20) {
            return None;
        }
        let text = std::str::from_utf8(inner).ok()?.to_owned();
        self.at = start + len + 1;
        Some(text)
    }

    /// `,"key":` when it is next.
    fn key<const N: usize>(&mut self, key: &[u8; N]) -> bool {
        let at = self.at;
        if self.lit(b",\"").is_some() && self.lit(key).is_some() && self.lit(b"\":").is_some() {
            true
        } else {
            self.at = at;
            false
        }
    }
}

/// The header fields `bytes` hold when they are in `to_json`'s form; `None` otherwise (the
/// general reader then decides).
pub(super) fn parse(bytes: &[u8]) -> Option<Fields> {
    let mut r = Reader { b: bytes, at: 0 };
    r.lit(b"{\"type\":\"session\",\"version\":0,\"id\":")?;
    let id = r.string()?;
    r.lit(b",\"createdAt\":")?;
    let created_at = i64::try_from(r.uint()?).ok()?;
    let cwd = if r.key(b"cwd") {
        Some(r.string()?)
    } else {
        None
    };
    let parent_session = if r.key(b"parentSession") {
        Some(r.string()?)
    } else {
        None
    };
    let seed_length = if r.key(b"seedLength") {
        Some(r.uint()?)
    } else {
        None
    };
    let subagent = r.key(b"origin");
    if subagent {
        r.lit(b"\"subagent\"")?;
    }
    r.lit(b",\"delegationDepth\":")?;
    let delegation_depth = r.uint()?;
    let agent_preset = if r.key(b"agentPreset") {
        Some(r.string()?)
    } else {
        None
    };
    r.lit(b"}")?;
    (r.at == bytes.len()).then_some(Fields {
        id,
        created_at,
        cwd,
        parent_session,
        seed_length,
        subagent,
        delegation_depth,
        agent_preset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_what_is_not_the_canonical_form() {
        for other in [
            &br#"{"type":"session","version":0,"id":"a\"b","createdAt":1,"delegationDepth":0}"#[..],
            br#"{"version":0,"type":"session","id":"a","createdAt":1,"delegationDepth":0}"#,
            br#"{"type":"session","version":0,"id":"a","createdAt":1.0,"delegationDepth":0}"#,
            br#"{"type":"session","version":0,"id":"a","createdAt":01,"delegationDepth":0}"#,
            br#"{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0} "#,
            br#"{"type":"session","version":0,"id":"a","createdAt":1}"#,
        ] {
            assert_eq!(parse(other), None, "{}", String::from_utf8_lossy(other));
        }
        let f =
            parse(br#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#);
        assert_eq!(f.map(|f| f.id), Some("s".to_owned()));
    }
}

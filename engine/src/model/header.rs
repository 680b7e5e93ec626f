//! The session header (`docs/FORMATS.md` §2.2), kept beside the log, and its JSON form (the first
//! line of a DSH JSONL file).

use crate::json::{JsonKind, JsonRef, validate, write_i64, write_str, write_u64};
use crate::{Error, Limits, MAX_SAFE_INTEGER, Result};

/// The only session format version sessdb reads and writes (DSH `SESSION_FORMAT_VERSION`).
pub const SESSION_FORMAT_VERSION: u64 = 0;

/// A session's header. The format `version` is implied: always 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHeader {
    /// The session id (non-empty).
    pub id: String,
    /// Creation time, Unix epoch milliseconds (non-negative safe integer).
    pub created_at: i64,
    /// The working directory: an absolute path.
    pub cwd: Option<String>,
    /// The session this one was forked from.
    pub parent_session: Option<String>,
    /// How many events were inherited through a fork seed.
    pub seed_length: Option<u64>,
    /// `"subagent"` when the session was started by a parent agent.
    pub origin: Option<Origin>,
    /// Nesting depth of delegation (0 for a top-level session).
    pub delegation_depth: u64,
    /// The agent preset name.
    pub agent_preset: Option<String>,
}

/// The values of the header's `origin` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// `"subagent"`
    Subagent,
}

/// A header as the session rows of every table layout hold it (DSH's SQLite schema, sessdb's
/// analytics layout, PostgreSQL): the one mapping of its fields to columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderColumns<'a> {
    /// `created_at`.
    pub created_at: i64,
    /// `cwd`.
    pub cwd: Option<&'a str>,
    /// `parent_session`.
    pub parent_session: Option<&'a str>,
    /// `seed_length` (a count past `i64::MAX` saturates).
    pub seed_length: Option<i64>,
    /// `origin`: `'subagent'` or `NULL`.
    pub origin: Option<&'static str>,
    /// `delegation_depth` (saturating).
    pub delegation_depth: i64,
    /// `agent_preset`.
    pub agent_preset: Option<&'a str>,
}

impl SessionHeader {
    /// Its fields as a session row's columns ([`HeaderColumns`]).
    pub fn columns(&self) -> HeaderColumns<'_> {
        let sat = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        HeaderColumns {
            created_at: self.created_at,
            cwd: self.cwd.as_deref(),
            parent_session: self.parent_session.as_deref(),
            seed_length: self.seed_length.map(sat),
            origin: self.origin.map(|_| "subagent"),
            delegation_depth: sat(self.delegation_depth),
            agent_preset: self.agent_preset.as_deref(),
        }
    }

    /// A header with just an id and a creation time.
    pub fn new(id: impl Into<String>, created_at: i64) -> Self {
        Self {
            id: id.into(),
            created_at,
            cwd: None,
            parent_session: None,
            seed_length: None,
            origin: None,
            delegation_depth: 0,
            agent_preset: None,
        }
    }

    /// A header created at `time` (Unix epoch milliseconds of it; a time before 1970 is
    /// clamped to 0, as DSH's `createdAt` is never negative).
    ///
    /// ```
    /// use sessdb::SessionHeader;
    /// let h = SessionHeader::created("s1", std::time::SystemTime::now())
    ///     .with_cwd(std::path::Path::new("/home/dev/project"))?;
    /// assert!(h.created_at > 0);
    /// assert_eq!(h.cwd.as_deref(), Some("/home/dev/project"));
    /// # Ok::<(), sessdb::Error>(())
    /// ```
    pub fn created(id: impl Into<String>, time: std::time::SystemTime) -> Self {
        let ms = time
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self::new(id, ms)
    }

    /// This header with `cwd` set from a path.
    ///
    /// # Errors
    /// [`Error::InvalidHeader`] when the path is not UTF-8 or not absolute (DSH's rule).
    pub fn with_cwd(mut self, cwd: &std::path::Path) -> Result<Self> {
        let text = cwd.to_str().ok_or_else(|| Error::InvalidHeader {
            problem: format!("cwd {} is not UTF-8", cwd.display()),
        })?;
        if !is_absolute(text) {
            return Err(Error::InvalidHeader {
                problem: format!("cwd {text:?} must be an absolute path"),
            });
        }
        self.cwd = Some(text.to_owned());
        Ok(self)
    }

    /// Checks the header rules (`docs/FORMATS.md` §2.2).
    ///
    /// # Errors
    /// [`Error::InvalidHeader`] naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |problem: &str| {
            Err(Error::InvalidHeader {
                problem: problem.to_owned(),
            })
        };
        if self.id.is_empty() {
            return bad("id must be a non-empty string");
        }
        // The log stores ids with a 16-bit length.
        if self.id.len() > usize::from(u16::MAX) {
            return bad("id must be at most 65535 bytes long");
        }
        if !(0..=MAX_SAFE_INTEGER).contains(&self.created_at) {
            return bad("createdAt must be a non-negative safe integer");
        }
        if self.cwd.as_deref().is_some_and(|c| !is_absolute(c)) {
            return bad("cwd must be an absolute path");
        }
        let safe = |v: u64| v <= MAX_SAFE_INTEGER as u64;
        if !self.seed_length.is_none_or(safe) {
            return bad("seedLength must be a non-negative safe integer");
        }
        if !safe(self.delegation_depth) {
            return bad("delegationDepth must be a non-negative safe integer");
        }
        Ok(())
    }

    /// Parses a header object, with or without `"type":"session"`.
    ///
    /// # Errors
    /// [`Error::UnsupportedFormat`] for a `version` other than 0 (checked first), else
    /// [`Error::InvalidHeader`].
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        // The form sessdb writes itself, read in one pass (`header_canonical.rs`): the same
        // header the general reader decides, or `None` and the general reader.
        if let Some(f) = super::header_canonical::parse(bytes) {
            let mut header = SessionHeader::new(f.id, f.created_at);
            header.cwd = f.cwd;
            header.parent_session = f.parent_session;
            header.seed_length = f.seed_length;
            header.origin = f.subagent.then_some(Origin::Subagent);
            header.delegation_depth = f.delegation_depth;
            header.agent_preset = f.agent_preset;
            header.validate()?;
            return Ok(header);
        }
        Self::from_json_general(bytes)
    }

    /// [`SessionHeader::from_json`] by the general JSON reader.
    pub(super) fn from_json_general(bytes: &[u8]) -> Result<Self> {
        let bad = |problem: String| Error::InvalidHeader { problem };
        validate(bytes, &Limits::default()).map_err(|e| bad(format!("not lossless JSON: {e}")))?;
        let root = JsonRef::new(bytes);
        if root.kind() != JsonKind::Object {
            return Err(bad("a header must be a JSON object".into()));
        }
        // One pass over the members, no allocation per key (opening a store of many sessions
        // parses every header: the per-key strings and a second walk for "version" made
        // this most of such an open). The refusals keep their order: a missing or other
        // version first, then the first bad member, then a missing required member.
        let mut header = SessionHeader::new(String::new(), 0);
        let mut version = None;
        let mut first_bad: Option<Error> = None;
        let (mut has_type, mut has_id, mut has_created) = (false, false, false);
        // Members in order, so a repeated key ends with its last value, as in `JSON.parse`.
        for (key, value) in root.members() {
            let key = key.as_str().unwrap_or_default();
            if key == "version" {
                version = Some(value);
            }
            if first_bad.is_some() {
                continue;
            }
            let string = || {
                value
                    .as_str()
                    .map(|s| s.into_owned())
                    .ok_or_else(|| bad(format!("{key} must be a string")))
            };
            let uint = || {
                value
                    .as_safe_integer()
                    .filter(|v| *v >= 0)
                    .ok_or_else(|| bad(format!("{key} must be a non-negative safe integer")))
            };
            let outcome: Result<()> = match &*key {
                "type" if value.str_eq("session") => Ok(()),
                "type" => Err(bad("type must be \"session\"".into())),
                "version" => Ok(()),
                "id" => string().map(|v| header.id = v),
                "createdAt" => uint().map(|v| header.created_at = v),
                "cwd" => string().map(|v| header.cwd = Some(v)),
                "parentSession" => string().map(|v| header.parent_session = Some(v)),
                "seedLength" => uint().map(|v| header.seed_length = Some(v.unsigned_abs())),
                "origin" if value.str_eq("subagent") => {
                    header.origin = Some(Origin::Subagent);
                    Ok(())
                }
                "origin" => Err(bad("origin may only be \"subagent\"".into())),
                "delegationDepth" => uint().map(|v| header.delegation_depth = v.unsigned_abs()),
                "agentPreset" => string().map(|v| header.agent_preset = Some(v)),
                "sandboxMode" | "approvalPolicy" => {
                    Err(bad(format!("retired header field {key:?}")))
                }
                // DSH's reader ignores fields it does not know; so does sessdb (they are
                // not kept: the header sessdb writes holds the fields above).
                _ => Ok(()),
            };
            match outcome {
                Ok(()) => match &*key {
                    "type" => has_type = true,
                    "id" => has_id = true,
                    "createdAt" => has_created = true,
                    _ => {}
                },
                Err(e) => first_bad = Some(e),
            }
        }
        let version = version.ok_or_else(|| bad("missing \"version\"".into()))?;
        if version.as_safe_integer() != Some(0) {
            return Err(Error::UnsupportedFormat {
                found: String::from_utf8_lossy(version.bytes()).into_owned(),
                expected: SESSION_FORMAT_VERSION,
            });
        }
        if let Some(e) = first_bad {
            return Err(e);
        }
        for (required, present) in [
            ("type", has_type),
            ("id", has_id),
            ("createdAt", has_created),
        ] {
            if !present {
                return Err(bad(format!("missing \"{required}\"")));
            }
        }
        header.validate()?;
        Ok(header)
    }

    /// The DSH JSONL header line (without newline): keys `type, version, id, createdAt, cwd,
    /// parentSession, seedLength, origin, delegationDepth, agentPreset`, with
    /// `delegationDepth` always present.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"{\"type\":\"session\",\"version\":0,\"id\":");
        write_str(&mut out, &self.id);
        out.extend_from_slice(b",\"createdAt\":");
        write_i64(&mut out, self.created_at);
        if let Some(cwd) = &self.cwd {
            out.extend_from_slice(b",\"cwd\":");
            write_str(&mut out, cwd);
        }
        if let Some(parent) = &self.parent_session {
            out.extend_from_slice(b",\"parentSession\":");
            write_str(&mut out, parent);
        }
        if let Some(n) = self.seed_length {
            out.extend_from_slice(b",\"seedLength\":");
            write_u64(&mut out, n);
        }
        if let Some(Origin::Subagent) = self.origin {
            out.extend_from_slice(b",\"origin\":\"subagent\"");
        }
        out.extend_from_slice(b",\"delegationDepth\":");
        write_u64(&mut out, self.delegation_depth);
        if let Some(preset) = &self.agent_preset {
            out.extend_from_slice(b",\"agentPreset\":");
            write_str(&mut out, preset);
        }
        out.push(b'}');
        out
    }
}

/// `path.isAbsolute` on either platform: `/x`, `\x`, `C:\x`, `C:/x`.
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    matches!(b.first(), Some(b'/' | b'\\'))
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_in_dsh_key_order() {
        let line = r#"{"type":"session","version":0,"id":"c","createdAt":17,"cwd":"/w","parentSession":"p","seedLength":42,"origin":"subagent","delegationDepth":1,"agentPreset":"x"}"#;
        let h = SessionHeader::from_json(line.as_bytes()).unwrap();
        assert_eq!(h.seed_length, Some(42));
        assert_eq!(String::from_utf8(h.to_json()).unwrap(), line);
        let minimal = SessionHeader::new("s", 0);
        assert_eq!(
            minimal.to_json(),
            br#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#
        );
    }

    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::prop_oneof![
            proptest::string::string_regex("[a-z0-9/._-]{1,12}").unwrap_or_else(|_| unreachable!()),
            proptest::prelude::any::<String>(),
            proptest::sample::select(vec![
                "a\"b".to_owned(),
                "x\\y".to_owned(),
                "tab\there".to_owned(),
                "é😀".to_owned(),
            ]),
        ]
    }

    proptest::proptest! {
        /// The one-pass reader of sessdb's own form (`header_canonical.rs`) decides as the
        /// general reader: on what `to_json` writes and on those bytes with one byte changed.
        #[test]
        fn the_canonical_reader_decides_as_the_general_one(
            id in text(),
            created in 0i64..=crate::MAX_SAFE_INTEGER,
            cwd in proptest::option::of(text()),
            parent in proptest::option::of(text()),
            seed in proptest::option::of(0u64..1000),
            subagent in proptest::prelude::any::<bool>(),
            depth in 0u64..5,
            preset in proptest::option::of(text()),
            edit in proptest::option::of((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>())),
        ) {
            let mut h = SessionHeader::new(id, created);
            h.cwd = cwd.map(|c| format!("/{c}"));
            h.parent_session = parent;
            h.seed_length = seed;
            h.origin = subagent.then_some(Origin::Subagent);
            h.delegation_depth = depth;
            h.agent_preset = preset;
            let mut bytes = h.to_json();
            if let Some((at, byte)) = edit {
                let i = at % bytes.len();
                bytes[i] = byte;
            }
            let general = SessionHeader::from_json_general(&bytes);
            let fast = SessionHeader::from_json(&bytes);
            match (&general, &fast) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
                _ => proptest::prop_assert!(false, "{:?} vs {:?}", general, fast),
            }
            if edit.is_none() && general.is_ok() {
                proptest::prop_assert!(super::super::header_canonical::parse(&bytes).is_some() || bytes.contains(&b'\\'));
            }
        }
    }

    #[test]
    fn headers_from_a_system_time_and_a_path() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_767_225_600_123);
        assert_eq!(SessionHeader::created("s", t).created_at, 1_767_225_600_123);
        let before = std::time::UNIX_EPOCH - std::time::Duration::from_secs(5);
        assert_eq!(SessionHeader::created("s", before).created_at, 0);
        let h = SessionHeader::new("s", 0)
            .with_cwd(std::path::Path::new("/a/b"))
            .unwrap();
        assert_eq!(h.cwd.as_deref(), Some("/a/b"));
        h.validate().unwrap();
        assert!(
            SessionHeader::new("s", 0)
                .with_cwd(std::path::Path::new("rel"))
                .is_err()
        );
    }

    #[test]
    fn foreign_version_is_refused_before_shape_checks() {
        for line in [
            &br#"{"version":3,"bogus":1}"#[..],
            br#"{"type":"x","origin":"y","version":3}"#,
            br#"{"version":0,"version":3}"#,
        ] {
            let err = SessionHeader::from_json(line).unwrap_err();
            assert!(
                matches!(err, Error::UnsupportedFormat { ref found, expected: 0 } if found == "3"),
                "{err}"
            );
        }
    }

    #[test]
    fn invalid_headers_name_the_field() {
        for (line, needle) in [
            (
                r#"{"type":"session","version":0,"createdAt":1}"#,
                "missing \"id\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"a"}"#,
                "missing \"createdAt\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"","createdAt":1}"#,
                "id must be",
            ),
            (
                r#"{"type":"session","version":0,"id":"a","createdAt":-1}"#,
                "createdAt",
            ),
            (
                r#"{"type":"session","version":0,"id":"a","createdAt":1,"cwd":"rel/dir"}"#,
                "absolute",
            ),
            (
                r#"{"type":"session","version":0,"id":"a","createdAt":1,"origin":"x"}"#,
                "origin",
            ),
            (
                r#"{"type":"session","version":0,"id":"a","createdAt":1,"sandboxMode":"x"}"#,
                "retired",
            ),
            (
                r#"{"version":0,"id":"a","createdAt":1}"#,
                "missing \"type\"",
            ),
            (
                r#"{"type":"x","version":0,"id":"a","createdAt":1}"#,
                "type must be",
            ),
            (
                r#"{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":1.5}"#,
                "delegationDepth",
            ),
            // The order of refusals: the version first (even after a bad member), then the
            // first bad member, then a missing required member.
            (
                r#"{"type":"x","id":"a","createdAt":1}"#,
                "missing \"version\"",
            ),
            (
                r#"{"type":"session","createdAt":-1,"version":0}"#,
                "createdAt must be",
            ),
            (
                r#"{"type":"x","version":0,"cwd":"rel","id":"a","createdAt":1}"#,
                "type must be",
            ),
        ] {
            let err = SessionHeader::from_json(line.as_bytes()).unwrap_err();
            assert!(matches!(err, Error::InvalidHeader { .. }), "{line}");
            assert!(err.to_string().contains(needle), "{line}: {err}");
        }
        // As DSH reads them: unknown fields ignored, a repeated key's last value wins, an
        // integer however spelled.
        let h = SessionHeader::from_json(
            br#"{"type":"session","version":0.0,"id":"a","id":"b","createdAt":1.7e1,"zz":1}"#,
        )
        .unwrap();
        assert_eq!((h.id.as_str(), h.created_at), ("b", 17));
        assert!(is_absolute("C:\\x") && is_absolute("/") && !is_absolute("x"));
        let long = SessionHeader::new("x".repeat(65_536), 0);
        assert!(matches!(long.validate(), Err(Error::InvalidHeader { .. })));
        assert!(SessionHeader::new("x".repeat(65_535), 0).validate().is_ok());
        let long = SessionHeader::new("x".repeat(65_536), 0);
        assert!(matches!(long.validate(), Err(Error::InvalidHeader { .. })));
        assert_eq!(
            SessionHeader::new("x".repeat(65_535), 0).validate().ok(),
            Some(())
        );
    }
}

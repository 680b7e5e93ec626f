//! One event as one DSH v0 JSONL line (`docs/DESIGN.md` §2.3, `docs/FORMATS.md` §2.2).
//!
//! sessdb writes the envelope keys in the order `type, seq, time, data, sourceEventSeqs,
//! surfaceOp, ignorable` with no whitespace, and `data` as its exact stored bytes; parsing
//! such a line and printing it again gives the same bytes. Lines written by DSH in another
//! key order read as the same event and print in the canonical order — except the one other
//! order DSH itself writes (its repair closers: `surfaceOp` before `sourceEventSeqs`), which
//! the event remembers so that DSH's files are reproduced byte for byte.

use super::{Event, SurfaceOp, envelope};
use crate::json::{JsonKind, JsonRef, validate};
use crate::{Error, Limits, Result};

impl Event {
    /// Parses one JSONL line (without its newline) into an event.
    ///
    /// Only the envelope is checked here (exact key set, types, safe integers); the session's
    /// acceptance function checks the rest when the event is appended.
    ///
    /// # Errors
    /// [`Error::InvalidEnvelope`] naming the problem.
    pub fn from_jsonl(line: &[u8], limits: &Limits) -> Result<Event> {
        if let Some(event) = canonical(line, limits) {
            debug_assert!(
                Self::from_jsonl_general(line, limits).ok().as_ref() == Some(&event),
                "the canonical line's shortcut and the general parse disagree"
            );
            return Ok(event);
        }
        Self::from_jsonl_general(line, limits)
    }

    /// The event of a line in the canonical envelope — `{"type":"T","seq":S,"time":M,"data":D}`
    /// then any of `sourceEventSeqs`, `surfaceOp` and `ignorable` in that order, with no
    /// whitespace, `T` printable ASCII without escapes, plain safe integers, `D` valid within
    /// `limits` — and `None` for any other line (which [`Event::from_jsonl`] may still read).
    /// Where it gives an event, `from_jsonl` gives the same one: it is the shortcut
    /// `from_jsonl` takes first, for a reader that checks more of a line than `from_jsonl`
    /// does (the JSONL import) and may skip those checks for lines this reads.
    pub fn from_canonical_jsonl(line: &[u8], limits: &Limits) -> Option<Event> {
        canonical(line, limits)
    }

    /// [`Event::from_jsonl`] without its shortcut for canonical lines, for the fuzz target
    /// that holds the two to the same events.
    #[cfg(fuzzing)]
    #[doc(hidden)]
    pub fn fuzz_from_jsonl_general(line: &[u8], limits: &Limits) -> Result<Event> {
        Self::from_jsonl_general(line, limits)
    }

    /// Any line: the whole line validated, then its members read.
    fn from_jsonl_general(line: &[u8], limits: &Limits) -> Result<Event> {
        let bad = |seq: Option<u64>, problem: String| Error::InvalidEnvelope { seq, problem };
        // The envelope adds one level of nesting and a bounded amount of text around `data`;
        // `data` itself is held to `limits` by the acceptance function.
        let line_limits = Limits {
            max_depth: limits.max_depth.saturating_add(1),
            max_data_bytes: limits.max_data_bytes.saturating_mul(2),
        };
        validate(line, &line_limits)
            .map_err(|e| bad(None, format!("line is not lossless JSON: {e}")))?;
        let root = JsonRef::new(line);
        if root.kind() != JsonKind::Object {
            return Err(bad(None, "a line must be a JSON object".into()));
        }
        let mut fields: [Option<JsonRef<'_>>; 7] = [None; 7];
        let mut surface_op_first = false;
        for (key, value) in root.members() {
            let slot = ENVELOPE_KEYS
                .iter()
                .position(|k| key.str_eq(k))
                .ok_or_else(|| {
                    let name = key.as_str().unwrap_or_default().into_owned();
                    bad(None, format!("unknown envelope key {name:?}"))
                })?;
            surface_op_first |= slot == 5 && fields[4].is_none();
            // A repeated key: the last one wins, as in `JSON.parse`.
            fields[slot] = Some(value);
        }
        let [event_type, seq, time, data, sources, surface_op, ignorable] = fields;

        let seq = envelope::seq_from_json(&seq.ok_or_else(|| bad(None, "missing \"seq\"".into()))?)
            .ok_or_else(|| bad(None, "\"seq\" must be a non-negative safe integer".into()))?;
        let bad = |problem: &str| bad(Some(seq), problem.to_owned());
        let event_type = event_type
            .ok_or_else(|| bad("missing \"type\""))?
            .as_str()
            .ok_or_else(|| bad("\"type\" must be a string"))?;
        let time = time
            .ok_or_else(|| bad("missing \"time\""))?
            .as_safe_integer()
            .ok_or_else(|| bad("\"time\" must be a safe integer"))?;
        let data = data.ok_or_else(|| bad("missing \"data\""))?;
        // The line was checked nested one level deeper than `data` may be: `data` is lossless
        // JSON within `limits.max_depth`, and the acceptance function need not check it again.
        let mut event =
            Event::new(event_type, seq, time, data.bytes()).mark_data_valid(limits.max_depth);
        if let Some(list) = sources {
            let seqs =
                envelope::seqs_from_json(&list).ok_or_else(|| bad(envelope::SOURCES_RULE))?;
            event = event.with_sources(seqs);
        }
        if let Some(op) = surface_op {
            event = event.with_surface_op(
                SurfaceOp::from_json(&op).ok_or_else(|| bad(envelope::SURFACE_OP_RULE))?,
            );
        }
        event = event.with_surface_op_first(surface_op_first);
        if let Some(flag) = ignorable {
            if flag.bytes() != b"true" {
                return Err(bad("\"ignorable\" may only be true"));
            }
            event = event.with_ignorable(true);
        }
        Ok(event)
    }

    /// Appends this event as one JSONL line, without the newline.
    pub fn write_jsonl(&self, out: &mut Vec<u8>) {
        write_line(
            out,
            self.event_type(),
            self.seq,
            self.time,
            self.data(),
            self.sources().map(|s| s.iter().copied()),
            self.surface_op(),
            self.ignorable,
            self.surface_op_first(),
        );
    }

    /// This event as one JSONL line, without the newline.
    pub fn to_jsonl(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() + 96);
        self.write_jsonl(&mut out);
        out
    }
}

/// The shortcut for the line most events come in: `{"type":"T","seq":S,"time":M,"data":D}`,
/// then any of `sourceEventSeqs`, `surfaceOp` and `ignorable`, as `JSON.stringify` of DSH's
/// events and sessdb write them — those keys in that order, no whitespace, `T` printable ASCII
/// without escapes, plain integers. Only `D` is validated (a streamed chunk in DSH's form by
/// its one pass), where the general parse validates the whole line and then walks `D` again to
/// find the members after it. `None` for any other line, or any doubt (a `D` that is not one
/// valid value, a line past the size limit): the general parse decides, and wherever this says
/// yes it gives the same event (the fuzz target `event_line` and a proptest hold it to that;
/// a `debug_assert!` checks every line in debug builds). The members after `D` are read from
/// the line's end: once `D` is one valid value, the line can be read no other way.
fn canonical(line: &[u8], limits: &Limits) -> Option<Event> {
    // The general parse holds the line to twice the data limit (`line_limits`).
    if line.len() > limits.max_data_bytes.saturating_mul(2) {
        return None;
    }
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let name_len = rest.iter().position(|&b| b == b'"')?;
    let (name, rest) = rest.split_at(name_len);
    if !name
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'\\')
    {
        return None;
    }
    let rest = rest.strip_prefix(b"\",\"seq\":")?;
    let (seq, rest) = plain_integer(rest)?;
    let seq = envelope::checked_seq(seq)?;
    let rest = rest.strip_prefix(b",\"time\":")?;
    let (time, rest) = plain_integer(rest)?;
    let time = envelope::checked_time(time)?;
    let mut data = rest.strip_prefix(b",\"data\":")?.strip_suffix(b"}")?;
    let ignorable = strip_end(&mut data, b",\"ignorable\":true");
    let surface_op = if strip_end(&mut data, b",\"surfaceOp\":\"append\"") {
        Some(SurfaceOp::Append)
    } else {
        replace_at_end(&mut data)
    };
    let sources = sources_at_end(&mut data);
    // Printable ASCII: the name is its own UTF-8.
    let name = std::str::from_utf8(name).ok()?;
    // `validate` refuses whitespace around a value, as the general parse's `data` has none.
    let chunk = name == super::types::names::ASSISTANT_CHUNK
        && crate::json::valid_by_chunk_shortcut(data, limits);
    if !chunk && validate(data, limits).is_err() {
        return None;
    }
    let mut event =
        Event::with_type_str(name, seq, time, data.into()).mark_data_valid(limits.max_depth);
    if chunk {
        event = event.mark_dsh_chunk();
    }
    if let Some(seqs) = sources {
        event = event.with_sources(seqs);
    }
    if let Some(op) = surface_op {
        event = event.with_surface_op(op);
    }
    if ignorable {
        event = event.with_ignorable(true);
    }
    Some(event)
}

/// Cuts `suffix` off the end of `bytes` when it ends with it.
fn strip_end(bytes: &mut &[u8], suffix: &[u8]) -> bool {
    match bytes.strip_suffix(suffix) {
        Some(rest) => {
            *bytes = rest;
            true
        }
        None => false,
    }
}

/// `,"surfaceOp":{"op":"replace","start":N,"end":M}` at the end of `bytes`, cut off; else
/// `bytes` unchanged (and the general parse reads any other spelling).
fn replace_at_end(bytes: &mut &[u8]) -> Option<SurfaceOp> {
    let rest = bytes.strip_suffix(b"}")?;
    let (end, rest) = seq_at_end(rest)?;
    let rest = rest.strip_suffix(b",\"end\":")?;
    let (start, rest) = seq_at_end(rest)?;
    *bytes = rest.strip_suffix(b",\"surfaceOp\":{\"op\":\"replace\",\"start\":")?;
    Some(SurfaceOp::Replace { start, end })
}

/// `,"sourceEventSeqs":[S,…]` at the end of `bytes`, cut off; else `bytes` unchanged.
fn sources_at_end(bytes: &mut &[u8]) -> Option<Vec<u64>> {
    let mut rest = bytes.strip_suffix(b"]")?;
    let mut seqs = Vec::new();
    if !rest.ends_with(b"[") {
        loop {
            let (seq, before) = seq_at_end(rest)?;
            seqs.push(seq);
            rest = before;
            match rest.strip_suffix(b",") {
                Some(before) => rest = before,
                None => break,
            }
        }
    }
    *bytes = rest
        .strip_suffix(b"[")?
        .strip_suffix(b",\"sourceEventSeqs\":")?;
    seqs.reverse();
    Some(seqs)
}

/// A plain non-negative safe integer token at the end of `bytes`, and the bytes before it.
fn seq_at_end(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let len = bytes
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .take(17)
        .count();
    let at = bytes.len() - len;
    let (v, rest) = plain_integer(&bytes[at..])?;
    if !rest.is_empty() {
        return None;
    }
    Some((envelope::checked_seq(v)?, &bytes[..at]))
}

/// A plain integer token at the start of `bytes` (`-?(0|[1-9][0-9]*)`, not `-0`, at most 16
/// digits), and the bytes after it; `None` for anything else (a fraction, an exponent, a
/// leading zero: the general parse reads those as `JSON.parse` does). The envelope's own
/// rules (`envelope::checked_seq`, `checked_time`) then say whether it is a seq or a time.
fn plain_integer(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let (neg, digits_at) = match bytes.first()? {
        b'-' => (true, 1),
        _ => (false, 0),
    };
    let len = bytes[digits_at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let digits = &bytes[digits_at..digits_at + len];
    // 16 digits hold every safe integer; more is for the general parse.
    if digits.is_empty() || digits.len() > 16 || (digits[0] == b'0' && (digits.len() > 1 || neg)) {
        return None;
    }
    // 16 digits stay under 10^16 < 2^63: no overflow.
    let v = digits
        .iter()
        .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
    Some((if neg { -v } else { v }, &bytes[digits_at + len..]))
}

/// One event's canonical JSONL line (without the newline), from its fields: shared by the
/// owned [`Event`] and the borrowed [`super::EventRef`], so both write the same bytes.
#[allow(
    clippy::too_many_arguments,
    reason = "the envelope's fields, each written in its place"
)]
pub(crate) fn write_line(
    out: &mut Vec<u8>,
    event_type: &str,
    seq: u64,
    time: i64,
    data: &[u8],
    sources: Option<impl Iterator<Item = u64>>,
    surface_op: Option<SurfaceOp>,
    ignorable: bool,
    surface_op_first: bool,
) {
    out.extend_from_slice(b"{\"type\":");
    crate::json::write_str(out, event_type);
    out.extend_from_slice(b",\"seq\":");
    crate::json::write_u64(out, seq);
    out.extend_from_slice(b",\"time\":");
    crate::json::write_i64(out, time);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    let write_sources = |out: &mut Vec<u8>, sources: Option<_>| {
        if let Some(sources) = sources {
            out.extend_from_slice(b",\"sourceEventSeqs\":[");
            for (i, s) in Iterator::enumerate(sources) {
                if i > 0 {
                    out.push(b',');
                }
                let s: u64 = s;
                crate::json::write_u64(out, s);
            }
            out.push(b']');
        }
    };
    let write_op = |out: &mut Vec<u8>| match surface_op {
        None => {}
        Some(SurfaceOp::Append) => out.extend_from_slice(b",\"surfaceOp\":\"append\""),
        Some(SurfaceOp::Replace { start, end }) => out.extend_from_slice(
            format!(",\"surfaceOp\":{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}")
                .as_bytes(),
        ),
    };
    if surface_op_first {
        write_op(out);
        write_sources(out, sources);
    } else {
        write_sources(out, sources);
        write_op(out);
    }
    if ignorable {
        out.extend_from_slice(b",\"ignorable\":true");
    }
    out.push(b'}');
}

const ENVELOPE_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "sourceEventSeqs",
    "surfaceOp",
    "ignorable",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_SAFE_INTEGER;

    fn parse(s: &str) -> Result<Event> {
        Event::from_jsonl(s.as_bytes(), &Limits::default())
    }

    #[test]
    fn canonical_lines_round_trip_byte_for_byte() {
        for line in [
            r#"{"type":"turn/start","seq":0,"time":1767225600000,"data":{"turn":1}}"#,
            r#"{"type":"tool/result","seq":12,"time":-5,"data":{"a": [1, 2]},"sourceEventSeqs":[11,3],"surfaceOp":"append"}"#,
            r#"{"type":"user/message","seq":7,"time":0,"data":{},"sourceEventSeqs":[],"surfaceOp":{"op":"replace","start":4,"end":6}}"#,
            r#"{"type":"plugin/\"x\"","seq":1,"time":1,"data":null,"ignorable":true}"#,
        ] {
            let event = parse(line).unwrap();
            assert_eq!(String::from_utf8(event.to_jsonl()).unwrap(), line);
        }
    }

    #[test]
    fn other_key_orders_read_the_same_event() {
        let closer = r#"{"type":"tool/result","seq":5,"time":9,"data":{},"surfaceOp":"append","sourceEventSeqs":[4]}"#;
        let a = parse(closer).unwrap();
        assert!(a.surface_op_first());
        assert_eq!(
            String::from_utf8(a.to_jsonl()).unwrap(),
            closer,
            "DSH's closer order is kept"
        );
        let b = parse(r#"{"seq":5,"sourceEventSeqs":[4],"type":"tool/result","time":9,"surfaceOp":"append","data":{}}"#).unwrap();
        assert_eq!(a.clone().with_surface_op_first(false), b);
        assert_eq!(a.sources(), Some(&[4][..]));
    }

    #[test]
    fn malformed_envelopes_are_refused_with_the_problem() {
        let cases = [
            (r#"[1]"#, "must be a JSON object"),
            (r#"{"type":"a","seq":0,"time":0}"#, "missing \"data\""),
            (r#"{"type":"a","time":0,"data":1}"#, "missing \"seq\""),
            (
                r#"{"type":"a","seq":-1,"time":0,"data":1}"#,
                "non-negative safe integer",
            ),
            (
                r#"{"type":"a","seq":1.5,"time":0,"data":1}"#,
                "non-negative safe integer",
            ),
            (
                r#"{"type":"a","seq":9007199254740992,"time":0,"data":1}"#,
                "non-negative safe integer",
            ),
            (
                r#"{"type":1,"seq":0,"time":0,"data":1}"#,
                "\"type\" must be a string",
            ),
            (
                r#"{"type":"a","seq":0,"time":"x","data":1}"#,
                "safe integer",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"extra":1}"#,
                "unknown envelope key \"extra\"",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"ignorable":false}"#,
                "may only be true",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"surfaceOp":"replace"}"#,
                "surfaceOp",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"surfaceOp":{"op":"replace","start":1,"end":2,"x":1}}"#,
                "surfaceOp",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"surfaceOp":{"op":"append","start":1,"end":2}}"#,
                "surfaceOp",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"sourceEventSeqs":[-1]}"#,
                "sourceEventSeqs",
            ),
            (
                r#"{"type":"a","seq":0,"time":0,"data":1,"sourceEventSeqs":{}}"#,
                "sourceEventSeqs",
            ),
            (r#"{"type":"a","seq":0,"time":0,"data":-0}"#, "lossless"),
        ];
        for (line, needle) in cases {
            let err = parse(line).unwrap_err();
            assert!(
                matches!(err, Error::InvalidEnvelope { .. }),
                "{line}: {err}"
            );
            assert!(err.to_string().contains(needle), "{line}: {err}");
        }
        // As `JSON.parse` reads them: an integer however spelled, the last of repeated keys.
        let e = parse(r#"{"type":"a","seq":9,"time":1.5e1,"data":1,"seq":3.0}"#).unwrap();
        assert_eq!((e.seq(), e.time()), (3, 15));
    }

    pub(super) fn event_strategy() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        let op = prop_oneof![
            Just(None),
            Just(Some(SurfaceOp::Append)),
            (0u64..1000, 0u64..1000)
                .prop_map(|(start, end)| Some(SurfaceOp::Replace { start, end })),
        ];
        (
            "[a-z]{1,8}/[a-z\\-]{1,8}|user/message|tool/result",
            0..=MAX_SAFE_INTEGER as u64,
            -MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER,
            crate::json::strategy::json_value(),
            proptest::option::of(proptest::collection::vec(0..=MAX_SAFE_INTEGER as u64, 0..6)),
            op,
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(ty, seq, time, data, sources, op, ignorable, op_first)| {
                let e = Event::new(ty, seq, time, data.into_bytes())
                    .with_sources_opt(sources.map(Into::into))
                    .with_surface_op_opt(op)
                    .with_ignorable(ignorable);
                e.with_surface_op_first(op_first)
            })
    }

    proptest::proptest! {
        #[test]
        fn any_event_round_trips_through_its_line(event in event_strategy()) {
            let line = event.to_jsonl();
            let back = Event::from_jsonl(&line, &Limits::default()).unwrap();
            proptest::prop_assert_eq!(&back, &event);
            proptest::prop_assert_eq!(back.to_jsonl(), line);
        }
    }
}

#[cfg(test)]
mod data_checked_once {
    use super::*;

    /// `data` checked with its line is not checked again (`docs/DESIGN.md` §2.2: once), and
    /// only within the limits the line was checked under.
    #[test]
    fn data_checked_with_its_line_is_trusted_only_within_those_limits() {
        let deep = format!("{}{}", "[".repeat(5), "]".repeat(5));
        let line = format!(r#"{{"type":"plugin/x","seq":0,"time":1,"data":{deep}}}"#);
        let at = |max_depth| Limits {
            max_depth,
            ..Limits::default()
        };
        let e = Event::from_jsonl(line.as_bytes(), &at(5)).unwrap();
        assert!(e.data_valid_within(&at(5)) && e.data_valid_within(&at(512)));
        // What the line's check passed, the validator passes at that depth.
        assert!(validate(e.data(), &at(5)).is_ok());
        // Stricter limits at acceptance than at the parse: checked again (and refused).
        assert!(!e.data_valid_within(&at(4)));
        assert!(validate(e.data(), &at(4)).is_err());
        let small = Limits {
            max_data_bytes: deep.len() - 1,
            ..at(5)
        };
        assert!(!e.data_valid_within(&small));
        // An event made any other way carries no mark.
        assert!(!Event::new("plugin/x", 0, 1, deep.as_bytes()).data_valid_within(&at(512)));
        assert!(Event::from_jsonl(line.as_bytes(), &at(4)).is_err());
    }
}

#[cfg(test)]
mod canonical_shortcut {
    use super::*;

    /// What `from_jsonl` and the general parse give, side by side: the same event, or the same
    /// refusal.
    fn same_as_general(line: &[u8], limits: &Limits) -> Option<Event> {
        let fast = Event::from_jsonl(line, limits);
        let general = Event::from_jsonl_general(line, limits);
        match (&fast, &general) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", String::from_utf8_lossy(line)),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!(
                "{}: {fast:?} against {general:?}",
                String::from_utf8_lossy(line)
            ),
        }
        canonical(line, limits)
    }

    #[test]
    fn lines_as_json_stringify_writes_them_take_the_shortcut() {
        let limits = Limits::default();
        for line in [
            r#"{"type":"assistant/chunk","seq":7,"time":1700000000000,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"hi"}}}"#,
            r#"{"type":"assistant/chunk","seq":7,"time":1,"data":{"turn":1,"chunk":{"text":"é"}}}"#,
            r#"{"type":"turn/start","seq":0,"time":-5,"data":{"turn":1}}"#,
            r#"{"type":"plugin/x","seq":9007199254740991,"time":-9007199254740991,"data":[1,"a",null,true]}"#,
            r#"{"type":"","seq":1,"time":0,"data":0}"#,
            r#"{"type":"a","seq":1,"time":1,"data":"\ud800"}"#,
            r#"{"type":"a","seq":1,"time":1,"data":[1,2]}"#,
            r#"{"type":"user/message","seq":2,"time":3,"data":{"id":"u"},"surfaceOp":"append"}"#,
            r#"{"type":"assistant/message","seq":9,"time":3,"data":{"a":[3]},"sourceEventSeqs":[1,2,30],"surfaceOp":"append"}"#,
            r#"{"type":"a","seq":1,"time":1,"data":{"a":[3]},"sourceEventSeqs":[]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"surfaceOp":{"op":"replace","start":0,"end":9007199254740991},"ignorable":true}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"ignorable":true}"#,
        ] {
            let e = same_as_general(line.as_bytes(), &limits).expect(line);
            assert!(e.data_valid_within(&limits), "{line}");
        }
    }

    /// A chunk line whose `data` is in DSH's form carries the recognizer's yes to the
    /// acceptance function, which then does not read it again; any other line does not,
    /// and the yes holds only within the limits it was given under.
    #[test]
    fn a_chunk_in_dsh_form_is_marked_and_nothing_else() {
        let limits = Limits::default();
        let chunk = r#"{"type":"assistant/chunk","seq":7,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"hi"}}}"#;
        let e = same_as_general(chunk.as_bytes(), &limits).expect(chunk);
        assert!(e.dsh_chunk_within(&limits));
        // Within a narrower size limit than the data, or a depth under the form's: not.
        let small = Limits {
            max_data_bytes: e.data().len() - 1,
            ..Limits::default()
        };
        assert!(!e.dsh_chunk_within(&small));
        let shallow = Limits {
            max_depth: 1,
            ..Limits::default()
        };
        assert!(!e.dsh_chunk_within(&shallow));
        for line in [
            // A chunk outside DSH's form (valid JSON all the same), another type in the form.
            r#"{"type":"assistant/chunk","seq":7,"time":1,"data":{"turn":1,"chunk":{"text":"é"}}}"#,
            r#"{"type":"plugin/x","seq":7,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"hi"}}}"#,
        ] {
            let e = same_as_general(line.as_bytes(), &limits).expect(line);
            assert!(
                e.data_valid_within(&limits) && !e.dsh_chunk_within(&limits),
                "{line}"
            );
        }
        // The general parse (whitespace in the line) marks nothing beyond valid JSON.
        let spaced = chunk.replace(r#""seq":7"#, r#""seq": 7"#);
        let e = Event::from_jsonl(spaced.as_bytes(), &limits).expect("spaced");
        assert!(!e.dsh_chunk_within(&limits));
    }

    /// Every way a line can leave the form sends it to the general parse, which reads or
    /// refuses it as before.
    #[test]
    fn anything_else_goes_to_the_general_parse() {
        let limits = Limits::default();
        for line in [
            // Whitespace: around `data` (the general parse's `data` has none), between keys.
            r#"{"type":"a","seq":1,"time":1,"data": 1}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1 }"#,
            r#"{"type":"a", "seq":1,"time":1,"data":1}"#,
            // Integers spelled otherwise, or out of range.
            r#"{"type":"a","seq":01,"time":1,"data":1}"#,
            r#"{"type":"a","seq":1.0,"time":1,"data":1}"#,
            r#"{"type":"a","seq":1,"time":1e3,"data":1}"#,
            r#"{"type":"a","seq":1,"time":-0,"data":1}"#,
            r#"{"type":"a","seq":-1,"time":1,"data":1}"#,
            r#"{"type":"a","seq":9007199254740992,"time":1,"data":1}"#,
            r#"{"type":"a","seq":1,"time":99999999999999999,"data":1}"#,
            r#"{"type":"a","seq":1,"time":-9007199254740992,"data":1}"#,
            // A name with an escape or outside printable ASCII.
            r#"{"type":"a\/b","seq":1,"time":1,"data":1}"#,
            "{\"type\":\"\u{e9}\",\"seq\":1,\"time\":1,\"data\":1}",
            "{\"type\":\"a\tb\",\"seq\":1,\"time\":1,\"data\":1}",
            // `data` that is not one value: another key after it (the last one wins), junk.
            r#"{"type":"a","seq":1,"time":1,"data":{"x":1},"data":2}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"seq":2}"#,
            r#"{"type":"a","seq":1,"time":1,"data":{"x":1}"#,
            r#"{"type":"a","seq":1,"time":1,"data":}"#,
            r#"{"type":"a","seq":1,"time":1,"data":[1,]}"#,
            r#"{"type":"assistant/chunk","seq":1,"time":1,"data":{"turn":1}} "#,
            // Keys in another order, other keys, a missing one.
            r#"{"seq":1,"type":"a","time":1,"data":1}"#,
            r#"{"type":"a","seq":1,"time":1}"#,
            // The members after `data` in another order or spelling.
            r#"{"type":"a","seq":1,"time":1,"data":1,"surfaceOp":"append","sourceEventSeqs":[1]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"ignorable":true,"surfaceOp":"append"}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"sourceEventSeqs":[1.0]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"sourceEventSeqs":[01]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"sourceEventSeqs":[1,]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"sourceEventSeqs":[-1]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"sourceEventSeqs":[9007199254740992]}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"surfaceOp":{"start":1,"op":"replace","end":2}}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"surfaceOp":{"op":"replace","start":1,"end":2.0}}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"surfaceOp":"replace"}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"ignorable":false}"#,
            r#"{"type":"a","seq":1,"time":1,"data":1,"other":true}"#,
            r#"{"type":"a","seq":1,"time":1,"data":[1,"sourceEventSeqs":[2]]}"#,
        ] {
            assert!(
                same_as_general(line.as_bytes(), &limits).is_none(),
                "{line} took the shortcut"
            );
        }
    }

    /// The limits hold as in the general parse: `data` too deep or too long is refused or
    /// left unmarked there, never marked here.
    #[test]
    fn limits_decide_as_in_the_general_parse() {
        let deep = format!("{}{}", "[".repeat(6), "]".repeat(6));
        let line = format!(r#"{{"type":"a","seq":1,"time":1,"data":{deep}}}"#);
        for max_depth in [4, 5, 6, 7] {
            let limits = Limits {
                max_depth,
                ..Limits::default()
            };
            same_as_general(line.as_bytes(), &limits);
        }
        for max_data_bytes in [4, 12, 24, 40, line.len() / 2, line.len()] {
            let limits = Limits {
                max_data_bytes,
                ..Limits::default()
            };
            if let Ok(e) = Event::from_jsonl(line.as_bytes(), &limits) {
                assert_eq!(
                    e.data_valid_within(&limits),
                    deep.len() <= max_data_bytes,
                    "{max_data_bytes}"
                );
            }
            same_as_general(line.as_bytes(), &limits);
        }
    }

    proptest::proptest! {
        /// Any line, and that line with a byte changed, inserted or cut: the same event or
        /// refusal by both ways.
        #[test]
        fn a_line_reads_the_same_by_both_ways(
            event in super::tests::event_strategy(),
            edit in proptest::option::of((proptest::prelude::any::<proptest::sample::Index>(), 0u8..3, proptest::prelude::any::<u8>())),
        ) {
            let mut line = event.to_jsonl();
            if let Some((at, how, byte)) = edit {
                let i = at.index(line.len() + 1);
                match how {
                    0 if i < line.len() => line[i] = byte,
                    1 => line.insert(i, byte),
                    _ if i < line.len() => { line.remove(i); }
                    _ => {}
                }
            }
            same_as_general(&line, &Limits::default());
        }
    }
}

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

    fn event_strategy() -> impl proptest::strategy::Strategy<Value = Event> {
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

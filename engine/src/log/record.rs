//! Record payloads (`docs/FORMAT.md` §4): what a frame carries. Pure codec.
//!
//! Every payload that carries events ends with an *events section*; each event is prefixed
//! with its length so the resident index can point at one event's bytes and read exactly
//! those.

use crate::event::{Event, SurfaceOp};

use super::frame::RecordKind;

const FLAG_IGNORABLE: u8 = 1;
const FLAG_SOURCES: u8 = 2;
const OP_SHIFT: u8 = 2;
const FLAG_SURFACE_OP_FIRST: u8 = 16;
const OP_APPEND: u8 = 1;
const OP_REPLACE: u8 = 2;

/// A decoded record payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordBody {
    /// A session was created.
    Create {
        /// The session id.
        session: String,
        /// The header as its DSH JSON line.
        header_json: Vec<u8>,
        /// Seed events (and the end-seed marker).
        events: Vec<LocatedEvent>,
    },
    /// Events were appended.
    Append {
        /// The session id.
        session: String,
        /// The events, contiguous seqs.
        events: Vec<LocatedEvent>,
    },
    /// A session was forked.
    Fork {
        /// The child id.
        child: String,
        /// The child header as its DSH JSON line.
        header_json: Vec<u8>,
        /// The parent id.
        parent: String,
        /// How many of the parent's events the child inherits by reference.
        inherited: u64,
        /// The child's first own events (its end-seed marker).
        events: Vec<LocatedEvent>,
    },
    /// A session was deleted.
    Delete {
        /// The session id.
        session: String,
    },
}

/// An event and where its bytes are inside the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedEvent {
    /// The event.
    pub event: Event,
    /// Offset of its encoding within the payload.
    pub offset: u32,
    /// Length of its encoding.
    pub len: u32,
}

/// Encodes a record payload; returns the kind and, for each event, `(offset, len)` of its
/// encoding within the payload.
pub fn encode(body: &BodyRef<'_>, out: &mut Vec<u8>) -> (RecordKind, Vec<(u32, u32)>) {
    match body {
        BodyRef::Create {
            session,
            header_json,
            events,
        } => {
            put_str16(out, session);
            put_bytes32(out, header_json);
            (RecordKind::Create, put_events(out, events))
        }
        BodyRef::Append { session, events } => {
            put_str16(out, session);
            (RecordKind::Append, put_events(out, events))
        }
        BodyRef::Fork {
            child,
            header_json,
            parent,
            inherited,
            events,
        } => {
            put_str16(out, child);
            put_bytes32(out, header_json);
            put_str16(out, parent);
            out.extend_from_slice(&inherited.to_le_bytes());
            (RecordKind::Fork, put_events(out, events))
        }
        BodyRef::Delete { session } => {
            put_str16(out, session);
            (RecordKind::Delete, Vec::new())
        }
    }
}

/// A payload to encode, borrowing its parts.
#[derive(Debug, Clone, Copy)]
pub enum BodyRef<'a> {
    /// See [`RecordBody::Create`].
    Create {
        /// Session id.
        session: &'a str,
        /// Header JSON.
        header_json: &'a [u8],
        /// Events.
        events: &'a [Event],
    },
    /// See [`RecordBody::Append`].
    Append {
        /// Session id.
        session: &'a str,
        /// Events.
        events: &'a [Event],
    },
    /// See [`RecordBody::Fork`].
    Fork {
        /// Child id.
        child: &'a str,
        /// Child header JSON.
        header_json: &'a [u8],
        /// Parent id.
        parent: &'a str,
        /// Inherited event count.
        inherited: u64,
        /// Child's own first events.
        events: &'a [Event],
    },
    /// See [`RecordBody::Delete`].
    Delete {
        /// Session id.
        session: &'a str,
    },
}

/// Strings longer than `u16::MAX` bytes never get here: the acceptance function refuses such
/// types and header validation such ids.
fn put_str16(out: &mut Vec<u8>, s: &str) {
    debug_assert!(s.len() <= usize::from(u16::MAX));
    let len = u16::try_from(s.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..usize::from(len)]);
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_events(out: &mut Vec<u8>, events: &[Event]) -> Vec<(u32, u32)> {
    let first = events.first().map_or(0, Event::seq);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    let mut locs = Vec::with_capacity(events.len());
    for e in events {
        let len_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        let start = out.len();
        encode_event(e, out);
        let len = (out.len() - start) as u32;
        out[len_at..start].copy_from_slice(&len.to_le_bytes());
        locs.push((start as u32, len));
    }
    locs
}

/// Appends the encoding of one event (its seq is implied by its place).
pub fn encode_event(e: &Event, out: &mut Vec<u8>) {
    let ty = e.event_type();
    out.extend_from_slice(&(ty.len() as u16).to_le_bytes());
    out.extend_from_slice(ty.as_bytes());
    out.extend_from_slice(&e.time().to_le_bytes());
    let mut flags = 0u8;
    if e.ignorable() {
        flags |= FLAG_IGNORABLE;
    }
    if e.sources().is_some() {
        flags |= FLAG_SOURCES;
    }
    if e.surface_op_first() {
        flags |= FLAG_SURFACE_OP_FIRST;
    }
    flags |= match e.surface_op() {
        None => 0,
        Some(SurfaceOp::Append) => OP_APPEND << OP_SHIFT,
        Some(SurfaceOp::Replace { .. }) => OP_REPLACE << OP_SHIFT,
    };
    out.push(flags);
    if let Some(SurfaceOp::Replace { start, end }) = e.surface_op() {
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&end.to_le_bytes());
    }
    if let Some(sources) = e.sources() {
        out.extend_from_slice(&(sources.len() as u32).to_le_bytes());
        for s in sources {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
    put_bytes32(out, e.data());
}

/// A cursor over payload bytes; every read is bounds-checked.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

type Decoded<T> = Result<T, &'static str>;

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Decoded<&'a [u8]> {
        let s = self
            .b
            .get(self.pos..self.pos.checked_add(n).ok_or(what)?)
            .ok_or(what)?;
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Decoded<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Decoded<u16> {
        let s = self.take(2, what)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Decoded<u32> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Decoded<u64> {
        let s = self.take(8, what)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(s);
        Ok(u64::from_le_bytes(w))
    }
    fn str16(&mut self, what: &'static str) -> Decoded<String> {
        let n = self.u16(what)?;
        let s = self.take(usize::from(n), what)?;
        String::from_utf8(s.to_vec()).map_err(|_| what)
    }
    fn bytes32(&mut self, what: &'static str) -> Decoded<&'a [u8]> {
        let n = self.u32(what)?;
        self.take(n as usize, what)
    }
    fn events(&mut self) -> Decoded<Vec<LocatedEvent>> {
        let first = self.u64("events section: first seq")?;
        let count = self.u32("events section: count")?;
        // Each event takes at least 19 bytes: never trust a count the bytes cannot hold.
        if count as usize > self.b.len().saturating_sub(self.pos) / 19 {
            return Err("events section: count larger than the payload");
        }
        let mut out = Vec::with_capacity(count as usize);
        for i in 0..u64::from(count) {
            let len = self.u32("event length")?;
            let offset = self.pos as u32;
            let bytes = self.take(len as usize, "event bytes")?;
            let event = decode_event(bytes, first + i)?;
            out.push(LocatedEvent { event, offset, len });
        }
        Ok(out)
    }
    fn finish<T>(&self, value: T) -> Decoded<T> {
        if self.pos == self.b.len() {
            Ok(value)
        } else {
            Err("trailing bytes after the payload")
        }
    }
}

/// Decodes a payload of `kind`.
///
/// # Errors
/// A short description of the first inconsistency.
pub fn decode(kind: RecordKind, payload: &[u8]) -> Decoded<RecordBody> {
    let mut c = Cursor { b: payload, pos: 0 };
    let body = match kind {
        RecordKind::Create => RecordBody::Create {
            session: c.str16("session id")?,
            header_json: c.bytes32("header")?.to_vec(),
            events: c.events()?,
        },
        RecordKind::Append => RecordBody::Append {
            session: c.str16("session id")?,
            events: c.events()?,
        },
        RecordKind::Fork => RecordBody::Fork {
            child: c.str16("child id")?,
            header_json: c.bytes32("header")?.to_vec(),
            parent: c.str16("parent id")?,
            inherited: c.u64("inherited count")?,
            events: c.events()?,
        },
        RecordKind::Delete => RecordBody::Delete {
            session: c.str16("session id")?,
        },
    };
    c.finish(body)
}

/// Decodes one event's encoding; `seq` comes from its place in the section.
///
/// # Errors
/// A short description of the first inconsistency.
pub fn decode_event(bytes: &[u8], seq: u64) -> Decoded<Event> {
    let mut c = Cursor { b: bytes, pos: 0 };
    let ty = c.str16("event type")?;
    let time = c.u64("event time")? as i64;
    let flags = c.u8("event flags")?;
    let op = match (flags >> OP_SHIFT) & 3 {
        0 => None,
        OP_APPEND => Some(SurfaceOp::Append),
        OP_REPLACE => Some(SurfaceOp::Replace {
            start: c.u64("replace start")?,
            end: c.u64("replace end")?,
        }),
        _ => return Err("event flags: unknown surface op"),
    };
    if flags & !(FLAG_IGNORABLE | FLAG_SOURCES | (3 << OP_SHIFT) | FLAG_SURFACE_OP_FIRST) != 0 {
        return Err("event flags: unknown bits");
    }
    let sources = if flags & FLAG_SOURCES != 0 {
        let n = c.u32("sources count")? as usize;
        if n > bytes.len() / 8 {
            return Err("sources count larger than the event");
        }
        Some(
            (0..n)
                .map(|_| c.u64("source seq"))
                .collect::<Decoded<Vec<u64>>>()?
                .into_boxed_slice(),
        )
    } else {
        None
    };
    let data = c.bytes32("event data")?;
    let event = Event::new(ty, seq, time, data)
        .with_sources_opt(sources)
        .with_surface_op_opt(op)
        .with_ignorable(flags & FLAG_IGNORABLE != 0);
    let op_first = flags & FLAG_SURFACE_OP_FIRST != 0;
    if op_first && !(event.sources().is_some() && event.surface_op().is_some()) {
        return Err("event flags: key order bit without both keys");
    }
    c.finish(event.with_surface_op_first(op_first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_events(first: u64) -> Vec<Event> {
        vec![
            Event::new("turn/start", first, 5, &br#"{"turn":1}"#[..]),
            Event::new("user/message", first + 1, -3, &b"{}"[..])
                .with_surface_op(SurfaceOp::Replace { start: 1, end: 2 })
                .with_sources(vec![1, 2])
                .with_ignorable(true)
                .with_surface_op_first(true),
        ]
    }

    #[test]
    fn every_body_round_trips_and_locates_its_events() {
        let events = sample_events(7);
        let bodies = [
            BodyRef::Create {
                session: "s",
                header_json: b"{}",
                events: &events,
            },
            BodyRef::Append {
                session: "s",
                events: &events,
            },
            BodyRef::Fork {
                child: "c",
                header_json: b"{\"h\":1}",
                parent: "p",
                inherited: 7,
                events: &events,
            },
            BodyRef::Delete { session: "gone" },
        ];
        for body in bodies {
            let mut payload = Vec::new();
            let (kind, locs) = encode(&body, &mut payload);
            let decoded = decode(kind, &payload).unwrap();
            let located = match &decoded {
                RecordBody::Create { events, .. }
                | RecordBody::Append { events, .. }
                | RecordBody::Fork { events, .. } => events.clone(),
                RecordBody::Delete { session } => {
                    assert_eq!(session, "gone");
                    Vec::new()
                }
            };
            assert_eq!(
                located.iter().map(|l| l.event.clone()).collect::<Vec<_>>(),
                if locs.is_empty() {
                    vec![]
                } else {
                    events.clone()
                }
            );
            for (l, (off, len)) in located.iter().zip(&locs) {
                assert_eq!((l.offset, l.len), (*off, *len));
                let slice = &payload[*off as usize..(*off + *len) as usize];
                assert_eq!(decode_event(slice, l.event.seq()).unwrap(), l.event);
            }
            // Any truncation is an error, never a panic or a wrong body.
            for cut in 0..payload.len() {
                assert!(
                    decode(kind, &payload[..cut]).is_err(),
                    "{kind:?} cut at {cut}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_payloads_never_panic(kind in 1u8..=4, bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Some(kind) = RecordKind::from_byte(kind) {
                let _ = decode(kind, &bytes);
            }
        }
    }
}

//! Record payloads (`docs/FORMAT.md` §4): what a frame carries. Pure codec.
//!
//! Every payload that carries events ends with an *events section*; each event is prefixed
//! with its length so the resident index can point at one event's bytes and read exactly
//! those.

use crate::event::view::EventRef;
use crate::event::{Event, PackHint, SurfaceOp};

pub use super::coverage::{EVENT_CRC_LEN, event_crc};
use super::frame::RecordKind;
use super::reader::{ByteReader, Decoded, len32};

/// The smallest event encoding: type length, time, flags, data length, checksum.
const MIN_EVENT_BYTES: usize = 2 + 8 + 1 + 4 + EVENT_CRC_LEN;

const FLAG_IGNORABLE: u8 = 1;
const FLAG_SOURCES: u8 = 2;
const OP_SHIFT: u8 = 2;
const FLAG_SURFACE_OP_FIRST: u8 = 16;
const FLAG_ROW_START: u8 = 32;
const FLAG_LONE: u8 = 64;
const FLAG_FRAME_START: u8 = 128;
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
    /// Space salvage took over (`RecordKind::Void`): nothing to replay.
    Void,
    /// A writer's epoch (`RecordKind::Epoch`): nothing to replay.
    Epoch(WriterEpoch),
}

/// The payload of an epoch record (`docs/FORMAT.md` §4.5): the random id of one writable
/// open, and when it started writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WriterEpoch {
    /// Random, never 0.
    pub id: u64,
    /// Unix epoch milliseconds.
    pub started_ms: i64,
}

/// Bytes in an epoch record's payload.
pub const EPOCH_PAYLOAD_LEN: usize = 16;

/// Bytes of an epoch record's whole frame: the frame header and the payload.
pub const EPOCH_FRAME_LEN: usize = super::frame::FRAME_HEADER_LEN + EPOCH_PAYLOAD_LEN;

impl WriterEpoch {
    /// A new epoch: 64 random bits (never 0), started now.
    pub fn new(started_ms: i64) -> Self {
        let (hi, lo) = uuid::Uuid::new_v4().as_u64_pair();
        // The version and variant bits are fixed in each half: their XOR is random.
        Self {
            id: (hi ^ lo.rotate_left(17)).max(1),
            started_ms,
        }
    }

    /// The 16 payload bytes.
    pub fn encode(&self) -> [u8; EPOCH_PAYLOAD_LEN] {
        let mut b = [0u8; EPOCH_PAYLOAD_LEN];
        b[..8].copy_from_slice(&self.id.to_le_bytes());
        b[8..].copy_from_slice(&self.started_ms.to_le_bytes());
        b
    }

    /// Decodes the payload.
    ///
    /// # Errors
    /// A payload of another length, or an id of 0.
    pub fn decode(payload: &[u8]) -> Decoded<Self> {
        let mut c = ByteReader::new(payload);
        let id = c.u64("epoch id")?;
        let started_ms = i64::from_le_bytes(c.u64("epoch start")?.to_le_bytes());
        if id == 0 {
            return Err("epoch id 0");
        }
        c.finish(Self { id, started_ms })
    }
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
///
/// # Errors
/// A part whose length does not fit its length field (a payload past 4 GiB); the store
/// refuses records far below that (`record_bytes_max`).
pub fn encode(body: &BodyRef<'_>, out: &mut Vec<u8>) -> Decoded<(RecordKind, Vec<(u32, u32)>)> {
    let mut locs = Vec::new();
    encode_into(body, out, &mut locs).map(|kind| (kind, locs))
}

/// [`encode`] into caller-owned buffers (the write path reuses them: no allocation per
/// record): appends the payload to `out` and each event's `(offset, len)` to `locs`.
///
/// # Errors
/// As [`encode`].
pub fn encode_into(
    body: &BodyRef<'_>,
    out: &mut Vec<u8>,
    locs: &mut Vec<(u32, u32)>,
) -> Decoded<RecordKind> {
    Ok(match body {
        BodyRef::Create {
            session,
            header_json,
            events,
        } => {
            put_str16(out, session);
            put_bytes32(out, header_json)?;
            put_events(out, events, locs)?;
            RecordKind::Create
        }
        BodyRef::Append { session, events } => {
            put_str16(out, session);
            put_events(out, events, locs)?;
            RecordKind::Append
        }
        BodyRef::Fork {
            child,
            header_json,
            parent,
            inherited,
            events,
        } => {
            put_str16(out, child);
            put_bytes32(out, header_json)?;
            put_str16(out, parent);
            out.extend_from_slice(&inherited.to_le_bytes());
            put_events(out, events, locs)?;
            RecordKind::Fork
        }
        BodyRef::Delete { session } => {
            put_str16(out, session);
            RecordKind::Delete
        }
    })
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

/// Strings longer than `u16::MAX` bytes never get here: header validation refuses such ids.
fn put_str16(out: &mut Vec<u8>, s: &str) {
    debug_assert!(s.len() <= usize::from(u16::MAX));
    let len = u16::try_from(s.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes().get(..usize::from(len)).unwrap_or_default());
}

const TOO_LARGE: &str = "a length past 4 GiB";

/// What [`decode_event`] says when an event's checksum does not match.
pub const EVENT_CHECKSUM: &str = "event checksum mismatch";

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) -> Decoded<()> {
    out.extend_from_slice(&len32(b.len()).ok_or(TOO_LARGE)?.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

fn put_events(out: &mut Vec<u8>, events: &[Event], locs: &mut Vec<(u32, u32)>) -> Decoded<()> {
    let first = events.first().map_or(0, Event::seq);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&len32(events.len()).ok_or(TOO_LARGE)?.to_le_bytes());
    locs.reserve(events.len());
    for e in events {
        let len_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        let start = out.len();
        encode_event(e, out)?;
        let len = len32(out.len() - start).ok_or(TOO_LARGE)?;
        if let Some(field) = out.get_mut(len_at..start) {
            field.copy_from_slice(&len.to_le_bytes());
        }
        locs.push((len32(start).ok_or(TOO_LARGE)?, len));
    }
    Ok(())
}

/// Appends the encoding of one event (its seq is implied by its place), ending with its
/// checksum: CRC-32 of the seq (u64 LE) followed by the encoding before the checksum. The seq
/// is covered so that a read through a wrong index entry fails too.
///
/// # Errors
/// As [`encode`].
pub fn encode_event(e: &Event, out: &mut Vec<u8>) -> Decoded<()> {
    let start = out.len();
    encode_event_fields(e, out)?;
    let crc = event_crc(e.seq(), out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// At least the bytes of the frame (header included) of an Append record of `event` alone
/// to `session`: what a writer can ask its tail about before encoding it.
pub(crate) fn append_frame_bound(session: &str, event: &Event) -> u64 {
    // Header 16; session `str16` 2; first seq 8, count 4; the event's length 4; its type
    // (escaped) 6; time 8; flags 1; replace 16; sources' count 4; `data`'s length 4; CRC 4.
    const FIXED: u64 = 16 + 2 + 8 + 4 + 4 + 6 + 8 + 1 + 16 + 4 + 4 + 4;
    let sources = event.sources().map_or(0, <[u64]>::len) as u64;
    FIXED
        + session.len() as u64
        + event.event_type().len() as u64
        + 8 * sources
        + event.data().len() as u64
}

/// Splits an event encoding into its fields and checks its checksum; `None` if it is too
/// short or the checksum does not match.
pub fn check_event(bytes: &[u8], seq: u64) -> Option<&[u8]> {
    let split = bytes.len().checked_sub(EVENT_CRC_LEN)?;
    let (fields, crc) = bytes.split_at_checked(split)?;
    let stored = u32::from_le_bytes(crc.try_into().ok()?);
    (event_crc(seq, fields) == stored).then_some(fields)
}

/// An event type: a `u16` length, or for 65,535 bytes and more `0xFFFF` then a `u32`
/// length (DSH loads an ignorable event with a type of any length).
fn put_type(out: &mut Vec<u8>, ty: &str) -> Decoded<()> {
    match u16::try_from(ty.len()) {
        Ok(n) if n < u16::MAX => out.extend_from_slice(&n.to_le_bytes()),
        _ => {
            out.extend_from_slice(&u16::MAX.to_le_bytes());
            out.extend_from_slice(&len32(ty.len()).ok_or(TOO_LARGE)?.to_le_bytes());
        }
    }
    out.extend_from_slice(ty.as_bytes());
    Ok(())
}

fn encode_event_fields(e: &Event, out: &mut Vec<u8>) -> Decoded<()> {
    put_type(out, e.event_type())?;
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
    flags |= match e.pack_hint() {
        PackHint::Free => 0,
        PackHint::RowStart => FLAG_ROW_START,
        PackHint::Lone => FLAG_LONE,
    };
    if e.frame_start() {
        flags |= FLAG_FRAME_START;
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
        out.extend_from_slice(&len32(sources.len()).ok_or(TOO_LARGE)?.to_le_bytes());
        for s in sources {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
    put_bytes32(out, e.data())
}

/// Reads an events section; `check` says whether each event's checksum is checked (not when
/// the frame's check already did, [`decode_checked`]).
fn read_events(c: &mut ByteReader<'_>, check: bool) -> Decoded<Vec<LocatedEvent>> {
    let first = c.u64("events section: first seq")?;
    let count = c.u32("events section: count")?;
    // Each event takes at least 19 bytes: never trust a count the bytes cannot hold.
    let count = c.count(
        u64::from(count),
        MIN_EVENT_BYTES,
        "events section: count larger than the payload",
    )?;
    // The seqs `first..first + count` must exist: a damaged `first` near `u64::MAX` must not
    // wrap (a fuzzing find, `log_decoders`).
    let end = first
        .checked_add(count as u64)
        .ok_or("events section: seqs past u64::MAX")?;
    let mut out = Vec::with_capacity(count);
    for seq in first..end {
        let len = c.u32("event length")?;
        let offset = u32::try_from(c.pos()).map_err(|_| "event offset past 4 GiB")?;
        let bytes = c.take(
            usize::try_from(len).map_err(|_| "event length")?,
            "event bytes",
        )?;
        let event = if check {
            decode_event(bytes, seq)?
        } else {
            let fields = bytes
                .len()
                .checked_sub(EVENT_CRC_LEN)
                .and_then(|n| bytes.get(..n))
                .ok_or(EVENT_CHECKSUM)?;
            decode_event_fields(fields, seq)?
        };
        out.push(LocatedEvent { event, offset, len });
    }
    Ok(out)
}

/// The session id a record payload starts with, read alone: every record kind but Void starts
/// with it as a `str16` (`docs/FORMAT.md` §4), so a payload whose rest is damaged may still
/// name its session.
pub fn leading_session_id(payload: &[u8]) -> Option<String> {
    ByteReader::new(payload).str16("session id").ok()
}

/// What a record says about whose it is, read without decoding its events: what
/// compaction needs to know which records a session's history is made of. Session ids are
/// their stored bytes, not checked as UTF-8: compaction only compares them (a read that
/// returns an id checks it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordSummary<'a> {
    /// A session's first record (Create), or a fork's (Fork: its parent and inherited count).
    Start {
        /// The session id.
        session: &'a [u8],
        /// A fork's parent and the number of its events the fork inherits.
        parent: Option<(&'a [u8], u64)>,
        /// The seqs its events section holds.
        seqs: std::ops::Range<u64>,
    },
    /// Events appended to a session.
    Append {
        /// The session id.
        session: &'a [u8],
        /// The seqs its events section holds.
        seqs: std::ops::Range<u64>,
    },
    /// A deletion.
    Delete {
        /// The session id.
        session: &'a [u8],
    },
    /// Void space.
    Void,
    /// A writer's epoch: no session's.
    Epoch,
}

/// Reads a payload's [`RecordSummary`] (the frame's checksum was checked by the caller).
///
/// # Errors
/// A short description of the first inconsistency.
pub fn summarize(kind: RecordKind, payload: &[u8]) -> Decoded<RecordSummary<'_>> {
    let mut c = ByteReader::new(payload);
    let seqs = |c: &mut ByteReader<'_>| -> Decoded<std::ops::Range<u64>> {
        let first = c.u64("first seq")?;
        let count = c.u32("event count")?;
        Ok(first..first.checked_add(u64::from(count)).ok_or("seq overflow")?)
    };
    Ok(match kind {
        RecordKind::Create => {
            let session = c.bytes16("session id")?;
            c.bytes32("header")?;
            RecordSummary::Start {
                session,
                parent: None,
                seqs: seqs(&mut c)?,
            }
        }
        RecordKind::Fork => {
            let session = c.bytes16("child id")?;
            c.bytes32("header")?;
            let parent = c.bytes16("parent id")?;
            let inherited = c.u64("inherited count")?;
            RecordSummary::Start {
                session,
                parent: Some((parent, inherited)),
                seqs: seqs(&mut c)?,
            }
        }
        RecordKind::Append => {
            let session = c.bytes16("session id")?;
            RecordSummary::Append {
                session,
                seqs: seqs(&mut c)?,
            }
        }
        RecordKind::Delete => RecordSummary::Delete {
            session: c.bytes16("session id")?,
        },
        RecordKind::Void => RecordSummary::Void,
        RecordKind::Epoch => {
            WriterEpoch::decode(payload)?;
            RecordSummary::Epoch
        }
    })
}

/// Decodes a payload of `kind`.
///
/// # Errors
/// A short description of the first inconsistency.
pub fn decode(kind: RecordKind, payload: &[u8]) -> Decoded<RecordBody> {
    decode_with(kind, payload, true)
}

/// [`decode`] of a payload whose events' own checksums were checked already — a frame of
/// layout 2 checked whole (`frame::Checks::Every`): its events are not hashed again, so a
/// replay hashes each byte once.
///
/// # Errors
/// As [`decode`].
pub fn decode_checked(kind: RecordKind, payload: &[u8]) -> Decoded<RecordBody> {
    decode_with(kind, payload, false)
}

fn decode_with(kind: RecordKind, payload: &[u8], check: bool) -> Decoded<RecordBody> {
    let mut c = ByteReader::new(payload);
    let body = match kind {
        RecordKind::Create => RecordBody::Create {
            session: c.str16("session id")?,
            header_json: c.bytes32("header")?.to_vec(),
            events: read_events(&mut c, check)?,
        },
        RecordKind::Append => RecordBody::Append {
            session: c.str16("session id")?,
            events: read_events(&mut c, check)?,
        },
        RecordKind::Fork => RecordBody::Fork {
            child: c.str16("child id")?,
            header_json: c.bytes32("header")?.to_vec(),
            parent: c.str16("parent id")?,
            inherited: c.u64("inherited count")?,
            events: read_events(&mut c, check)?,
        },
        RecordKind::Delete => RecordBody::Delete {
            session: c.str16("session id")?,
        },
        RecordKind::Void => {
            if payload.iter().any(|&b| b != 0) {
                return Err("void record with a non-zero payload");
            }
            return Ok(RecordBody::Void);
        }
        RecordKind::Epoch => return WriterEpoch::decode(payload).map(RecordBody::Epoch),
    };
    c.finish(body)
}

/// Decodes one event's encoding after checking its checksum; `seq` comes from its place in
/// the section.
///
/// # Errors
/// A short description of the first inconsistency ([`EVENT_CHECKSUM`] for a checksum that
/// does not match).
pub fn decode_event(bytes: &[u8], seq: u64) -> Decoded<Event> {
    decode_event_fields(check_event(bytes, seq).ok_or(EVENT_CHECKSUM)?, seq)
}

/// Decodes the fields of an event encoding that [`check_event`] has checked.
///
/// # Errors
/// A short description of the first inconsistency.
pub fn decode_event_fields(fields: &[u8], seq: u64) -> Decoded<Event> {
    decode_event_ref(fields, seq).map(|e| e.to_event())
}

/// As [`decode_event_fields`], borrowing: the fields stay in `fields` (no allocation).
///
/// # Errors
/// As [`decode_event_fields`].
pub fn decode_event_ref(fields: &[u8], seq: u64) -> Decoded<EventRef<'_>> {
    let mut c = ByteReader::new(fields);
    let ty = c.type_ref("event type")?;
    let time = c.i64("event time")?;
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
    // Every bit of the flags byte has a meaning (0–7): no unknown bits to refuse; the invalid
    // combinations are refused below.
    let pack_hint = match (flags & FLAG_ROW_START != 0, flags & FLAG_LONE != 0) {
        (false, false) => PackHint::Free,
        (true, false) => PackHint::RowStart,
        (false, true) => PackHint::Lone,
        (true, true) => return Err("event flags: both pack hints"),
    };
    let sources = if flags & FLAG_SOURCES != 0 {
        let n = c.u32("sources count")?;
        let n = c.count(u64::from(n), 8, "sources count larger than the event")?;
        Some(c.take(n * 8, "source seqs")?)
    } else {
        None
    };
    let data = c.bytes32("event data")?;
    let surface_op_first = flags & FLAG_SURFACE_OP_FIRST != 0;
    if surface_op_first && !(sources.is_some() && op.is_some()) {
        return Err("event flags: key order bit without both keys");
    }
    c.finish(EventRef {
        event_type: ty,
        seq,
        time,
        data,
        sources,
        surface_op: op,
        ignorable: flags & FLAG_IGNORABLE != 0,
        surface_op_first,
        pack_hint,
        frame_start: flags & FLAG_FRAME_START != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::frame::{
        FLAG_LAYOUT2, FrameCheck, FrameLayout, OFF_FLAGS, begin_frame, check_frame, payload_offset,
        seal_frame,
    };
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
    fn a_type_of_any_length_round_trips_with_one_encoding() {
        for len in [0, 1, 65_534, 65_535, 65_536, 70_000] {
            let e = Event::new("t".repeat(len), 4, 1, &b"{}"[..]).with_ignorable(true);
            let mut out = Vec::new();
            encode_event(&e, &mut out).unwrap();
            let escaped = len >= 65_535;
            assert_eq!(out[..2] == [0xff, 0xff], escaped, "{len}");
            assert_eq!(
                out.len(),
                2 + 4 * usize::from(escaped) + len + 8 + 1 + 4 + 2 + 4
            );
            assert_eq!(decode_event(&out, 4).unwrap(), e);
        }
        // A short type escaped is no encoding sessdb writes: refused, not read.
        let mut fields = vec![0xff, 0xff, 1, 0, 0, 0, b't'];
        fields.extend_from_slice(&1i64.to_le_bytes());
        fields.push(0);
        fields.extend_from_slice(&2u32.to_le_bytes());
        fields.extend_from_slice(b"{}");
        assert_eq!(
            decode_event_fields(&fields, 0).unwrap_err(),
            "event type: a short length escaped"
        );
    }

    #[test]
    fn an_append_frame_is_never_longer_than_its_bound() {
        let long_type = Event::new("t".repeat(70_000), 4, 1, &b"{}"[..]).with_ignorable(true);
        let mut events = sample_events(3);
        events.push(long_type);
        for session in ["", "s", &"x".repeat(300)] {
            for e in &events {
                let mut frame = Vec::new();
                begin_frame(&mut frame);
                let body = BodyRef::Append {
                    session,
                    events: std::slice::from_ref(e),
                };
                encode_into(&body, &mut frame, &mut Vec::new()).unwrap();
                let bound = append_frame_bound(session, e);
                assert!(frame.len() as u64 <= bound, "{} > {bound}", frame.len());
                // Within the fixed fields' slack: the bound follows the event's size.
                assert!(bound - frame.len() as u64 <= 40, "{} {bound}", frame.len());
            }
        }
    }

    #[test]
    fn pack_hints_round_trip_in_the_flags() {
        for (hint, bit) in [
            (PackHint::Free, 0u8),
            (PackHint::RowStart, FLAG_ROW_START),
            (PackHint::Lone, FLAG_LONE),
        ] {
            let e = Event::new("assistant/chunk", 3, 9, &b"{}"[..]).with_pack_hint(hint);
            let mut out = Vec::new();
            encode_event(&e, &mut out).unwrap();
            // type length (2) + type + time (8), then the flags.
            let flags_at = 2 + "assistant/chunk".len() + 8;
            assert_eq!(out[flags_at], bit);
            let fields = check_event(&out, 3).unwrap();
            assert_eq!(decode_event_fields(fields, 3).unwrap().pack_hint(), hint);
        }
        let e = Event::new("turn/start", 3, 9, &b"{}"[..]).with_frame_start(true);
        let mut out = Vec::new();
        encode_event(&e, &mut out).unwrap();
        assert_eq!(out[2 + "turn/start".len() + 8], FLAG_FRAME_START);
        let fields = check_event(&out, 3).unwrap();
        assert!(decode_event_fields(fields, 3).unwrap().frame_start());
        // Both hints at once is no encoding sessdb writes.
        let mut out = Vec::new();
        encode_event(&Event::new("assistant/chunk", 3, 9, &b"{}"[..]), &mut out).unwrap();
        let flags_at = 2 + "assistant/chunk".len() + 8;
        out[flags_at] = FLAG_ROW_START | FLAG_LONE;
        out.truncate(out.len() - EVENT_CRC_LEN);
        assert!(decode_event_fields(&out, 3).is_err());
    }

    /// A record encoded and sealed as the write path does it, in `layout`.
    fn sealed(body: &BodyRef<'_>, layout: FrameLayout) -> (Vec<u8>, u32) {
        let mut frame = Vec::new();
        begin_frame(&mut frame);
        let mut locs = Vec::new();
        let kind = encode_into(body, &mut frame, &mut locs).unwrap();
        for (o, _) in &mut locs {
            *o = payload_offset(*o);
        }
        let crc = seal_frame(kind, &mut frame, layout, &locs);
        (frame, crc)
    }

    fn all_bodies<'a>(events: &'a [Event]) -> [BodyRef<'a>; 4] {
        [
            BodyRef::Create {
                session: "s",
                header_json: b"{}",
                events,
            },
            BodyRef::Append {
                session: "s",
                events,
            },
            BodyRef::Fork {
                child: "c",
                header_json: b"{\"h\":1}",
                parent: "p",
                inherited: 7,
                events,
            },
            BodyRef::Delete { session: "gone" },
        ]
    }

    #[test]
    fn a_split_frame_checks_every_byte_once_and_names_its_contents() {
        let events = sample_events(7);
        for body in all_bodies(&events) {
            let (frame, crc) = sealed(&body, FrameLayout::Split);
            let n = frame.len();
            assert!(
                matches!(check_frame(&frame, 1 << 20), FrameCheck::Valid { crc: c, frame_len, .. } if c == crc && frame_len == n)
            );
            assert_eq!(frame[OFF_FLAGS], FLAG_LAYOUT2);
            for i in 0..n {
                for bit in [0x01, 0x80] {
                    let mut g = frame.clone();
                    g[i] ^= bit;
                    assert!(
                        !matches!(check_frame(&g, 1 << 20), FrameCheck::Valid { .. }),
                        "flip {bit:#x} at {i} undetected"
                    );
                }
            }
        }
    }

    #[test]
    fn a_split_frames_crc_changes_with_any_event_byte() {
        // The frame crc is a record's identity (checkpoint links, tombstones, shipping
        // marks): two records alike but for one byte of an event's data differ in it.
        let a = vec![Event::new("turn/start", 1, 5, &br#"{"turn":1}"#[..])];
        let b = vec![Event::new("turn/start", 1, 5, &br#"{"turn":2}"#[..])];
        let body = |events| BodyRef::Append {
            session: "s",
            events,
        };
        let (fa, ca) = sealed(&body(&a), FrameLayout::Split);
        let (fb, cb) = sealed(&body(&b), FrameLayout::Split);
        assert_eq!(fa.len(), fb.len());
        assert_ne!(ca, cb);
    }

    /// Found by `log_decoders`: an events section whose first seq is near `u64::MAX` made
    /// the seq counter overflow (a panic with overflow checks, wrapped seqs without).
    #[test]
    fn regression_events_section_seqs_past_u64_max_are_refused() {
        let events = sample_events(7);
        let mut payload = Vec::new();
        let (kind, _) = encode(
            &BodyRef::Append {
                session: "s",
                events: &events,
            },
            &mut payload,
        )
        .unwrap();
        // str16 "s" (3 bytes), then the section's first seq.
        payload[3..11].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            decode(kind, &payload).unwrap_err(),
            "events section: seqs past u64::MAX"
        );
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
            let (kind, locs) = encode(&body, &mut payload).unwrap();
            let decoded = decode(kind, &payload).unwrap();
            let located = match &decoded {
                RecordBody::Create { events, .. }
                | RecordBody::Append { events, .. }
                | RecordBody::Fork { events, .. } => events.clone(),
                RecordBody::Delete { session } => {
                    assert_eq!(session, "gone");
                    Vec::new()
                }
                RecordBody::Void | RecordBody::Epoch(_) => unreachable!("not encoded here"),
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

    fn any_event() -> impl Strategy<Value = Event> {
        let op = prop_oneof![
            Just(None),
            Just(Some(SurfaceOp::Append)),
            (0u64..50, 0u64..50).prop_map(|(s, e)| Some(SurfaceOp::Replace { start: s, end: e })),
        ];
        let hint = prop_oneof![
            Just(PackHint::Free),
            Just(PackHint::RowStart),
            Just(PackHint::Lone)
        ];
        (
            prop_oneof![
                Just("assistant/chunk"),
                Just("user/message"),
                Just("plugin/\"x\"")
            ],
            0u64..1_000_000,
            any::<i64>(),
            crate::json::strategy::json_value(),
            proptest::option::of(proptest::collection::vec(0u64..1_000_000, 0..5)),
            op,
            any::<bool>(),
            any::<bool>(),
            hint,
            any::<bool>(),
        )
            .prop_map(
                |(ty, seq, time, data, sources, op, ignorable, op_first, hint, frame)| {
                    let both = sources.is_some() && op.is_some();
                    Event::new(ty, seq, time, data.into_bytes())
                        .with_sources_opt(sources.map(Vec::into_boxed_slice))
                        .with_surface_op_opt(op)
                        .with_ignorable(ignorable)
                        .with_surface_op_first(op_first && both)
                        .with_pack_hint(hint)
                        .with_frame_start(frame)
                },
            )
    }

    proptest! {
        /// An epoch record's payload decodes to what was encoded; every other length, and
        /// an id of 0, is refused (and a summary of it too).
        #[test]
        fn an_epoch_payload_round_trips(id in 1u64.., started in any::<i64>(), cut in 0usize..16, extra in 1usize..8) {
            let epoch = WriterEpoch { id, started_ms: started };
            let b = epoch.encode();
            prop_assert_eq!(WriterEpoch::decode(&b), Ok(epoch));
            prop_assert_eq!(decode(RecordKind::Epoch, &b), Ok(RecordBody::Epoch(epoch)));
            prop_assert!(WriterEpoch::decode(&b[..cut]).is_err());
            let mut long = b.to_vec();
            long.extend(std::iter::repeat_n(0u8, extra));
            prop_assert!(WriterEpoch::decode(&long).is_err());
            let zero = WriterEpoch { id: 0, started_ms: started }.encode();
            prop_assert!(summarize(RecordKind::Epoch, &zero).is_err());
        }

        /// The borrowed view of a stored event is the event: the same fields, layout hints
        /// included, and the same JSONL line byte for byte.
        #[test]
        fn a_borrowed_event_is_the_owned_one(event in any_event()) {
            let mut out = Vec::new();
            encode_event(&event, &mut out).unwrap();
            let fields = check_event(&out, event.seq()).unwrap();
            let view = decode_event_ref(fields, event.seq()).unwrap();
            let owned = view.to_event();
            prop_assert_eq!(&owned, &event);
            prop_assert_eq!(owned.pack_hint(), event.pack_hint());
            prop_assert_eq!(owned.frame_start(), event.frame_start());
            let mut line = Vec::new();
            view.write_jsonl(&mut line);
            prop_assert_eq!(line, event.to_jsonl());
        }

        #[test]
        fn arbitrary_payloads_never_panic(kind in 1u8..=4, bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Some(kind) = RecordKind::from_byte(kind) {
                let _ = decode(kind, &bytes);
                let _ = summarize(kind, &bytes);
            }
        }

        /// A record sealed in either layout is checked valid with the crc the sealing
        /// returned, decodes to what was encoded, and any one changed byte of it is caught.
        #[test]
        fn a_sealed_record_checks_in_either_layout(
            which in 0usize..4,
            first in 0u64..1_000_000,
            events in proptest::collection::vec(any_event(), 0..5),
            split in any::<bool>(),
            flip in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let events: Vec<Event> = events
                .into_iter()
                .enumerate()
                .map(|(i, e)| {
                    let mut again = Vec::new();
                    encode_event(&e, &mut again).unwrap();
                    let fields = check_event(&again, e.seq()).unwrap();
                    let seq = first + i as u64;
                    decode_event_ref(fields, e.seq()).unwrap().to_event().with_seq(seq)
                })
                .collect();
            let layout = if split { FrameLayout::Split } else { FrameLayout::Whole };
            let body = all_bodies(&events)[which];
            let (frame, crc) = sealed(&body, layout);
            let verdict = check_frame(&frame, 1 << 24);
            let FrameCheck::Valid { kind, crc: checked, frame_len } = verdict else {
                return Err(TestCaseError::fail(format!("{verdict:?}")));
            };
            prop_assert_eq!(checked, crc);
            prop_assert_eq!(frame_len, frame.len());
            let decoded = decode(kind, &frame[16..]).unwrap();
            let got: Vec<Event> = match decoded {
                RecordBody::Create { events, .. }
                | RecordBody::Append { events, .. }
                | RecordBody::Fork { events, .. } => events.into_iter().map(|e| e.event).collect(),
                _ => Vec::new(),
            };
            if which < 3 {
                prop_assert_eq!(got, events);
            }
            // A frame checked whole decodes the same without its events hashed again.
            prop_assert_eq!(
                decode_checked(kind, &frame[16..]).unwrap(),
                decode(kind, &frame[16..]).unwrap()
            );
            let mut g = frame.clone();
            g[flip.index(frame.len())] ^= 1 << bit;
            let caught = !matches!(check_frame(&g, 1 << 24), FrameCheck::Valid { .. });
            prop_assert!(caught);
        }

        /// The summary compaction reads is what the full decode says: ids, parent, seqs.
        #[test]
        fn a_summary_agrees_with_the_decoded_body(
            which in 0u8..4,
            first in 0u64..1_000_000,
            n in 0usize..4,
            ids in ("[a-z0-9-]{0,12}", "[a-zé]{0,6}"),
            inherited in any::<u64>(),
        ) {
            let events: Vec<Event> = sample_events(first).into_iter().cycle().take(n)
                .enumerate()
                .map(|(i, e)| Event::new(e.event_type(), first + i as u64, 0, &b"{}"[..]))
                .collect();
            let body = match which {
                0 => BodyRef::Create { session: &ids.0, header_json: b"{}", events: &events },
                1 => BodyRef::Append { session: &ids.0, events: &events },
                2 => BodyRef::Fork {
                    child: &ids.0, header_json: b"{}", parent: &ids.1, inherited, events: &events,
                },
                _ => BodyRef::Delete { session: &ids.0 },
            };
            let mut payload = Vec::new();
            let (kind, _) = encode(&body, &mut payload).unwrap();
            let summary = summarize(kind, &payload).unwrap();
            let seqs = |events: &[LocatedEvent]| {
                events.first().map_or(0..0, |e| e.event.seq()..e.event.seq() + events.len() as u64)
            };
            let expected = match decode(kind, &payload).unwrap() {
                RecordBody::Create { session, events, .. } => (session, None, seqs(&events)),
                RecordBody::Append { session, events } => (session, None, seqs(&events)),
                RecordBody::Fork { child, parent, inherited, events, .. } => {
                    (child, Some((parent, inherited)), seqs(&events))
                }
                RecordBody::Delete { session } => (session, None, 0..0),
                RecordBody::Void | RecordBody::Epoch(_) => unreachable!("not encoded here"),
            };
            let got = match summary {
                RecordSummary::Start { session, parent, seqs } => (
                    session,
                    parent.map(|(p, n)| (String::from_utf8(p.to_vec()).unwrap(), n)),
                    seqs,
                ),
                RecordSummary::Append { session, seqs } => (session, None, seqs),
                RecordSummary::Delete { session } => (session, None, 0..0),
                RecordSummary::Void | RecordSummary::Epoch => unreachable!("not encoded here"),
            };
            prop_assert_eq!(got.0, expected.0.as_bytes());
            prop_assert_eq!(got.1, expected.1);
            if n > 0 {
                prop_assert_eq!(got.2, expected.2);
            } else {
                prop_assert!(got.2.is_empty());
            }
        }
    }
}

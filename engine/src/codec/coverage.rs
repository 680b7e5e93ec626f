//! Which checksum covers which byte of a record (`docs/FORMAT.md` §3.1).
//!
//! Every event encoding ends with its own CRC (over its seq and its fields), which every read
//! of the event checks. In frame layout 1 the frame CRC covers the whole payload again, so
//! writing or checking a record hashed every event byte twice. In layout 2 the frame CRC
//! leaves each event's fields out — it covers the header, the payload's own fields, each
//! event's length and each event's CRC — so every byte is hashed once, and the frame CRC still
//! depends on every byte through the event CRCs it covers (a record's identity, which
//! checkpoints, tombstones and shipping marks compare, changes with any byte).

use super::kind::RecordKind;
use super::reader::ByteReader;

/// Bytes of the checksum that ends every event encoding.
pub const EVENT_CRC_LEN: usize = 4;

/// The checksum of an event encoding's fields (`bytes` without the checksum itself): CRC-32
/// of the seq (u64 LE) followed by the fields. The seq is covered so that a read through a
/// wrong index entry fails too.
pub fn event_crc(seq: u64, bytes: &[u8]) -> u32 {
    let mut h = super::crc::hasher();
    h.update(&seq.to_le_bytes());
    h.update(bytes);
    h.finalize()
}

/// Layout 1: the frame CRC of `head` (the header's first 12 bytes) and the whole payload.
pub fn whole_crc(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = super::crc::hasher();
    h.update(head);
    h.update(payload);
    h.finalize()
}

/// Layout 2, sealing a record just encoded: `events` holds each event encoding's
/// `(offset in the payload, length with its CRC)`, in order, as the encoder reported them.
pub fn sealed_crc(head: &[u8], payload: &[u8], events: &[(u32, u32)]) -> u32 {
    let mut h = super::crc::hasher();
    h.update(head);
    let mut from = 0usize;
    for &(offset, len) in events {
        let start = offset as usize;
        let fields_end = start + (len as usize).saturating_sub(EVENT_CRC_LEN);
        // The bytes since the last event's fields: this event's length (and, before it,
        // the last event's CRC, or the payload's own fields).
        h.update(payload.get(from..start).unwrap_or_default());
        from = fields_end;
    }
    h.update(payload.get(from..).unwrap_or_default());
    h.finalize()
}

/// Layout 2, checking a record read: the frame CRC of what the events leave out computed,
/// and — with `events` — every event's own CRC checked. `None` when an event's CRC fails or
/// the events section cannot be walked (damage the frame CRC would not have let through
/// either).
pub fn checked_crc(head: &[u8], kind: RecordKind, payload: &[u8], events: bool) -> Option<u32> {
    let Some(section) = events_section(kind, payload)? else {
        return Some(whole_crc(head, payload));
    };
    let mut h = super::crc::hasher();
    h.update(head);
    let mut c = ByteReader::new(payload.get(section..)?);
    let first = c.u64("first seq").ok()?;
    let count = c.u32("count").ok()?;
    let mut from = 0usize;
    for i in 0..u64::from(count) {
        let len = c.u32("event length").ok()? as usize;
        let start = section + c.pos();
        let fields = c.take(len.checked_sub(EVENT_CRC_LEN)?, "fields").ok()?;
        let stored = c.u32("event crc").ok()?;
        if events && event_crc(first.checked_add(i)?, fields) != stored {
            return None;
        }
        h.update(payload.get(from..start)?);
        from = start + fields.len();
    }
    h.update(payload.get(from..)?);
    Some(h.finalize())
}

/// Where a payload's events section starts (`None` inside: a kind without one).
fn events_section(kind: RecordKind, payload: &[u8]) -> Option<Option<usize>> {
    let mut c = ByteReader::new(payload);
    match kind {
        RecordKind::Create => {
            c.bytes16("session id").ok()?;
            c.bytes32("header").ok()?;
        }
        RecordKind::Append => {
            c.bytes16("session id").ok()?;
        }
        RecordKind::Fork => {
            c.bytes16("child id").ok()?;
            c.bytes32("header").ok()?;
            c.bytes16("parent id").ok()?;
            c.u64("inherited").ok()?;
        }
        RecordKind::Delete | RecordKind::Void | RecordKind::Epoch => return Some(None),
    }
    Some(Some(c.pos()))
}

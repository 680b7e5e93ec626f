//! The record frame codec (`docs/FORMAT.md` §3). Pure: bytes in, verdicts out.
//!
//! A frame is a 16-byte header and a payload. The length has its own checksum, so a damaged
//! length is recognized before it is trusted (no huge allocation, no skip into the middle of
//! other data); the frame checksum covers the header's first 12 bytes and the payload — all of
//! it in layout 1, all but the events' own checksummed fields in layout 2 (`coverage.rs`). An
//! all-zero header never passes the length check, so zero-filled tails are never records.

use super::coverage;
pub use super::kind::RecordKind;

/// Bytes in a frame header.
pub const FRAME_HEADER_LEN: usize = 16;
/// [`FRAME_HEADER_LEN`] as a `u32`, for offsets inside a record.
pub const FRAME_HEADER_LEN_U32: u32 = 16;
const _: () = assert!(FRAME_HEADER_LEN_U32 as usize == FRAME_HEADER_LEN);
/// Offset of the payload length (u32).
pub const OFF_LEN: usize = 0;
/// Offset of the CRC-32 of the length's 4 bytes (u32).
pub const OFF_LEN_CRC: usize = OFF_LEN + 4;
/// Offset of the record kind (u8).
pub const OFF_KIND: usize = OFF_LEN_CRC + 4;
/// Offset of the flags byte (u8): 0 layout 1, [`FLAG_LAYOUT2`] layout 2.
pub const OFF_FLAGS: usize = OFF_KIND + 1;
/// Offset of the reserved u16 (zero).
pub const OFF_RESERVED: usize = OFF_FLAGS + 1;
/// Offset of the frame CRC (u32): over bytes `0..12` and the payload (layout 1) or the
/// payload without its events' fields (layout 2).
pub const OFF_CRC: usize = OFF_RESERVED + 2;
const _: () = assert!(OFF_CRC + 4 == FRAME_HEADER_LEN);
/// The flags bit of a layout-2 frame: each event's fields are covered by its own CRC only.
pub const FLAG_LAYOUT2: u8 = 1;

/// How a frame's checksum covers its payload (`docs/FORMAT.md` §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameLayout {
    /// The frame CRC covers the whole payload (segment format 3 and 5 hold only these).
    Whole,
    /// The frame CRC leaves each event's fields to the event's own CRC.
    Split,
}

/// The checksum of a payload length.
pub fn len_crc(len: u32) -> u32 {
    super::crc::crc32(&len.to_le_bytes())
}

/// The 12 header bytes the frame checksum covers before the payload.
fn header_head(kind: RecordKind, len: u32, flags: u8) -> [u8; OFF_CRC] {
    // Built in place: a `Vec` here was a heap allocation per record written or read.
    let [l0, l1, l2, l3] = len.to_le_bytes();
    let [c0, c1, c2, c3] = len_crc(len).to_le_bytes();
    // Kind, flags, and a reserved u16 0.
    [l0, l1, l2, l3, c0, c1, c2, c3, kind as u8, flags, 0, 0]
}

/// The longest payload a frame's length field can name and its check vouch for: what every
/// reader accepts, whatever bound the writer was opened with (`StoreOptions::record_bytes_max`
/// bounds what an open writes, not what it reads: a narrower reader took a wider writer's
/// record for damage).
pub const MAX_PAYLOAD_BYTES: u32 = u32::MAX - 1;

/// The payload length as its field holds it; payloads are refused far below 4 GiB
/// (`record_bytes_max`), and a longer one gets a length that no check accepts.
fn len_field(payload: &[u8]) -> u32 {
    u32::try_from(payload.len()).unwrap_or(u32::MAX)
}

/// Appends one frame of layout 1 holding `payload` (void frames, and records as the
/// previous release wrote them).
pub fn encode_frame(kind: RecordKind, payload: &[u8], out: &mut Vec<u8>) {
    let head = header_head(kind, len_field(payload), 0);
    out.extend_from_slice(&head);
    out.extend_from_slice(&coverage::whole_crc(&head, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Appends void frames (zero payloads) that fill exactly `len` bytes, none with a payload
/// past `max_payload`. `None` (nothing appended) when `len` is below one frame header.
pub fn encode_voids(len: usize, max_payload: u32, out: &mut Vec<u8>) -> Option<()> {
    let max_frame = usize::try_from(max_payload)
        .ok()?
        .checked_add(FRAME_HEADER_LEN)?;
    if len < FRAME_HEADER_LEN || max_frame < 2 * FRAME_HEADER_LEN {
        return None;
    }
    let mut left = len;
    while left > 0 {
        let mut take = left.min(max_frame);
        // Never leave a remainder too short for a header of its own.
        if (1..FRAME_HEADER_LEN).contains(&(left - take)) {
            take -= FRAME_HEADER_LEN;
        }
        let zeros = vec![0u8; take - FRAME_HEADER_LEN];
        encode_frame(RecordKind::Void, &zeros, out);
        left -= take;
    }
    Some(())
}

/// Starts a frame in `buf` (cleared): room for the header, which [`seal_frame`] fills in once
/// the payload has been encoded after it.
pub fn begin_frame(buf: &mut Vec<u8>) {
    buf.clear();
    buf.resize(FRAME_HEADER_LEN, 0);
}

/// The payload bytes of a frame begun with [`begin_frame`].
pub fn payload_len(frame: &[u8]) -> usize {
    frame.len().saturating_sub(FRAME_HEADER_LEN)
}

/// An offset into a frame begun with [`begin_frame`] as an offset into its payload.
pub fn payload_offset(frame_offset: u32) -> u32 {
    frame_offset.saturating_sub(FRAME_HEADER_LEN_U32)
}

/// Fills in the header of a frame whose payload was written after [`FRAME_HEADER_LEN`]
/// reserved bytes (saves a copy of the payload); returns the frame checksum. `events` are the
/// `(offset in the payload, length)` of its event encodings, as the encoder reported them:
/// layout 2 leaves their fields to their own checksums.
pub fn seal_frame(
    kind: RecordKind,
    frame: &mut [u8],
    layout: FrameLayout,
    events: &[(u32, u32)],
) -> u32 {
    let Some((header, payload)) = frame.split_at_mut_checked(FRAME_HEADER_LEN) else {
        return 0;
    };
    let (head, crc) = match layout {
        FrameLayout::Whole => {
            let head = header_head(kind, len_field(payload), 0);
            (head, coverage::whole_crc(&head, payload))
        }
        FrameLayout::Split => {
            let head = header_head(kind, len_field(payload), FLAG_LAYOUT2);
            (head, coverage::sealed_crc(&head, payload, events))
        }
    };
    for (dst, src) in header.iter_mut().zip(head.iter().chain(&crc.to_le_bytes())) {
        *dst = *src;
    }
    crc
}

/// What the bytes at a position say about the frame there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameCheck {
    /// A whole, valid frame.
    Valid {
        /// Its kind.
        kind: RecordKind,
        /// Header plus payload bytes.
        frame_len: usize,
        /// The frame checksum (the checkpoint links to it).
        crc: u32,
    },
    /// No bytes at all: a clean end.
    End,
    /// Fewer bytes than a header.
    ShortHeader,
    /// The length's checksum fails, or the length exceeds the maximum.
    BadLength,
    /// The frame would end past the available bytes.
    Incomplete {
        /// Header plus payload bytes the header claims.
        frame_len: usize,
    },
    /// The frame checksum fails.
    BadChecksum {
        /// Header plus payload bytes.
        frame_len: usize,
    },
    /// Checksums hold but the kind byte is unknown (a newer or damaged writer).
    UnknownKind {
        /// The kind byte.
        kind: u8,
        /// Header plus payload bytes.
        frame_len: usize,
    },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = at.checked_add(4).and_then(|end| b.get(at..end)) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

/// A record named by where its frame starts and the frame's checksum: what a checkpoint
/// links to, and what a reader remembers as the last record it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordLink {
    /// The frame's LSN.
    pub lsn: u64,
    /// The frame's CRC field.
    pub crc: u32,
}

/// The whole length (header and payload) a frame header says its frame has, when its length
/// field checks (its own CRC): how much to read for [`check_frame`].
pub fn frame_len_of(head: &[u8]) -> Option<usize> {
    let len = u32_at(head, OFF_LEN);
    (head.len() >= FRAME_HEADER_LEN && u32_at(head, OFF_LEN_CRC) == len_crc(len))
        .then(|| FRAME_HEADER_LEN + len as usize)
}

/// How much of a frame a reader checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// Every byte: in layout 2 the frame CRC and every event's own CRC.
    Every,
    /// The frame CRC alone: for a reader that uses only what it covers (kind, ids, seqs,
    /// lengths) and copies the events' bytes unread — compaction. In layout 2 the events'
    /// fields are then left to their own CRCs, which every read of them checks; in layout 1
    /// the frame CRC covers them anyway.
    Frame,
}

/// Checks the frame at the start of `bytes` (which run to the end of the segment), every
/// byte of it.
pub fn check_frame(bytes: &[u8], max_payload_bytes: u32) -> FrameCheck {
    check_frame_with(bytes, max_payload_bytes, Checks::Every)
}

/// [`check_frame`], as far as `checks` asks.
pub fn check_frame_with(bytes: &[u8], max_payload_bytes: u32, checks: Checks) -> FrameCheck {
    if bytes.is_empty() {
        return FrameCheck::End;
    }
    let Some((head, _)) = bytes.split_at_checked(FRAME_HEADER_LEN) else {
        return FrameCheck::ShortHeader;
    };
    let len = u32_at(head, OFF_LEN);
    if u32_at(head, OFF_LEN_CRC) != len_crc(len) || len > max_payload_bytes {
        return FrameCheck::BadLength;
    }
    let Some(frame_len) = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(FRAME_HEADER_LEN))
    else {
        return FrameCheck::BadLength;
    };
    let Some(payload) = bytes.get(FRAME_HEADER_LEN..frame_len) else {
        return FrameCheck::Incomplete { frame_len };
    };
    let (covered, _) = head.split_at(OFF_CRC);
    let kind_byte = head.get(OFF_KIND).copied().unwrap_or(0);
    let crc = match head.get(OFF_FLAGS).copied().unwrap_or(0) {
        0 => Some(coverage::whole_crc(covered, payload)),
        // Layout 2 needs the kind to find the events; an unknown kind's bytes cannot be
        // checked, so it reads as damage, as in layout 1 a kind byte no writer wrote would.
        FLAG_LAYOUT2 => RecordKind::from_byte(kind_byte).and_then(|kind| {
            coverage::checked_crc(covered, kind, payload, checks == Checks::Every)
        }),
        // A flag no writer sets.
        _ => None,
    };
    let Some(crc) = crc.filter(|c| *c == u32_at(head, OFF_CRC)) else {
        return FrameCheck::BadChecksum { frame_len };
    };
    match RecordKind::from_byte(kind_byte) {
        Some(kind) => FrameCheck::Valid {
            kind,
            frame_len,
            crc,
        },
        None => FrameCheck::UnknownKind {
            kind: kind_byte,
            frame_len,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zeros_are_never_a_frame() {
        assert_eq!(check_frame(&[0; 64], u32::MAX), FrameCheck::BadLength);
        assert_eq!(check_frame(&[], 10), FrameCheck::End);
        assert_eq!(check_frame(&[1, 2, 3], 10), FrameCheck::ShortHeader);
    }

    #[test]
    fn every_damage_is_detected() {
        let mut f = Vec::new();
        encode_frame(RecordKind::Append, b"payload", &mut f);
        assert!(matches!(
            check_frame(&f, 100),
            FrameCheck::Valid {
                kind: RecordKind::Append,
                frame_len: 23,
                ..
            }
        ));
        assert_eq!(
            check_frame(&f, 6),
            FrameCheck::BadLength,
            "over the maximum"
        );
        assert_eq!(
            check_frame(&f[..20], 100),
            FrameCheck::Incomplete { frame_len: 23 }
        );
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x40;
            let verdict = check_frame(&g, 100);
            assert!(
                !matches!(verdict, FrameCheck::Valid { .. }),
                "flip at {i} undetected"
            );
        }
        let mut unknown = f.clone();
        unknown[OFF_KIND] = 9;
        let mut h = crc32fast::Hasher::new();
        h.update(&unknown[..OFF_CRC]);
        h.update(&unknown[FRAME_HEADER_LEN..]);
        unknown[OFF_CRC..FRAME_HEADER_LEN].copy_from_slice(&h.finalize().to_le_bytes());
        assert_eq!(
            check_frame(&unknown, 100),
            FrameCheck::UnknownKind {
                kind: 9,
                frame_len: 23
            }
        );
    }

    #[test]
    fn sealing_in_place_writes_the_same_frame() {
        let mut a = Vec::new();
        encode_frame(RecordKind::Create, b"some payload", &mut a);
        let mut b = vec![0xAA; FRAME_HEADER_LEN];
        b.extend_from_slice(b"some payload");
        let crc = seal_frame(RecordKind::Create, &mut b, FrameLayout::Whole, &[]);
        assert_eq!(a, b);
        assert!(matches!(check_frame(&b, 100), FrameCheck::Valid { crc: c, .. } if c == crc));
    }

    #[test]
    fn a_flag_no_writer_sets_reads_as_damage() {
        let mut f = Vec::new();
        encode_frame(RecordKind::Delete, b"\x01\x00s", &mut f);
        for flags in 2..=255u8 {
            let mut g = f.clone();
            g[OFF_FLAGS] = flags;
            let crc = coverage::whole_crc(&g[..OFF_CRC], &g[FRAME_HEADER_LEN..]);
            g[OFF_CRC..FRAME_HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
            assert_eq!(
                check_frame(&g, 100),
                FrameCheck::BadChecksum { frame_len: 19 },
                "flags {flags}"
            );
        }
    }

    proptest! {
        #[test]
        fn frames_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..300), extra in proptest::collection::vec(any::<u8>(), 0..20)) {
            let mut f = Vec::new();
            encode_frame(RecordKind::Fork, &payload, &mut f);
            let n = f.len();
            f.extend_from_slice(&extra);
            let verdict = check_frame(&f, 1 << 20);
            let valid = matches!(verdict, FrameCheck::Valid { kind: RecordKind::Fork, frame_len, .. } if frame_len == n);
            prop_assert!(valid, "{:?}", verdict);
            prop_assert_eq!(&f[FRAME_HEADER_LEN..n], &payload[..]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = check_frame(&bytes, 1 << 20);
        }
    }
}

//! A record named by its log position and checksum: how something outside the store (the
//! PostgreSQL shipper) tells, later, whether a store's log is still the one it read — a
//! store restored from an older backup, or one whose log salvage rewrote, no longer holds
//! that record there.

use crate::codec::frame::{FRAME_HEADER_LEN, FrameCheck, OFF_CRC, check_frame, frame_len_of};
use crate::store::log::cursor::zeros;
use crate::store::log::segments::SegmentList;

/// One record of the log: where it starts, and its frame checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogMark {
    /// The record's log position.
    pub lsn: u64,
    /// Its frame's checksum (`docs/FORMAT.md`, the frame's CRC field).
    pub crc: u32,
}

/// The checksum and length of the intact frame at `lsn`, or why there is none.
pub(in crate::store) fn frame_at(
    segments: &SegmentList,
    lsn: u64,
) -> Result<(u32, usize), &'static str> {
    let Some(seg) = segments.find(lsn) else {
        return Err("the record it names is not in the log");
    };
    let Some(at) = seg.map().ok().and_then(|m| m.offset_of(lsn)) else {
        return Err("the record it names is not in the log (compaction may have left it out)");
    };
    let mut head = [0u8; FRAME_HEADER_LEN];
    if seg.file.read_at(&mut head, at).is_err() {
        return Err("the record it names is not in the log");
    }
    if zeros(&head) {
        return Err("the log holds only zeros where it points");
    }
    let Some(len) = frame_len_of(&head) else {
        return Err("the record it names is damaged");
    };
    let mut frame = vec![0u8; len.min(1 << 30)];
    if seg.file.read_at(&mut frame, at).is_err() {
        return Err("the record it names is cut short");
    }
    match check_frame(&frame, u32::MAX) {
        FrameCheck::Valid { crc, frame_len, .. } => Ok((crc, frame_len)),
        _ => Err("the record it names is damaged"),
    }
}

/// The length of the frame at `lsn` (header included), when a header whose length field
/// checks starts there: 16 bytes read.
pub(in crate::store) fn frame_len_at(segments: &SegmentList, lsn: u64) -> Option<u64> {
    let seg = segments.find(lsn)?;
    let at = seg.map().ok()?.offset_of(lsn)?;
    let mut head = [0u8; FRAME_HEADER_LEN];
    seg.file.read_at(&mut head, at).ok()?;
    frame_len_of(&head).map(|n| n as u64)
}

/// The checksum field of the frame header at `lsn`, when a header whose length field checks
/// starts there: 16 bytes read, the payload not (reads, `verify` and salvage check those).
/// What a consumer asking "is this still that record?" every round needs, cheaply.
pub(in crate::store) fn crc_field_at(segments: &SegmentList, lsn: u64) -> Option<u32> {
    let seg = segments.find(lsn)?;
    let at = seg.map().ok()?.offset_of(lsn)?;
    crc_in_header(&seg, at)
}

/// Whether a compaction of this log left out the record at `lsn` whose frame CRC was `crc`
/// (its segment's tombstones name it).
pub(in crate::store) fn left_out(segments: &SegmentList, lsn: u64, crc: u32) -> bool {
    segments.find(lsn).is_some_and(
        |seg| matches!(seg.map(), Ok(crate::store::log::map::LsnMap::Runs(r)) if r.left_out(lsn, crc)),
    )
}

fn crc_in_header(seg: &crate::store::log::segments::Segment, at: u64) -> Option<u32> {
    let mut head = [0u8; FRAME_HEADER_LEN];
    seg.file.read_at(&mut head, at).ok()?;
    frame_len_of(&head)?;
    let crc = head.get(OFF_CRC..OFF_CRC + 4)?;
    Some(u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]))
}

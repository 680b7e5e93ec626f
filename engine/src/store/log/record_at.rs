//! A record named by its log position and checksum: how something outside the store (the
//! PostgreSQL shipper) tells, later, whether a store's log is still the one it read — a
//! store restored from an older backup, or one whose log salvage rewrote, no longer holds
//! that record there.

use crate::codec::frame::{
    FRAME_HEADER_LEN, FrameCheck, OFF_CRC, OFF_KIND, RecordKind, check_frame, frame_len_of,
};
use crate::codec::record::{EPOCH_FRAME_LEN, WriterEpoch};
use crate::codec::segment::SEGMENT_HEADER_LEN;
use crate::store::log::cursor::zeros;
use crate::store::log::map::LsnMap;
use crate::store::log::segments::SegmentList;

/// One record of the log: where it starts, its frame checksum, and the writer epoch it was
/// written under (`docs/DESIGN.md` §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogMark {
    /// The record's log position.
    pub lsn: u64,
    /// Its frame's checksum (`docs/FORMAT.md`, the frame's CRC field).
    pub crc: u32,
    /// The id of the epoch record before it in its segment (`docs/FORMAT.md` §4.5); `None`
    /// for a record written before epochs (a segment, or the start of one, an earlier release
    /// wrote). What confirms the mark once a compaction has left the record out.
    pub epoch: Option<u64>,
}

/// How far a walk for the epoch in force went: in the segment starting at `segment`, the
/// frames before `lsn` were read, and `epoch` was in force there. The next walk in the same
/// segment to a later position starts here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) struct EpochWalk {
    pub(in crate::store) segment: u64,
    pub(in crate::store) lsn: u64,
    pub(in crate::store) epoch: Option<u64>,
}

/// The epoch in force at `lsn`: the id of the last intact epoch record at or before it in
/// its segment — walking its frames' headers from `from` when that walk was of the same
/// segment and stopped at or before `lsn`, else from the segment's first frame. `None` when
/// `lsn` is in no segment.
pub(in crate::store) fn epoch_at(
    segments: &SegmentList,
    lsn: u64,
    from: Option<EpochWalk>,
) -> Option<EpochWalk> {
    let seg = segments.find(lsn)?;
    let map = seg.map().ok()?;
    let header = SEGMENT_HEADER_LEN as u64;
    // A walk of a segment compaction wrote again since (same first LSN) may have stopped at
    // a frame it left out: then from the first frame (epoch records are never left out).
    let resume = from
        .filter(|w| w.segment == seg.first_lsn && w.lsn <= lsn)
        .and_then(|w| Some((map.offset_of(w.lsn)?, w.epoch)));
    let (start, epoch) = resume.unwrap_or((header, None));
    // Up to the frame at `lsn` (an epoch record itself, when the mark names one), no further:
    // an active segment's file runs on into space allocated ahead.
    let end = seg.records_end().ok()?.min(
        map.offset_at_or_after(lsn)
            .saturating_add(EPOCH_FRAME_LEN as u64),
    );
    let len = crate::width::index(end.saturating_sub(start));
    seg.with_bytes(start, len, |bytes| {
        let mut epoch = epoch;
        let mut next = map.lsn_of(start)?;
        for f in frames(map, start, bytes) {
            if f.lsn > lsn {
                break;
            }
            if let Some(id) = f.epoch() {
                epoch = Some(id);
            }
            // Else the walk goes on from this frame next time.
            if let Some(n) = f.next_lsn {
                next = n;
            }
        }
        Some((next, epoch))
    })
    .ok()
    .flatten()
    .map(|(at, epoch)| EpochWalk {
        segment: seg.first_lsn,
        lsn: at,
        epoch,
    })
}

/// The LSN of the first epoch record in `bytes` (a segment's records, from file offset
/// `start`, as `map` places them): the records before it were written before epochs.
pub(in crate::store) fn first_epoch_lsn(map: LsnMap<'_>, start: u64, bytes: &[u8]) -> Option<u64> {
    frames(map, start, bytes).find_map(|f| f.epoch().map(|_| f.lsn))
}

/// One frame met by [`frames`].
struct Met<'b> {
    lsn: u64,
    /// The LSN of the frame after it, if `map` places its end.
    next_lsn: Option<u64>,
    /// Its bytes (cut short where `bytes` end).
    bytes: &'b [u8],
}

impl Met<'_> {
    /// The id of the epoch record this frame is, when it is one, whole and intact.
    fn epoch(&self) -> Option<u64> {
        if self.bytes.get(OFF_KIND) != Some(&(RecordKind::Epoch as u8)) {
            return None;
        }
        match check_frame(self.bytes, u32::MAX) {
            FrameCheck::Valid {
                kind: RecordKind::Epoch,
                frame_len,
                ..
            } if frame_len == self.bytes.len() => {
                WriterEpoch::decode(self.bytes.get(FRAME_HEADER_LEN..)?)
                    .ok()
                    .map(|e| e.id)
            }
            _ => None,
        }
    }
}

/// The frames of `bytes` (from file offset `start` of a segment `map` places), headers only
/// read, while a header whose length checks is there.
fn frames<'b>(map: LsnMap<'b>, start: u64, bytes: &'b [u8]) -> impl Iterator<Item = Met<'b>> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let head = bytes.get(at..at + FRAME_HEADER_LEN)?;
        let len = frame_len_of(head)?;
        let lsn = map.lsn_of(start + at as u64)?;
        let frame = &bytes[at..bytes.len().min(at.saturating_add(len))];
        at = at.saturating_add(len);
        Some(Met {
            lsn,
            next_lsn: map.lsn_of(start + at as u64),
            bytes: frame,
        })
    })
}

/// Whether `lsn` lies where a compaction left records out: inside a compacted segment's
/// range, in none of its runs.
pub(in crate::store) fn in_hole(segments: &SegmentList, lsn: u64) -> bool {
    segments.find(lsn).is_some_and(|seg| {
        seg.is_compacted()
            && seg.end_lsn().is_ok_and(|end| lsn < end)
            && matches!(seg.map(), Ok(m) if m.offset_of(lsn).is_none())
    })
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

//! One segment compacted: its records walked once more, the ones kept copied as they are (a
//! frame's bytes and checksum unchanged) with their LSNs in a run table, then the new file
//! written beside the old one and renamed over it (`storage/replace.rs`): a reader that has
//! the old file open or mapped goes on reading it, one that opens the name after reads the
//! new one, and a crash leaves one or the other.

use std::sync::Arc;

use super::history::Drops;
use crate::codec::CorruptionKind;
use crate::codec::compacted::{Run, Tombstone};
use crate::codec::frame::{
    FRAME_HEADER_LEN, FrameCheck, RecordKind, RecordLink, check_frame, encode_frame,
};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SegmentHeader};
use crate::storage::Storage;
use crate::store::log::cursor::{LogCursor, SegmentFacts, StopAction};
use crate::store::log::walk::{Go, Met, walk};
use crate::store::segments::Segment;
use crate::{Error, Result};

/// A segment compacted.
#[derive(Debug)]
pub(super) struct Rewritten {
    /// The new segment, open for reading.
    pub(super) segment: Arc<Segment>,
    /// The file's bytes after its header before.
    pub(super) bytes_before: u64,
    /// The file's bytes after its header: records, run table, footer.
    pub(super) bytes_after: u64,
    pub(super) records_dropped: u64,
    /// The void record written where the segment's last record was left out (a checkpoint
    /// taken at the segment's end names it).
    pub(super) end_void: Option<RecordLink>,
}

/// Writes `seg` again without the records `drops` leaves out.
///
/// # Errors
/// `Corruption` where the walk meets anything but valid records, I/O errors (the old file
/// then stays as it was).
pub(super) fn rewrite(
    storage: &dyn Storage,
    seg: &Segment,
    drops: &Drops,
    record_bytes_max: u32,
    now_ms: i64,
    tombstone_cutoff_ms: i64,
) -> Result<Rewritten> {
    let map = seg.map()?;
    // What an earlier compaction of this segment left out stays named — until its time is
    // out (`CompactionPolicy::tombstone_ttl`).
    let mut tombstones: Vec<Tombstone> = match &map {
        crate::store::log::map::LsnMap::Runs(r)
            if seg.expired_tombstone_bytes(tombstone_cutoff_ms) == 0 =>
        {
            r.tombstones().to_vec()
        }
        _ => Vec::new(),
    };
    let records_end = seg.records_end()?;
    let end_lsn = seg.end_lsn()?;
    let facts = SegmentFacts::sealed_under_lock(map, record_bytes_max);
    let header = SegmentHeader {
        first_lsn: seg.first_lsn,
        created_ms: now_ms,
        compacted: true,
    };
    let mut out = header.encode().to_vec();
    let mut runs: Vec<Run> = Vec::new();
    let mut kept_end: Option<u64> = None;
    let mut dropped = 0u64;
    let len = usize::try_from(records_end)
        .unwrap_or(0)
        .saturating_sub(SEGMENT_HEADER_LEN);
    // A sealed segment's bytes are borrowed from its map, not copied.
    let stop = seg.with_bytes(SEGMENT_HEADER_LEN as u64, len, |bytes| {
        let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, bytes, false);
        walk(&mut cursor, |met| {
            let Met::Record(frame) = met else {
                return Ok(Go::Finish);
            };
            if drops.has(frame.lsn) {
                dropped += 1;
                tombstones.push(Tombstone {
                    lsn: frame.lsn,
                    crc: frame.crc,
                });
                return Ok(Go::On);
            }
            if kept_end != Some(frame.lsn) {
                runs.push(Run {
                    lsn: frame.lsn,
                    offset: out.len() as u64,
                });
            }
            out.extend_from_slice(frame.bytes);
            kept_end = Some(frame.lsn + frame.bytes.len() as u64);
            Ok(Go::On)
        })
    })??;
    if let Some(stop) = stop {
        let kind = match stop.action {
            StopAction::Corrupt(k) => k,
            _ => CorruptionKind::Incomplete,
        };
        return Err(Error::corruption(&seg.path, stop.offset as u64, kind));
    }
    // The segment's last record left out: a void frame takes the last 16 of its bytes, so
    // the segment still ends with a record that ends where it does.
    let mut end_void = None;
    if kept_end != Some(end_lsn) && end_lsn >= seg.first_lsn + FRAME_HEADER_LEN as u64 {
        let lsn = end_lsn - FRAME_HEADER_LEN as u64;
        if kept_end != Some(lsn) {
            runs.push(Run {
                lsn,
                offset: out.len() as u64,
            });
        }
        let at = out.len();
        encode_frame(RecordKind::Void, &[], &mut out);
        if let FrameCheck::Valid { crc, .. } = check_frame(&out[at..], 0) {
            end_void = Some(RecordLink { lsn, crc });
        }
    }
    // The void that ends the segment is a record kept where one may have been left out.
    if let Some(v) = end_void {
        tombstones.retain(|t| t.lsn != v.lsn);
    }
    let (segment, file_len) = super::file::write_compacted(
        storage,
        &seg.path,
        out,
        super::file::Layout {
            first_lsn: seg.first_lsn,
            end_lsn,
            runs,
            tombstones,
            now_ms,
        },
    )?;
    Ok(Rewritten {
        segment,
        bytes_before: seg.stored_bytes()?,
        bytes_after: file_len - SEGMENT_HEADER_LEN as u64,
        records_dropped: dropped,
        end_void,
    })
}

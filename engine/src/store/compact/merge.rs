//! Neighbouring compacted segments written as one, so that a store compacted for years does
//! not keep a file per segment it ever rolled: the merged file takes the first one's name and
//! holds every kept frame of the group, their runs and live tombstones; then the others are
//! removed. A crash between leaves files wholly inside the merged one's LSN range: the open
//! skips them as merge leftovers and a writable open removes them (`log/discover.rs`, and
//! salvage's plan alike).

use std::sync::Arc;

use crate::codec::compacted::{Run, Tombstone};
use crate::codec::frame::{FRAME_HEADER_LEN, FrameCheck, RecordKind, check_frame};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader};
use crate::storage::Checked;
use crate::storage::Storage;
use crate::store::compact::rewrite::TombstoneRule;
use crate::store::log::map::LsnMap;
use crate::store::log::segments::Segment;
use crate::{Error, Result};

/// Groups of neighbouring small sealed compacted segments — a quarter of `max_bytes` at most
/// each, so that a segment compaction left half full is not written a second time — whose
/// files together fit in `max_bytes` (indices into `segments`; the active segment is never
/// in one, being not compacted): each group of two or more becomes one file. Files stay
/// fewer than four per `max_bytes` of what is kept, plus the segments appends wrote.
pub(super) fn groups(segments: &[Arc<Segment>], max_bytes: u64) -> Vec<Vec<usize>> {
    let sizes: Vec<Size> = segments
        .iter()
        .map(|seg| Size {
            compacted: seg.is_compacted(),
            bytes: seg.stored_bytes().unwrap_or(u64::MAX),
        })
        .collect();
    groups_of(&sizes, max_bytes)
}

/// What [`groups`] looks at of a segment.
#[derive(Debug, Clone, Copy)]
pub(super) struct Size {
    pub(super) compacted: bool,
    /// Its bytes after the header.
    pub(super) bytes: u64,
}

/// [`groups`] of segments given by their sizes (a dry run's, as the run would leave them).
pub(super) fn groups_of(segments: &[Size], max_bytes: u64) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut bytes = 0u64;
    for (i, seg) in segments.iter().enumerate() {
        let size = seg.bytes;
        let fits = seg.compacted && size <= max_bytes / 4;
        if fits && !current.is_empty() && bytes.saturating_add(size) <= max_bytes {
            current.push(i);
            bytes += size;
            continue;
        }
        if current.len() > 1 {
            out.push(std::mem::take(&mut current));
        }
        current.clear();
        if fits {
            current.push(i);
            bytes = size;
        }
    }
    if current.len() > 1 {
        out.push(current);
    }
    out
}

/// Where the void that ends a compacted segment's records starts in `bytes` (its records
/// from the end of its header), and its checksum, when one does.
fn tail_void(map: LsnMap<'_>, seg_end: u64, bytes: &[u8]) -> Option<(usize, u32)> {
    let at = bytes.len().checked_sub(FRAME_HEADER_LEN)?;
    match check_frame(&bytes[at..], 0) {
        FrameCheck::Valid {
            kind: RecordKind::Void,
            crc,
            ..
        } if map.offset_of(seg_end - FRAME_HEADER_LEN as u64)
            == Some(SEGMENT_HEADER_LEN as u64 + at as u64) =>
        {
            Some((at, crc))
        }
        _ => None,
    }
}

/// Stages `group` (neighbouring segments, oldest first) as one compacted segment to go under
/// the first one's name (`file.rs`); committing it puts it there, and [`remove_merged`]
/// then removes the others.
pub(super) fn merge<'s>(
    storage: &'s dyn Storage,
    group: &[Arc<Segment>],
    now_ms: i64,
    keep: crate::store::compact::Tombstones,
) -> Result<crate::store::compact::file::Staged<'s>> {
    let first = group.first().ok_or(Error::Closed)?;
    let header = SegmentHeader::new(first.first_lsn, now_ms, true);
    let mut out = header.encode().to_vec();
    let mut runs: Vec<Run> = Vec::new();
    let mut tombstones: Vec<Tombstone> = Vec::new();
    let mut end_lsn = first.first_lsn;
    let last = group.len() - 1;
    for (k, seg) in group.iter().enumerate() {
        let map = seg.map()?;
        let records_end = seg.records_end()?;
        let mut len = crate::width::index(records_end).saturating_sub(SEGMENT_HEADER_LEN);
        let base = out.len() as u64;
        let seg_end = seg.end_lsn()?;
        seg.with_bytes(SEGMENT_HEADER_LEN as u64, len, |bytes| {
            // The void that ended a segment whose last record compaction left out ends none
            // now: it goes (confirmed as any record left out: by its epoch, else a
            // tombstone). No checkpoint names it — the one compaction wrote names the
            // writer's last record, and a void inside the group is not that — and it would
            // only count as dead bytes.
            let tail_void = if k < last {
                tail_void(map, seg_end, bytes)
            } else {
                None
            };
            match tail_void {
                Some((at, crc)) => {
                    out.extend_from_slice(&bytes[..at]);
                    len = at;
                    let lsn = seg_end - FRAME_HEADER_LEN as u64;
                    if TombstoneRule::for_segment(map, bytes, keep.named).wants(lsn, crc) {
                        tombstones.push(Tombstone { lsn, crc });
                    }
                }
                None => out.extend_from_slice(bytes),
            }
        })?;
        let (seg_runs, seg_tombs) = match &map {
            LsnMap::Runs(r) => (r.runs().to_vec(), r.tombstones().to_vec()),
            LsnMap::Plain { first_lsn } if len > 0 => (
                vec![Run {
                    lsn: *first_lsn,
                    offset: SEGMENT_HEADER_LEN as u64,
                }],
                Vec::new(),
            ),
            LsnMap::Plain { .. } => (Vec::new(), Vec::new()),
        };
        for r in seg_runs {
            let offset = base + (r.offset - SEGMENT_HEADER_LEN as u64);
            // A run made only of the dropped void holds nothing now.
            if r.offset >= SEGMENT_HEADER_LEN as u64 + len as u64 {
                continue;
            }
            // A run that continues the previous one in the log and in the file is the same run.
            let continues = runs
                .last()
                .is_some_and(|p| p.lsn + (offset - p.offset) == r.lsn);
            if !continues {
                runs.push(Run { lsn: r.lsn, offset });
            }
        }
        tombstones.extend(keep.kept(seg, &seg_tombs));
        end_lsn = seg_end;
    }
    crate::store::compact::file::stage(
        storage,
        &first.path,
        &mut out,
        crate::store::compact::file::Layout {
            first_lsn: first.first_lsn,
            end_lsn,
            runs,
            tombstones,
            now_ms,
        },
    )
}

/// Removes the files a merge took in (every segment of the group but the first), newest
/// first, then syncs the directory.
pub(super) fn remove_merged(storage: &dyn Storage, group: &[Arc<Segment>]) -> Result<()> {
    for seg in group.iter().skip(1).rev() {
        storage.remove_file(&seg.path)?;
    }
    storage.sync_directory(SEGMENTS_DIR)
}

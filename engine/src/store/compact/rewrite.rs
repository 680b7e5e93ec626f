//! One segment compacted: the byte ranges between the records left out copied as they are (a
//! frame's bytes and checksum unchanged) with their LSNs in a run table, then the new file
//! written beside the old one and renamed over it (`storage/replace.rs`): a reader that has
//! the old file open or mapped goes on reading it, one that opens the name after reads the
//! new one, and a crash leaves one or the other.
//!
//! The records' boundaries come from compaction's one read of the log (`history.rs`), which
//! checked every frame's checksum: the segment is not walked again. Only records written
//! after that read (the active segment sealed for the compaction) are walked and checked
//! here before they are copied.

use crate::codec::CorruptionKind;
use crate::codec::compacted::{Run, Tombstone};
use crate::codec::frame::{
    FRAME_HEADER_LEN, FrameCheck, RecordKind, RecordLink, check_frame, encode_frame,
};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SegmentHeader};
use crate::storage::Storage;
use crate::store::compact::history::Rec;
use crate::store::log::cursor::Pass;
use crate::store::log::cursor::{LogCursor, SegmentFacts, StopAction};
use crate::store::log::map::LsnMap;
use crate::store::log::record_at::first_epoch_lsn;
use crate::store::log::segments::Segment;
use crate::store::log::walk::{Go, Met, walk};
use crate::store::report::SegmentCompaction;
use crate::{Error, Result};

/// A segment compacted, its new file staged (not in place yet).
pub(super) struct Rewritten<'s> {
    /// The new file, written under its temp name.
    pub(super) staged: crate::store::compact::file::Staged<'s>,
    /// The file's bytes after its header before.
    pub(super) bytes_before: u64,
    /// The file's bytes after its header: records, run table, footer.
    pub(super) bytes_after: u64,
    pub(super) records_dropped: u64,
    /// The void record written where the segment's last record was left out (a checkpoint
    /// taken at the segment's end names it).
    pub(super) end_void: Option<RecordLink>,
}

/// What one rewrite is given.
pub(super) struct Job<'a> {
    pub(super) seg: &'a Segment,
    /// The segment's records left out, sorted by LSN (frames the read checked).
    pub(super) drops: &'a [Rec],
    /// Where compaction's read of the log stopped: records at or past it are checked here.
    pub(super) checked_to: u64,
    pub(super) now_ms: i64,
    pub(super) tombstones: crate::store::compact::Tombstones,
    /// The end LSN a roll would seal the segment at: the active segment measured by a dry
    /// run (the run rolls it first, cutting the space allocated ahead). `None`: as it is.
    pub(super) sealed_at: Option<u64>,
}

/// Writes `job.seg` again without `job.drops`, staged beside the old file (`file.rs`); `buf`
/// is scratch space kept between segments.
///
/// # Errors
/// `Corruption` where a record written after the read is not valid, or a record to leave out
/// is not where the segment holds bytes (the old file then stays as it was); I/O errors.
pub(super) fn rewrite<'s>(
    storage: &'s dyn Storage,
    job: &Job<'_>,
    buf: &mut Vec<u8>,
) -> Result<Rewritten<'s>> {
    let seg = job.seg;
    let (layout, end_void) = build(job, buf)?;
    let staged = crate::store::compact::file::stage(storage, &seg.path, buf, layout)?;
    let bytes_after = staged.file_len() - SEGMENT_HEADER_LEN as u64;
    Ok(Rewritten {
        staged,
        bytes_before: seg.stored_bytes()?,
        bytes_after,
        records_dropped: job.drops.len() as u64,
        end_void,
    })
}

/// What [`rewrite`] would make of `job.seg`, measured and written nowhere: a dry run's
/// figures are the run's.
///
/// # Errors
/// As [`rewrite`]'s `Corruption`.
pub(super) fn measure(job: &Job<'_>, buf: &mut Vec<u8>) -> Result<SegmentCompaction> {
    let seg = job.seg;
    let (layout, _) = build(job, buf)?;
    let file_len = crate::store::compact::file::measure(&seg.path, buf.len() as u64, layout)?;
    let bytes_before = match job.sealed_at {
        Some(end) => end.saturating_sub(seg.first_lsn),
        None => seg.stored_bytes()?,
    };
    Ok(SegmentCompaction {
        segment: seg.path.clone(),
        bytes_before,
        bytes_after: file_len - SEGMENT_HEADER_LEN as u64,
        records_dropped: job.drops.len() as u64,
    })
}

/// The header and kept frames of `job.seg` written again into `buf`, with the tables that go
/// after them and the void frame that ends it when its last record goes.
fn build(
    job: &Job<'_>,
    buf: &mut Vec<u8>,
) -> Result<(crate::store::compact::file::Layout, Option<RecordLink>)> {
    let seg = job.seg;
    let map = seg.map()?;
    // What an earlier compaction of this segment left out stays named — until its time is
    // out (`CompactionPolicy::tombstone_ttl`).
    let tombstones: Vec<Tombstone> = match &map {
        LsnMap::Runs(r) => job.tombstones.kept(seg, r.tombstones()),
        LsnMap::Plain { .. } => Vec::new(),
    };
    let (records_end, end_lsn) = match job.sealed_at {
        Some(end) => (
            SEGMENT_HEADER_LEN as u64 + end.saturating_sub(seg.first_lsn),
            end,
        ),
        None => (seg.records_end()?, seg.end_lsn()?),
    };
    if end_lsn > job.checked_to {
        check_tail(seg, map, job.checked_to, records_end)?;
    }
    let spans = spans(map, records_end);
    buf.clear();
    buf.extend_from_slice(&SegmentHeader::new(seg.first_lsn, job.now_ms, true).encode());
    let mut copied = Copied {
        buf,
        runs: Vec::new(),
        kept_end: None,
        tombstones,
        tombstone: TombstoneRule {
            first_epoch: None,
            named: job.tombstones.named,
        },
    };
    let mut drops = job.drops.iter().peekable();
    let len = crate::width::index(records_end).saturating_sub(SEGMENT_HEADER_LEN);
    // A sealed segment's bytes are borrowed from its map, not copied.
    let misplaced = seg.with_bytes(SEGMENT_HEADER_LEN as u64, len, |bytes| {
        copied.tombstone = TombstoneRule::for_segment(map, bytes, job.tombstones.named);
        let misplaced = spans
            .iter()
            .find_map(|span| copied.span(span, bytes, &mut drops).err());
        // Where the old bytes cross into the new file: every kept byte keeps its LSN.
        debug_assert!(
            misplaced.is_some() || copied.keeps_lsns(&spans, bytes),
            "{}: a kept byte moved to another LSN",
            seg.path
        );
        misplaced
    })?;
    if let Some(offset) = misplaced.or_else(|| drops.peek().map(|_| 0)) {
        return Err(Error::corruption(
            &seg.path,
            offset,
            CorruptionKind::RunTable("a record to leave out is not in the segment"),
        ));
    }
    let end_void = copied.end_void(seg.first_lsn, end_lsn);
    let Copied {
        runs, tombstones, ..
    } = copied;
    let layout = crate::store::compact::file::Layout {
        first_lsn: seg.first_lsn,
        end_lsn,
        runs,
        tombstones,
        now_ms: job.now_ms,
    };
    Ok((layout, end_void))
}

/// What a rewrite copied so far: the new file's bytes, its runs, the end of the last kept
/// stretch, the tombstones of what was left out.
struct Copied<'b> {
    buf: &'b mut Vec<u8>,
    runs: Vec<Run>,
    kept_end: Option<u64>,
    tombstones: Vec<Tombstone>,
    tombstone: TombstoneRule,
}

/// Which records left out get a tombstone (`docs/DESIGN.md` §3.7): those no epoch record
/// precedes in their segment (written before epochs: a consumer's mark of one names no
/// epoch), and the one the compaction's checkpoint names. Any other is confirmed by the
/// epoch in force where it was.
#[derive(Debug, Clone, Copy)]
pub(super) struct TombstoneRule {
    /// The LSN of the segment's first epoch record.
    pub(super) first_epoch: Option<u64>,
    pub(super) named: Option<RecordLink>,
}

impl TombstoneRule {
    /// The rule for a segment whose records (from the end of its header) are `bytes`, as
    /// `map` places them; `named` the record the compaction's checkpoint names.
    pub(super) fn for_segment(map: LsnMap<'_>, bytes: &[u8], named: Option<RecordLink>) -> Self {
        Self {
            first_epoch: first_epoch_lsn(map, SEGMENT_HEADER_LEN as u64, bytes),
            named,
        }
    }

    pub(super) fn wants(&self, lsn: u64, crc: u32) -> bool {
        self.first_epoch.is_none_or(|e| lsn < e)
            || self.named.is_some_and(|n| n.lsn == lsn && n.crc == crc)
    }
}

impl Copied<'_> {
    /// Copies `span` of the segment's records (`bytes`, from the end of its header) but the
    /// records of `drops` inside it; `Err(offset)` when a record to leave out does not lie
    /// wholly inside the span, or the bytes are not there.
    fn span(
        &mut self,
        span: &Span,
        bytes: &[u8],
        drops: &mut std::iter::Peekable<std::slice::Iter<'_, Rec>>,
    ) -> std::result::Result<(), u64> {
        let mut from = span.lsn;
        let span_end = span.lsn + span.len;
        loop {
            let next = drops.peek().filter(|d| d.lsn < span_end).copied();
            let until = next.map_or(span_end, |d| d.lsn);
            if until > from {
                if self.kept_end != Some(from) {
                    self.runs.push(Run {
                        lsn: from,
                        offset: self.buf.len() as u64,
                    });
                }
                let at = crate::width::index(
                    span.offset - SEGMENT_HEADER_LEN as u64 + (from - span.lsn),
                );
                let n = crate::width::index(until - from);
                let b = bytes.get(at..at.saturating_add(n)).ok_or(span.offset)?;
                self.buf.extend_from_slice(b);
                self.kept_end = Some(until);
            }
            let Some(d) = next else {
                return Ok(());
            };
            // A record left out lies wholly inside one span (the read found it there).
            if d.lsn < from || d.lsn + d.len > span_end {
                return Err(span.offset);
            }
            if self.tombstone.wants(d.lsn, d.crc) {
                self.tombstones.push(Tombstone {
                    lsn: d.lsn,
                    crc: d.crc,
                });
            }
            from = d.lsn + d.len;
            drops.next();
        }
    }

    /// Whether each run's bytes are the old segment's bytes at its LSN (`bytes`: the old
    /// records, from the end of its header): the check a compaction keeps every kept record
    /// where its LSN says.
    fn keeps_lsns(&self, spans: &[Span], bytes: &[u8]) -> bool {
        let ascending = self
            .runs
            .windows(2)
            .all(|w| w[0].lsn < w[1].lsn && w[0].offset < w[1].offset);
        ascending
            && self.runs.iter().enumerate().all(|(i, run)| {
                let end = self
                    .runs
                    .get(i + 1)
                    .map_or(self.buf.len(), |n| crate::width::index(n.offset));
                let new = &self.buf[crate::width::index(run.offset)..end];
                let Some(span) = spans
                    .iter()
                    .find(|s| s.lsn <= run.lsn && run.lsn < s.lsn + s.len)
                else {
                    return false;
                };
                let old_at = crate::width::index(
                    span.offset - SEGMENT_HEADER_LEN as u64 + (run.lsn - span.lsn),
                );
                let n = new
                    .len()
                    .min(crate::width::index(span.lsn + span.len - run.lsn));
                bytes.get(old_at..old_at + n) == Some(&new[..n])
            })
    }

    /// The segment's last record left out: a void frame takes the last 16 of its bytes, so
    /// the segment still ends with a record that ends where it does (and that void is a
    /// record kept, no tombstone).
    fn end_void(&mut self, first_lsn: u64, end_lsn: u64) -> Option<RecordLink> {
        if self.kept_end == Some(end_lsn) || end_lsn < first_lsn + FRAME_HEADER_LEN as u64 {
            return None;
        }
        let lsn = end_lsn - FRAME_HEADER_LEN as u64;
        if self.kept_end != Some(lsn) {
            self.runs.push(Run {
                lsn,
                offset: self.buf.len() as u64,
            });
        }
        let at = self.buf.len();
        encode_frame(RecordKind::Void, &[], self.buf);
        let FrameCheck::Valid { crc, .. } = check_frame(&self.buf[at..], 0) else {
            return None;
        };
        self.tombstones.retain(|t| t.lsn != lsn);
        Some(RecordLink { lsn, crc })
    }
}

/// A stretch of the log a segment holds contiguously: `len` bytes from `lsn`, at file
/// offset `offset`.
struct Span {
    lsn: u64,
    offset: u64,
    len: u64,
}

/// The segment's record bytes as spans: one for a segment appends wrote, one per run for a
/// compacted one.
fn spans(map: LsnMap<'_>, records_end: u64) -> Vec<Span> {
    let header = SEGMENT_HEADER_LEN as u64;
    match map {
        LsnMap::Plain { first_lsn } => vec![Span {
            lsn: first_lsn,
            offset: header,
            len: records_end.saturating_sub(header),
        }],
        LsnMap::Runs(r) => {
            let runs = r.runs();
            runs.iter()
                .enumerate()
                .map(|(i, run)| {
                    let end = runs.get(i + 1).map_or(records_end, |n| n.offset);
                    Span {
                        lsn: run.lsn,
                        offset: run.offset,
                        len: end.saturating_sub(run.offset),
                    }
                })
                .collect()
        }
    }
}

/// Checks the records from `from_lsn` to the segment's end: written after compaction's read
/// of the log, they are walked before they are copied.
fn check_tail(seg: &Segment, map: LsnMap<'_>, from_lsn: u64, records_end: u64) -> Result<()> {
    let start = map.offset_at_or_after(from_lsn).min(records_end);
    let len = crate::width::index(records_end - start);
    let base = crate::width::index(start);
    let facts = SegmentFacts::sealed_under_lock(map);
    let stop = seg.with_bytes(start, len, |bytes| {
        let mut cursor = LogCursor::new(facts, base, bytes, Pass::First);
        walk(&mut cursor, |met| match met {
            Met::Record(_) => Ok(Go::On),
            _ => Ok(Go::Finish),
        })
    })??;
    match stop {
        None => Ok(()),
        Some(stop) => {
            let kind = match stop.action {
                StopAction::Corrupt(k) => k,
                _ => CorruptionKind::Incomplete,
            };
            Err(Error::corruption(&seg.path, stop.offset as u64, kind))
        }
    }
}

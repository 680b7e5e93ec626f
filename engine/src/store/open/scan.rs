//! The recovery scan (`docs/DESIGN.md` §3.6): walk the log from a position with the log
//! cursor, replay each valid record through the acceptance function (`replay.rs`), and do
//! what the decision table says where the cursor stops. It changes no file: a torn tail to
//! cut is returned, and a writable open cuts it only once everything else has been decided.
//! Open and `refresh` go through here.

use crate::codec::frame::RecordLink;
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::segment::SEGMENTS_DIR;
use crate::store::catalog::entries::Entries;
use crate::store::log::cursor::{LogCursor, Pass, Place, SegmentFacts, Stop, StopAction, Writers};
use crate::store::log::segments::{Segment, SegmentList};
use crate::store::log::walk::empty_log;
use crate::store::log::walk::{Go, Met, walk};
use crate::store::open::replay::replay;
use crate::store::options::StoreOptions;
use crate::{Error, Result};

/// Where and how far a scan reads.
#[derive(Debug, Clone, Copy)]
pub(in crate::store) struct Span {
    /// The LSN to start at (the chosen checkpoint's covered position, or 0).
    pub(in crate::store) start_lsn: u64,
    /// The furthest position a checkpoint header vouches for.
    pub(in crate::store) durable_lsn: u64,
    /// `u64::MAX`, or the position to treat as the end (a snapshot).
    pub(in crate::store) stop_lsn: u64,
    /// Whether a writer may append beside the scan.
    pub(in crate::store) writers: Writers,
}

/// A torn tail the scan found: the newest segment holds it from `offset` on.
#[derive(Debug)]
pub(in crate::store) struct Cut {
    pub(in crate::store) segment: Arc<Segment>,
    pub(in crate::store) offset: u64,
    pub(in crate::store) bytes: u64,
}

/// What a scan found.
#[derive(Debug, Default)]
pub(in crate::store) struct Scanned {
    /// The LSN just past the last record.
    pub(in crate::store) end_lsn: u64,
    /// Records replayed.
    pub(in crate::store) records: u64,
    /// A torn tail to cut (only where the reader holds the writer lock).
    pub(in crate::store) cut: Option<Cut>,
    /// Bytes left after the last record by a reader without the lock: a writer may be in
    /// the middle of appending them.
    pub(in crate::store) pending_bytes: u64,
}

/// Scans `span` of the log, replaying onto `catalog`; `last_record` starts as the chosen
/// checkpoint's and ends as the last record's.
///
/// # Errors
/// `Corruption` where the table says so or a record is refused, I/O errors.
pub(in crate::store) fn scan(
    list: &SegmentList,
    options: &StoreOptions,
    span: Span,
    last_record: &mut Option<RecordLink>,
    catalog: &mut Entries,
    touched: &mut BTreeSet<String>,
) -> Result<Scanned> {
    let segs = list.from(span.start_lsn)?;
    let mut out = Scanned {
        end_lsn: span.start_lsn,
        ..Scanned::default()
    };
    let facts_of = |map, place| SegmentFacts::checked(map, place, span.durable_lsn, span.writers);
    let Some(first) = segs.iter().rposition(|s| s.first_lsn <= span.start_lsn) else {
        // No segment at all: the table decides whether an empty log may be the end.
        return match empty_log(span.durable_lsn, span.writers) {
            Some(kind) => Err(Error::corruption(SEGMENTS_DIR, 0, kind)),
            None => Ok(out),
        };
    };
    // For progress: the log end as the newest segment's length says (its preallocated zeros
    // included, so an estimate).
    let total = segs
        .last()
        .and_then(|s| s.end_lsn().ok())
        .unwrap_or(0)
        .saturating_sub(span.start_lsn);
    let mut reported = 0u64;
    for (i, seg) in segs.iter().enumerate().skip(first) {
        // A scan told to stop (a snapshot at a position) treats the stop as the end.
        let stops_here = span.stop_lsn != u64::MAX
            && seg.first_lsn <= span.stop_lsn
            && segs.get(i + 1).is_none_or(|n| n.first_lsn > span.stop_lsn);
        // A compacted segment is sealed wherever it stands: compaction wrote it whole and
        // renamed it into place, and it ends with its run table. Taken as the newest, a
        // damaged frame in it was a torn tail that a writable open cut — through the run
        // table, leaving a store no open could read again (found by the `store_open` fuzz
        // target; `fuzz_regressions.rs`,
        // `regression_a_compacted_newest_segment_is_never_cut_as_a_torn_tail`).
        let newest = (i + 1 == segs.len() && !seg.is_compacted()) || stops_here;
        let map = seg.map()?;
        let facts = facts_of(map, if newest { Place::Newest } else { Place::Sealed });
        let limit = stops_here.then(|| map.offset_at_or_after(span.stop_lsn));
        let mut offset =
            crate::width::index(map.offset_at_or_after(out.end_lsn.max(seg.first_lsn)));
        let mut pass = Pass::First;
        loop {
            // Only the bytes from where the scan is: what a checkpoint covers is not re-read.
            let bytes = read_from(seg, offset, limit)?;
            let mut cursor = LogCursor::new(facts, offset, &bytes, pass);
            // Every record replayed; the first stop ends the walk and is decided below.
            let stop = walk(&mut cursor, |met| {
                let Met::Record(frame) = met else {
                    return Ok(Go::Finish);
                };
                frame
                    .decode()
                    .map_err(CorruptionKind::BadPayload)
                    .and_then(|body| replay(list, catalog, touched, body, frame.lsn))
                    .map_err(|kind| Error::corruption(&seg.path, frame.offset as u64, kind))?;
                out.records += 1;
                *last_record = Some(RecordLink {
                    lsn: frame.lsn,
                    crc: frame.crc,
                });
                let done = frame.lsn.saturating_sub(span.start_lsn);
                if done >= reported + (1 << 20) {
                    reported = done;
                    options.progress.report(done, total.max(done));
                }
                Ok(Go::On)
            })?
            .map(|stop| (stop, cursor.end()));
            offset = cursor.offset();
            match stop {
                None => break,
                Some((stop, end)) => match at_stop(&stop, end, seg, span, &mut out)? {
                    // Read the bytes from the stop again: settled there.
                    AtStop::ReadAgain => pass = Pass::Reread,
                    AtStop::End => break,
                },
            }
        }
        out.end_lsn = facts.lsn_of(offset);
        if newest {
            return Ok(out);
        }
        if let Some(next) = segs.get(i + 1) {
            out.end_lsn = next.first_lsn;
        }
    }
    Ok(out)
}

/// What a scan does where a segment's walk stopped.
enum AtStop {
    /// Read the bytes from the stop again (a view beside a writer: settled there).
    ReadAgain,
    /// The log ends there (a torn tail noted in `out`).
    End,
}

/// Decides the stop the walk of `seg` made (`end`: where its bytes end): read again, a torn
/// tail cut by a writer or left pending by a reader, or the damage it is.
fn at_stop(
    stop: &Stop,
    end: usize,
    seg: &Arc<Segment>,
    span: Span,
    out: &mut Scanned,
) -> Result<AtStop> {
    match stop.action {
        StopAction::Reread => Ok(AtStop::ReadAgain),
        StopAction::Truncate => {
            let bytes = (end - stop.offset) as u64;
            if span.writers == Writers::Excluded {
                out.cut = Some(Cut {
                    segment: Arc::clone(seg),
                    offset: stop.offset as u64,
                    bytes,
                });
            } else {
                out.pending_bytes = bytes;
            }
            Ok(AtStop::End)
        }
        StopAction::Corrupt(kind) => Err(Error::corruption(&seg.path, stop.offset as u64, kind)),
    }
}

/// The segment's bytes from file offset `at` to its end (or `limit`), read now.
fn read_from(seg: &Segment, at: usize, limit: Option<u64>) -> Result<Vec<u8>> {
    // A live writer's roll cuts the active segment's allocated space between the length and
    // the read: read again at the new length (a sealed segment no longer changes).
    let mut attempts = 0;
    loop {
        let mut len = seg.records_end()?;
        if let Some(limit) = limit {
            len = len.min(limit);
        }
        let len = crate::width::index(len).max(at);
        let mut bytes = vec![0u8; len - at];
        match seg.file.read_at(&mut bytes, at as u64) {
            Ok(()) => return Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && attempts < 3 => {
                attempts += 1;
            }
            Err(e) => return Err(Error::io("read", &seg.path, e)),
        }
    }
}

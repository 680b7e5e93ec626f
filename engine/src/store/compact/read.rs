//! Compaction's one read of the log: every segment walked (`store/log/walk.rs`), every frame's
//! checksum checked and every record summarized, on worker threads a segment at a time; the
//! summaries are added to the history (`history.rs`) here, in log order — an incarnation is
//! known only from what came before it. The walk and the checksums are most of its time
//! (`docs/PERFORMANCE.md`, Compaction).
//!
//! A summary names its session ids by their place in the segment's bytes, not by a borrow:
//! they are looked up again from the segment's map when the summary is added (a sealed
//! segment's bytes are its map's, never copied). A segment not sealed yet (the active one) is
//! read and added in one go here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::codec::CorruptionKind;
use crate::codec::frame::FRAME_HEADER_LEN;
use crate::codec::record::{RecordSummary, summarize};
use crate::codec::segment::SEGMENT_HEADER_LEN;
use crate::store::compact::history::{Current, History, Rec};
use crate::store::log::cursor::Pass;
use crate::store::log::cursor::{LogCursor, SegmentFacts, StopAction};
use crate::store::log::segments::Segment;
use crate::store::log::walk::{Go, Met, walk};
use crate::{Error, Result};

/// Reads the records of `segments` that lie before `end_lsn` (a record at or past it was not
/// read, and is kept).
///
/// # Errors
/// `Corruption` where the walk meets anything but valid records (compaction copies only what
/// it has checked: repair first), I/O errors.
pub(super) fn read(segments: &[Arc<Segment>], end_lsn: u64) -> Result<History> {
    let mut h = History::new();
    let mut current = Current::default();
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, 4);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        // Few summaries in flight: a worker waits while the adding falls behind.
        let (tx, rx) = mpsc::sync_channel::<(usize, Result<Summaries>)>(1);
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || {
                loop {
                    let si = next.fetch_add(1, Ordering::Relaxed);
                    let Some(seg) = segments.get(si) else { break };
                    let read = summarize_segment(seg, end_lsn);
                    // The adding stopped (an error): so do the workers.
                    if tx.send((si, read)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut arrived: BTreeMap<usize, Result<Summaries>> = BTreeMap::new();
        for (si, seg) in segments.iter().enumerate() {
            let summaries = loop {
                if let Some(r) = arrived.remove(&si) {
                    break r?;
                }
                match rx.recv() {
                    Ok((k, r)) => {
                        arrived.insert(k, r);
                    }
                    // Every worker gone before this segment: one panicked.
                    Err(_) => return Err(Error::Closed),
                }
            };
            let (header, len) = extent(seg, end_lsn)?;
            seg.with_bytes(header, len, |bytes| match summaries {
                Summaries::Of(seen) => {
                    add_all(&mut h, &mut current, si, bytes, &seen);
                    Ok(())
                }
                Summaries::NotSealed => {
                    let seen = walk_segment(seg, bytes)?;
                    add_all(&mut h, &mut current, si, bytes, &seen);
                    Ok(())
                }
            })??;
        }
        Ok(h)
    })
}

/// What a worker made of one segment.
enum Summaries {
    /// Its records, in order.
    Of(Vec<Seen>),
    /// The segment is not sealed: its bytes are a copy, read again where they are added.
    NotSealed,
}

/// A session id by its place in a segment's bytes (from the first record's offset).
#[derive(Debug, Clone, Copy)]
struct Id {
    at: usize,
    len: usize,
}

impl Id {
    /// `id`, a slice of `bytes`, by its place there.
    fn of(bytes: &[u8], id: &[u8]) -> Self {
        Self {
            at: (id.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize),
            len: id.len(),
        }
    }

    fn get(self, bytes: &[u8]) -> &[u8] {
        bytes
            .get(self.at..self.at.saturating_add(self.len))
            .unwrap_or_default()
    }
}

/// One record as a worker saw it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    lsn: u64,
    len: u64,
    crc: u32,
    first_seq: u64,
    what: What,
}

/// A [`RecordSummary`] with its ids by place.
#[derive(Debug, Clone, Copy)]
enum What {
    Start {
        session: Id,
        parent: Option<(Id, u64)>,
    },
    Append(Id),
    Delete(Id),
    Void,
}

/// The file offset of a segment's first record and how many record bytes lie before the
/// snapshot's end.
fn extent(seg: &Segment, end_lsn: u64) -> Result<(u64, usize)> {
    let map = seg.map()?;
    let header = SEGMENT_HEADER_LEN as u64;
    let end = seg
        .records_end()?
        .min(map.offset_at_or_after(end_lsn).max(header));
    Ok((header, crate::width::index(end - header)))
}

/// A worker's part: one sealed segment's records summarized (a segment not sealed is left to
/// the adding, which has its bytes then).
fn summarize_segment(seg: &Segment, end_lsn: u64) -> Result<Summaries> {
    if !seg.is_sealed() {
        return Ok(Summaries::NotSealed);
    }
    let (header, len) = extent(seg, end_lsn)?;
    seg.with_bytes(header, len, |bytes| {
        walk_segment(seg, bytes).map(Summaries::Of)
    })?
}

/// Walks `bytes` (a segment's records from its first) and summarizes every record.
fn walk_segment(seg: &Segment, bytes: &[u8]) -> Result<Vec<Seen>> {
    let map = seg.map()?;
    let facts = SegmentFacts::sealed_under_lock(map);
    let seg_end = seg.end_lsn()?;
    let mut seen = Vec::with_capacity(bytes.len() / 128);
    let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, bytes, Pass::First);
    let stop = walk(&mut cursor, |met| {
        let Met::Record(frame) = met else {
            return Ok(Go::Finish);
        };
        let summary = summarize(frame.kind, frame.payload()).map_err(|why| {
            Error::corruption(
                &seg.path,
                frame.offset as u64,
                CorruptionKind::BadPayload(why),
            )
        })?;
        let len = frame.bytes.len() as u64;
        // The void a compaction wrote to end a segment whose last record went is written
        // again by any compaction of it (a checkpoint may name it): not one to leave out.
        let end_void = frame.lsn + len == seg_end && frame.bytes.len() == FRAME_HEADER_LEN;
        let (first_seq, what) = match summary {
            RecordSummary::Start {
                session,
                parent,
                seqs,
            } => (
                seqs.start,
                What::Start {
                    session: Id::of(bytes, session),
                    parent: parent.map(|(p, n)| (Id::of(bytes, p), n)),
                },
            ),
            RecordSummary::Append { session, seqs } => {
                (seqs.start, What::Append(Id::of(bytes, session)))
            }
            RecordSummary::Delete { session } => (0, What::Delete(Id::of(bytes, session))),
            // Kept always (what a remembered position is confirmed by): never left out.
            RecordSummary::Void if end_void => return Ok(Go::On),
            RecordSummary::Epoch => return Ok(Go::On),
            RecordSummary::Void => (0, What::Void),
        };
        seen.push(Seen {
            lsn: frame.lsn,
            len,
            crc: frame.crc,
            first_seq,
            what,
        });
        Ok(Go::On)
    })?;
    if let Some(stop) = stop {
        let kind = match stop.action {
            StopAction::Corrupt(k) => k,
            _ => CorruptionKind::Incomplete,
        };
        return Err(Error::corruption(&seg.path, stop.offset as u64, kind));
    }
    Ok(seen)
}

/// Adds a segment's summaries to the history, in order; `bytes` are the ones they were read
/// from.
fn add_all(h: &mut History, current: &mut Current, si: usize, bytes: &[u8], seen: &[Seen]) {
    for s in seen {
        let summary = match s.what {
            What::Start { session, parent } => RecordSummary::Start {
                session: session.get(bytes),
                parent: parent.map(|(p, n)| (p.get(bytes), n)),
                seqs: s.first_seq..s.first_seq,
            },
            What::Append(session) => RecordSummary::Append {
                session: session.get(bytes),
                seqs: s.first_seq..s.first_seq,
            },
            What::Delete(session) => RecordSummary::Delete {
                session: session.get(bytes),
            },
            What::Void => RecordSummary::Void,
        };
        h.add(current, summary, |first_seq| Rec {
            lsn: s.lsn,
            len: s.len,
            seg: si,
            crc: s.crc,
            first_seq,
        });
    }
}

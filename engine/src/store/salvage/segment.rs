//! Salvage's plan for one segment that continues the log: the walk over its frames, each
//! record replayed (or dropped, when it continues a session salvage cut), each damaged place
//! repaired as the table says (`repair.rs`).

use std::collections::BTreeSet;

use crate::codec::CorruptionKind;
use crate::codec::frame::FRAME_HEADER_LEN;
use crate::codec::record::RecordBody;
use crate::codec::segment::SEGMENT_HEADER_LEN;
use crate::store::catalog::entries::Entries;
use crate::store::log::cursor::Pass;
use crate::store::log::cursor::{Frame, LogCursor, SegmentFacts, Stop, StopAction};
use crate::store::log::segments::SegmentList;
use crate::store::log::walk::{Go, Met, walk};
use crate::store::open::replay::replay;
use crate::store::report::{Damage, DamageRepair};
use crate::store::salvage::edits::Plan;
use crate::store::salvage::losses::{Losses, attribute, last_seq, session_of};
use crate::store::salvage::repair::{Repair, Stopped, choose};
use crate::{Error, Result};

/// A damaged place of a segment, and what salvage does about it.
pub(super) fn damage(
    path: &str,
    offset: usize,
    bytes: usize,
    kind: CorruptionKind,
    repair: DamageRepair,
) -> Damage {
    Damage {
        segment: path.to_owned(),
        offset: offset as u64,
        bytes: bytes as u64,
        kind,
        repair,
        session: None,
    }
}

/// What the plan has learnt so far, segment after segment.
#[derive(Default)]
pub(super) struct State {
    pub(super) out: Plan,
    /// The segments kept so far (replay reads earlier events through it).
    pub(super) list: SegmentList,
    pub(super) catalog: Entries,
    pub(super) losses: Losses,
    pub(super) touched: BTreeSet<String>,
    /// Sessions deleted by a record salvage keeps: absent afterwards for a reason.
    pub(super) deleted: BTreeSet<String>,
}

/// One segment's edits.
#[derive(Debug, Default)]
pub(super) struct SegmentEdits {
    /// `(offset, len)` ranges that become void records.
    pub(super) voids: Vec<(usize, usize)>,
    /// Where the segment is cut, if it is.
    pub(super) cut_at: Option<usize>,
}

impl State {
    /// Walks the segment at `path` (its whole `bytes`; `newest`: the log's last segment).
    pub(super) fn walk_segment(
        &mut self,
        facts: SegmentFacts<'_>,
        path: &str,
        bytes: &[u8],
        newest: bool,
    ) -> Result<SegmentEdits> {
        let records = bytes.get(SEGMENT_HEADER_LEN..).unwrap_or_default();
        let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, records, Pass::First);
        let mut voids = Vec::new();
        let mut cut_at = None;
        walk(&mut cursor, |met| match met {
            Met::Record(frame) => {
                self.record(path, frame, &mut voids);
                Ok(Go::On)
            }
            Met::Stop(stop, cursor) => self.stop(
                path,
                bytes.len(),
                newest,
                stop,
                cursor,
                &mut voids,
                &mut cut_at,
            ),
        })?;
        Ok(SegmentEdits { voids, cut_at })
    }

    /// A valid record: replayed, or voided when it continues a cut session or no longer
    /// follows.
    fn record(&mut self, path: &str, frame: Frame<'_>, voids: &mut Vec<(usize, usize)>) {
        let (pos, frame_len) = (frame.offset, frame.bytes.len());
        self.out.read.records += 1;
        self.out.read.log_bytes += frame_len as u64;
        let body = match frame.decode() {
            Ok(body) => body,
            Err(what) => {
                let session = attribute(&self.catalog, frame.bytes);
                if let Some(id) = &session {
                    self.losses.cut(&self.catalog, id, None);
                }
                self.out.report.damage.push(Damage {
                    session,
                    ..damage(
                        path,
                        pos,
                        frame_len,
                        CorruptionKind::BadPayload(what),
                        DamageRepair::Voided,
                    )
                });
                voids.push((pos, frame_len));
                return;
            }
        };
        if self.losses.drops(&self.catalog, &body) {
            self.losses.dropped += 1;
            voids.push((pos, frame_len));
            return;
        }
        let id = session_of(&body).map(str::to_owned);
        let last_seq = last_seq(&body);
        let appends = matches!(body, RecordBody::Append { .. });
        let replayed = replay(
            &self.list,
            &mut self.catalog,
            &mut self.touched,
            body,
            frame.lsn,
        );
        match replayed {
            Err(kind) => {
                if let Some(id) = &id {
                    self.losses.cut(&self.catalog, id, last_seq);
                }
                // After damage, a record that no longer follows (its session's earlier events
                // were in a damaged record whose id was unreadable) is a consequence, not more
                // damage.
                if self.out.report.damage.is_empty() {
                    let session = id.filter(|i| self.catalog.sessions.contains_key(i));
                    self.out.report.damage.push(Damage {
                        session,
                        ..damage(path, pos, frame_len, kind, DamageRepair::Voided)
                    });
                } else {
                    self.losses.dropped += 1;
                }
                voids.push((pos, frame_len));
            }
            // A created, forked or deleted id starts afresh: no longer cut.
            Ok(()) if !appends => {
                if let Some(id) = id {
                    if !self.catalog.sessions.contains_key(&id) {
                        self.deleted.insert(id.clone());
                    }
                    self.losses.cut.remove(&id);
                }
            }
            Ok(()) => {}
        }
    }

    /// Where the walk stopped: repaired as the table says.
    #[allow(
        clippy::too_many_arguments,
        reason = "the walk's stop and the segment's two edits, borrowed for one call"
    )]
    fn stop(
        &mut self,
        path: &str,
        len: usize,
        newest: bool,
        stop: Stop,
        cursor: &mut LogCursor<'_>,
        voids: &mut Vec<(usize, usize)>,
        cut_at: &mut Option<usize>,
    ) -> Result<Go> {
        let pos = stop.offset;
        let (found, kind) = match stop.action {
            StopAction::Truncate => (Stopped::Torn, CorruptionKind::Incomplete),
            StopAction::Corrupt(kind @ CorruptionKind::MissingRecords { .. }) => {
                (Stopped::LogEndsEarly, kind)
            }
            StopAction::Corrupt(kind) => (Stopped::Damaged, kind),
            StopAction::Reread => (
                Stopped::Damaged,
                CorruptionKind::Inconsistent("a write in flight under the lock"),
            ),
        };
        // Damage is looked past to the next valid frame (or the end of the segment).
        let next = if found == Stopped::Damaged {
            cursor.resync()
        } else {
            pos
        };
        let report = &mut self.out.report.damage;
        match choose(found, next - pos < FRAME_HEADER_LEN, newest) {
            Repair::CutTorn => {
                report.push(damage(path, pos, len - pos, kind, DamageRepair::Cut));
                *cut_at = Some(pos);
                Ok(Go::Finish)
            }
            Repair::LogEnds => {
                let vouched_to = match kind {
                    CorruptionKind::MissingRecords { vouched_to } => vouched_to,
                    _ => stop.lsn,
                };
                let bytes = crate::width::index(vouched_to.saturating_sub(stop.lsn));
                report.push(damage(
                    path,
                    pos,
                    bytes,
                    kind,
                    DamageRepair::CheckpointsRemoved,
                ));
                if pos < len {
                    *cut_at = Some(pos);
                }
                Ok(Go::Finish)
            }
            Repair::CutTail => {
                report.push(damage(path, pos, next - pos, kind, DamageRepair::Cut));
                *cut_at = Some(pos);
                Ok(Go::Finish)
            }
            Repair::Refuse => Err(Error::corruption(path, pos as u64, kind)),
            Repair::Void => {
                let session = attribute(&self.catalog, cursor.bytes_from(pos));
                if let Some(id) = &session {
                    self.losses.cut(&self.catalog, id, None);
                }
                self.out.report.damage.push(Damage {
                    session,
                    ..damage(path, pos, next - pos, kind, DamageRepair::Voided)
                });
                voids.push((pos, next - pos));
                Ok(Go::On)
            }
        }
    }
}

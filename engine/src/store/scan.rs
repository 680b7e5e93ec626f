//! The recovery scan (`docs/DESIGN.md` §3.6): read the log from a position, replay each
//! valid record through the acceptance function, and let the decision table
//! (`log::recovery`) decide what to do where a frame is not valid. Open, `refresh` and
//! salvage all go through here.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::catalog::{Catalog, SessionEntry, StoredEvents, plan_batch};
use super::discover::load_segments;
use super::inner::Inner;
use super::options::StoreOptions;
use super::recovery::{TailAction, TailFacts, decide};
use super::report::OpenReport;
use super::segments::{SegmentList, Tail};
use crate::codec::frame::{FRAME_HEADER_LEN, FrameCheck, check_frame};
use crate::codec::record::{LocatedEvent, RecordBody, decode};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR};
use crate::codec::{CorruptionKind, EventLoc};
use crate::model::{SessionHeader, SessionState, SharedVec};
use crate::{Error, Result};

/// Scans from `start_lsn` up to `stop_lsn` (`u64::MAX`: to the end), replays, repairs;
/// returns the append position. Damage before `durable_lsn` (the furthest position a
/// checkpoint header vouches for) is never a torn tail.
#[allow(
    clippy::too_many_arguments,
    reason = "the recovery scan threads its accumulators explicitly"
)]
pub(super) fn scan(
    list: &SegmentList,
    options: &StoreOptions,
    read_only: bool,
    start_lsn: u64,
    durable_lsn: u64,
    stop_lsn: u64,
    last_record: &mut Option<(u64, u32)>,
    catalog: &mut Catalog,
    touched: &mut BTreeSet<String>,
    report: &mut OpenReport,
    end: &mut u64,
) -> Result<Option<Tail>> {
    let segs = list.all();
    let Some(first) = segs.iter().rposition(|s| s.first_lsn <= start_lsn) else {
        return Ok(None);
    };
    let mut end_lsn = start_lsn;
    // For progress: the log end as the newest segment's length says (its preallocated zeros
    // included, so an estimate).
    let total = segs.last().map_or(0, |s| {
        let len = s.file.len().unwrap_or(0);
        (s.first_lsn + len.saturating_sub(SEGMENT_HEADER_LEN as u64)).saturating_sub(start_lsn)
    });
    let mut reported = 0u64;
    for (i, seg) in segs.iter().enumerate().skip(first) {
        // A scan told to stop (a snapshot at a position) treats the stop as the end.
        let stops_here = stop_lsn != u64::MAX
            && seg.first_lsn <= stop_lsn
            && segs.get(i + 1).is_none_or(|n| n.first_lsn > stop_lsn);
        let is_last = i + 1 == segs.len() || stops_here;
        let mut len = seg
            .file
            .len()
            .map_err(|e| Error::io("stat", &seg.path, e))?;
        if stops_here {
            len = len.min(seg.offset_of(stop_lsn));
        }
        let mut pos = usize::try_from(seg.offset_of(end_lsn.max(seg.first_lsn))).map_err(|_| {
            Error::corruption(
                &seg.path,
                0,
                CorruptionKind::Inconsistent("a position past the address space"),
            )
        })?;
        // Only the bytes from where the scan starts: what a checkpoint covers is not re-read.
        let base = pos;
        let file_len = usize::try_from(len).unwrap_or(0).max(base);
        let mut bytes = vec![0u8; file_len - base];
        seg.file
            .read_at(&mut bytes, base as u64)
            .map_err(|e| Error::io("read", &seg.path, e))?;
        loop {
            let rest = bytes.get(pos - base..).unwrap_or_default();
            let check = check_frame(rest, options.record_bytes_max);
            let lsn = seg.first_lsn + (pos - SEGMENT_HEADER_LEN) as u64;
            let stop = match check {
                FrameCheck::End => None,
                FrameCheck::Valid {
                    kind,
                    frame_len,
                    crc,
                } => {
                    let payload = &rest[FRAME_HEADER_LEN..frame_len];
                    match decode(kind, payload)
                        .map_err(CorruptionKind::BadPayload)
                        .and_then(|body| replay(list, options, catalog, touched, body, lsn))
                    {
                        Ok(()) => {
                            report.records_replayed += 1;
                            *last_record = Some((lsn, crc));
                            pos += frame_len;
                            let done = lsn.saturating_sub(start_lsn);
                            if done >= reported + (1 << 20) {
                                reported = done;
                                options.progress.report(done, total.max(done));
                            }
                            continue;
                        }
                        Err(kind) => Some(TailAction::Corrupt(kind)),
                    }
                }
                // The active segment's preallocated space beyond every durable mark: a clean
                // end, not a torn tail (vouched zeros stay corruption, below).
                _ if is_last && lsn >= durable_lsn && rest.iter().all(|&b| b == 0) => None,
                ref damaged => {
                    let from = match damaged {
                        FrameCheck::BadLength => pos + FRAME_HEADER_LEN,
                        FrameCheck::BadChecksum { frame_len }
                        | FrameCheck::UnknownKind { frame_len, .. } => pos + frame_len,
                        _ => file_len,
                    };
                    let zeros_after = bytes
                        .get(from.saturating_sub(base)..)
                        .unwrap_or_default()
                        .iter()
                        .all(|&b| b == 0);
                    let facts =
                        TailFacts::from_check(damaged, !is_last, lsn < durable_lsn, zeros_after);
                    let action = decide(facts);
                    Some(match (action, damaged) {
                        (TailAction::Corrupt(_), FrameCheck::UnknownKind { kind, .. }) => {
                            TailAction::Corrupt(CorruptionKind::UnknownKind(*kind))
                        }
                        _ => action,
                    })
                }
            };
            match stop {
                None => break,
                Some(TailAction::Accept) => unreachable_accept()?,
                Some(TailAction::Truncate) => {
                    if !read_only {
                        seg.file
                            .set_len(pos as u64)
                            .map_err(|e| Error::io("truncate", &seg.path, e))?;
                        seg.file
                            .sync_data()
                            .map_err(|e| Error::io("sync", &seg.path, e))?;
                        report.bytes_truncated += (file_len - pos) as u64;
                    } else {
                        report.torn_tail_ignored += (file_len - pos) as u64;
                    }
                    break;
                }
                Some(TailAction::Corrupt(kind)) => {
                    return Err(Error::corruption(&seg.path, pos as u64, kind));
                }
            }
        }
        if is_last {
            let active = Arc::clone(seg);
            let next_lsn = seg.first_lsn + (pos - SEGMENT_HEADER_LEN) as u64;
            *end = next_lsn;
            let allocated = active
                .file
                .len()
                .map_err(|e| Error::io("stat", &active.path, e))?;
            return Ok((!read_only).then_some(Tail {
                active,
                next_lsn,
                last_record: *last_record,
                allocated,
                window: None,
                next_window: None,
                ahead_failed_at: None,
                frame: Vec::new(),
                offsets: Vec::new(),
                prefault: options.durability == super::Durability::Buffered,
                prefaulter: None,
                sync_store: options.durability == super::Durability::Sync,
            }));
        }
        end_lsn = segs[i + 1].first_lsn;
    }
    Ok(None)
}

fn unreachable_accept() -> Result<()> {
    // `decide` answers Accept only for a valid frame, which the scan replays before asking.
    Err(Error::Corruption {
        segment: SEGMENTS_DIR.to_owned(),
        offset: 0,
        kind: CorruptionKind::Inconsistent("recovery table accepted a damaged frame"),
    })
}

/// Replays a record's events onto a session's state and locations, validating them as a
/// live write would be. On a refusal nothing changes.
fn replay_events(
    list: &SegmentList,
    options: &StoreOptions,
    id: &str,
    state: &mut SessionState,
    locs: &mut SharedVec<EventLoc>,
    events: &[LocatedEvent],
    lsn: u64,
) -> std::result::Result<(), CorruptionKind> {
    let evs: Vec<_> = events.iter().map(|l| l.event.clone()).collect();
    let source = StoredEvents {
        segments: list,
        locs: Some(locs),
        batch: &evs,
    };
    plan_batch(id, state, &source, &evs, &options.limits)
        .map_err(|_| CorruptionKind::Inconsistent("a stored event is refused"))?
        .commit(state, &evs);
    for e in events {
        locs.push(EventLoc {
            lsn,
            offset: e.offset,
            len: e.len,
        });
    }
    Ok(())
}

/// Applies one decoded record to the catalog, validating it as a live write would be. On a
/// refusal the catalog is unchanged.
pub(super) fn replay(
    list: &SegmentList,
    options: &StoreOptions,
    catalog: &mut Catalog,
    touched: &mut BTreeSet<String>,
    body: RecordBody,
    lsn: u64,
) -> std::result::Result<(), CorruptionKind> {
    let inconsistent = CorruptionKind::Inconsistent;
    let (id, header_json, mut state, locs, parent, events) = match body {
        RecordBody::Append { session, events } => {
            let entry = catalog
                .sessions
                .get_mut(&session)
                .ok_or(inconsistent("events for an unknown session"))?;
            replay_events(
                list,
                options,
                &session,
                &mut entry.state,
                &mut entry.locs,
                &events,
                lsn,
            )?;
            catalog.touch(&session);
            touched.insert(session);
            return Ok(());
        }
        RecordBody::Void => return Ok(()),
        RecordBody::Delete { session } => {
            catalog
                .delete(&session)
                .ok_or(inconsistent("deletion of an unknown session"))?;
            touched.insert(session);
            return Ok(());
        }
        RecordBody::Create {
            session,
            header_json,
            events,
        } => (
            session,
            header_json,
            SessionState::new(),
            SharedVec::default(),
            None,
            events,
        ),
        RecordBody::Fork {
            child,
            header_json,
            parent,
            inherited,
            events,
        } => {
            if catalog.sessions.contains_key(&child) {
                return Err(inconsistent("a fork reuses a session id"));
            }
            let (base, locs) = catalog
                .fork_base(list, &child, &parent, inherited, &options.limits)
                .map_err(|_| inconsistent("a fork's inherited events are refused"))?
                .ok_or(inconsistent("a fork of an unknown session"))?;
            (
                child,
                header_json,
                base,
                locs,
                Some((parent, inherited)),
                events,
            )
        }
    };
    // A new session: created, or forked.
    if catalog.sessions.contains_key(&id) {
        return Err(inconsistent("a session is created twice"));
    }
    let header = SessionHeader::from_json(&header_json)
        .map_err(|_| inconsistent("a stored header does not parse"))?;
    let mut locs = locs;
    replay_events(list, options, &id, &mut state, &mut locs, &events, lsn)?;
    catalog.sessions.insert(
        id.clone(),
        SessionEntry {
            header,
            state,
            locs,
            parent,
            created_lsn: lsn,
            checkpointed_locs: 0,
            dirty: true,
        },
    );
    catalog.touch(&id);
    touched.insert(id);
    Ok(())
}

/// Catches a read-only store up with what a live writer appended since: new records of the
/// last segment and new segments. Returns the records replayed.
pub(super) fn refresh(inner: &Inner) -> Result<u64> {
    let mut report = OpenReport::default();
    let segments = load_segments(&*inner.storage, true, &mut report)?;
    *inner.segments.write() = segments;
    let mut read_end = inner.read_end.lock();
    let (start, mut last_record) = *read_end;
    let mut catalog = inner.catalog.write();
    let mut touched = BTreeSet::new();
    let mut end = start;
    scan(
        &inner.segments,
        &inner.options,
        true,
        start,
        start,
        u64::MAX,
        &mut last_record,
        &mut catalog,
        &mut touched,
        &mut report,
        &mut end,
    )?;
    *read_end = (end, last_record);
    Ok(report.records_replayed)
}

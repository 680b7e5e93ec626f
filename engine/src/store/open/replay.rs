//! Applying one decoded record to the catalog, validated as a live write would be: what open,
//! `refresh` and salvage do with every record the log cursor hands them.

use std::collections::BTreeSet;

use crate::Limits;
use crate::codec::record::{LocatedEvent, RecordBody};
use crate::codec::{CorruptionKind, EventLoc};
use crate::model::{SessionHeader, SessionState};
use crate::store::catalog::entries::{Entries, Prechecked, StoredEvents, plan_batch};
use crate::store::catalog::locations::Locations;
use crate::store::log::segments::SegmentList;

/// Replays a record's events onto a session's state and locations, validating them as a
/// live write would be, by the bounds of stored events. On a refusal nothing changes.
fn replay_events(
    list: &SegmentList,
    id: &str,
    state: &mut SessionState,
    locs: &mut Locations,
    events: &[LocatedEvent],
    lsn: u64,
) -> std::result::Result<(), CorruptionKind> {
    let evs: Vec<_> = events.iter().map(|l| l.event.clone()).collect();
    let source = StoredEvents {
        segments: list,
        locs: Some(locs),
        batch: &evs,
    };
    // Judged as stored: the writer's bounds admitted it (`Limits::stored`).
    plan_batch(id, state, &source, &evs, Prechecked::No, &Limits::stored())
        .map_err(refused("a stored event is refused"))?
        .commit(state, &evs);
    for e in events {
        locs.push(EventLoc {
            lsn,
            offset: e.offset,
            len: e.len,
        });
    }
    // The pair of write.rs's: what a replay puts in the catalog is what the write did.
    debug_assert_eq!(
        locs.len(),
        state.next_seq(),
        "{id}: locations after a replay"
    );
    Ok(())
}

/// What a replay refusal is: the checkpoint's damage when reading an earlier event's location
/// from a checkpoint run failed (the open then replays the whole log instead), else the
/// record's.
fn refused(why: &'static str) -> impl Fn(crate::Error) -> CorruptionKind {
    move |e| match e {
        crate::Error::Corruption {
            kind:
                kind @ (CorruptionKind::CheckpointLocations
                | CorruptionKind::CheckpointEntry
                | CorruptionKind::CheckpointIndex),
            ..
        } => kind,
        _ => CorruptionKind::Inconsistent(why),
    }
}

/// Decodes session `id` from the checkpoint's index if it is there (the catalog holds it
/// then); a damaged entry is the checkpoint's damage.
fn load(catalog: &mut Entries, id: &str) -> std::result::Result<bool, CorruptionKind> {
    catalog
        .load(id)
        .map_err(refused("a session's checkpoint entry is damaged"))
}

/// Whether session `id` is live, decoded or not.
fn exists(catalog: &Entries, id: &str) -> std::result::Result<bool, CorruptionKind> {
    catalog
        .exists(id)
        .map_err(refused("a session's checkpoint entry is damaged"))
}

/// Applies one decoded record to the catalog, validating it as a live write would be. On a
/// refusal the catalog is unchanged.
pub(in crate::store) fn replay(
    list: &SegmentList,
    catalog: &mut Entries,
    touched: &mut BTreeSet<String>,
    body: RecordBody,
    lsn: u64,
) -> std::result::Result<(), CorruptionKind> {
    let inconsistent = CorruptionKind::Inconsistent;
    let (id, header_json, mut state, locs, parent, events) = match body {
        RecordBody::Append { session, events } => {
            load(catalog, &session)?;
            let entry = catalog
                .sessions
                .get_mut(&session)
                .ok_or(inconsistent("events for an unknown session"))?;
            replay_events(
                list,
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
        RecordBody::Void | RecordBody::Epoch(_) => return Ok(()),
        RecordBody::Delete { session } => {
            // Compaction leaves out every record of a deleted session and keeps its deletion
            // (it must not come back): such a deletion names no session.
            let gone = catalog
                .delete(&session)
                .map_err(refused("a session's checkpoint entry is damaged"))?;
            // Older segments that cannot be judged may be compacted ones: their damage is
            // reported by the first use that needs them, not taken for this deletion's.
            if gone.is_none() && !list.compacted_before(lsn).unwrap_or(true) {
                return Err(inconsistent("deletion of an unknown session"));
            }
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
            Locations::default(),
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
            if exists(catalog, &child)? {
                return Err(inconsistent("a fork reuses a session id"));
            }
            load(catalog, &parent)?;
            let (base, locs) = catalog
                .fork_base(list, &child, &parent, inherited)
                .map_err(refused("a fork's inherited events are refused"))?
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
    if exists(catalog, &id)? {
        return Err(inconsistent("a session is created twice"));
    }
    let header = SessionHeader::from_json(&header_json)
        .map_err(|_| inconsistent("a stored header does not parse"))?;
    if header.id != id {
        return Err(inconsistent("a stored header names another session"));
    }
    let mut locs = locs;
    replay_events(list, &id, &mut state, &mut locs, &events, lsn)?;
    catalog.insert_created(header, state, locs, parent, lsn);
    touched.insert(id);
    Ok(())
}

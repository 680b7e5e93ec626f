//! What salvage's plan keeps track of per session: which are cut and what each loses, and the
//! records it drops — of sessions cut, and of the segments it removes.

use std::collections::{BTreeMap, BTreeSet};

use crate::codec::frame::FRAME_HEADER_LEN;
use crate::codec::record::{RecordBody, leading_session_id};
use crate::codec::segment::SEGMENT_HEADER_LEN;
use crate::store::catalog::entries::Entries;
use crate::store::checkpoint::chain::CheckpointHeaders;
use crate::store::log::cursor::{LogCursor, SegmentFacts};
use crate::store::log::cursor::{Pass, Place, Writers};
use crate::store::log::walk::{Go, Met, walk};
use crate::store::report::SessionLoss;

/// Per-session bookkeeping while planning.
#[derive(Default)]
pub(super) struct Losses {
    pub(super) by_id: BTreeMap<String, SessionLoss>,
    /// Sessions cut: their later records are dropped.
    pub(super) cut: BTreeSet<String>,
    pub(super) dropped: u64,
}

impl Losses {
    pub(super) fn cut(&mut self, catalog: &Entries, id: &str, last_seq: Option<u64>) {
        let kept = catalog.sessions.get(id).map_or(0, |e| e.state.next_seq);
        let loss = self
            .by_id
            .entry(id.to_owned())
            .or_insert_with(|| SessionLoss {
                session: id.to_owned(),
                kept,
                lost_through: None,
            });
        loss.lost_through = loss.lost_through.max(last_seq);
        self.cut.insert(id.to_owned());
    }

    /// Whether a valid record must be dropped because it continues a cut session (or forks
    /// past what a cut parent kept); notes the loss.
    pub(super) fn drops(&mut self, catalog: &Entries, body: &RecordBody) -> bool {
        let last = last_seq(body);
        match body {
            RecordBody::Append { session, .. } if self.cut.contains(session) => {
                self.cut(catalog, session, last);
                true
            }
            RecordBody::Fork {
                child,
                parent,
                inherited,
                ..
            } if self.cut.contains(parent)
                && catalog
                    .sessions
                    .get(parent)
                    .is_none_or(|e| e.state.next_seq < *inherited) =>
            {
                self.cut(catalog, child, last);
                true
            }
            _ => false,
        }
    }
}

/// The session a decoded record concerns.
pub(super) fn session_of(body: &RecordBody) -> Option<&str> {
    match body {
        RecordBody::Create { session, .. }
        | RecordBody::Append { session, .. }
        | RecordBody::Delete { session } => Some(session),
        RecordBody::Fork { child, .. } => Some(child),
        RecordBody::Void | RecordBody::Epoch(_) => None,
    }
}

pub(super) fn last_seq(body: &RecordBody) -> Option<u64> {
    match body {
        RecordBody::Create { events, .. }
        | RecordBody::Append { events, .. }
        | RecordBody::Fork { events, .. } => events.last().map(|e| e.event.seq()),
        _ => None,
    }
}

/// The session id a damaged frame's payload seems to name, if it names a known session
/// (every record kind but void starts with a `str16` id).
pub(super) fn attribute(catalog: &Entries, frame: &[u8]) -> Option<String> {
    let id = leading_session_id(frame.get(FRAME_HEADER_LEN..)?)?;
    catalog.sessions.contains_key(&id).then_some(id)
}

/// The records in a segment salvage removes (it does not continue the log): each one's
/// session loses what it held, and the count is reported as dropped.
pub(super) fn removed_records(bytes: &[u8], lsn: u64, catalog: &Entries, losses: &mut Losses) {
    let facts = SegmentFacts::checked(
        // The LSNs of a removed segment's records matter nowhere (what they lose does).
        crate::store::log::map::LsnMap::Plain { first_lsn: lsn },
        Place::Sealed,
        0,
        Writers::Excluded,
    );
    let records = bytes.get(SEGMENT_HEADER_LEN..).unwrap_or_default();
    let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, records, Pass::First);
    // Past damage to the next valid frame; every record that held events counted.
    let walked = walk(&mut cursor, |met| {
        match met {
            Met::Stop(_, cursor) => {
                if cursor.resync() >= cursor.end() {
                    return Ok(Go::Finish);
                }
            }
            Met::Record(frame) => {
                if let Ok(body) = frame.decode()
                    && !matches!(
                        body,
                        RecordBody::Void | RecordBody::Delete { .. } | RecordBody::Epoch(_)
                    )
                {
                    losses.dropped += 1;
                    if let Some(id) = session_of(&body) {
                        losses.cut(catalog, id, last_seq(&body));
                    }
                }
            }
        }
        Ok(Go::On)
    });
    // The walk's consumer fails nowhere.
    debug_assert!(walked.is_ok());
}

/// Sessions shorter than the newest readable checkpoint remembers them (and not deleted
/// since): their last events were in damaged records that named no readable session, or past
/// where the log now ends.
pub(super) fn remembered_losses(
    headers: &CheckpointHeaders,
    catalog: &Entries,
    deleted: &BTreeSet<String>,
    losses: &mut Losses,
) {
    let Some(remembered) = headers.remembered() else {
        return;
    };
    let mut remembered: Vec<_> = remembered.sessions.into_iter().collect();
    remembered.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (id, entry) in &remembered {
        let had = entry.state.next_seq;
        let now = catalog.sessions.get(id).map_or(0, |e| e.state.next_seq);
        if now < had && !deleted.contains(id) {
            losses.cut(catalog, id, Some(had - 1));
        }
    }
}

//! The session life-cycle rules, written once: the `session/end-seed` marker, what resume
//! appends, and how a fork is planned (child id, inherited count, child header, marker). The
//! in-memory [`Session`](super::Session)/[`SessionSet`](super::SessionSet) and the durable
//! store both call these and only differ in where the events go.

use super::draft::Draft;
use super::fork::{ForkSpec, child_header, inherited_len};
use super::header::SessionHeader;
use super::state::SessionState;
use crate::event::{Event, LogType, types::names};
use crate::{Error, ForkErrorCode, Result};

/// What resume appended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Seqs of the repair closers (empty when no turn was open).
    pub closers: Vec<u64>,
    /// Seq of the `session/end-seed` marker, unless the log already ended with one.
    pub end_seed: Option<u64>,
}

/// The `session/end-seed {}` marker at `seq`, unless the log (whose last event has type
/// `last_type`) already ends with one. Creation from a seed and resume both end this way.
pub fn end_seed_after(last_type: Option<&str>, seq: u64, time: i64) -> Option<Event> {
    (last_type != Some(names::END_SEED))
        .then(|| Draft::log(&LogType::END_SEED, &b"{}"[..]).into_event(seq, time))
}

/// What resume appends to a session in `state` whose last event has type `last_type`: the
/// repair closers if the last turn is open (at the last event's time), then the end-seed
/// marker unless the log ends with one.
pub fn resume_events(
    state: &SessionState,
    last_type: Option<&str>,
    now: i64,
) -> (Vec<Event>, ResumeReport) {
    let next = state.next_seq();
    let mut events = state
        .repair()
        .closers(next, state.last_time().unwrap_or(now));
    let closers: Vec<u64> = events.iter().map(Event::seq).collect();
    let last = events.last().map(Event::event_type).or(last_type);
    let seq = next + events.len() as u64;
    let marker = end_seed_after(last, seq, now);
    let end_seed = marker.as_ref().map(Event::seq);
    events.extend(marker);
    (events, ResumeReport { closers, end_seed })
}

/// A fork, planned: nothing is written until the caller stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPlan {
    /// The child id.
    pub child_id: String,
    /// How many of the source's events the child inherits.
    pub inherited: u64,
    /// The child's header (`parentSession`, `seedLength`, the source's `cwd`).
    pub header: SessionHeader,
    /// When the fork was planned (the marker's time).
    pub now: i64,
}

impl ForkPlan {
    /// The child's `session/end-seed` marker at seq `inherited`, unless the last inherited
    /// event (of type `last_inherited`) is one: DSH's constructor appends the marker only
    /// when the seed does not end with it (`docs/DESIGN.md` §2.4).
    pub fn marker(&self, last_inherited: Option<&str>) -> Option<Event> {
        end_seed_after(last_inherited, self.inherited, self.now)
    }
}

/// Plans a fork of `source` (`None`: no such session) under DSH v0 rules; `exists` says
/// whether an id is taken. The child id is the one asked for, else a new random (v4) UUID.
///
/// # Errors
/// [`Error::Fork`] with `SESSION_NOT_FOUND`, `SESSION_ALREADY_EXISTS`, `INVALID_BOUNDARY`
/// or `OPEN_TURN`; `InvalidHeader` if the child header is invalid.
pub fn plan_fork(
    source_id: &str,
    source: Option<(&SessionHeader, &SessionState)>,
    spec: &ForkSpec,
    exists: impl Fn(&str) -> bool,
    now: i64,
) -> Result<ForkPlan> {
    let refuse = |code, detail: String| Err(Error::Fork { code, detail });
    let Some((source_header, source_state)) = source else {
        return refuse(
            ForkErrorCode::SessionNotFound,
            format!("no session {source_id:?}"),
        );
    };
    let child_id = match &spec.child_id {
        Some(id) if exists(id) => {
            return refuse(
                ForkErrorCode::SessionAlreadyExists,
                format!("a session {id:?} exists already"),
            );
        }
        Some(id) => id.clone(),
        None => loop {
            let id = random_uuid();
            if !exists(&id) {
                break id;
            }
        },
    };
    let inherited = inherited_len(source_id, source_state, spec.boundary)?;
    let header = child_header(source_header, child_id.clone(), now, inherited, spec);
    header.validate()?;
    Ok(ForkPlan {
        child_id,
        inherited,
        header,
        now,
    })
}

/// A random (version 4) UUID in its text form, as DSH mints session ids: unique across stores
/// and time, so a minted child id is never one that `delete` freed or another store minted
/// too. Also the ids of DSH databases' bookkeeping rows and of a store's ship id. The `uuid`
/// crate draws its 122 random bits from the operating system (`getrandom`, already in the
/// build through `tempfile`).
///
/// ```
/// let id = sessdb::random_uuid();
/// assert_eq!((id.len(), &id[14..15]), (36, "4"));
/// assert_ne!(sessdb::random_uuid(), id);
/// ```
pub fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

//! The resident state of every session: header, derived state, per-event locations. Live
//! writes and replay on open change it through the same functions, so "state after reopen"
//! and "state from full replay" cannot drift apart.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::codec::CorruptionKind;
use crate::codec::checkpoint::arrays::{ArrayRef, HeldArrays};
use crate::codec::checkpoint::indexed::{RunRef, Slot};
use crate::codec::frame::FRAME_HEADER_LEN;
use crate::event::{Event, SurfaceOp};
use crate::model::SessionHeader as Header;
use crate::model::{
    EventChecked, EventSource, SessionHeader, SessionState, Verdict, plan, plan_checked, precheck,
};
use crate::store::catalog::cold::Cold;
use crate::store::catalog::locations::Locations;
use crate::store::log::segments::SegmentList;
use crate::{Limits, Result};

/// One session's resident state.
#[derive(Debug, Clone)]
pub(crate) struct SessionEntry {
    pub(crate) header: SessionHeader,
    pub(crate) state: SessionState,
    pub(crate) locs: Locations,
    /// The parent whose first `n` locations this session shares (a fork by reference).
    pub(crate) parent: Option<(String, u64)>,
    /// LSN of the record that created the session (orders parents before children).
    pub(crate) created_lsn: u64,
    /// How many of `locs` the checkpoint chain holds: a delta writes only the ones after.
    pub(crate) checkpointed_locs: u64,
    /// Changed since the last checkpoint (a delta writes it).
    pub(crate) dirty: bool,
    /// Where the chain holds its entry and locations (layout 3): a delta carries the slot of
    /// a clean session over and names these runs for a changed one. `None` for a session the
    /// chain does not hold in layout 3 (created since, or read from a layout-2 chain).
    pub(crate) persisted: Option<Persisted>,
    /// The slot of the index it was decoded from (a hint for [`Entries::release_clean`],
    /// which checks that the slot there is still the one it persists at).
    pub(crate) decoded_at: Option<usize>,
}

/// A session's entry and location runs in the checkpoint chain (layout 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Persisted {
    pub(crate) slot: Slot,
    /// Runs holding its locations from its inherited count on, in order.
    pub(crate) runs: Vec<RunRef>,
    /// The runs holding its surface and turn marks (layout 5); `None` where its entry holds
    /// them inline (layout 4 and before: the next delta writes them whole).
    pub(crate) arrays: Option<HeldArrays>,
}

impl Persisted {
    /// The runs, when they hold exactly the session's first `locations` (a fork's inherited
    /// ones aside): what a delta names instead of writing them again.
    pub(crate) fn runs_covering(&self, locations: u64) -> Option<&[RunRef]> {
        (self.slot.next_seq == locations).then_some(&self.runs[..])
    }

    /// The arrays the chain holds in runs that are still the first values of `state`'s
    /// surface and turn marks: what a delta names, writing only the values after them. The
    /// surface's while no replace changed it (a replace bumps its generation; appends only
    /// push), the turn marks' always (they are only ever pushed); each only when not longer
    /// than now. An array the entry holds inline is written again (it is short).
    pub(crate) fn array_prefixes(&self, state: &SessionState) -> ArrayPrefixes<'_> {
        let Some(p) = &self.arrays else {
            return ArrayPrefixes::default();
        };
        let (surface, turns) = (&p.arrays.surface, &p.arrays.turns);
        ArrayPrefixes {
            surface: (surface.in_runs()
                && p.replace_generation == state.surface.replace_generation()
                && surface.len <= state.surface.seqs().len() as u64)
                .then_some(surface),
            turns: (turns.in_runs() && turns.len <= state.turns.encoded().len() as u64)
                .then_some(turns),
        }
    }
}

/// The arrays of a session a delta names rather than writes ([`Persisted::array_prefixes`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ArrayPrefixes<'a> {
    pub(crate) surface: Option<&'a ArrayRef>,
    pub(crate) turns: Option<&'a ArrayRef>,
}

impl SessionEntry {
    /// What deleting the session would leave dead, by segment (first LSN): the frames of
    /// the records holding its own events (not those a fork inherits from its parent). An
    /// estimate: a live fork may still read some of them, which the next read of the log
    /// finds.
    pub(crate) fn own_bytes(&self, list: &SegmentList) -> BTreeMap<u64, u64> {
        let mut out: BTreeMap<u64, u64> = BTreeMap::new();
        let skip = self.parent.as_ref().map_or(0, |(_, n)| *n);
        let Ok(locs) = self.locs.iter() else {
            return out;
        };
        // An estimate: without the older segments when they cannot be judged.
        let segments = list.full().unwrap_or_else(|_| list.judged());
        let mut last_record = None;
        for loc in locs.skip(crate::width::index(skip)) {
            let at = segments.partition_point(|s| s.first_lsn <= loc.lsn);
            let Some(seg) = at.checked_sub(1).and_then(|i| segments.get(i)) else {
                continue;
            };
            if last_record == Some(loc.lsn) {
                continue;
            }
            last_record = Some(loc.lsn);
            // A record holds one session's events: its whole frame goes with them.
            let bytes = crate::store::log::record_at::frame_len_at(list, loc.lsn)
                .unwrap_or(u64::from(loc.len) + FRAME_HEADER_LEN as u64);
            *out.entry(seg.first_lsn).or_default() += bytes;
        }
        out
    }
}

/// Every live session, and what changed since the last checkpoint: the sessions decoded
/// (`sessions`) and those still only in the checkpoint's index (`cold`), each live session in
/// exactly one of them.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    /// Decoded, by id, hashed: every append looks its session up twice (plan, then commit);
    /// listings sort. A session of `cold` comes here when first read or written ([`Entries::load`]).
    pub(crate) sessions: HashMap<String, SessionEntry, foldhash::fast::RandomState>,
    pub(crate) deleted: BTreeSet<String>,
    /// The checkpoint's index, over the sessions not decoded yet.
    cold: Option<Cold>,
    /// How many sessions may be decoded before a read lets the clean ones go
    /// ([`Entries::release_clean`]); 0 until the first release or adoption sets it.
    release_at: usize,
}

/// Earlier events of a session for the acceptance function: stored ones through their
/// locations, plus the events of the batch being planned.
pub(crate) struct StoredEvents<'a> {
    pub(crate) segments: &'a SegmentList,
    pub(crate) locs: Option<&'a Locations>,
    pub(crate) batch: &'a [Event],
}

impl EventSource for StoredEvents<'_> {
    fn event(&self, seq: u64) -> Result<Option<Cow<'_, Event>>> {
        let stored = self.locs.map_or(0, Locations::len);
        if seq >= stored {
            let i = crate::width::index(seq - stored);
            return Ok(self.batch.get(i).map(Cow::Borrowed));
        }
        match self.locs.map(|l| l.get(seq)).transpose()?.flatten() {
            Some(loc) => self
                .segments
                .read_event(loc, seq)
                .map(|e| Some(Cow::Owned(e))),
            None => Ok(None),
        }
    }
}

/// The events of one append, and what their own rules decided before the write lock.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) events: Vec<Event>,
    pub(crate) checked: Prechecked,
}

/// What the rules that read each event alone (`model::accept::precheck`) decided of a
/// batch's events before the write lock: appenders run them side by side, and the plan
/// under the lock runs only the rules that read the session.
#[derive(Debug)]
pub(crate) enum Prechecked {
    /// Not run (or one event broke one): every rule runs under the lock.
    No,
    /// The one event's.
    One(EventChecked),
    /// Each event's, in order.
    Each(Vec<EventChecked>),
}

impl Prechecked {
    /// The events' own rules, run now: `No` unless every event passed them.
    pub(crate) fn of(events: &[Event], limits: &Limits) -> Prechecked {
        match events {
            [] => Prechecked::No,
            [one] => precheck(one, limits).map_or(Prechecked::No, Prechecked::One),
            many => {
                // Sized once (a collect into `Option<Vec>` grows it step by step).
                let mut each = Vec::with_capacity(many.len());
                for event in many {
                    match precheck(event, limits) {
                        Some(c) => each.push(c),
                        None => return Prechecked::No,
                    }
                }
                Prechecked::Each(each)
            }
        }
    }

    /// One entry per event of a batch of `len`, in order (`None`: not checked).
    fn per_event(self, len: usize) -> impl Iterator<Item = Option<EventChecked>> {
        let each = match self {
            Prechecked::No => Vec::new(),
            Prechecked::One(c) => vec![c],
            Prechecked::Each(v) => v,
        };
        debug_assert!(
            each.is_empty() || each.len() == len,
            "one check per event of the batch"
        );
        each.into_iter()
            .map(Some)
            .chain(std::iter::repeat_with(|| None))
            .take(len)
    }
}

impl Batch {
    /// A batch of events checked by nothing yet.
    pub(crate) fn unchecked(events: Vec<Event>) -> Self {
        Batch {
            events,
            checked: Prechecked::No,
        }
    }
}

impl From<Vec<Event>> for Batch {
    fn from(events: Vec<Event>) -> Self {
        Batch::unchecked(events)
    }
}

/// A planned batch, not yet committed.
#[derive(Debug)]
pub(crate) enum Planned {
    /// One event (the hot path): its surface change, applied to the live state at commit, so
    /// nothing is copied.
    One(Verdict),
    /// Several events, none a replace: each one's verdict, applied in order at commit, so
    /// nothing is copied (the state holds the whole surface: copying it for every batch made
    /// a batch cost the session's length).
    Appends(Vec<Verdict>),
    /// Several events with a replace among them: the state after all of them, planned on a
    /// copy (boxed: every plan is moved a few times on its way to the commit, and inline the
    /// state made each one-event plan 208 bytes instead of 128).
    Many(Box<SessionState>),
}

impl Planned {
    /// Commits the batch `events` (the one that was planned) to `state`.
    pub(crate) fn commit(self, state: &mut SessionState, events: &[Event]) {
        match self {
            Planned::One(verdict) => {
                if let Some(event) = events.first() {
                    state.apply(event, &verdict);
                }
            }
            Planned::Appends(verdicts) => {
                for (event, verdict) in events.iter().zip(&verdicts) {
                    state.apply(event, verdict);
                }
            }
            Planned::Many(after) => *state = *after,
        }
    }
}

/// Plans every event of a batch in order against `state`. Nothing is changed: a refused
/// event refuses the batch.
pub(crate) fn plan_batch(
    id: &str,
    state: &SessionState,
    source: &StoredEvents<'_>,
    events: &[Event],
    checked: Prechecked,
    limits: &Limits,
) -> Result<Planned> {
    let plan = |state: &SessionState, event: &Event, checked: Option<EventChecked>| match checked {
        Some(c) => plan_checked(id, state, source, event, c, limits),
        None => plan(id, state, source, event, limits),
    };
    if let [event] = events {
        let checked = match checked {
            Prechecked::One(c) => Some(c),
            _ => None,
        };
        return plan(state, event, checked).map(Planned::One);
    }
    // Without a replace, the rules read of the state only the next seq (the surface only
    // for a replace's endpoints), so each event is checked against a state that has the
    // seq the batch's earlier events leave and nothing else.
    if !events
        .iter()
        .any(|e| matches!(e.surface_op(), Some(SurfaceOp::Replace { .. })))
    {
        let mut next = SessionState::starting_at(state.next_seq());
        let mut step = |event: &Event, checked: Option<EventChecked>| {
            let verdict = plan(&next, event, checked);
            next.next_seq += 1;
            verdict
        };
        let verdicts = match checked {
            // Each event's checks become its verdict in the vector that holds them (the
            // same layout: collected in place, nothing allocated).
            Prechecked::Each(checks) if checks.len() == events.len() => checks
                .into_iter()
                .zip(events)
                .map(|(c, event)| step(event, Some(c)))
                .collect::<Result<Vec<_>>>()?,
            _ => {
                let mut verdicts = Vec::with_capacity(events.len());
                for event in events {
                    verdicts.push(step(event, None)?);
                }
                verdicts
            }
        };
        return Ok(Planned::Appends(verdicts));
    }
    let mut checks = checked.per_event(events.len());
    let mut next = state.clone();
    for event in events {
        let change = plan(&next, event, checks.next().flatten())?;
        next.apply(event, &change);
    }
    Ok(Planned::Many(Box::new(next)))
}

impl Entries {
    /// Sessions read from a checkpoint's index, decoded when first used.
    pub(crate) fn with_cold(cold: Cold) -> Self {
        Self {
            cold: Some(cold),
            ..Self::default()
        }
    }

    /// The sessions not decoded yet, if any.
    pub(crate) fn cold(&self) -> Option<&Cold> {
        self.cold.as_ref()
    }

    /// Live sessions.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len() + self.cold.as_ref().map_or(0, Cold::len)
    }

    /// Events over all live sessions (inherited events counted in each fork).
    pub(crate) fn events(&self) -> u64 {
        let hot: u64 = self.sessions.values().map(|e| e.state.next_seq()).sum();
        let cold: u64 = self
            .cold
            .iter()
            .flat_map(|c| c.untaken().map(|i| c.slot(i).map_or(0, |s| s.next_seq)))
            .sum();
        hot + cold
    }

    /// Whether session `id` is live (decoded or not).
    ///
    /// # Errors
    /// `Corruption` when an entry of the index it would be in is damaged.
    pub(crate) fn exists(&self, id: &str) -> Result<bool> {
        if self.sessions.contains_key(id) {
            return Ok(true);
        }
        match &self.cold {
            Some(cold) => Ok(cold.find(id)?.is_some()),
            None => Ok(false),
        }
    }

    /// Decodes session `id` from the index if it is there (a fork's parent first); `false`
    /// when there is no such session.
    ///
    /// # Errors
    /// `Corruption` when its entry (or a parent's) is damaged.
    pub(crate) fn load(&mut self, id: &str) -> Result<bool> {
        if self.sessions.contains_key(id) {
            return Ok(true);
        }
        let Some(i) = self
            .cold
            .as_ref()
            .map(|c| c.find(id))
            .transpose()?
            .flatten()
        else {
            return Ok(false);
        };
        self.load_slot(i)?;
        Ok(true)
    }

    /// Takes the index a checkpoint just wrote as the sessions not decoded: a clean session
    /// (its entry in that index as it is) is let go of — memory follows use — and every
    /// session still decoded, or deleted since the checkpoint was encoded, is taken in it.
    ///
    /// # Errors
    /// `Corruption` when an entry of the new index is damaged.
    pub(crate) fn adopt(&mut self, mut cold: Cold) -> Result<()> {
        self.sessions
            .retain(|_, e| e.dirty || e.persisted.is_none());
        self.release_at = 2 * self.sessions.len();
        for (id, e) in &mut self.sessions {
            let found = cold.find(id)?;
            if let Some(i) = found {
                cold.set_taken(i, true);
            }
            // Decoded from the previous index after this checkpoint was encoded (and written
            // to since): where it persists is the new index's entry, which a full checkpoint
            // copied it into; a delta names no file outside its chain.
            if e.persisted
                .as_ref()
                .is_some_and(|p| !cold.holds(p.slot.generation))
            {
                e.persisted = match found {
                    Some(i) => {
                        let (slot, runs, arrays) = cold.runs_of(i)?;
                        (slot.next_seq == e.checkpointed_locs).then_some(Persisted {
                            slot,
                            runs,
                            arrays,
                        })
                    }
                    None => None,
                };
            }
        }
        for id in &self.deleted {
            if let Some(i) = cold.find(id)? {
                cold.set_taken(i, true);
            }
        }
        self.cold = Some(cold);
        Ok(())
    }

    /// Whether the sessions decoded have reached what a read may keep before it lets the
    /// clean ones go: `resident` at least, and twice what the last release or adoption kept
    /// (so that a store whose decoded sessions are mostly changed ones does not walk them on
    /// every read).
    pub(crate) fn over(&self, resident: usize) -> bool {
        self.cold.is_some() && self.decoded_past(resident)
    }

    /// Whether the sessions decoded have reached `resident`, and twice what the last release
    /// or adoption kept: where a reader that follows a writer looks for its newer checkpoint.
    pub(crate) fn decoded_past(&self, resident: usize) -> bool {
        self.sessions.len() >= resident.max(self.release_at)
    }

    /// Lets every clean decoded session go back to the index it was decoded from: one not
    /// changed since (`dirty` unset) whose slot in the index is the one it persists at, so
    /// that the index's entry is the session as it is. A read-only store (which writes no
    /// checkpoint, so never adopts one) and a writer that reads more than it writes keep a
    /// bounded number of sessions decoded: memory follows use between checkpoints too.
    /// Returns how many went. Out of line: inlined into the read path, a session's first read
    /// in a fresh process measured ~1 µs slower (PERFORMANCE, 2026-12-05, late night).
    #[cold]
    #[inline(never)]
    pub(crate) fn release_clean(&mut self) -> usize {
        let Self { sessions, cold, .. } = self;
        let Some(cold) = cold.as_mut() else {
            return 0;
        };
        let before = sessions.len();
        sessions.retain(|id, e| {
            let Some(p) = e.persisted.as_ref().filter(|_| !e.dirty) else {
                return true;
            };
            // Where it was decoded from, when that slot is still its own (the same entry of
            // the same file); else found by id. A damaged or different slot keeps the session
            // decoded: it is what it is.
            let own = |i: usize| !cold.is_untaken(i) && cold.slot(i).ok().as_ref() == Some(&p.slot);
            let Some(i) = e
                .decoded_at
                .filter(|&i| own(i))
                .or_else(|| cold.find_taken(id).ok().flatten().filter(|&i| own(i)))
            else {
                return true;
            };
            cold.set_taken(i, false);
            debug_assert!(cold.is_untaken(i), "{id}: released to its slot");
            false
        });
        self.release_at = 2 * self.sessions.len();
        before - self.sessions.len()
    }

    /// Decodes session `id` and the forks in the index that share its locations (what its
    /// deletion changes); `false` when there is no such session.
    ///
    /// # Errors
    /// `Corruption` when one of their entries is damaged.
    pub(crate) fn load_with_forks(&mut self, id: &str) -> Result<bool> {
        if !self.load(id)? {
            return Ok(false);
        }
        let forks = match self.cold.as_mut() {
            Some(cold) => cold.forks_of(id)?,
            None => Vec::new(),
        };
        for i in forks {
            self.load_slot(i)?;
        }
        Ok(true)
    }

    /// Decodes every session of the index (what walks every session's locations: a full
    /// checkpoint, `verify`, salvage); the index is let go of.
    ///
    /// # Errors
    /// `Corruption` for a damaged entry.
    pub(crate) fn load_all(&mut self) -> Result<()> {
        let untaken: Vec<usize> = self.cold.iter().flat_map(Cold::untaken).collect();
        self.sessions.reserve(untaken.len());
        for i in untaken {
            // A fork's parent may have been decoded with it already.
            if self.cold.as_ref().is_some_and(|c| c.is_untaken(i)) {
                self.load_slot(i)?;
            }
        }
        self.cold = None;
        Ok(())
    }

    /// Decodes slot `i` into `sessions`; on an error the slot stays as it was.
    fn load_slot(&mut self, i: usize) -> Result<()> {
        // The slot and its ancestors not decoded yet, child first, then decoded oldest first,
        // so that each one's parent is there when it is: decoding a parent from inside its
        // child's decoding went as deep as the fork chain, and a chain of 6,000 forks
        // overflowed the stack at the open (`tests/tests/store_forks.rs`).
        let mut chain: Vec<(usize, Slot, crate::codec::checkpoint::indexed::Entry)> = Vec::new();
        let mut next = Some(i);
        let mut result = Ok(());
        while let Some(at) = next.take() {
            let Some(cold) = self.cold.as_mut() else {
                break;
            };
            let (slot, entry) = match cold.entry(at) {
                Ok(found) => found,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            // Taken first: a damaged chain of parents that loops ends at "missing" (the
            // decoding of its oldest member reports it) instead of going round for ever.
            cold.set_taken(at, true);
            if let Some((parent, _)) = &entry.parent
                && !self.sessions.contains_key(parent.as_str())
            {
                match cold.find(parent) {
                    Ok(found) => next = found,
                    Err(e) => result = Err(e),
                }
            }
            chain.push((at, slot, entry));
        }
        while let Some((at, slot, entry)) = chain.pop() {
            if result.is_ok() {
                result = self.decode_into_place(at, slot, entry);
            }
            // Not decoded (it, or an ancestor, failed): left in the index, to be read again.
            if result.is_err()
                && let Some(cold) = self.cold.as_mut()
            {
                cold.set_taken(at, false);
            }
        }
        result
    }

    fn decode_into_place(
        &mut self,
        at: usize,
        slot: Slot,
        entry: crate::codec::checkpoint::indexed::Entry,
    ) -> Result<()> {
        let damaged = |why: &'static str| {
            crate::Error::corruption(
                &crate::codec::checkpoint::checkpoint_path(slot.generation),
                slot.entry_at,
                if why.is_empty() {
                    CorruptionKind::CheckpointEntry
                } else {
                    CorruptionKind::Inconsistent(why)
                },
            )
        };
        let header = Header::from_json(&entry.header_json).map_err(|_| damaged(""))?;
        let inherited = entry.parent.as_ref().map_or(0, |(_, n)| *n);
        if entry.loc_base != inherited || header.id != entry.id {
            return Err(damaged(""));
        }
        let mut locs = match &entry.parent {
            Some((parent, n)) => {
                if !self.load(parent)? {
                    return Err(damaged("a fork's parent is missing"));
                }
                self.sessions
                    .get_mut(parent)
                    .ok_or_else(|| damaged("a fork's parent is missing"))?
                    .locs
                    .share_prefix(*n)?
            }
            None => Locations::default(),
        };
        if let Some(cold) = &self.cold {
            for run in &entry.runs {
                locs.append_run(cold.run(run)?)?;
            }
        }
        if locs.len() != entry.state.next_seq() {
            return Err(damaged("a session's locations do not match its length"));
        }
        let checkpointed_locs = locs.len();
        let replace_generation = entry.state.surface.replace_generation();
        self.sessions.insert(
            entry.id,
            SessionEntry {
                header,
                state: entry.state,
                locs,
                parent: entry.parent,
                created_lsn: entry.created_lsn,
                checkpointed_locs,
                dirty: false,
                persisted: Some(Persisted {
                    slot,
                    runs: entry.runs,
                    arrays: entry.arrays.map(|arrays| HeldArrays {
                        arrays,
                        replace_generation,
                    }),
                }),
                decoded_at: Some(at),
            },
        );
        Ok(())
    }

    /// Replay grew vectors by doubling; the resident index keeps only what it holds.
    pub(crate) fn shrink_to_fit(&mut self) {
        for e in self.sessions.values_mut() {
            e.locs.shrink_to_fit();
            e.state.surface.shrink_to_fit();
        }
    }

    /// After a checkpoint encoded every change (`written`: the sessions whose entries it
    /// holds, and where): nothing is new for the next delta.
    pub(crate) fn mark_checkpointed(&mut self, written: Vec<(String, Persisted)>) {
        for (id, persisted) in written {
            if let Some(e) = self.sessions.get_mut(&id) {
                debug_assert_eq!(persisted.slot.next_seq, e.locs.len(), "{id}: persisted");
                e.persisted = Some(persisted);
            }
        }
        for e in self.sessions.values_mut() {
            e.checkpointed_locs = e.locs.len();
            e.dirty = false;
        }
        self.deleted.clear();
    }

    /// The session `id`, or `SessionNotFound`.
    pub(crate) fn get(&self, id: &str) -> Result<&SessionEntry> {
        self.sessions
            .get(id)
            .ok_or_else(|| crate::Error::SessionNotFound { id: id.to_owned() })
    }

    /// Adds a session a record created (or forked) at `created_lsn`: changed since the last
    /// checkpoint, none of its locations in the chain yet. The one place a new entry is made
    /// by a write or a replay.
    pub(crate) fn insert_created(
        &mut self,
        header: SessionHeader,
        state: SessionState,
        locs: Locations,
        parent: Option<(String, u64)>,
        created_lsn: u64,
    ) {
        let id = header.id.clone();
        self.sessions.insert(
            id.clone(),
            SessionEntry {
                header,
                state,
                locs,
                parent,
                created_lsn,
                checkpointed_locs: 0,
                dirty: true,
                persisted: None,
                decoded_at: None,
            },
        );
        self.touch(&id);
    }

    pub(crate) fn touch(&mut self, id: &str) {
        if let Some(e) = self.sessions.get_mut(id) {
            e.dirty = true;
        }
        if !self.deleted.is_empty() {
            self.deleted.remove(id);
        }
    }

    /// Removes a session; forks that shared its locations get their own copies (16 bytes per
    /// inherited event; no event bytes are copied).
    ///
    /// # Errors
    /// `Corruption` when its entry or a fork's in the index is damaged.
    pub(crate) fn delete(&mut self, id: &str) -> Result<Option<SessionEntry>> {
        if !self.load_with_forks(id)? {
            return Ok(None);
        }
        let Some(gone) = self.sessions.remove(id) else {
            return Ok(None);
        };
        let children: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, e)| e.parent.as_ref().is_some_and(|(p, _)| p == id))
            .map(|(k, _)| k.clone())
            .collect();
        for child in children {
            if let Some(e) = self.sessions.get_mut(&child) {
                e.locs.materialize();
                e.parent = None;
                // Its runs held only what it did not inherit: its entry is written anew.
                e.persisted = None;
            }
            self.touch(&child);
        }
        self.deleted.insert(id.to_owned());
        Ok(Some(gone))
    }

    /// The state of `parent`'s first `inherited` events, and the locations a child shares.
    pub(crate) fn fork_base(
        &mut self,
        segments: &SegmentList,
        child_id: &str,
        parent: &str,
        inherited: u64,
    ) -> Result<Option<(SessionState, Locations)>> {
        let Some(p) = self.sessions.get_mut(parent) else {
            return Ok(None);
        };
        let locs = p.locs.share_prefix(inherited)?;
        if inherited == p.state.next_seq() {
            return Ok(Some((p.state.clone(), locs)));
        }
        // The child's state is a replay of the inherited prefix through the acceptance
        // function, which also validates it as DSH validates a fork seed — by the bounds of
        // stored events (`Limits::stored`): a wider writer may have taken them.
        let limits = &Limits::stored();
        let mut state = SessionState::new();
        let source = StoredEvents {
            segments,
            locs: Some(&locs),
            batch: &[],
        };
        for seq in 0..inherited {
            let Some(loc) = locs.get(seq)? else {
                return Ok(None);
            };
            let event = segments.read_event(loc, seq)?;
            let change = plan(child_id, &state, &source, &event, limits)?;
            state.apply(&event, &change);
        }
        Ok(Some((state, locs)))
    }
}

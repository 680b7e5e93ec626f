//! Salvage (`sessdb repair --salvage`): keep everything that is intact.
//!
//! A plan is made first, reading only: every segment is scanned from its start; a damaged
//! record is skipped by resynchronising at the next valid frame; a session that had events in
//! a damaged record (or whose next record no longer follows) is cut at its last intact event,
//! and its later records are dropped; every other session is kept whole. `--dry-run` prints
//! that plan.
//!
//! Applying it never truncates or rewrites a file in place (a reader may have it mapped,
//! `storage/mmap.rs`): every checkpoint is removed first (they may cover what is dropped),
//! then each segment that changes is written whole as a replacement file and renamed over the
//! old one. Damaged and dropped records become void records of the same length, so every
//! kept record stays at its LSN and the kept sessions' locations stay valid. Each step leaves
//! a state from which a new salvage converges.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::catalog::Catalog;
use super::checkpoint;
use super::options::StoreOptions;
use super::recovery::{TailAction, TailFacts, decide};
use super::scan::replay;
use super::segments::{Segment, SegmentList};
use crate::codec::checkpoint::{CHECKPOINTS_DIR, checkpoint_path};
use crate::codec::cursor::Cursor;
use crate::codec::frame::{FRAME_HEADER_LEN, FrameCheck, check_frame, encode_voids};
use crate::codec::record::{RecordBody, decode};
use crate::codec::segment::{
    SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, parse_segment_name, segment_path,
};
use crate::codec::{CorruptionKind, LOCK_FILE};
use crate::storage::{OpenMode, Replacement, Storage, StorageFile};
use crate::{Error, Result};

/// What salvage found and what it does (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SalvageReport {
    /// Every damaged place, in log order.
    pub damage: Vec<Damage>,
    /// Every session that loses events, by id.
    pub sessions: Vec<SessionLoss>,
    /// Intact records dropped because their session was cut before them.
    pub records_dropped: u64,
    /// Checkpoint files removed (they may cover dropped records).
    pub checkpoints_removed: u64,
}

impl SalvageReport {
    /// Whether there is nothing to salvage.
    pub fn is_empty(&self) -> bool {
        self.damage.is_empty()
    }
}

/// One damaged place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The segment file.
    pub segment: String,
    /// Byte offset in that file.
    pub offset: u64,
    /// Bytes the damage spans (to the next valid record).
    pub bytes: u64,
    /// What was wrong.
    pub kind: CorruptionKind,
    /// What salvage does about it.
    pub repair: DamageRepair,
    /// The session whose record was damaged, when the damaged bytes still name one that
    /// exists; `None` when it cannot be read (a session may then have lost its last events
    /// without a later record to show it, unless a checkpoint remembers its length).
    pub session: Option<String>,
}

/// What salvage does with one damaged place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageRepair {
    /// The bytes become void records.
    Voided,
    /// The segment header is written anew (the records after it are scanned as usual).
    HeaderRewritten,
    /// The segment does not continue the log: it and every later segment are removed.
    SegmentRemoved,
    /// A torn tail beyond every durable mark: cut.
    Cut,
}

/// A session that loses events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLoss {
    /// The session id.
    pub session: String,
    /// Events kept: seqs `0..kept` (0 when the session is lost whole).
    pub kept: u64,
    /// The last seq the log shows it had, when a readable record shows it.
    pub lost_through: Option<u64>,
}

/// What to do to one segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Edit {
    Remove,
    Rewrite {
        header: bool,
        /// `(offset, len)` ranges that become void records.
        voids: Vec<(usize, usize)>,
        /// Keep only the bytes before this offset.
        cut_at: Option<usize>,
    },
}

/// A salvage plan: the report and the file edits that carry it out.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) report: SalvageReport,
    edits: Vec<(u64, Edit)>,
}

/// The furthest log position any checkpoint header vouches for.
fn durable_mark(storage: &dyn Storage) -> Result<u64> {
    Ok(checkpoint::list(storage)?
        .into_iter()
        .filter_map(|g| checkpoint::open_header(storage, g).ok())
        .map(|opened| opened.header.meta.covered_lsn)
        .max()
        .unwrap_or(0))
}

/// Per-session bookkeeping while planning.
#[derive(Default)]
struct Losses {
    by_id: BTreeMap<String, SessionLoss>,
    /// Sessions cut: their later records are dropped.
    cut: BTreeSet<String>,
    dropped: u64,
}

impl Losses {
    fn cut(&mut self, catalog: &Catalog, id: &str, last_seq: Option<u64>) {
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
    fn drops(&mut self, catalog: &Catalog, body: &RecordBody) -> bool {
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
fn session_of(body: &RecordBody) -> Option<&str> {
    match body {
        RecordBody::Create { session, .. }
        | RecordBody::Append { session, .. }
        | RecordBody::Delete { session } => Some(session),
        RecordBody::Fork { child, .. } => Some(child),
        RecordBody::Void => None,
    }
}

fn last_seq(body: &RecordBody) -> Option<u64> {
    match body {
        RecordBody::Create { events, .. }
        | RecordBody::Append { events, .. }
        | RecordBody::Fork { events, .. } => events.last().map(|e| e.event.seq()),
        _ => None,
    }
}

/// The session id a damaged frame's payload seems to name, if it names a known session
/// (every record kind but void starts with a `str16` id).
fn attribute(catalog: &Catalog, frame: &[u8]) -> Option<String> {
    let payload = frame.get(FRAME_HEADER_LEN..)?;
    let id = Cursor::new(payload).str16("session id").ok()?;
    catalog.sessions.contains_key(&id).then_some(id)
}

/// A file opened for reading and all of its bytes.
fn read_whole(storage: &dyn Storage, path: &str) -> Result<(Box<dyn StorageFile>, Vec<u8>)> {
    let file = storage
        .open(path, OpenMode::Read)
        .map_err(|e| Error::io("open", path, e))?;
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    file.read_at(&mut bytes, 0)
        .map_err(|e| Error::io("read", path, e))?;
    Ok((file, bytes))
}

/// Scans the whole log and plans the salvage; changes nothing.
pub(super) fn plan(storage: &dyn Storage, options: &StoreOptions) -> Result<Plan> {
    let durable = durable_mark(storage)?;
    let names = storage
        .list(SEGMENTS_DIR)
        .map_err(|e| Error::io("list", SEGMENTS_DIR, e))?;
    let mut lsns: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    lsns.sort_unstable();

    let mut out = Plan::default();
    let list = SegmentList::default();
    let mut catalog = Catalog::default();
    let mut losses = Losses::default();
    let mut touched = BTreeSet::new();
    // Sessions deleted by a record salvage keeps: absent afterwards for a reason.
    let mut deleted = BTreeSet::new();
    let mut expected: Option<u64> = None;
    let mut removing = false;
    let count = lsns.len();
    for (i, lsn) in lsns.into_iter().enumerate() {
        let last = i + 1 == count;
        let path = segment_path(lsn);
        let (file, bytes) = read_whole(storage, &path)?;
        let damage = |offset: usize, bytes: usize, kind, repair| Damage {
            segment: path.clone(),
            offset: offset as u64,
            bytes: bytes as u64,
            kind,
            repair,
            session: None,
        };
        if removing || expected.is_some_and(|e| e != lsn) || bytes.len() < SEGMENT_HEADER_LEN {
            if !removing {
                let kind = match expected {
                    Some(e) if e != lsn => CorruptionKind::SegmentGap { expected: e },
                    _ => CorruptionKind::SegmentHeader(
                        crate::codec::segment::SegmentHeaderError::Short,
                    ),
                };
                out.report
                    .damage
                    .push(damage(0, bytes.len(), kind, DamageRepair::SegmentRemoved));
            }
            removing = true;
            out.edits.push((lsn, Edit::Remove));
            continue;
        }
        let mut header = false;
        match SegmentHeader::decode(&bytes) {
            // Another sessdb version's store is not damage: salvage refuses it whole.
            Err(crate::codec::segment::SegmentHeaderError::UnsupportedVersion(found)) => {
                return Err(Error::UnsupportedStore {
                    file: path,
                    found,
                    expected: crate::codec::segment::SEGMENT_FORMAT_VERSION,
                });
            }
            Ok(h) if h.first_lsn == lsn => {}
            Ok(_) => {
                header = true;
                out.report.damage.push(damage(
                    0,
                    SEGMENT_HEADER_LEN,
                    CorruptionKind::Inconsistent("segment name and header disagree"),
                    DamageRepair::HeaderRewritten,
                ));
            }
            Err(e) => {
                let rest_zero = bytes
                    .get(SEGMENT_HEADER_LEN..)
                    .is_some_and(|r| r.iter().all(|&b| b == 0));
                if last && rest_zero {
                    // An interrupted segment creation: open removes it.
                    continue;
                }
                header = true;
                out.report.damage.push(damage(
                    0,
                    SEGMENT_HEADER_LEN,
                    CorruptionKind::SegmentHeader(e),
                    DamageRepair::HeaderRewritten,
                ));
            }
        }
        list.push(Arc::new(Segment::new(lsn, Arc::from(file), false)));

        let mut voids = Vec::new();
        let mut cut_at = None;
        let mut pos = SEGMENT_HEADER_LEN;
        loop {
            let rest = bytes.get(pos..).unwrap_or_default();
            let frame_lsn = lsn + (pos - SEGMENT_HEADER_LEN) as u64;
            let check = check_frame(rest, options.record_bytes_max);
            let (kind, frame_len) = match check {
                FrameCheck::End => break,
                FrameCheck::Valid {
                    kind, frame_len, ..
                } => (kind, frame_len),
                // Preallocated space of the active segment: its end.
                _ if last && frame_lsn >= durable && rest.iter().all(|&b| b == 0) => break,
                ref damaged => {
                    let from = match damaged {
                        FrameCheck::BadLength => pos + FRAME_HEADER_LEN,
                        FrameCheck::BadChecksum { frame_len }
                        | FrameCheck::UnknownKind { frame_len, .. } => pos + frame_len,
                        _ => bytes.len(),
                    };
                    let zeros_after = bytes
                        .get(from..)
                        .unwrap_or_default()
                        .iter()
                        .all(|&b| b == 0);
                    let facts =
                        TailFacts::from_check(damaged, !last, frame_lsn < durable, zeros_after);
                    let kind = match decide(facts) {
                        TailAction::Corrupt(kind) => kind,
                        _ if last => {
                            out.report.damage.push(damage(
                                pos,
                                bytes.len() - pos,
                                CorruptionKind::Incomplete,
                                DamageRepair::Cut,
                            ));
                            cut_at = Some(pos);
                            break;
                        }
                        _ => CorruptionKind::Incomplete,
                    };
                    // Resynchronise at the next valid frame (or the end of the segment).
                    let next = (pos + FRAME_HEADER_LEN..bytes.len())
                        .find(|&q| {
                            matches!(
                                check_frame(
                                    bytes.get(q..).unwrap_or_default(),
                                    options.record_bytes_max
                                ),
                                FrameCheck::Valid { .. }
                            )
                        })
                        .unwrap_or(bytes.len());
                    if next - pos < FRAME_HEADER_LEN {
                        // Too short for a void record: only the end of a segment can be.
                        if !last {
                            return Err(Error::corruption(&path, pos as u64, kind));
                        }
                        out.report
                            .damage
                            .push(damage(pos, next - pos, kind, DamageRepair::Cut));
                        cut_at = Some(pos);
                        break;
                    }
                    let session = attribute(&catalog, rest);
                    if let Some(id) = &session {
                        losses.cut(&catalog, id, None);
                    }
                    out.report.damage.push(Damage {
                        session,
                        ..damage(pos, next - pos, kind, DamageRepair::Voided)
                    });
                    voids.push((pos, next - pos));
                    pos = next;
                    continue;
                }
            };
            let payload = rest.get(FRAME_HEADER_LEN..frame_len).unwrap_or_default();
            match decode(kind, payload) {
                Ok(body) if losses.drops(&catalog, &body) => {
                    losses.dropped += 1;
                    voids.push((pos, frame_len));
                }
                Ok(body) => {
                    let id = session_of(&body).map(str::to_owned);
                    let last_seq = last_seq(&body);
                    let appends = matches!(body, RecordBody::Append { .. });
                    match replay(&list, options, &mut catalog, &mut touched, body, frame_lsn) {
                        Err(kind) => {
                            if let Some(id) = &id {
                                losses.cut(&catalog, id, last_seq);
                            }
                            // After damage, a record that no longer follows (its session's
                            // earlier events were in a damaged record whose id was unreadable)
                            // is a consequence, not more damage.
                            if out.report.damage.is_empty() {
                                out.report.damage.push(Damage {
                                    session: id
                                        .clone()
                                        .filter(|i| catalog.sessions.contains_key(i)),
                                    ..damage(pos, frame_len, kind, DamageRepair::Voided)
                                });
                            } else {
                                losses.dropped += 1;
                            }
                            voids.push((pos, frame_len));
                        }
                        // A created, forked or deleted id starts afresh: no longer cut.
                        Ok(()) if !appends => {
                            if let Some(id) = id {
                                if !catalog.sessions.contains_key(&id) {
                                    deleted.insert(id.clone());
                                }
                                losses.cut.remove(&id);
                            }
                        }
                        Ok(()) => {}
                    }
                }
                Err(what) => {
                    let session = attribute(&catalog, rest);
                    if let Some(id) = &session {
                        losses.cut(&catalog, id, None);
                    }
                    out.report.damage.push(Damage {
                        session,
                        ..damage(
                            pos,
                            frame_len,
                            CorruptionKind::BadPayload(what),
                            DamageRepair::Voided,
                        )
                    });
                    voids.push((pos, frame_len));
                }
            }
            pos += frame_len;
        }
        touched.clear();
        let end = cut_at.unwrap_or(bytes.len());
        expected = Some(lsn + (end - SEGMENT_HEADER_LEN) as u64);
        if header || !voids.is_empty() || cut_at.is_some() {
            out.edits.push((
                lsn,
                Edit::Rewrite {
                    header,
                    voids,
                    cut_at,
                },
            ));
        }
    }
    if !out.report.is_empty() {
        remembered_losses(storage, &catalog, &deleted, &mut losses);
    }
    out.report.sessions = losses.by_id.into_values().collect();
    out.report.records_dropped = losses.dropped;
    Ok(out)
}

/// Sessions shorter than the newest readable checkpoint remembers them (and not deleted
/// since): their last events were in damaged records that named no readable session.
fn remembered_losses(
    storage: &dyn Storage,
    catalog: &Catalog,
    deleted: &BTreeSet<String>,
    losses: &mut Losses,
) {
    let Ok(gens) = checkpoint::list(storage) else {
        return;
    };
    'chains: for &g in gens.iter().rev() {
        // The chain back to its full checkpoint, oldest first.
        let mut chain = Vec::new();
        let mut next = g;
        loop {
            let Ok(opened) = checkpoint::open_header(storage, next) else {
                continue 'chains;
            };
            let base = opened.header.meta.base;
            chain.push(opened);
            if base == 0 {
                break;
            }
            next = base;
        }
        let mut remembered = Catalog::default();
        for opened in chain.iter().rev() {
            let Ok(body) = opened.body() else {
                continue 'chains;
            };
            if checkpoint::apply(body, &mut remembered).is_err() {
                continue 'chains;
            }
        }
        let mut remembered: Vec<_> = remembered.sessions.into_iter().collect();
        remembered.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (id, entry) in &remembered {
            let had = entry.state.next_seq;
            let now = catalog.sessions.get(id).map_or(0, |e| e.state.next_seq);
            if now < had && !deleted.contains(id) {
                losses.cut(catalog, id, Some(had - 1));
            }
        }
        return;
    }
}

/// Carries out a plan (see the module docs for the order and why).
pub(super) fn apply(storage: &dyn Storage, options: &StoreOptions, plan: &mut Plan) -> Result<()> {
    if plan.edits.is_empty() {
        return Ok(());
    }
    for generation in checkpoint::list(storage)? {
        let path = checkpoint_path(generation);
        storage
            .remove(&path)
            .map_err(|e| Error::io("remove", &path, e))?;
        plan.report.checkpoints_removed += 1;
    }
    storage
        .sync_dir(CHECKPOINTS_DIR)
        .map_err(|e| Error::io("sync directory", CHECKPOINTS_DIR, e))?;
    // Later segments first: a crash leaves a log that still continues.
    for (lsn, _) in plan.edits.iter().rev().filter(|(_, e)| *e == Edit::Remove) {
        let path = segment_path(*lsn);
        storage
            .remove(&path)
            .map_err(|e| Error::io("remove", &path, e))?;
    }
    storage
        .sync_dir(SEGMENTS_DIR)
        .map_err(|e| Error::io("sync directory", SEGMENTS_DIR, e))?;
    for (lsn, edit) in &plan.edits {
        let Edit::Rewrite {
            header,
            voids,
            cut_at,
        } = edit
        else {
            continue;
        };
        let path = segment_path(*lsn);
        let (_, mut bytes) = read_whole(storage, &path)?;
        if *header {
            let fresh = SegmentHeader {
                first_lsn: *lsn,
                created_ms: options.clock.now_ms(),
            }
            .encode();
            if let Some(h) = bytes.get_mut(..SEGMENT_HEADER_LEN) {
                h.copy_from_slice(&fresh);
            }
        }
        for &(at, n) in voids {
            let mut void = Vec::with_capacity(n);
            encode_voids(n, options.record_bytes_max, &mut void)
                .ok_or_else(|| Error::corruption(&path, at as u64, CorruptionKind::Incomplete))?;
            if let Some(dst) = bytes.get_mut(at..at + n) {
                dst.copy_from_slice(&void);
            }
        }
        if let Some(cut) = cut_at {
            bytes.truncate(*cut);
        }
        let io = |op: &'static str| {
            let path = path.clone();
            move |e| Error::io(op, path, e)
        };
        let replacement = Replacement::create(storage, &path).map_err(io("create"))?;
        replacement
            .file()
            .write_at(&bytes, 0)
            .map_err(io("write"))?;
        replacement.commit().map_err(io("replace"))?;
    }
    Ok(())
}

/// Plans a salvage of the store on `storage` and changes nothing: what
/// `sessdb repair --salvage --dry-run` prints. Holds the writer lock while it reads, so no
/// writer appends meanwhile.
///
/// # Errors
/// `Locked` if a writer has the store, I/O errors.
pub fn salvage_plan(storage: &dyn Storage, options: &StoreOptions) -> Result<SalvageReport> {
    let _lock = storage
        .try_lock(LOCK_FILE)
        .map_err(|e| Error::io("lock", storage.describe(LOCK_FILE), e))?
        .ok_or_else(|| Error::Locked {
            lock_file: storage.describe(LOCK_FILE),
        })?;
    Ok(plan(storage, options)?.report)
}

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
use super::chain::Headers;
use super::checkpoint;
use super::log::cursor::zeros;
use super::log::cursor::{LogCursor, SegmentFacts, StopAction};
use super::log::discover::{Header, judge_header, read_head, rest_is_zero, segment_lsns};
use super::log::walk::empty_log;
use super::log::walk::{Go, Met, walk};
use super::marker;
use super::options::StoreOptions;
use super::replay::replay;
use super::report::{Damage, DamageRepair, SalvageReport, SessionLoss};
use super::segments::{Segment, SegmentList};
use crate::codec::checkpoint::{CHECKPOINTS_DIR, checkpoint_path};
use crate::codec::cursor::Cursor;
use crate::codec::frame::{FRAME_HEADER_LEN, encode_voids};
use crate::codec::record::{RecordBody, decode};
use crate::codec::segment::{
    SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, SegmentHeaderError,
    segment_path,
};
use crate::codec::{CorruptionKind, LOCK_FILE};
use crate::storage::{OpenMode, Replacement, Storage, StorageFile};
use crate::{Error, Result};

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
    let bytes = bytes_of(&*file, path)?;
    Ok((file, bytes))
}

/// All of an open file's bytes.
fn bytes_of(file: &dyn StorageFile, path: &str) -> Result<Vec<u8>> {
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    file.read_at(&mut bytes, 0)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(bytes)
}

/// Scans the whole log and plans the salvage; changes nothing.
pub(super) fn plan(storage: &dyn Storage, options: &StoreOptions) -> Result<Plan> {
    let headers = Headers::load(storage)?;
    let lsns = segment_lsns(storage)?;
    // Every segment file opened; each one's bytes are read in its turn below, so the plan
    // holds one segment in memory at a time, never the whole log.
    let mut files = Vec::with_capacity(lsns.len());
    for &lsn in &lsns {
        let path = segment_path(lsn);
        let file = storage
            .open(&path, OpenMode::Read)
            .map_err(|e| Error::io("open", &path, e))?;
        files.push((lsn, path, Arc::<dyn StorageFile>::from(file)));
    }
    // The durable mark as open computes it, over every segment file there is.
    let durable = headers.durable_mark(&SegmentList::new(
        files
            .iter()
            .map(|(lsn, _, file)| Arc::new(Segment::new(*lsn, Arc::clone(file), false)))
            .collect(),
    ));

    let mut out = Plan::default();
    let list = SegmentList::default();
    let mut catalog = Catalog::default();
    let mut losses = Losses::default();
    let mut touched = BTreeSet::new();
    // Sessions deleted by a record salvage keeps: absent afterwards for a reason.
    let mut deleted = BTreeSet::new();
    let mut expected: Option<u64> = None;
    let mut removing = false;
    // The newest segment that holds records: a newest one whose creation was interrupted is
    // no segment of the log (open removes it).
    let rest_zero = |bytes: &[u8]| Ok(bytes.get(SEGMENT_HEADER_LEN..).is_none_or(zeros));
    let head = |bytes: &[u8]| bytes.get(..SEGMENT_HEADER_LEN).unwrap_or(bytes).to_vec();
    let interrupted_newest = match files.last() {
        Some((lsn, path, file)) => {
            // The header first; the rest is read only when the header is damaged.
            let first = read_head(&**file, path)?;
            let rest = || rest_is_zero(&**file, path);
            judge_header(*lsn, &first, rest, true)? == Header::Interrupted
        }
        None => false,
    };
    let count = files.len() - usize::from(interrupted_newest);
    let mut scanned_any = false;
    for (i, (lsn, path, file)) in files.into_iter().enumerate() {
        if i >= count {
            // The interrupted creation: open removes it.
            break;
        }
        let bytes = bytes_of(&*file, &path)?;
        let last = i + 1 == count;
        let damage = |offset: usize, bytes: usize, kind, repair| Damage {
            segment: path.clone(),
            offset: offset as u64,
            bytes: bytes as u64,
            kind,
            repair,
            session: None,
        };
        let verdict = judge_header(lsn, &head(&bytes), || rest_zero(&bytes), false)?;
        if let Header::Unsupported(found) = verdict {
            // Another sessdb version's store is not damage: salvage refuses it whole.
            return Err(Error::UnsupportedStore {
                file: path,
                found,
                expected: SEGMENT_FORMAT_VERSION,
            });
        }
        if removing || expected.is_some_and(|e| e != lsn) || bytes.len() < SEGMENT_HEADER_LEN {
            if !removing {
                let kind = match expected {
                    Some(e) if e != lsn => CorruptionKind::SegmentGap { expected: e },
                    _ => CorruptionKind::SegmentHeader(SegmentHeaderError::Short),
                };
                out.report
                    .damage
                    .push(damage(0, bytes.len(), kind, DamageRepair::SegmentRemoved));
            }
            removing = true;
            removed_records(&bytes, lsn, options, &catalog, &mut losses);
            out.edits.push((lsn, Edit::Remove));
            continue;
        }
        let header_damage = match verdict {
            Header::Valid => None,
            Header::NameMismatch => Some(CorruptionKind::Inconsistent(
                "segment name and header disagree",
            )),
            Header::Damaged(e) => Some(CorruptionKind::SegmentHeader(e)),
            // Handled above.
            Header::Interrupted | Header::Unsupported(_) => {
                Some(CorruptionKind::SegmentHeader(SegmentHeaderError::Short))
            }
        };
        let header = header_damage.is_some();
        if let Some(kind) = header_damage {
            out.report.damage.push(damage(
                0,
                SEGMENT_HEADER_LEN,
                kind,
                DamageRepair::HeaderRewritten,
            ));
        }
        list.push(Arc::new(Segment::new(lsn, Arc::clone(&file), false)));
        scanned_any = true;

        let facts = SegmentFacts {
            first_lsn: lsn,
            sealed: !last,
            durable_lsn: durable,
            // Salvage holds the writer lock: no write is in flight.
            locked: true,
            record_bytes_max: options.record_bytes_max,
        };
        let records = bytes.get(SEGMENT_HEADER_LEN..).unwrap_or_default();
        let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, records, false);
        let mut voids = Vec::new();
        let mut cut_at = None;
        walk(&mut cursor, |met| {
            let frame = match met {
                Met::Record(frame) => frame,
                Met::Stop(stop, cursor) => {
                    let pos = stop.offset;
                    let kind = match stop.action {
                        StopAction::Truncate => {
                            out.report.damage.push(damage(
                                pos,
                                bytes.len() - pos,
                                CorruptionKind::Incomplete,
                                DamageRepair::Cut,
                            ));
                            cut_at = Some(pos);
                            return Ok(Go::Finish);
                        }
                        StopAction::Corrupt(kind) => kind,
                        StopAction::Reread => {
                            CorruptionKind::Inconsistent("a write in flight under the lock")
                        }
                    };
                    if let CorruptionKind::MissingRecords { vouched_to } = kind {
                        // The newest segment ends, or holds only zeros, before what a
                        // checkpoint vouches for: the log ends here; the checkpoints go.
                        out.report.damage.push(damage(
                            pos,
                            usize::try_from(vouched_to.saturating_sub(stop.lsn)).unwrap_or(0),
                            kind,
                            DamageRepair::CheckpointsRemoved,
                        ));
                        if pos < bytes.len() {
                            cut_at = Some(pos);
                        }
                        return Ok(Go::Finish);
                    }
                    // Resynchronise at the next valid frame (or the end of the segment).
                    let next = cursor.resync();
                    if next - pos < FRAME_HEADER_LEN {
                        // Too short for a void record: only the end of a segment can be.
                        if !last {
                            return Err(Error::corruption(&path, pos as u64, kind));
                        }
                        out.report
                            .damage
                            .push(damage(pos, next - pos, kind, DamageRepair::Cut));
                        cut_at = Some(pos);
                        return Ok(Go::Finish);
                    }
                    let session = attribute(&catalog, cursor.bytes_from(pos));
                    if let Some(id) = &session {
                        losses.cut(&catalog, id, None);
                    }
                    out.report.damage.push(Damage {
                        session,
                        ..damage(pos, next - pos, kind, DamageRepair::Voided)
                    });
                    voids.push((pos, next - pos));
                    return Ok(Go::On);
                }
            };
            let (pos, frame_len) = (frame.offset, frame.bytes.len());
            match decode(frame.kind, frame.payload()) {
                Ok(body) if losses.drops(&catalog, &body) => {
                    losses.dropped += 1;
                    voids.push((pos, frame_len));
                }
                Ok(body) => {
                    let id = session_of(&body).map(str::to_owned);
                    let last_seq = last_seq(&body);
                    let appends = matches!(body, RecordBody::Append { .. });
                    match replay(&list, options, &mut catalog, &mut touched, body, frame.lsn) {
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
                    let session = attribute(&catalog, frame.bytes);
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
            Ok(Go::On)
        })?;
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
    if !scanned_any {
        // No segment holds records: the table decides whether an empty log may be the end.
        if let Some(kind) = empty_log(durable, true, options.record_bytes_max) {
            out.report.damage.push(Damage {
                segment: SEGMENTS_DIR.to_owned(),
                offset: 0,
                bytes: durable,
                kind,
                repair: DamageRepair::CheckpointsRemoved,
                session: None,
            });
        }
    }
    if !out.report.is_empty() {
        remembered_losses(&headers, &catalog, &deleted, &mut losses);
    }
    out.report.sessions = losses.by_id.into_values().collect();
    out.report.records_dropped = losses.dropped;
    Ok(out)
}

/// The records in a segment salvage removes (it does not continue the log): each one's
/// session loses what it held, and the count is reported as dropped.
fn removed_records(
    bytes: &[u8],
    lsn: u64,
    options: &StoreOptions,
    catalog: &Catalog,
    losses: &mut Losses,
) {
    let facts = SegmentFacts {
        first_lsn: lsn,
        sealed: true,
        durable_lsn: 0,
        locked: true,
        record_bytes_max: options.record_bytes_max,
    };
    let records = bytes.get(SEGMENT_HEADER_LEN..).unwrap_or_default();
    let mut cursor = LogCursor::new(facts, SEGMENT_HEADER_LEN, records, false);
    // Past damage to the next valid frame; every record that held events counted.
    let walked = walk(&mut cursor, |met| {
        match met {
            Met::Stop(_, cursor) => {
                if cursor.resync() >= cursor.end() {
                    return Ok(Go::Finish);
                }
            }
            Met::Record(frame) => {
                if let Ok(body) = decode(frame.kind, frame.payload())
                    && !matches!(body, RecordBody::Void | RecordBody::Delete { .. })
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
fn remembered_losses(
    headers: &Headers,
    catalog: &Catalog,
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

/// Carries out a plan (see the module docs for the order and why).
pub(super) fn apply(storage: &dyn Storage, options: &StoreOptions, plan: &mut Plan) -> Result<()> {
    if plan.edits.is_empty() && plan.report.is_empty() {
        return Ok(());
    }
    // Readers beside it see the marker and keep their view until it goes: the segments are
    // replaced one rename at a time, and a view built between two renames would read a log
    // half old, half new. Left by a salvage that died: the next writer open removes it.
    marker::set(storage)?;
    apply_edits(storage, options, plan)?;
    marker::clear(storage)
}

/// The checkpoints removed, the segments removed and rewritten (see the module docs).
fn apply_edits(storage: &dyn Storage, options: &StoreOptions, plan: &mut Plan) -> Result<()> {
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

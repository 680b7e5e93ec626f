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

mod apply;
mod edits;
mod losses;
pub(crate) mod marker;
mod repair;
mod segment;

use std::sync::Arc;

pub(super) use apply::apply;
use edits::{Edit, Plan, bytes_of};
use losses::{remembered_losses, removed_records};
use segment::{SegmentEdits, State, damage};

use crate::codec::compacted::{FOOTER_LEN, Footer, Runs};
use crate::codec::frame::FrameLayout;
use crate::codec::segment::SegmentHeader;
use crate::codec::segment::{
    SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeaderError, segment_path,
};
use crate::codec::{CorruptionKind, LOCK_FILE};
use crate::storage::Checked;
use crate::storage::{OpenMode, Storage, StorageFile};
use crate::store::checkpoint::chain::CheckpointHeaders;
use crate::store::log::cursor::{Place, Writers};
use crate::store::log::cursor::{SegmentFacts, zeros};
use crate::store::log::discover::{
    Continuation, HeaderVerdict, Prev, continuation, judge_header, read_head, rest_is_zero,
    segment_lsns,
};
use crate::store::log::map::LsnMap;
use crate::store::log::segments::{Segment, SegmentList};
use crate::store::log::walk::empty_log;
use crate::store::options::StoreOptions;
use crate::store::report::{Damage, DamageRepair, SalvageReport};
use crate::{Error, Result};

/// Scans the whole log and plans the salvage; changes nothing.
pub(super) fn plan(storage: &dyn Storage) -> Result<Plan> {
    let headers = CheckpointHeaders::load(storage)?;
    let files = open_segments(storage)?;
    // The durable mark as open computes it, over every segment file there is.
    let every_file = SegmentList::new(
        files
            .iter()
            // Read only (nothing is appended through this list): any frame layout.
            .map(|f| {
                let file = Arc::clone(&f.file);
                Arc::new(Segment::new(f.lsn, file, false, FrameLayout::Whole))
            })
            .collect(),
    );
    let durable = headers.confirm(&every_file).durable_mark();
    // A newest segment whose creation was interrupted is no segment of the log (open removes
    // it).
    let interrupted_newest = match files.last() {
        Some(f) => creation_interrupted(f.lsn, &f.path, &*f.file)?,
        None => false,
    };
    let count = files.len() - usize::from(interrupted_newest);
    let mut walk = ListWalk {
        durable,
        state: State::default(),
        prev: None,
        removing: false,
        scanned_any: false,
    };
    for (i, f) in files.into_iter().take(count).enumerate() {
        walk.segment(f.lsn, f.path, &f.file, i + 1 == count)?;
    }
    Ok(walk.finish(&headers))
}

/// Salvage's walk over the segment list, one segment at a time.
struct ListWalk {
    durable: u64,
    state: State,
    /// The segment kept before this one, for the one judge of the list (`log/discover.rs`).
    prev: Option<Prev>,
    /// A segment did not continue the log: it and every later one go.
    removing: bool,
    /// A segment holding records was walked.
    scanned_any: bool,
}

impl ListWalk {
    /// Judges the segment at `lsn` (`last`: the newest kept) and plans its edits.
    fn segment(
        &mut self,
        lsn: u64,
        path: String,
        file: &Arc<dyn StorageFile>,
        last: bool,
    ) -> Result<()> {
        let bytes = bytes_of(&**file, &path)?;
        let head = bytes.get(..SEGMENT_HEADER_LEN).unwrap_or(&bytes);
        let rest_zero = || Ok(bytes.get(SEGMENT_HEADER_LEN..).is_none_or(zeros));
        let verdict = judge_header(lsn, head, rest_zero, false)?;
        if let HeaderVerdict::Unsupported(found) = verdict {
            // Another sessdb version's store is not damage: salvage refuses it whole.
            return Err(Error::UnsupportedStore {
                file: path,
                found,
                expected: SEGMENT_FORMAT_VERSION,
            });
        }
        let compacted_end = match compacted_runs(lsn, &bytes) {
            Some(Ok((_, footer))) => Some(footer.end_lsn),
            _ => None,
        };
        let continuation = continuation(self.prev, lsn, compacted_end);
        // A merge's leftover: wholly inside the compacted segment before it, which holds its
        // records (`compact/merge.rs`). It goes, and nothing is lost.
        if !self.removing && continuation == Continuation::MergeLeftover {
            self.state.out.edits.push((lsn, Edit::Remove));
            return Ok(());
        }
        if self.removing
            || continuation != Continuation::Continues
            || bytes.len() < SEGMENT_HEADER_LEN
        {
            // The first segment that does not continue the log goes, and every later one.
            let first = (!self.removing).then(|| not_continuing(continuation));
            self.remove(lsn, &path, &bytes, first);
            return Ok(());
        }
        let header_damage = header_damage(verdict);
        let header = header_damage.is_some();
        if let Some(kind) = header_damage {
            self.state.out.report.damage.push(damage(
                &path,
                0,
                SEGMENT_HEADER_LEN,
                kind,
                DamageRepair::HeaderRewritten,
            ));
        }
        // A segment compaction wrote: its records end where its run table starts, and that
        // table maps its LSNs. A damaged table leaves its LSNs unknown: the segment goes, and
        // the later ones, which no longer continue the log.
        let runs = match compacted_runs(lsn, &bytes) {
            Some(Err(why)) => {
                self.remove(lsn, &path, &bytes, Some(CorruptionKind::RunTable(why)));
                return Ok(());
            }
            Some(Ok(runs)) => Some(runs),
            None => None,
        };
        self.walk_kept(lsn, &path, file, &bytes, runs.as_ref(), header, last)
    }

    /// The segment at `lsn` and every later one go; `damage` is why, reported at the first.
    fn remove(&mut self, lsn: u64, path: &str, bytes: &[u8], damage_kind: Option<CorruptionKind>) {
        let state = &mut self.state;
        if let Some(kind) = damage_kind {
            state.out.report.damage.push(damage(
                path,
                0,
                bytes.len(),
                kind,
                DamageRepair::SegmentRemoved,
            ));
        }
        self.removing = true;
        removed_records(bytes, lsn, &state.catalog, &mut state.losses);
        state.out.edits.push((lsn, Edit::Remove));
    }

    /// Walks a segment that continues the log (`runs`: a compacted one's table and footer)
    /// and plans its edits: the header rewritten, voids, a cut.
    #[allow(clippy::too_many_arguments, reason = "one segment's facts, read once")]
    fn walk_kept(
        &mut self,
        lsn: u64,
        path: &str,
        file: &Arc<dyn StorageFile>,
        bytes: &[u8],
        runs: Option<&(Runs, Footer)>,
        header: bool,
        last: bool,
    ) -> Result<()> {
        let state = &mut self.state;
        state.list.push(Arc::new(match runs {
            Some((_, footer)) => {
                // A damaged header's time is unknown: its tombstones count as expired.
                let at = SegmentHeader::decode(bytes).map_or(0, |h| h.created_ms);
                Segment::compacted(lsn, Arc::clone(file), *footer, bytes.len() as u64, at)
            }
            // Read only: salvage's plan appends nothing (an open after it reads the header).
            None => Segment::new(lsn, Arc::clone(file), false, FrameLayout::Whole),
        }));
        self.scanned_any = true;
        let compacted = runs.is_some();
        let records = match runs {
            Some((r, _)) => bytes
                .get(..crate::width::index(r.records_end()))
                .unwrap_or_default(),
            None => bytes,
        };
        let facts = SegmentFacts::checked(
            match runs {
                Some((r, _)) => LsnMap::Runs(r),
                None => LsnMap::Plain { first_lsn: lsn },
            },
            // A compacted segment is never cut: it was written whole, and synced.
            if !last || compacted {
                Place::Sealed
            } else {
                Place::Newest
            },
            self.durable,
            // Salvage holds the writer lock: no write is in flight.
            Writers::Excluded,
        );
        let SegmentEdits { voids, cut_at } = state.walk_segment(facts, path, records, last)?;
        state.touched.clear();
        let end = cut_at.unwrap_or(bytes.len());
        self.prev = Some(Prev {
            lsn,
            end_lsn: match runs {
                Some((r, _)) => r.end_lsn(),
                None => lsn + (end - SEGMENT_HEADER_LEN) as u64,
            },
            compacted,
        });
        if header || !voids.is_empty() || cut_at.is_some() {
            state.out.edits.push((
                lsn,
                Edit::Rewrite {
                    header,
                    compacted,
                    voids,
                    cut_at,
                },
            ));
        }
        Ok(())
    }

    /// The plan, once every segment was judged: what the catalog holds, what each session
    /// loses (and what the newest checkpoint remembers of it).
    fn finish(self, headers: &CheckpointHeaders) -> Plan {
        let ListWalk {
            state,
            scanned_any,
            durable,
            ..
        } = self;
        let State {
            mut out,
            catalog,
            mut losses,
            deleted,
            ..
        } = state;
        if !scanned_any {
            // No segment holds records: the table decides whether an empty log may be the end.
            out.report.damage.extend(empty_log_damage(durable));
        }
        out.read.sessions = catalog.sessions.len();
        out.report.open_turns = catalog
            .sessions
            .iter()
            .filter(|(_, e)| e.state.repair().turn_is_open())
            .map(|(id, _)| id.clone())
            .collect();
        out.report.open_turns.sort();
        out.read.events = catalog.sessions.values().map(|e| e.state.next_seq()).sum();
        if !out.report.is_empty() {
            remembered_losses(headers, &catalog, &deleted, &mut losses);
        }
        out.report.sessions = losses.by_id.into_values().collect();
        out.report.records_dropped = losses.dropped;
        out
    }
}

/// A segment file, opened.
struct SegmentFile {
    lsn: u64,
    path: String,
    file: Arc<dyn StorageFile>,
}

/// Every segment file, opened: each one's bytes are read in its turn, so the plan holds one
/// segment in memory at a time, never the whole log.
fn open_segments(storage: &dyn Storage) -> Result<Vec<SegmentFile>> {
    let lsns = segment_lsns(storage)?;
    let mut files = Vec::with_capacity(lsns.len());
    for &lsn in &lsns {
        let path = segment_path(lsn);
        let file = storage.open_file(&path, OpenMode::Read)?;
        files.push(SegmentFile {
            lsn,
            path,
            file: Arc::from(file),
        });
    }
    Ok(files)
}

/// The damage of a log with no segment holding records under a durable mark at `durable`
/// (the checkpoints go), if the table says it is not a possible end.
fn empty_log_damage(durable: u64) -> Option<Damage> {
    empty_log(durable, Writers::Excluded).map(|kind| Damage {
        segment: SEGMENTS_DIR.to_owned(),
        offset: 0,
        bytes: durable,
        kind,
        repair: DamageRepair::CheckpointsRemoved,
        session: None,
    })
}

/// Whether the newest segment's creation was interrupted (its header is read first; the rest
/// only when the header is damaged).
fn creation_interrupted(lsn: u64, path: &str, file: &dyn StorageFile) -> Result<bool> {
    let first = read_head(file, path)?;
    Ok(judge_header(lsn, &first, || rest_is_zero(file, path), true)? == HeaderVerdict::Interrupted)
}

/// The damage a segment header's verdict is, if any (salvage writes such a header anew).
fn header_damage(verdict: HeaderVerdict) -> Option<CorruptionKind> {
    match verdict {
        HeaderVerdict::Valid(_) => None,
        HeaderVerdict::NameMismatch => Some(CorruptionKind::Inconsistent(
            "segment name and header disagree",
        )),
        HeaderVerdict::Damaged(e) => Some(CorruptionKind::SegmentHeader(e)),
        // Decided before a header is judged for rewriting.
        HeaderVerdict::Interrupted | HeaderVerdict::Unsupported(_) => {
            Some(CorruptionKind::SegmentHeader(SegmentHeaderError::Short))
        }
    }
}

/// A compacted segment's run table and footer, checked — `None` for a segment appends wrote.
/// A segment whose header is damaged is taken for a compacted one when its last bytes are a
/// valid footer.
fn compacted_runs(
    lsn: u64,
    bytes: &[u8],
) -> Option<std::result::Result<(Runs, Footer), &'static str>> {
    let footer_at = bytes.len().checked_sub(FOOTER_LEN);
    let footer = footer_at
        .and_then(|at| bytes.get(at..))
        .map(|f| Footer::decode(f, bytes.len() as u64));
    match SegmentHeader::decode(bytes) {
        Ok(h) if !h.compacted => return None,
        Ok(_) => {}
        Err(_) if footer.as_ref().is_some_and(|f| f.is_ok()) => {}
        Err(_) => return None,
    }
    let footer = match footer {
        Some(Ok(f)) => f,
        Some(Err(why)) => return Some(Err(why)),
        None => return Some(Err("the footer is cut short")),
    };
    let records_end = footer.records_end(bytes.len() as u64);
    let table = bytes
        .get(crate::width::index(records_end)..bytes.len() - FOOTER_LEN)
        .unwrap_or_default();
    Some(Runs::decode(table, &footer, lsn, records_end).map(|r| (r, footer)))
}

/// Why a segment goes: it does not continue the log, or its header is cut short.
fn not_continuing(continuation: Continuation) -> CorruptionKind {
    match continuation {
        Continuation::Gap { expected } => CorruptionKind::SegmentGap { expected },
        _ => CorruptionKind::SegmentHeader(SegmentHeaderError::Short),
    }
}

/// Plans a salvage of the store on `storage` and changes nothing: what
/// `sessdb repair --salvage --dry-run` prints. Holds the writer lock while it reads, so no
/// writer appends meanwhile. No option changes the plan (`options` is what the salvaging
/// open would be given): stored records are judged by the bounds every writer's share.
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
    // The plan depends on no option: stored records are read by their own bounds.
    let _ = options;
    Ok(plan(storage)?.report)
}

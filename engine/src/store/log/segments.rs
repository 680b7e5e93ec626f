//! The segment files of a store: reading records and events by LSN, and appending to the
//! active (last) segment, rolling to a new one at the size limit.
//!
//! Write-path order (`docs/DESIGN.md` §3): a record is written to the active segment; a roll
//! first syncs the active segment, then creates the next one, writes and syncs its header,
//! and syncs the `segments/` directory. So every sealed segment is complete on disk before a
//! newer one exists, and only the last segment can have a torn tail.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::codec::CorruptionKind;
pub use crate::codec::EventLoc;
use crate::codec::compacted::{FOOTER_LEN, Footer, Runs};
use crate::codec::frame::{FRAME_HEADER_LEN, FrameLayout};
use crate::codec::record::{check_event, decode_event_ref};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, segment_path};
use crate::event::Event;
use crate::event::view::EventRef;
use crate::storage::{Checked, CheckedFile};
use crate::storage::{FileView, OpenMode, Storage, StorageFile};
use crate::store::log::map::LsnMap;
use crate::{Error, Result};

/// One segment file.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) first_lsn: u64,
    pub(crate) path: String,
    pub(crate) file: Arc<dyn StorageFile>,
    sealed: AtomicBool,
    /// The layout of the frames its header admits (what an append to it writes).
    frames: FrameLayout,
    view: OnceLock<FileView>,
    /// Written by compaction: its footer, and its run table once read.
    compacted: Option<Compacted>,
}

/// What a compacted segment's footer says, and its run table, read and checked the first time
/// the segment's LSNs are mapped (an open from a checkpoint need not read every table).
#[derive(Debug)]
struct Compacted {
    footer: Footer,
    file_len: u64,
    /// When the compaction wrote it (its header's creation time; 0 when unknown).
    created_ms: i64,
    runs: OnceLock<std::result::Result<Runs, &'static str>>,
}

impl Segment {
    pub(crate) fn new(
        first_lsn: u64,
        file: Arc<dyn StorageFile>,
        sealed: bool,
        frames: FrameLayout,
    ) -> Self {
        Self {
            frames,
            first_lsn,
            path: segment_path(first_lsn),
            file,
            sealed: AtomicBool::new(sealed),
            view: OnceLock::new(),
            compacted: None,
        }
    }

    /// A segment compaction wrote (sealed: it never changes) at `created_ms`, of `file_len`
    /// bytes, whose footer is `footer`.
    pub(crate) fn compacted(
        first_lsn: u64,
        file: Arc<dyn StorageFile>,
        footer: Footer,
        file_len: u64,
        created_ms: i64,
    ) -> Self {
        Self {
            compacted: Some(Compacted {
                footer,
                file_len,
                created_ms,
                runs: OnceLock::new(),
            }),
            // Sealed: nothing is appended to it (its header's format admits split frames).
            ..Self::new(first_lsn, file, true, FrameLayout::Split)
        }
    }

    /// The layout of the frames its header admits: what an append to it writes.
    pub(crate) fn frame_layout(&self) -> FrameLayout {
        self.frames
    }

    /// The bytes of its tombstone table, when compaction wrote it before `cutoff_ms` (its
    /// tombstones have outlived their time, `CompactionPolicy::tombstone_ttl`); else 0.
    pub(crate) fn expired_tombstone_bytes(&self, cutoff_ms: i64) -> u64 {
        self.compacted.as_ref().map_or(0, |c| {
            if c.created_ms < cutoff_ms {
                c.footer.tombstones * crate::codec::compacted::TOMBSTONE_LEN as u64
            } else {
                0
            }
        })
    }

    /// The tombstones its table holds (0 for a segment appends wrote).
    pub(crate) fn tombstone_count(&self) -> u64 {
        self.compacted.as_ref().map_or(0, |c| c.footer.tombstones)
    }

    /// The bytes of its records when it is segment `si` of `segments` and the log ends at
    /// `end_lsn`: the active segment's (the last, written by appends) up to the log's end —
    /// its file runs on past it, allocated ahead — any other's up to its records' end. The
    /// one rule compaction's choice, its space report and the background's dead-byte ratio
    /// read.
    pub(crate) fn record_bytes_in(
        segments: &[Arc<Segment>],
        si: usize,
        end_lsn: u64,
    ) -> Result<u64> {
        let Some(seg) = segments.get(si) else {
            return Ok(0);
        };
        if si + 1 == segments.len() && !seg.is_compacted() {
            return Ok(end_lsn.saturating_sub(seg.first_lsn));
        }
        let header = crate::codec::segment::SEGMENT_HEADER_LEN as u64;
        Ok(seg.records_end()?.saturating_sub(header))
    }

    /// The file's bytes after its header: the records, and a compacted segment's tables and
    /// footer.
    pub(crate) fn stored_bytes(&self) -> Result<u64> {
        let header = crate::codec::segment::SEGMENT_HEADER_LEN as u64;
        match &self.compacted {
            Some(c) => Ok(c.file_len.saturating_sub(header)),
            None => Ok(self.records_end()?.saturating_sub(header)),
        }
    }

    pub(crate) fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    /// Whether the segment is sealed: its bytes never change, and are read from its map.
    pub(crate) fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    /// Whether compaction wrote this segment.
    pub(crate) fn is_compacted(&self) -> bool {
        self.compacted.is_some()
    }

    /// The file offset of an LSN in a segment appends write (the active one: never a
    /// compacted one, whose offsets [`Segment::map`] gives).
    pub(crate) fn offset_of(&self, lsn: u64) -> u64 {
        debug_assert!(
            self.compacted.is_none(),
            "an append offset in a compacted segment"
        );
        SEGMENT_HEADER_LEN as u64 + (lsn - self.first_lsn)
    }

    /// How this segment's file offsets are LSNs.
    ///
    /// # Errors
    /// `Corruption` (`RunTable`) when a compacted segment's run table is damaged; I/O errors.
    pub(crate) fn map(&self) -> Result<LsnMap<'_>> {
        let Some(c) = &self.compacted else {
            return Ok(LsnMap::Plain {
                first_lsn: self.first_lsn,
            });
        };
        let records_end = c.footer.records_end(c.file_len);
        let runs = match c.runs.get() {
            Some(r) => r,
            None => {
                let table_len = c.file_len - FOOTER_LEN as u64 - records_end;
                let mut table = vec![0u8; crate::width::index(table_len)];
                self.file.at(&self.path).read_at(&mut table, records_end)?;
                let runs = Runs::decode(&table, &c.footer, self.first_lsn, records_end);
                c.runs.get_or_init(|| runs)
            }
        };
        runs.as_ref().map(LsnMap::Runs).map_err(|&why| {
            Error::corruption(&self.path, records_end, CorruptionKind::RunTable(why))
        })
    }

    /// The file offset just past the segment's records (its length, allocated space
    /// included, for one appends write).
    pub(crate) fn records_end(&self) -> Result<u64> {
        match &self.compacted {
            Some(c) => Ok(c.footer.records_end(c.file_len)),
            None => self.file.at(&self.path).len(),
        }
    }

    /// The LSN just past the segment: for one appends write, past the file's last byte
    /// (allocated space included).
    pub(crate) fn end_lsn(&self) -> Result<u64> {
        if let Some(c) = &self.compacted {
            return Ok(c.footer.end_lsn);
        }
        let len = self.file.at(&self.path).len()?;
        Ok(self.first_lsn + len.saturating_sub(SEGMENT_HEADER_LEN as u64))
    }

    /// The file offset of the event at `loc`.
    ///
    /// # Errors
    /// `Corruption` when no record of the segment starts there (compaction left it out: an
    /// index that still points there is wrong), or the run table is damaged.
    pub(crate) fn event_offset(&self, map: &LsnMap<'_>, loc: &EventLoc) -> Result<u64> {
        map.offset_of(loc.lsn)
            .map(|at| at + FRAME_HEADER_LEN as u64 + u64::from(loc.offset))
            .ok_or_else(|| {
                Error::corruption(
                    &self.path,
                    loc.lsn,
                    CorruptionKind::Inconsistent("an indexed record was compacted away"),
                )
            })
    }

    /// Hands `len` bytes at file offset `at` to `use_bytes`: borrowed from the mapped view
    /// once sealed, else read from the file into a buffer.
    pub(crate) fn with_bytes<R>(
        &self,
        at: u64,
        len: usize,
        use_bytes: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        if self.sealed.load(Ordering::Acquire) {
            let view = match self.view.get() {
                Some(v) => v,
                None => {
                    let v = self
                        .file
                        .view()
                        .map_err(|e| Error::io("map", &self.path, e))?;
                    self.view.get_or_init(|| v)
                }
            };
            let start = crate::width::index(at);
            return view
                .get(start..start.saturating_add(len))
                .map(use_bytes)
                .ok_or_else(|| Error::Corruption {
                    segment: self.path.clone(),
                    offset: at,
                    kind: CorruptionKind::Incomplete,
                });
        }
        let mut buf = vec![0; len];
        self.file.at(&self.path).read_at(&mut buf, at)?;
        Ok(use_bytes(&buf))
    }
}

/// All segments, oldest first — after an open, the older ones listed by name only until
/// their first use.
#[derive(Debug, Default)]
pub(crate) struct SegmentList {
    list: RwLock<Vec<Arc<Segment>>>,
    /// The segments an open left unjudged (`log/discover.rs`, `discover_newest`):
    /// everything before the list's first segment, opened and judged by the first call that
    /// needs them ([`SegmentList::full`], or a position before the list's first).
    older: Mutex<Option<Older>>,
    /// The first LSN of the list's first segment while older segments wait, 0 once none
    /// does: a lookup at or past it needs nothing judged (one load, the fast path of every
    /// lookup).
    judged_from: AtomicU64,
    /// How many times the whole list was replaced ([`SegmentList::replace`]: a view built
    /// again), so a read that met the list changing under it can tell.
    replaced: AtomicU64,
}

/// Judges the segments older than the list's first one (`next`), at their first use: opened,
/// their headers checked, each continuing the one before it and the last `next`. Made by the
/// open that left them (`open/mod.rs`), which knows the storage, what keeps them the files it
/// listed, and what to do with a merge's leftovers found among them.
pub(crate) type JudgeOlder = Box<dyn Fn(&Segment) -> Result<Vec<Arc<Segment>>> + Send + Sync>;

/// The segments an open left unjudged.
struct Older {
    /// The first LSN of the list's first segment: the older ones are the names before it.
    before: u64,
    judge: JudgeOlder,
}

impl std::fmt::Debug for Older {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Older(before {})", self.before)
    }
}

impl SegmentList {
    pub(crate) fn new(list: Vec<Arc<Segment>>) -> Self {
        Self {
            list: RwLock::new(list),
            older: Mutex::new(None),
            judged_from: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
        }
    }

    /// The segments an open judged (`list`, the newest), the older ones — every
    /// segment file named before `before` — judged at their first use.
    pub(crate) fn with_older(list: Vec<Arc<Segment>>, before: u64, judge: JudgeOlder) -> Self {
        debug_assert_eq!(
            list.first().map(|s| s.first_lsn),
            Some(before),
            "the older segments end where the list starts"
        );
        debug_assert!(before > 0, "older segments lie before a position past 0");
        Self {
            list: RwLock::new(list),
            older: Mutex::new(Some(Older { before, judge })),
            judged_from: AtomicU64::new(before),
            replaced: AtomicU64::new(0),
        }
    }

    /// Judges the older segments if they still wait ([`JudgeOlder`]) and puts them before
    /// the list's first.
    ///
    /// # Errors
    /// The damage judging finds (as an open that judged them would have refused it); they
    /// then stay unjudged, and the next call that needs them meets it again.
    fn judge_older(&self) -> Result<()> {
        if self.judged_from.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let mut older = self.older.lock();
        let Some(o) = older.as_ref() else {
            return Ok(());
        };
        let next = self.list.read().first().cloned();
        let Some(next) = next else {
            return Err(no_segment(o.before));
        };
        let judged = (o.judge)(&next)?;
        // Where the older segments cross into the list: they end where it starts.
        debug_assert!(
            judged
                .iter()
                .all(|s| s.first_lsn < o.before && s.is_sealed()),
            "older segments judged"
        );
        self.list.write().splice(0..0, judged);
        *older = None;
        self.judged_from.store(0, Ordering::Release);
        Ok(())
    }

    /// Judges the older segments when `lsn` lies before the list's first segment.
    fn cover(&self, lsn: u64) -> Result<()> {
        if lsn >= self.judged_from.load(Ordering::Acquire) {
            return Ok(());
        }
        self.judge_older()
    }

    pub(crate) fn push(&self, seg: Arc<Segment>) {
        self.list.write().push(seg);
    }

    /// Replaces the whole list with `list`, every segment judged — older ones still waiting
    /// are let go (a view built again from the files as they are now).
    pub(crate) fn replace(&self, list: Vec<Arc<Segment>>) {
        let mut older = self.older.lock();
        *self.list.write() = list;
        *older = None;
        self.judged_from.store(0, Ordering::Release);
        self.replaced.fetch_add(1, Ordering::AcqRel);
    }

    /// How many times the whole list was replaced ([`SegmentList::replace`]).
    pub(crate) fn replaced(&self) -> u64 {
        self.replaced.load(Ordering::Acquire)
    }

    /// The list, to replace segments in it (compaction, a view caught up): only after
    /// [`SegmentList::full`], so every segment is in it.
    pub(crate) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Vec<Arc<Segment>>> {
        debug_assert_eq!(
            self.judged_from.load(Ordering::Acquire),
            0,
            "segments replaced while older ones wait"
        );
        self.list.write()
    }

    /// The record bytes of the segment whose first LSN is `first` (0 when it is gone), the
    /// log ending at `end_lsn` ([`Segment::record_bytes_in`]).
    pub(crate) fn record_bytes_of(&self, first: u64, end_lsn: u64) -> Result<u64> {
        let segments = self.full()?;
        match segments.iter().position(|s| s.first_lsn == first) {
            Some(si) => Segment::record_bytes_in(&segments, si, end_lsn),
            None => Ok(0),
        }
    }

    /// Every segment, oldest first (the older ones an open left are judged now).
    ///
    /// # Errors
    /// Damage in those older segments, I/O errors.
    pub(crate) fn full(&self) -> Result<Vec<Arc<Segment>>> {
        self.judge_older()?;
        Ok(self.list.read().clone())
    }

    /// The segments from the one holding `lsn` on — and any before it — as [`SegmentList::full`]
    /// when `lsn` lies before the segments judged so far, else without judging the older ones.
    ///
    /// # Errors
    /// As [`SegmentList::full`].
    pub(crate) fn from(&self, lsn: u64) -> Result<Vec<Arc<Segment>>> {
        self.cover(lsn)?;
        Ok(self.list.read().clone())
    }

    /// The segments judged so far: all of them unless older ones an open left wait.
    pub(crate) fn judged(&self) -> Vec<Arc<Segment>> {
        self.list.read().clone()
    }

    /// The newest segment.
    pub(crate) fn last(&self) -> Option<Arc<Segment>> {
        self.list.read().last().cloned()
    }

    /// Whether a compacted segment starts before `lsn`: then a deletion may name a session
    /// whose records compaction left out.
    ///
    /// # Errors
    /// As [`SegmentList::full`].
    pub(crate) fn compacted_before(&self, lsn: u64) -> Result<bool> {
        Ok(self
            .full()?
            .iter()
            .take_while(|s| s.first_lsn < lsn)
            .any(|s| s.is_compacted()))
    }

    /// The segment holding `lsn` (`None` too when the older segments it would be among
    /// cannot be judged: the reads that need them report why, [`SegmentList::read_event`]).
    pub(crate) fn find(&self, lsn: u64) -> Option<Arc<Segment>> {
        self.cover(lsn).ok()?;
        let list = self.list.read();
        let i = list.partition_point(|s| s.first_lsn <= lsn);
        i.checked_sub(1).and_then(|i| list.get(i)).cloned()
    }

    /// Reads many events `(seq, loc)`, in order. Runs of events in the same segment are read
    /// with one `pread` of the window that spans them (the active segment; sealed ones are
    /// borrowed from the map), up to [`READ_WINDOW_MAX`] bytes; each event is checked as
    /// [`SegmentList::read_event`] checks it.
    pub(crate) fn read_events(&self, locs: &[(u64, EventLoc)]) -> Result<Vec<Event>> {
        let mut out = Vec::with_capacity(locs.len());
        self.visit_events(locs, &mut |e| {
            out.push(e.to_event());
            Ok(())
        })?;
        Ok(out)
    }

    /// As [`SegmentList::read_events`], handing each checked event to `f` borrowed from the
    /// bytes read (no owned event built); an error of `f` stops the visit.
    pub(crate) fn visit_events(
        &self,
        locs: &[(u64, EventLoc)],
        f: &mut dyn FnMut(EventRef<'_>) -> Result<()>,
    ) -> Result<()> {
        // The oldest position first: whatever judging the older segments finds (damage, a
        // view overtaken) is met before `f` sees any event, so a read made again after it
        // hands out no event twice. Not always the first: `messages` reads in surface order,
        // where a replacement stands before the older nodes after it (a debug assertion
        // that locations ascend failed on the demo store's `show --messages`).
        if let Some(oldest) = locs.iter().map(|(_, l)| l.lsn).min() {
            self.cover(oldest)?;
        }
        let mut rest = locs;
        while let Some(&(_, first)) = rest.first() {
            let (seg, next_first) = self
                .find_with_next(first.lsn)
                .ok_or_else(|| no_segment(first.lsn))?;
            let map = seg.map()?;
            let start = seg.event_offset(&map, &first)?;
            // The run: following locations in the same segment, within the window (a run of
            // one is one event's bytes).
            let mut end = start + u64::from(first.len);
            let mut n = 1;
            for &(_, l) in rest.iter().skip(1) {
                if l.lsn < seg.first_lsn || next_first.is_some_and(|f| l.lsn >= f) {
                    break;
                }
                let Some(at) = map
                    .offset_of(l.lsn)
                    .map(|a| a + FRAME_HEADER_LEN as u64 + u64::from(l.offset))
                else {
                    break;
                };
                let e = at + u64::from(l.len);
                if at < start || e.max(end) - start > READ_WINDOW_MAX {
                    break;
                }
                end = end.max(e);
                n += 1;
            }
            let (run, after) = rest.split_at(n);
            let len = crate::width::index(end - start);
            let corrupt = |at: u64, kind| Error::Corruption {
                segment: seg.path.clone(),
                offset: at,
                kind,
            };
            seg.with_bytes(start, len, |window| {
                for &(seq, l) in run {
                    let at = seg.event_offset(&map, &l)?;
                    let from = crate::width::index(at - start);
                    let bytes = window
                        .get(from..from.saturating_add(l.len as usize))
                        .ok_or_else(|| corrupt(at, CorruptionKind::Incomplete))?;
                    f(check_decode_ref(bytes, seq).map_err(|k| corrupt(at, k))?)?;
                }
                Ok(())
            })??;
            rest = after;
        }
        Ok(())
    }

    /// The segment holding `lsn`, and the first LSN of the segment after it.
    fn find_with_next(&self, lsn: u64) -> Option<(Arc<Segment>, Option<u64>)> {
        self.cover(lsn).ok()?;
        let list = self.list.read();
        let i = list
            .partition_point(|s| s.first_lsn <= lsn)
            .checked_sub(1)?;
        let seg = list.get(i)?;
        Some((Arc::clone(seg), list.get(i + 1).map(|s| s.first_lsn)))
    }

    /// Reads the event at `loc`, giving it `seq`.
    pub(crate) fn read_event(&self, loc: EventLoc, seq: u64) -> Result<Event> {
        self.cover(loc.lsn)?;
        let seg = self.find(loc.lsn).ok_or_else(|| Error::Corruption {
            segment: SEGMENTS_DIR.to_owned(),
            offset: loc.lsn,
            kind: CorruptionKind::Inconsistent("an indexed record lies in no segment"),
        })?;
        let at = seg.event_offset(&seg.map()?, &loc)?;
        let decoded = seg.with_bytes(at, loc.len as usize, |bytes| check_decode(bytes, seq))?;
        decoded.map_err(|kind| Error::Corruption {
            segment: seg.path.clone(),
            offset: at,
            kind,
        })
    }
}

/// The largest window one batched read fetches with one `pread`.
const READ_WINDOW_MAX: u64 = 1 << 20;

fn no_segment(lsn: u64) -> Error {
    Error::Corruption {
        segment: SEGMENTS_DIR.to_owned(),
        offset: lsn,
        kind: CorruptionKind::Inconsistent("an indexed record lies in no segment"),
    }
}

/// Checks an event's own checksum (it covers exactly the bytes handed out, and its seq),
/// then decodes it.
fn check_decode(bytes: &[u8], seq: u64) -> std::result::Result<Event, CorruptionKind> {
    check_decode_ref(bytes, seq).map(|e| e.to_event())
}

/// As [`check_decode`], borrowing from `bytes`.
fn check_decode_ref(bytes: &[u8], seq: u64) -> std::result::Result<EventRef<'_>, CorruptionKind> {
    check_event(bytes, seq)
        .ok_or(CorruptionKind::EventChecksumMismatch)
        .and_then(|fields| decode_event_ref(fields, seq).map_err(CorruptionKind::BadPayload))
}

/// Creates a segment file with its header, durable (file and directory synced).
pub(crate) fn create_segment(
    storage: &dyn Storage,
    first_lsn: u64,
    now_ms: i64,
) -> Result<Arc<Segment>> {
    let path = segment_path(first_lsn);
    let file = storage.open_file(&path, OpenMode::CreateNew)?;
    let header = SegmentHeader::new(first_lsn, now_ms, false);
    file.at(&path).write_at(&header.encode(), 0)?;
    file.at(&path).sync_data()?;
    storage.sync_directory(SEGMENTS_DIR)?;
    Ok(Arc::new(Segment::new(
        first_lsn,
        Arc::from(file),
        false,
        header.frame_layout(),
    )))
}

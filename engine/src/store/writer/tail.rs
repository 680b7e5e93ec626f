//! The append tail (`docs/DESIGN.md` §3.2): where the next record goes — the active segment,
//! the next LSN and the last record's link — the space allocated ahead and the write windows
//! mapped over it, the helper thread that faults windows in, retires them and zero-fills a
//! `Sync` store ahead; writing one frame; rolling to a new segment.

use std::sync::Arc;

use crate::codec::EventLoc;
use crate::codec::frame::{FRAME_HEADER_LEN, FrameLayout, RecordKind, RecordLink, seal_frame};
use crate::codec::record::{EPOCH_FRAME_LEN, WriterEpoch};
use crate::codec::segment::SEGMENT_HEADER_LEN;
use crate::storage::CheckedFile;
use crate::storage::{Storage, WriteWindow};
use crate::store::log::segments::{Segment, SegmentList, create_segment};
use crate::store::writer::prefault::Job;
use crate::store::writer::syncs::LogSyncs;
use crate::{Error, Result};

/// The append position: the active segment and the next LSN, the space allocated ahead, the
/// write windows over it, the buffers every record reuses.
#[derive(Debug)]
pub(crate) struct Tail {
    /// The segment appends go into, or none yet.
    active: Active,
    pub(crate) next_lsn: u64,
    /// LSN and frame checksum of the last record written (the checkpoint links to it).
    pub(crate) last_record: Option<RecordLink>,
    /// The space allocated ahead of the appends.
    space: Allocation,
    /// The maps over that space, and the helper that prepares them.
    windows: Windows,
    /// The frame being encoded, reused by every record (no allocation per append).
    pub(crate) frame: Vec<u8>,
    /// The last record's events: `(offset, len)` of each within its payload (reused).
    pub(crate) offsets: Vec<(u32, u32)>,
    /// The frame layout the active segment takes: layout 2 only in a segment whose header
    /// says a release that reads it wrote it (format 6); a store of the previous release
    /// goes on in layout 1 until its active segment rolls (`docs/FORMAT.md` §3.1).
    layout: FrameLayout,
    /// A `Sync` store: the preallocated space is written with zeros, so its syncs write data
    /// only (`StorageFile::preallocate_written`), and records go out with `pwrite`, not
    /// through a window (`docs/DESIGN.md` §3.2).
    sync_store: bool,
    /// The epoch this open writes under (`docs/DESIGN.md` §3.7), and the segment (first LSN)
    /// where its epoch record was last written: one goes before the open's first record and
    /// first into every segment it creates.
    epoch: WriterEpoch,
    announced_in: Option<u64>,
    /// The turn to sync the log, shared with group commit: a roll's sync of the segment it
    /// seals never runs beside a leader's sync of the same file (`writer/syncs.rs`).
    syncs: Arc<LogSyncs>,
}

/// The refusal of a write that finds the active segment still lent: the write that borrowed
/// it stopped halfway (a panic), so where the log ends is not known.
fn halfway() -> Error {
    Error::Poisoned {
        cause: "a write stopped halfway (it panicked) with the active segment lent out".to_owned(),
    }
}

/// The first stretch a `Sync` store's helper zero-fills after a record that extended the file
/// (`Tail::keep_ahead`).
const FIRST_ZERO_FILL: u64 = 64 << 10;

/// Whether placing a frame prepares the space after it (allocates, maps or zero-fills ahead
/// as the lead runs short).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ahead {
    /// As every record does.
    Prepare,
    /// Not yet: another frame follows in the same write (an epoch record before its record).
    Later,
}

/// The segment appends go into.
#[derive(Debug)]
pub(crate) enum Active {
    /// Appends go into this segment.
    Open(Arc<Segment>),
    /// The newest segment is sealed (a roll, or a compacted newest segment at open): the
    /// first write creates the next one at the log's end. So a compaction, or an open that
    /// writes nothing, leaves no empty segment behind.
    Due,
    /// The active segment is lent to the write under way ([`Tail::write_frame`]): moved out
    /// and back, since an `Arc` clone and drop per frame were two locked instructions of
    /// every append (`docs/PERFORMANCE.md`, "2026-12-06, closing"). Found by a later write
    /// only if that one never finished (it panicked): refused then, never taken for a
    /// sealed segment.
    Lent,
}

/// The active segment's allocation ahead of the appends.
#[derive(Debug)]
struct Allocation {
    /// The active segment file's length: space allocated ahead of `next_lsn` is zeros.
    allocated: u64,
    /// Allocating ahead failed at this allocation (a full disk): not retried per append;
    /// the append that needs the space allocates it and reports the error.
    ahead_failed_at: Option<u64>,
    /// A `Sync` store's zero-fill running on the helper: the length it allocates to, and
    /// its outcome once done. The appender never writes past `allocated` before it is done.
    zero_fill: Option<(u64, Arc<std::sync::OnceLock<bool>>)>,
    /// The length of the last zero-fill started (`Tail::keep_ahead`).
    last_fill: u64,
    /// The roll point: a segment's largest size.
    segment_bytes_max: u64,
    /// How far ahead of the appends space is allocated (0: none).
    preallocate: u64,
}

/// The writable maps over the allocated space (where the backend has them: appends are
/// copied in instead of written with a syscall each) and the helper thread.
#[derive(Debug)]
struct Windows {
    /// The window appends go into.
    current: Option<WriteWindow>,
    /// The window after it, mapped and faulted in (on the helper) while the writer still
    /// fills the current one: appends switch to it without waiting on its pages.
    next: Option<WriteWindow>,
    /// Fault each new window in on a helper thread (`Buffered` stores).
    prefault: bool,
    /// The helper, started with the first window.
    helper: Option<crate::store::writer::prefault::Prefaulter>,
}

impl Tail {
    /// The append position at `next_lsn` of the `active` (newest) segment, whose last record
    /// is `last_record`: what recovery hands the writer.
    pub(crate) fn at(
        active: Active,
        next_lsn: u64,
        last_record: Option<RecordLink>,
        options: &crate::store::options::StoreOptions,
    ) -> Result<Tail> {
        let durability = options.durability;
        let (allocated, layout) = match &active {
            Active::Open(seg) => {
                // The tail starts at a frame boundary: past the last record, inside the
                // active segment.
                debug_assert!(
                    last_record.is_none_or(|l| l.lsn < next_lsn) && next_lsn >= seg.first_lsn,
                    "a tail inside a record or before its segment"
                );
                (seg.file.at(&seg.path).len()?, seg.frame_layout())
            }
            // Set when the first write creates the segment.
            Active::Due => (SEGMENT_HEADER_LEN as u64, FrameLayout::Split),
            Active::Lent => return Err(halfway()),
        };
        Ok(Tail {
            active,
            next_lsn,
            last_record,
            space: Allocation {
                allocated,
                ahead_failed_at: None,
                zero_fill: None,
                last_fill: 0,
                segment_bytes_max: options.segment_bytes_max,
                preallocate: options.preallocate_bytes,
            },
            windows: Windows {
                current: None,
                next: None,
                prefault: durability == crate::store::options::Durability::Buffered,
                helper: None,
            },
            frame: Vec::new(),
            offsets: Vec::new(),
            layout,
            sync_store: durability == crate::store::options::Durability::Sync,
            epoch: WriterEpoch::new(options.clock.now_ms()),
            announced_in: None,
            syncs: Arc::default(),
        })
    }

    /// The turn to sync the log, for group commit to share.
    pub(crate) fn syncs(&self) -> &Arc<LogSyncs> {
        &self.syncs
    }

    /// Bytes written to the active segment after its header (none before it exists).
    fn active_bytes(&self) -> u64 {
        match &self.active {
            Active::Open(seg) => self.next_lsn - seg.first_lsn,
            Active::Due | Active::Lent => 0,
        }
    }

    /// The segment appends go into, when it exists.
    pub(crate) fn active_segment(&self) -> Option<&Arc<Segment>> {
        match &self.active {
            Active::Open(seg) => Some(seg),
            Active::Due | Active::Lent => None,
        }
    }

    /// The segment the next frame goes into, created first when it is due (durable: file
    /// and directory synced, as a roll always did), lent out of `self.active` (left
    /// [`Active::Lent`]): the caller puts it back.
    fn take_segment(
        &mut self,
        storage: &dyn Storage,
        segments: &SegmentList,
        now: &crate::limits::Now<'_>,
    ) -> Result<Arc<Segment>> {
        match std::mem::replace(&mut self.active, Active::Lent) {
            Active::Open(seg) => return Ok(seg),
            Active::Due => {}
            Active::Lent => return Err(halfway()),
        }
        let next = create_segment(storage, self.next_lsn, now.get())
            .inspect_err(|_| self.active = Active::Due)?;
        segments.push(Arc::clone(&next));
        self.layout = next.frame_layout();
        self.space.allocated = SEGMENT_HEADER_LEN as u64;
        Ok(next)
    }

    /// Hands `push` the location of each event of the record just written at `lsn` (the
    /// offsets `write_frame` left), in order.
    pub(crate) fn push_locations(&self, lsn: u64, mut push: impl FnMut(EventLoc)) {
        for &(offset, len) in &self.offsets {
            push(EventLoc { lsn, offset, len });
        }
    }

    /// Seals and writes one encoded frame (its payload after [`FRAME_HEADER_LEN`] reserved
    /// bytes, its events' offsets in [`Tail::offsets`]); returns its LSN. Rolls first if the
    /// active segment is non-empty and the frame would cross the size limit — then seals it,
    /// so the frame takes the layout of the segment it goes to; allocates the segment's space
    /// ahead when the frame would pass what is allocated.
    pub(crate) fn write_frame(
        &mut self,
        storage: &dyn Storage,
        segments: &SegmentList,
        kind: RecordKind,
        frame: &mut [u8],
        now: &crate::limits::Now<'_>,
    ) -> Result<u64> {
        let announce = match &self.active {
            Active::Open(seg) if self.announced_in == Some(seg.first_lsn) => 0,
            _ => EPOCH_FRAME_LEN,
        };
        self.roll_if_full(frame.len() + announce)?;
        let seg = self.take_segment(storage, segments, now)?;
        let written = self.write_into(&seg, kind, frame);
        self.active = Active::Open(seg);
        written
    }

    /// [`Tail::write_frame`] into `seg`, the active segment lent out of `self.active`.
    fn write_into(
        &mut self,
        seg: &Arc<Segment>,
        kind: RecordKind,
        frame: &mut [u8],
    ) -> Result<u64> {
        if self.announced_in != Some(seg.first_lsn) && self.layout == FrameLayout::Split {
            self.announce(seg)?;
        }
        let crc = seal_frame(kind, frame, self.layout, &self.offsets);
        self.place(seg, frame, crc, Ahead::Prepare)
    }

    /// [`Tail::write_frame`] when nothing on the way asks the file system for anything — the
    /// active segment open and its epoch record written, no roll due, the frame inside the
    /// space allocated, no zero-fill running — else `None`, nothing written. The space after
    /// it is left for the next write that may wait to prepare.
    pub(crate) fn try_write_frame(
        &mut self,
        kind: RecordKind,
        frame: &mut [u8],
    ) -> Result<Option<u64>> {
        let Active::Open(seg) = &self.active else {
            return Ok(None);
        };
        let len = frame.len() as u64;
        let end = seg.offset_of(self.next_lsn) + len;
        let at_once = self.announced_in == Some(seg.first_lsn)
            && SEGMENT_HEADER_LEN as u64 + self.active_bytes() + len
                <= self.space.segment_bytes_max
            && (end <= self.space.allocated || self.space.preallocate == 0)
            && self.space.zero_fill.is_none();
        if !at_once {
            return Ok(None);
        }
        // Lent as in `write_frame` (checked open above).
        let Active::Open(seg) = std::mem::replace(&mut self.active, Active::Lent) else {
            return Err(halfway());
        };
        let crc = seal_frame(kind, frame, self.layout, &self.offsets);
        let placed = self.place(&seg, frame, crc, Ahead::Later).map(Some);
        self.active = Active::Open(seg);
        placed
    }

    /// Whether a frame of at most `len` bytes would be copied into the current mapped window
    /// with nothing else done: no roll, no new segment or epoch record, no space to allocate
    /// or to prepare ahead (a lead of half the preallocation left after it), no zero-fill
    /// running, no `pwrite` — nothing a system call or a wait. Asked under the tail lock, so
    /// the answer holds for the write that follows.
    pub(crate) fn places_at_once(&self, len: u64) -> bool {
        let Active::Open(seg) = &self.active else {
            return false;
        };
        let at = seg.offset_of(self.next_lsn);
        let end = at + len;
        self.announced_in == Some(seg.first_lsn)
            && !self.sync_store
            && self.space.preallocate > 0
            && SEGMENT_HEADER_LEN as u64 + self.active_bytes() + len <= self.space.segment_bytes_max
            && end + self.space.preallocate / 2 <= self.space.allocated
            && self.space.zero_fill.is_none()
            && self.windows.current.as_ref().is_some_and(|w| {
                let (start, stop) = w.range();
                start <= at && end <= stop
            })
    }

    /// Writes a sealed frame (checksum `crc`) at the log's end in `seg`, the active segment;
    /// returns its LSN. `ahead`: whether the space after it is prepared now.
    fn place(&mut self, seg: &Arc<Segment>, frame: &[u8], crc: u32, ahead: Ahead) -> Result<u64> {
        let lsn = self.next_lsn;
        // The frame goes where the log ends, inside the active segment, after the last record.
        debug_assert!(lsn >= seg.first_lsn, "a frame before its segment");
        debug_assert!(
            self.last_record.is_none_or(|l| l.lsn < lsn),
            "LSNs ascend: the last record {:?}, this one {lsn}",
            self.last_record
        );
        let at = seg.offset_of(lsn);
        let end = at + frame.len() as u64;
        self.make_room(seg, at, end)?;
        if ahead == Ahead::Prepare {
            self.keep_ahead(seg, end);
        }
        self.copy(seg, at, frame)?;
        self.next_lsn += frame.len() as u64;
        self.last_record = Some(RecordLink { lsn, crc });
        debug_assert_eq!(
            seg.offset_of(self.next_lsn),
            end,
            "the log's end is where the frame ends"
        );
        Ok(lsn)
    }

    /// Writes this open's epoch record at the tail of `seg` (where the open's first record,
    /// or the segment's first, goes next). Only into a segment of this release's format: the
    /// previous release, which reads a format-3 segment, knows no epoch record.
    fn announce(&mut self, seg: &Arc<Segment>) -> Result<()> {
        let mut frame = [0u8; EPOCH_FRAME_LEN];
        frame[FRAME_HEADER_LEN..].copy_from_slice(&self.epoch.encode());
        // In the segment's layout, as every frame in it (no events: the frame CRC covers all).
        let crc = seal_frame(RecordKind::Epoch, &mut frame, self.layout, &[]);
        // The record it announces follows at once and prepares the space after both: a
        // `Sync` store's zero-fill started here would be waited for by that record.
        self.place(seg, &frame, crc, Ahead::Later)?;
        self.announced_in = Some(seg.first_lsn);
        Ok(())
    }

    /// The epoch this open writes under.
    pub(crate) fn epoch(&self) -> WriterEpoch {
        self.epoch
    }

    /// Whether this open wrote its epoch record (and records after it): the log's newest
    /// records are its.
    pub(crate) fn announced(&self) -> bool {
        self.announced_in.is_some()
    }

    /// Rolls if the active segment is non-empty and a frame of `frame_len` bytes would cross
    /// the size limit.
    fn roll_if_full(&mut self, frame_len: usize) -> Result<()> {
        if self.active_bytes() > 0
            && SEGMENT_HEADER_LEN as u64 + self.active_bytes() + frame_len as u64
                > self.space.segment_bytes_max
        {
            self.roll()?;
        }
        Ok(())
    }

    /// Allocation for a frame at file offset `at` ending at `end`: a running zero-fill there
    /// waited for, and (with preallocation) the next stretch allocated and mapped.
    fn make_room(&mut self, seg: &Arc<Segment>, at: u64, end: u64) -> Result<()> {
        if end > self.space.allocated {
            // The helper's zero-fill ahead may cover it: wait for it, never write into
            // space it is still writing zeros to.
            self.finish_zero_fill();
        }
        if self.space.preallocate == 0 || end <= self.space.allocated {
            return Ok(());
        }
        // A `Sync` store with nothing ready ahead (the first record after an open, after a
        // clean close gave the space back, or after a roll): the record extends the file
        // itself, and `keep_ahead` has the helper write zeros after it. Written here, the
        // zeros and their sync made that one append ~10× slower than the next
        // (`docs/PERFORMANCE.md`, "The first durable append after an open").
        // After a failed zero-fill at this length (a full disk) the appender allocates
        // itself, as below, and reports what fails.
        if self.sync_store
            && seg.file.writes_zeros_ahead()
            && self.space.ahead_failed_at != Some(self.space.allocated)
        {
            self.space.allocated = end;
            return Ok(());
        }
        // Never past the roll point (plus this frame, when one frame alone is larger).
        let target = (end + self.space.preallocate).min(self.space.segment_bytes_max.max(end));
        self.retire_windows();
        let file = &seg.file;
        let allocated = if self.sync_store {
            file.preallocate_written(self.space.allocated, target)
        } else {
            file.preallocate(target)
        }
        .map_err(|e| Error::io("allocate", &seg.path, e))?;
        self.space.allocated = target;
        // A map only over space really allocated; without one, `write_at` as before. A
        // `Sync` store writes each record with one `pwrite` (followed by its sync anyway): a
        // window would take a page fault on every page each sync's writeback cleaned.
        if allocated && !self.sync_store {
            self.windows.current = seg.file.map_window(at, target).ok().flatten();
            if let Some(window) = &self.windows.current
                && self.windows.prefault
            {
                if self.windows.helper.is_none() {
                    self.windows.helper = crate::store::writer::prefault::Prefaulter::spawn();
                    // No thread to be had: fault pages on this thread from now on.
                    self.windows.prefault = self.windows.helper.is_some();
                }
                if let Some(p) = &self.windows.helper {
                    p.submit(Job::Populate(window.prefault()));
                }
            }
        }
        Ok(())
    }

    /// With half the lead used (the frame ends at `end`), the next stretch is prepared on
    /// the helper, off the appender's path.
    fn keep_ahead(&mut self, seg: &Arc<Segment>, end: u64) {
        let (preallocate, max) = (self.space.preallocate, self.space.segment_bytes_max);
        let room =
            self.space.allocated < max && self.space.ahead_failed_at != Some(self.space.allocated);
        let due = end + preallocate / 2 > self.space.allocated && room;
        // Allocated, mapped and faulted in now, so the writer never reaches pages nobody
        // has faulted in yet.
        if due
            && self.windows.current.is_some()
            && self.windows.next.is_none()
            && self.windows.helper.is_some()
        {
            self.map_ahead(seg, preallocate, max);
        }
        // A `Sync` store: allocated, written with zeros and synced (the zero-fill's `pwrite`
        // led the appender's profile: PERFORMANCE.md). Nothing ready after this record (it
        // extended the file): a short stretch first, then, once half of the last is used,
        // each twice the last up to the full lead. The zeros are written while appends go
        // on, and an append's `fdatasync` writes those still dirty (same file): a whole
        // lead's worth at once, right after an open, made one of the first appends ~1 ms
        // slower (`docs/PERFORMANCE.md`, "The first durable append after an open").
        let extended = end >= self.space.allocated;
        if room
            && (extended || end + self.space.last_fill / 2 > self.space.allocated)
            && self.sync_store
            && preallocate > 0
            && self.space.zero_fill.is_none()
            && seg.file.writes_zeros_ahead()
        {
            let lead = if extended {
                FIRST_ZERO_FILL
            } else {
                self.space.last_fill.saturating_mul(2).max(FIRST_ZERO_FILL)
            }
            .min(preallocate);
            self.space.last_fill = lead;
            self.start_zero_fill(seg, lead, max);
        }
    }

    /// The frame copied into the window (or the next one, retiring the filled one), else
    /// written with `pwrite`. The header before the payload: a kill mid-copy then leaves a
    /// torn tail that recovery can cut, never a zero header with data after it
    /// (`WriteWindow::write`).
    fn copy(&mut self, seg: &Arc<Segment>, at: u64, frame: &[u8]) -> Result<()> {
        if self
            .windows
            .current
            .as_mut()
            .is_some_and(|w| w.write(at, FRAME_HEADER_LEN, frame))
        {
            return Ok(());
        }
        if let Some(next) = &mut self.windows.next
            && next.write(at, FRAME_HEADER_LEN, frame)
        {
            // The frame lies in the next window: the one before is filled, and goes to the
            // helper to be unmapped and written back.
            if let Some(done) =
                std::mem::replace(&mut self.windows.current, self.windows.next.take())
            {
                self.retire(done, Some(seg));
            }
            return Ok(());
        }
        seg.file.at(&seg.path).write_at(frame, at)
    }

    /// Allocates `preallocate` more bytes (never past the roll point) and maps them as the
    /// next window, faulted in on the helper thread. Nothing here fails an append: without
    /// the space (a full disk) the append that needs it allocates it and reports the error;
    /// without a map, appends past the current window `pwrite`, as without a map.
    fn map_ahead(&mut self, seg: &Arc<Segment>, preallocate: u64, segment_bytes_max: u64) {
        let from = self.space.allocated;
        let target = (from + preallocate).min(segment_bytes_max);
        let file = &seg.file;
        let Ok(allocated) = file.preallocate(target) else {
            self.space.ahead_failed_at = Some(from);
            return;
        };
        self.space.allocated = target;
        if allocated {
            self.windows.next = file.map_window(from, target).ok().flatten();
            if let (Some(window), Some(p)) = (&self.windows.next, &self.windows.helper) {
                p.submit(Job::Populate(window.prefault()));
            }
        }
    }

    /// Queues the zero-fill of the next `preallocate` bytes (never past the roll point) on
    /// the helper, started here if there is none yet; without a thread the appender
    /// allocates as before, when it needs the space.
    fn start_zero_fill(&mut self, seg: &Arc<Segment>, preallocate: u64, segment_bytes_max: u64) {
        if self.windows.helper.is_none() {
            self.windows.helper = crate::store::writer::prefault::Prefaulter::spawn();
        }
        let Some(p) = &self.windows.helper else {
            self.space.ahead_failed_at = Some(self.space.allocated);
            return;
        };
        let to = (self.space.allocated + preallocate).min(segment_bytes_max);
        let done = Arc::new(std::sync::OnceLock::new());
        p.submit(Job::ZeroFill {
            file: Arc::clone(&seg.file),
            from: self.space.allocated,
            to,
            done: Arc::clone(&done),
        });
        self.space.zero_fill = Some((to, done));
    }

    /// Waits for the helper's zero-fill, if one was queued, and takes its space; a failed
    /// one (a full disk) is not retried ahead at this length: the append that needs the
    /// space allocates it itself and reports the error.
    fn finish_zero_fill(&mut self) {
        let Some((to, done)) = self.space.zero_fill.take() else {
            return;
        };
        if let Some(p) = &self.windows.helper {
            p.wait_idle();
        }
        if done.get() == Some(&true) {
            self.space.allocated = self.space.allocated.max(to);
        } else {
            self.space.ahead_failed_at = Some(self.space.allocated);
        }
    }

    /// Hands a window the writer is done with to the helper, which unmaps it (an `munmap`
    /// costs the writer a TLB shootdown and the page-table teardown) and, for one `filled`
    /// in this segment, starts its writeback; without a helper it is unmapped here.
    fn retire(&self, window: WriteWindow, filled: Option<&Arc<Segment>>) {
        match &self.windows.helper {
            Some(p) => p.submit(Job::Retire(window, filled.map(|s| Arc::clone(&s.file)))),
            None => drop(window),
        }
    }

    /// Retires both windows (before an allocation that moves them, or the roll).
    fn retire_windows(&mut self) {
        for w in [self.windows.current.take(), self.windows.next.take()]
            .into_iter()
            .flatten()
        {
            self.retire(w, None);
        }
    }

    /// Before the writer lock goes (close, or the last handle dropped): the windows unmapped
    /// and the helper's queued work finished, its thread ended. A zero-fill still running
    /// after the lock was released would write zeros where the next writer — another
    /// process, or this one reopening — may already be appending.
    pub(crate) fn quiesce(&mut self) {
        self.windows.current = None;
        self.windows.next = None;
        // Waited for: the space it writes is this tail's to give back (`trim_ahead`).
        self.finish_zero_fill();
        // Dropping the helper runs what it has queued and joins it.
        self.windows.helper = None;
        self.windows.prefault = false;
    }

    /// After [`Tail::quiesce`], on a clean close: the space this tail allocated ahead of its
    /// last record cut off, so the next open's tail scan reads no zeros (up to a preallocated
    /// stretch of them at every open of a closed store: the largest part of an open that
    /// grew with the history, `docs/PERFORMANCE.md`). Not synced: a crash before the
    /// length is durable leaves the zeros, which an open reads as the clean end anyway. The
    /// next writer allocates again on its first append.
    ///
    /// At most once, and only what this tail allocated (never judged by the file's length):
    /// the last handle of a closed store is dropped after the lock is gone, when another
    /// writer may have appended past this tail's end. (A cut judged by the file's length,
    /// run again then, cut that writer's records: DSH's backend test found it, a deletion
    /// missing after a reopen; `a_dropped_closed_store_never_cuts_the_next_writers_records`.)
    pub(crate) fn trim_ahead(&mut self) -> Result<()> {
        debug_assert!(
            self.windows.current.is_none() && self.windows.helper.is_none(),
            "space cut under a mapped window"
        );
        let Active::Open(active) = &self.active else {
            return Ok(());
        };
        let used = active.offset_of(self.next_lsn);
        let allocated = std::mem::replace(&mut self.space.allocated, used);
        if allocated <= used {
            return Ok(());
        }
        active.file.at(&active.path).set_len(used)
    }

    /// Seals the active segment, when it holds records (compaction writes only sealed
    /// segments); the next write starts the next one.
    pub(crate) fn roll_now(&mut self) -> Result<()> {
        if self.active_bytes() == 0 {
            return Ok(());
        }
        self.roll()
    }

    /// Seals the active segment; the next write creates the next one.
    fn roll(&mut self) -> Result<()> {
        let Active::Open(active) = &self.active else {
            return Ok(());
        };
        let active = Arc::clone(active);
        // A sealed segment is exactly its records (the next one's LSN continues from its
        // length); its allocated space goes before the sync that makes it durable. Nothing
        // maps the active segment, so cutting it is safe (`storage/mmap.rs`).
        let used = active.offset_of(self.next_lsn);
        // The window goes first, and the helper's handle on it: a mapped range is never
        // truncated away.
        self.retire_windows();
        if let Some(p) = &self.windows.helper {
            p.wait_idle();
        }
        // Done (waited for above); the cut below takes the space it wrote, also where it
        // failed halfway (the file then reaches past `allocated`).
        let filled_ahead = self.space.zero_fill.is_some();
        self.finish_zero_fill();
        let len = if filled_ahead {
            active.file.at(&active.path).len()?
        } else {
            self.space.allocated
        };
        if self.space.allocated.max(len) > used {
            active.file.at(&active.path).set_len(used)?;
        }
        // In turn with group commit's syncs of the same file (`writer/syncs.rs`).
        self.syncs.sync(active.file.as_ref(), &active.path)?;
        active.seal();
        self.active = Active::Due;
        self.space.allocated = SEGMENT_HEADER_LEN as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use crate::store::options::StoreOptions;

    #[test]
    fn a_frame_is_placed_at_once_only_inside_the_mapped_space_with_its_lead_left() {
        let dir = tempfile::tempdir().expect("dir");
        let storage = crate::storage::FsStorage::new(dir.path());
        storage.create_dir_all("segments").expect("segments");
        let segments = SegmentList::default();
        let options = StoreOptions::default()
            .with_segment_bytes_max(8 << 20)
            .with_preallocate_bytes(1 << 20)
            .with_durability(crate::store::options::Durability::Buffered);
        let clock = crate::limits::Now::new(&options.clock);
        let mut tail = Tail::at(Active::Due, 40, None, &options).expect("tail");
        // No segment yet, then none announced: the first write creates and announces.
        assert!(!tail.places_at_once(100));
        let mut frame = vec![0u8; FRAME_HEADER_LEN + 84];
        tail.write_frame(&storage, &segments, RecordKind::Void, &mut frame, &clock)
            .expect("first");
        let window = tail.windows.current.as_ref().map(WriteWindow::range);
        if window.is_none() {
            // A file system that allocates no space ahead maps no window: every frame waits.
            assert!(!tail.places_at_once(100));
            return;
        }
        assert!(
            tail.places_at_once(100),
            "a small frame, mapped space ahead"
        );
        // Past the half lead, or past the roll point: the write prepares space or rolls.
        assert!(!tail.places_at_once(1 << 19));
        assert!(!tail.places_at_once(9 << 20));
        // Frames until the lead is short: then one write prepares the next stretch.
        let mut waited = 0;
        for _ in 0..20_000 {
            if !tail.places_at_once(frame.len() as u64) {
                waited += 1;
            }
            tail.write_frame(&storage, &segments, RecordKind::Void, &mut frame, &clock)
                .expect("frame");
        }
        assert!(waited > 0, "the lead ran short at least once");
        assert!(waited < 20_000 / 10, "{waited} of 20,000 frames waited");
        tail.windows.current = None;
        tail.windows.next = None;
        assert!(!tail.places_at_once(100), "no window: a `pwrite`");
    }

    #[test]
    fn a_write_finding_the_active_segment_still_lent_is_refused_and_makes_no_segment() {
        let storage = MemStorage::new();
        let segments = SegmentList::default();
        let options = StoreOptions::default();
        let clock = crate::limits::Now::new(&options.clock);
        let mut tail = Tail::at(Active::Due, 40, None, &options).expect("tail");
        // As a write that panicked halfway leaves it.
        tail.active = Active::Lent;
        let mut frame = vec![0u8; FRAME_HEADER_LEN + 8];
        let refused = tail.write_frame(&storage, &segments, RecordKind::Void, &mut frame, &clock);
        assert!(
            matches!(refused, Err(Error::Poisoned { ref cause }) if cause.contains("halfway")),
            "{refused:?}"
        );
        assert!(matches!(tail.active, Active::Lent));
        assert!(
            segments.last().is_none(),
            "no segment made behind the lent one"
        );
        assert!(
            storage.list("segments").unwrap_or_default().is_empty(),
            "no file made"
        );
        assert!(matches!(
            tail.try_write_frame(RecordKind::Void, &mut frame),
            Ok(None)
        ));
        assert!(matches!(
            Tail::at(Active::Lent, 40, None, &options),
            Err(Error::Poisoned { .. })
        ));
        // The next write after a write that finished takes the segment again.
        tail.active = Active::Due;
        let lsn = tail
            .write_frame(&storage, &segments, RecordKind::Void, &mut frame, &clock)
            .expect("written");
        assert!(matches!(tail.active, Active::Open(_)));
        assert!(segments.last().is_some());
        assert!(lsn >= 40);
    }
}

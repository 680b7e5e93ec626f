//! The segments a compaction writes again, written and put in place: worker threads stage
//! the new files (each built from compaction's one read — `rewrite.rs` — written under its
//! temp name and its writeback started, `file.rs`), and one thread puts them in place in
//! the log's order from the newest — a sync, one rename and a directory sync each — so every
//! state between two renames replays, as with one thread (`history.rs` says why the order).
//!
//! Staging is the CPU's part (the kept frames copied, the file written into the page cache;
//! `docs/PERFORMANCE.md`, Compaction), putting in place mostly the device's; the
//! workers stage the next files while the device writes and the putter waits for it. At most
//! `staged_max` bytes (one file at least) are staged and not yet in place: the disk space a
//! compaction takes beside the files it replaces. Fewer when the disk has less room
//! (`Storage::available_bytes`): a file is staged ahead only when it fits in what is free
//! (none at all when the disk is short of room: `staged_max` 0), and the one the putter waits
//! for is always staged — written once more after the releaser let go of everything if it
//! met a full disk — so a compaction needs room for one output file at a time, not for many. Each old file is let go (`Releaser`) as soon as its
//! replacement is in place, so its blocks are free for the next.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::Result;
use crate::codec::frame::RecordLink;
use crate::store::compact::Compaction;
use crate::store::compact::history::Rec;
use crate::store::compact::{Tombstones, rewrite};
use crate::store::log::segments::Segment;
use crate::store::report::SegmentCompaction;

/// What one pass of a compaction writes again: the segments of a snapshot (owned, so that
/// each old one can be let go once replaced) that hold one of `records` (sorted by LSN) or
/// are in `refresh`.
pub(super) struct Pass<'a> {
    pub(super) segments: Vec<Arc<Segment>>,
    pub(super) records: &'a [Rec],
    pub(super) refresh: &'a [usize],
    /// Where each old segment goes once replaced.
    pub(super) releaser: &'a Releaser,
}

/// Lets go of old segments on a thread of its own, as they are handed over: unmapping and
/// the kernel freeing the blocks of a replaced file take time the compaction need not wait
/// for, and the blocks come free for its next file as soon as the last holder lets go.
pub(crate) struct Releaser {
    tx: Option<mpsc::Sender<Vec<Arc<Segment>>>>,
    /// Hand-overs not yet dropped.
    pending: Arc<(Mutex<usize>, Condvar)>,
    when: Release,
    /// With [`Release::AtEnd`], what was handed over, sent when the releaser is dropped.
    held: Mutex<Vec<Arc<Segment>>>,
}

/// When a [`Releaser`] lets go of what it is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// As each is handed over: a disk short of room needs the blocks back for the next file.
    AtOnce,
    /// When the compaction is done: the unmapping then does not take the CPU from it.
    AtEnd,
}

impl Drop for Releaser {
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.held.lock());
        if !held.is_empty() {
            self.send(held);
        }
    }
}

impl Releaser {
    pub(crate) fn new(when: Release) -> Self {
        let (tx, rx) = mpsc::channel::<Vec<Arc<Segment>>>();
        let pending = Arc::new((Mutex::new(0usize), Condvar::new()));
        let count = Arc::clone(&pending);
        let spawned = std::thread::Builder::new()
            .name("sessdb-release".into())
            .spawn(move || {
                for held in rx {
                    drop(held);
                    let mut n = count.0.lock();
                    *n = n.saturating_sub(1);
                    count.1.notify_all();
                }
            });
        Self {
            tx: spawned.is_ok().then_some(tx),
            pending,
            when,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Hands `held` over: let go of now, or when the compaction is done (`Release`).
    pub(crate) fn release(&self, held: Vec<Arc<Segment>>) {
        match self.when {
            Release::AtOnce => self.send(held),
            Release::AtEnd => self.held.lock().extend(held),
        }
    }

    /// Sends `held` to the thread (dropped here when no thread could be started).
    fn send(&self, held: Vec<Arc<Segment>>) {
        if let Some(tx) = &self.tx {
            *self.pending.0.lock() += 1;
            if let Err(mpsc::SendError(held)) = tx.send(held) {
                *self.pending.0.lock() -= 1;
                drop(held);
            }
        }
    }

    /// Waits until everything handed over is let go: before a file that does not fit in
    /// the free space is written, the space the old files held is free (what no reader
    /// holds). At most a few seconds: then the write is tried all the same.
    pub(crate) fn settle(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut n = self.pending.0.lock();
        while *n > 0 {
            if self.pending.1.wait_until(&mut n, deadline).timed_out() {
                return;
            }
        }
    }
}

/// A segment whose new file is staged, with what putting it in place needs.
struct Pending<'a, 's> {
    seg: Arc<Segment>,
    drops: &'a [Rec],
    done: rewrite::Rewritten<'s>,
}

/// What is staged and not yet in place, and what is being staged; the workers wait on it.
#[derive(Default)]
struct AheadState {
    /// Files staged, not yet in place.
    files: usize,
    /// Their bytes.
    bytes: u64,
    /// The estimated bytes of the files being written now (not yet seen as used space).
    writing: u64,
    /// The index of the file the putter waits for.
    next_put: usize,
    /// Files let through to be written (in the putter's order: a later file never takes
    /// the room an earlier one needs).
    admitted: usize,
}

#[derive(Default)]
struct Ahead {
    state: Mutex<AheadState>,
    room: Condvar,
}

/// The blocks a file of `len` bytes (after the segment header) takes at most, counted in
/// 4 KiB blocks (a file system's usual block): every file takes at least one. Unknown: all.
pub(super) fn disk_bytes(len: Option<u64>) -> u64 {
    const BLOCK: u64 = 4096;
    len.map_or(u64::MAX, |l| {
        (l + crate::codec::segment::SEGMENT_HEADER_LEN as u64)
            .div_ceil(BLOCK)
            .max(1)
            .saturating_mul(BLOCK)
    })
}

/// How often a worker waiting for disk space looks again: space comes free as the releaser
/// lets old files go, which wakes nobody.
const SPACE_POLL: Duration = Duration::from_millis(20);

impl Ahead {
    /// Waits until file `k`, of about `estimate` bytes, may be staged: after every earlier
    /// file, and when it is the one the putter waits for (always: one file at a time at
    /// worst), or it fits both beside what is ahead (`max` bytes) and in the disk's free
    /// space (`available`, when known). `false` when the putter stopped.
    fn wait_for_room(
        &self,
        k: usize,
        estimate: u64,
        max: u64,
        available: &dyn Fn() -> Option<u64>,
        stopped: &dyn Fn() -> bool,
        settle: &dyn Fn(),
    ) -> bool {
        let mut state = self.state.lock();
        loop {
            if stopped() {
                return false;
            }
            if k > state.admitted {
                self.room.wait(&mut state);
                continue;
            }
            if k <= state.next_put {
                if available().is_some_and(|free| estimate > free) {
                    // The space the replaced files held comes free with the releaser.
                    parking_lot::MutexGuard::unlocked(&mut state, settle);
                }
                break;
            }
            // `max` 0: none ahead (a disk short of room: one file at a time).
            let beside =
                max > 0 && (state.files == 0 || state.bytes.saturating_add(state.writing) <= max);
            let fits =
                available().is_none_or(|free| state.writing.saturating_add(estimate) <= free);
            if beside && fits {
                break;
            }
            if fits {
                self.room.wait(&mut state);
            } else {
                let _ = self.room.wait_for(&mut state, SPACE_POLL);
            }
        }
        state.writing = state.writing.saturating_add(estimate);
        state.admitted = k + 1;
        self.room.notify_all();
        true
    }

    /// A file of about `estimate` bytes was written: `len` bytes, or none when it failed.
    fn staged(&self, estimate: u64, len: Option<u64>) {
        let mut state = self.state.lock();
        state.writing = state.writing.saturating_sub(estimate);
        if let Some(len) = len {
            state.files += 1;
            state.bytes += len;
        }
        self.room.notify_all();
    }

    fn put(&self, len: u64) {
        let mut state = self.state.lock();
        state.files = state.files.saturating_sub(1);
        state.bytes = state.bytes.saturating_sub(len);
        state.next_put += 1;
        self.room.notify_all();
    }

    /// Wakes every waiting worker (to see that the putter stopped).
    fn wake(&self) {
        let _state = self.state.lock();
        self.room.notify_all();
    }
}

/// Sets `stopped` and wakes the waiting workers when dropped by a panic.
struct StopOnPanic<'a> {
    stopped: &'a std::sync::atomic::AtomicBool,
    ahead: &'a Ahead,
}

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.stopped.store(true, Ordering::Release);
            self.ahead.wake();
        }
    }
}

/// One rewrite's shared state: the workers stage files ahead, one thread puts them in
/// place in order.
struct Run<'p> {
    compaction: &'p Compaction<'p>,
    records: &'p [Rec],
    /// The segments written again, in the order they are put in place (newest first).
    touched: Vec<usize>,
    slots: Vec<Mutex<Option<Arc<Segment>>>>,
    /// The next entry of `touched` a worker takes.
    next: AtomicUsize,
    ahead: Ahead,
    stopped: std::sync::atomic::AtomicBool,
    releaser: &'p Releaser,
    written: crate::store::compact::Written,
}

/// A staged file, by its place in `Run::touched`.
type Staged<'p> = (usize, Result<Pending<'p, 'p>>);

impl<'p> Run<'p> {
    /// A worker: stages the next segment while there is room, until none is left or the
    /// putter stopped.
    fn stage_ahead(&self, staged_tx: &mpsc::Sender<Staged<'p>>) {
        // A worker that panics stops the others (they may wait for room that only its file
        // would make); the scope then passes the panic on.
        let _guard = StopOnPanic {
            stopped: &self.stopped,
            ahead: &self.ahead,
        };
        let mut buf = Vec::new();
        let is_stopped = || self.stopped.load(Ordering::Acquire);
        let available = || {
            let storage = &self.compaction.store.storage;
            storage.available_bytes("segments").ok().flatten()
        };
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            let Ok((si, seg)) = self.segment(k) else {
                break;
            };
            // The new file holds at most the old one's bytes (the records kept, and a table
            // of 12 bytes for each record left out).
            let estimate = disk_bytes(seg.stored_bytes().ok());
            let settle = || self.releaser.settle();
            let room = self.ahead.wait_for_room(
                k,
                estimate,
                self.written.staged_max,
                &available,
                &is_stopped,
                &settle,
            );
            if !room {
                break;
            }
            let pending = self.stage(seg, si, &mut buf);
            let len = pending.as_ref().ok().map(|p| p.done.staged.file_len());
            self.ahead.staged(estimate, len);
            if staged_tx.send((k, pending)).is_err() {
                break;
            }
        }
    }

    /// Entry `k` of `touched`: its segment's place in the snapshot and the old segment, while
    /// its slot still holds it.
    fn segment(&self, k: usize) -> Result<(usize, Arc<Segment>)> {
        let si = self.touched.get(k).copied().ok_or(crate::Error::Closed)?;
        let seg = self.slots.get(si).and_then(|s| s.lock().clone());
        Ok((si, seg.ok_or(crate::Error::Closed)?))
    }

    fn stage(&self, seg: Arc<Segment>, si: usize, buf: &mut Vec<u8>) -> Result<Pending<'p, 'p>> {
        let w = &self.written;
        self.compaction
            .stage(seg, self.records, si, w.end_lsn, w.tombstones, buf)
    }

    /// The putter: each staged file put in place in order, the old one handed to the
    /// releaser.
    fn put_all(
        &self,
        staged: &mpsc::Receiver<Staged<'p>>,
        report: &mut crate::store::report::CompactReport,
        before_first_rename: &mut (dyn FnMut() -> Result<()> + Send),
    ) -> Result<()> {
        let mut arrived = BTreeMap::new();
        for k in 0..self.touched.len() {
            let pending = loop {
                if let Some(p) = arrived.remove(&k) {
                    break p;
                }
                match staged.recv() {
                    Ok((j, p)) => {
                        arrived.insert(j, p);
                    }
                    // Every worker gone before this one: one panicked.
                    Err(_) => return Err(crate::Error::Closed),
                }
            };
            let pending = match pending {
                // The disk was fuller than the file's admission saw (a replaced file's blocks
                // not yet given back): once everything handed to the releaser is let go,
                // this file — the one every later one waits for — is written once more, here.
                Err(crate::Error::NoSpace { .. }) => {
                    self.releaser.settle();
                    let (si, seg) = self.segment(k)?;
                    self.stage(seg, si, &mut Vec::new())?
                }
                other => other?,
            };
            // A store closing stops its compaction between two renames: every state between
            // two of them replays (what is staged is removed).
            if self.compaction.store.writer.is_closed() {
                return Err(crate::Error::Closed);
            }
            before_first_rename()?;
            let len = pending.done.staged.file_len();
            let si = self.touched.get(k).copied();
            let (done, old) = self.compaction.put_in_place(pending)?;
            report.segments.push(done);
            // Its blocks free once the last reader lets go too.
            let mut held = vec![old];
            held.extend(
                si.and_then(|si| self.slots.get(si))
                    .and_then(|s| s.lock().take()),
            );
            self.releaser.release(held);
            self.ahead.put(len);
        }
        Ok(())
    }
}

impl Compaction<'_> {
    /// Writes again the segments of `pass`, newest first, leaving its records out, staged up
    /// to `staged_max` bytes ahead of the one put in place. `before_first_rename` runs before
    /// the first file is put in place (and only then).
    ///
    /// # Errors
    /// The first failure in the log's order from the newest: every segment before it is in
    /// place, the files staged after it are removed.
    pub(super) fn rewrite_all(
        &self,
        pass: Pass<'_>,
        written: crate::store::compact::Written,
        report: &mut crate::store::report::CompactReport,
        before_first_rename: &mut (dyn FnMut() -> Result<()> + Send),
    ) -> Result<()> {
        let Pass {
            segments,
            records,
            refresh,
            releaser,
        } = pass;
        let mut touched: Vec<usize> = records.iter().map(|r| r.seg).collect();
        touched.extend_from_slice(refresh);
        touched.sort_unstable();
        touched.dedup();
        // The order they are put in place: newest first.
        touched.reverse();
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .clamp(1, 4)
            .min(touched.len().max(1));
        let run = Run {
            compaction: self,
            records,
            touched,
            // Each old segment in a slot of its own, emptied once its replacement is in place.
            slots: segments.into_iter().map(|s| Mutex::new(Some(s))).collect(),
            next: AtomicUsize::new(0),
            ahead: Ahead::default(),
            stopped: std::sync::atomic::AtomicBool::new(false),
            releaser,
            written,
        };
        let put = std::thread::scope(|s| {
            let (staged_tx, staged) = mpsc::channel::<(usize, Result<Pending<'_, '_>>)>();
            for _ in 0..workers {
                let staged_tx = staged_tx.clone();
                let run = &run;
                s.spawn(move || run.stage_ahead(&staged_tx));
            }
            drop(staged_tx);
            // This thread puts the files in place, in order.
            let put = run.put_all(&staged, report, before_first_rename);
            run.stopped.store(true, Ordering::Release);
            run.ahead.wake();
            put
        });
        let Run { slots, .. } = run;
        releaser.release(slots.into_iter().filter_map(Mutex::into_inner).collect());
        put
    }

    /// Stages `seg`, segment `si` of the snapshot, written again without its records in
    /// `records`.
    fn stage<'a>(
        &'a self,
        seg: Arc<Segment>,
        records: &'a [Rec],
        si: usize,
        checked_to: u64,
        tombstones: Tombstones,
        buf: &mut Vec<u8>,
    ) -> Result<Pending<'a, 'a>> {
        // The records of one segment are neighbours in LSN order.
        let from = records.partition_point(|r| r.lsn < seg.first_lsn);
        let to = from + records[from..].partition_point(|r| r.seg == si);
        let drops: &'a [Rec] = &records[from..to];
        let job = rewrite::Job {
            seg: &seg,
            drops,
            checked_to,
            now_ms: self.store.options.clock.now_ms(),
            tombstones,
            sealed_at: None,
        };
        let done = rewrite::rewrite(&*self.store.storage, &job, buf)?;
        Ok(Pending { seg, drops, done })
    }

    /// Puts a staged segment in place of the old one: the file, then the list (a reader
    /// holding the old one reads it to the end), then the writer's last record. Returns the
    /// old segment, to be let go.
    fn put_in_place(&self, p: Pending<'_, '_>) -> Result<(SegmentCompaction, Arc<Segment>)> {
        let Pending { seg, drops, done } = p;
        let segment = done.staged.commit(&*self.store.storage)?;
        {
            let mut list = self.store.segments.write();
            if let Some(slot) = list.iter_mut().find(|s| s.first_lsn == seg.first_lsn) {
                *slot = Arc::clone(&segment);
            }
        }
        // The writer's last record left out: the next checkpoint names the void that
        // ends the segment instead.
        if let Some(void) = done.end_void {
            let mut tail = self.store.writer.tail();
            let in_segment = |l: RecordLink| {
                l.lsn >= seg.first_lsn && segment.end_lsn().is_ok_and(|e| l.lsn < e)
            };
            let dropped = |l: RecordLink| drops.iter().any(|r| r.lsn == l.lsn);
            if let Some(t) = tail.as_mut()
                && t.last_record.is_some_and(|l| in_segment(l) && dropped(l))
            {
                t.last_record = Some(void);
            }
        }
        let report = SegmentCompaction {
            segment: seg.path.clone(),
            bytes_before: done.bytes_before,
            bytes_after: done.bytes_after,
            records_dropped: done.records_dropped,
        };
        Ok((report, seg))
    }
}

//! The segments a compaction writes again, written and put in place: worker threads stage
//! the new files (each built from compaction's one read — `rewrite.rs` — written under its
//! temp name and its writeback started, `file.rs`), and one thread puts them in place in
//! the log's order from the newest — a sync, one rename and a directory sync each — so every
//! state between two renames replays, as with one thread (`history.rs` says why the order).
//!
//! Staging is the CPU's part (the kept frames copied, the file written into the page cache:
//! ~70 ms of the DSH mix's 97 MB on one thread), putting in place mostly the device's; the
//! workers stage the next files while the device writes and the putter waits for it. At most
//! `staged_max` bytes (one file at least) are staged and not yet in place: the disk space a
//! compaction takes beside the files it replaces.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use parking_lot::{Condvar, Mutex};

use super::history::Rec;
use super::{Tombstones, rewrite};
use crate::Result;
use crate::codec::frame::RecordLink;
use crate::store::inner::Inner;
use crate::store::report::SegmentCompaction;
use crate::store::segments::Segment;

/// What one pass of a compaction writes again: the segments of a snapshot that hold one of
/// `records` (sorted by LSN) or are in `refresh`.
#[derive(Clone, Copy)]
pub(super) struct Pass<'a> {
    pub(super) segments: &'a [Arc<Segment>],
    pub(super) records: &'a [Rec],
    pub(super) refresh: &'a [usize],
}

/// A segment whose new file is staged, with what putting it in place needs.
struct Pending<'a, 's> {
    seg: &'a Arc<Segment>,
    drops: &'a [Rec],
    done: rewrite::Rewritten<'s>,
}

/// Bytes staged and not yet in place, and how many files; the workers wait on it.
#[derive(Default)]
struct Ahead {
    state: Mutex<(usize, u64)>,
    room: Condvar,
}

impl Ahead {
    /// Waits until a file may be staged: none ahead, or fewer than `max` bytes; `false`
    /// when the putter stopped.
    fn wait_for_room(&self, max: u64, stopped: &dyn Fn() -> bool) -> bool {
        let mut state = self.state.lock();
        while state.0 > 0 && state.1 > max {
            if stopped() {
                return false;
            }
            self.room.wait(&mut state);
        }
        !stopped()
    }

    fn staged(&self, len: u64) {
        let mut state = self.state.lock();
        state.0 += 1;
        state.1 += len;
    }

    fn put(&self, len: u64) {
        let mut state = self.state.lock();
        state.0 = state.0.saturating_sub(1);
        state.1 = state.1.saturating_sub(len);
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

impl Inner {
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
        checked_to: u64,
        tombstones: Tombstones,
        report: &mut crate::store::report::CompactReport,
        staged_max: u64,
        before_first_rename: &mut (dyn FnMut() -> Result<()> + Send),
    ) -> Result<()> {
        let Pass {
            segments,
            records,
            refresh,
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
        let next = AtomicUsize::new(0);
        let ahead = Ahead::default();
        let stopped = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let (staged_tx, staged) = mpsc::channel::<(usize, Result<Pending<'_, '_>>)>();
            for _ in 0..workers {
                let staged_tx = staged_tx.clone();
                let (next, ahead, stopped, touched) = (&next, &ahead, &stopped, &touched);
                s.spawn(move || {
                    // A worker that panics stops the others (they may wait for room that
                    // only its file would make); the scope then passes the panic on.
                    let _guard = StopOnPanic { stopped, ahead };
                    let mut buf = Vec::new();
                    let is_stopped = || stopped.load(Ordering::Acquire);
                    while ahead.wait_for_room(staged_max, &is_stopped) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&si) = touched.get(k) else { break };
                        let pending =
                            self.stage(segments, records, si, checked_to, tombstones, &mut buf);
                        if let Ok(p) = &pending {
                            ahead.staged(p.done.staged.file_len());
                        }
                        if staged_tx.send((k, pending)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(staged_tx);
            // This thread puts the files in place, in order.
            let put = (|| -> Result<()> {
                let mut arrived = BTreeMap::new();
                for k in 0..touched.len() {
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
                    let pending: Pending<'_, '_> = pending?;
                    // A store closing stops its compaction between two renames: every
                    // state between two of them replays (what is staged is removed).
                    if self.is_closed() {
                        return Err(crate::Error::Closed);
                    }
                    before_first_rename()?;
                    let len = pending.done.staged.file_len();
                    report.segments.push(self.put_in_place(pending)?);
                    ahead.put(len);
                }
                Ok(())
            })();
            stopped.store(true, Ordering::Release);
            ahead.wake();
            put
        })
    }

    /// Stages segment `si` of the snapshot written again without its records in `records`.
    fn stage<'a>(
        &'a self,
        segments: &'a [Arc<Segment>],
        records: &'a [Rec],
        si: usize,
        checked_to: u64,
        tombstones: Tombstones,
        buf: &mut Vec<u8>,
    ) -> Result<Pending<'a, 'a>> {
        let seg = segments.get(si).ok_or(crate::Error::Closed)?;
        // The records of one segment are neighbours in LSN order.
        let from = records.partition_point(|r| r.lsn < seg.first_lsn);
        let to = from + records[from..].partition_point(|r| r.seg == si);
        let job = rewrite::Job {
            seg,
            drops: &records[from..to],
            checked_to,
            record_bytes_max: self.options.record_bytes_max,
            now_ms: self.options.clock.now_ms(),
            tombstones,
        };
        let done = rewrite::rewrite(&*self.storage, &job, buf)?;
        Ok(Pending {
            seg,
            drops: job.drops,
            done,
        })
    }

    /// Puts a staged segment in place of the old one: the file, then the list (a reader
    /// holding the old one reads it to the end), then the writer's last record.
    fn put_in_place(&self, p: Pending<'_, '_>) -> Result<SegmentCompaction> {
        let Pending { seg, drops, done } = p;
        let segment = done.staged.commit(&*self.storage)?;
        {
            let mut list = self.segments.write();
            if let Some(slot) = list.iter_mut().find(|s| s.first_lsn == seg.first_lsn) {
                *slot = Arc::clone(&segment);
            }
        }
        // The writer's last record left out: the next checkpoint names the void that
        // ends the segment instead.
        if let Some(void) = done.end_void {
            let mut tail = self.tail.lock();
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
        Ok(SegmentCompaction {
            segment: seg.path.clone(),
            bytes_before: done.bytes_before,
            bytes_after: done.bytes_after,
            records_dropped: done.records_dropped,
        })
    }
}

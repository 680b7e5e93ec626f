//! The [`Store`] API: what embedders call; each method sequences the shared [`Inner`]'s
//! parts (look up, plan, write, read).

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::codec::EventLoc;
use crate::event::Event;
use crate::event::view::EventRef;
use crate::limits::Now;
use crate::model::{
    ForkSpec, Message, ResumeReport, SessionHeader, SessionState, derive_message_parts,
    resume_events,
};
use crate::storage::{Checked, CheckedFile};
use crate::storage::{FsStorage, Storage};
use crate::store::catalog::entries::{Batch, Prechecked, SessionEntry};
use crate::store::compact::{Compaction, Run, Scope, Space};
use crate::store::info::{
    CheckpointInfo, DiskUsage, ListOptions, ListedRow, MemoryUsage, SessionInfo, StoreStats,
};
use crate::store::inner::Inner;
use crate::store::log::record_at::LogMark;
use crate::store::maintenance::MaintenanceStatus;
use crate::store::maintenance::retention::{Retention, RetentionReport};
use crate::store::open::{self, refresh};
use crate::store::options::RetentionPolicy;
use crate::store::options::StoreOptions;
use crate::store::report::{CompactReport, OpenReport};
use crate::store::subscribe::Subscription;
use crate::store::writer::Access;
use crate::store::writer::Attempt;
use crate::{Draft, Error, Result};

/// What [`Store::try_append_events`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum TryAppend {
    /// Appended: the seqs the events took.
    Appended(std::ops::Range<u64>),
    /// Nothing written, the append would have waited: the events, unchanged.
    WouldWait(Vec<Event>),
}

/// An open store. Clones share it; it is `Send + Sync`. The writer lock is released when the
/// last clone is dropped (or at [`Store::close`]): a [`Subscription`] alone does not keep it.
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) inner: Arc<Inner>,
    /// Shared by the clones (not by subscriptions): the last one dropped lets the lock go.
    _handle: Arc<Handle>,
}

/// Releases the writer lock when the last [`Store`] clone is dropped.
#[derive(Debug)]
struct Handle(Arc<Inner>);

impl Drop for Handle {
    fn drop(&mut self) {
        // Nothing more can be written: subscribers see the store closed, the background
        // work and the helper stop, the lock goes.
        self.0.writer.close();
        self.0.maintenance.stop();
        self.0.checkpointer.stop();
        // A failed cut leaves zeros an open reads as the clean end: nothing to report.
        let _ = self.0.writer.quiesce();
        self.0.lock.lock().take();
        self.0.writer.notify();
    }
}

impl Store {
    /// A store over an open `Inner`.
    pub(super) fn from_inner(inner: Inner) -> Store {
        let inner = Arc::new(inner);
        inner.attach_checkpointer();
        crate::store::maintenance::background::start(&inner);
        Store {
            _handle: Arc::new(Handle(Arc::clone(&inner))),
            inner,
        }
    }
}

impl Store {
    /// Opens (creating if needed) the store in directory `dir` for writing. A store is
    /// created only in a new or empty directory.
    ///
    /// A store keeps one file open per segment: when an open of a file meets the process's
    /// soft limit on open files (`RLIMIT_NOFILE`), the store raises that limit towards the
    /// hard one for the whole process (as Node and Go do at start) and goes on.
    ///
    /// # Errors
    /// `NotAStore` for a directory that holds other files and no store, `Locked` if another
    /// writer has it, `Corruption` for damage that is not a torn tail (unless
    /// `options.salvage`), I/O errors.
    pub fn open(dir: impl AsRef<std::path::Path>, options: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref();
        refuse_foreign_dir(dir)?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io("create directory", dir.display().to_string(), e))?;
        Self::open_with(Arc::new(FsStorage::new(dir)), options)
    }

    /// Opens the store in `dir` read-only: works while a writer is live, treats an
    /// incomplete tail as the end, repairs nothing, creates nothing. Of `options`, what
    /// concerns reading applies (limits, `ignore_checkpoints`, `progress`); the write
    /// settings are unused.
    ///
    /// The view is what the store held at the open until [`Store::refresh`] — with one
    /// exception: its older segments are opened at their first use (`docs/DESIGN.md`
    /// §3.6), and where a writer's compaction (or a salvage) rewrote them before that, the
    /// first read that needs them builds the view again from the files as they are, as
    /// `refresh` does, and answers from there (a session deleted and compacted away
    /// meanwhile is then gone).
    ///
    /// # Errors
    /// `Io` of kind `NotFound` when `dir` holds no store (it does not exist, or has no
    /// `segments/` directory: a typo is not an empty store); `Corruption`, other I/O errors.
    pub fn open_read_only(
        dir: impl AsRef<std::path::Path>,
        options: StoreOptions,
    ) -> Result<Store> {
        let dir = dir.as_ref();
        let segments = dir.join(crate::codec::segment::SEGMENTS_DIR);
        if !segments.is_dir() {
            let why = if dir.exists() {
                "holds no sessdb store (no segments/ directory)"
            } else {
                "no such directory"
            };
            return Err(Error::io(
                "open read-only",
                dir.display().to_string(),
                std::io::Error::new(std::io::ErrorKind::NotFound, why),
            ));
        }
        Self::open_read_only_with(Arc::new(FsStorage::new(dir)), options)
    }

    /// Opens a store on any storage backend for writing.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<Store> {
        open::open(
            storage,
            options,
            open::Access::Write,
            open::Horizon::End,
            open::Judging::Newest,
        )
        .map(Store::from_inner)
    }

    /// Opens a store on any storage backend read-only.
    ///
    /// # Errors
    /// As [`Store::open_read_only`].
    pub fn open_read_only_with(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<Store> {
        open::open(
            storage,
            options,
            open::Access::Read,
            open::Horizon::End,
            open::Judging::Newest,
        )
        .map(Store::from_inner)
    }

    /// What the open found and did.
    pub fn open_report(&self) -> &OpenReport {
        &self.inner.report
    }

    /// Stores a session exactly as given (every event accepted, nothing appended): what
    /// import uses. Returns the session's length.
    ///
    /// # Errors
    /// As [`Store::create_session`].
    pub fn restore_session(&self, header: SessionHeader, events: Vec<Event>) -> Result<u64> {
        self.inner
            .create(header, events, crate::store::catalog::write::Seed::Exact)
    }

    /// Appends one event; returns its seq.
    ///
    /// # Errors
    /// `SessionNotFound`, `Rejected`, `ReadOnly`, `Poisoned`, write errors.
    pub fn append(&self, session: &str, draft: Draft) -> Result<u64> {
        // The event is made and checked by its own rules before the write lock (appenders
        // do that side by side); under it, it takes its seq and the session's rules.
        let now = Now::new(&self.inner.options.clock);
        let event = draft.into_event_with(0, || now.get());
        let checked = crate::model::precheck(&event, &self.inner.options.limits);
        self.inner.append_one(session, event, checked)
    }

    /// Appends a batch atomically (all or none, also on recovery); returns the seqs taken.
    ///
    /// # Errors
    /// As [`Store::append`]; a refused event refuses the whole batch.
    pub fn append_batch(&self, session: &str, drafts: Vec<Draft>) -> Result<std::ops::Range<u64>> {
        // As `append`: made and checked before the lock, numbered under it.
        let now = Now::new(&self.inner.options.clock);
        let mut events: Vec<Event> = drafts
            .into_iter()
            .map(|d| d.into_event_with(0, || now.get()))
            .collect();
        let checked = Prechecked::of(&events, &self.inner.options.limits);
        self.inner.write_events(session, move |entry, _| {
            let first = entry.state.next_seq();
            for (seq, event) in (first..).zip(events.iter_mut()) {
                event.set_seq(seq);
            }
            Ok(Batch { events, checked })
        })
    }

    /// Appends complete events (their seqs must continue the session): the runtime-checked
    /// path for callers with dynamic events.
    ///
    /// # Errors
    /// As [`Store::append_batch`].
    pub fn append_events(&self, session: &str, events: Vec<Event>) -> Result<std::ops::Range<u64>> {
        let checked = Prechecked::of(&events, &self.inner.options.limits);
        self.inner
            .write_events(session, move |_, _| Ok(Batch { events, checked }))
    }

    /// [`Store::append_events`] where nothing on the way waits — no lock another write or a
    /// reader holds, no sync (a `Sync` store always waits for one), no roll, new segment or
    /// space asked of the file system, no session read from its checkpoint file, no
    /// checkpoint written by the appender — else nothing is written and the events come back
    /// in [`TryAppend::WouldWait`], for [`Store::append_events`] (or the same call later).
    /// For a caller that must not block, such as an event loop, which hands only what comes
    /// back to a thread that may wait. A refused event is an error here as there.
    ///
    /// # Errors
    /// As [`Store::append_events`].
    pub fn try_append_events(&self, session: &str, events: Vec<Event>) -> Result<TryAppend> {
        if !self.inner.appends_at_once() {
            return Ok(TryAppend::WouldWait(events));
        }
        let checked = Prechecked::of(&events, &self.inner.options.limits);
        Ok(
            match self.inner.try_append_events(session, events, checked)? {
                Attempt::Done(range) => TryAppend::Appended(range),
                Attempt::WouldWait(events) => TryAppend::WouldWait(events),
            },
        )
    }

    /// Prepares a session for writing after a crash (DSH resume): if its last turn is open,
    /// appends the repair closers, then `session/end-seed {}` unless the log already ends with
    /// one. One record.
    ///
    /// # Errors
    /// As [`Store::append_batch`].
    pub fn resume(&self, session: &str) -> Result<ResumeReport> {
        let mut report = ResumeReport::default();
        let inner = &self.inner;
        inner.write_events(session, |entry, now| {
            let last = match entry.state.next_seq().checked_sub(1) {
                Some(seq) => crate::store::catalog::event_of(&inner.segments, entry, seq)?,
                None => None,
            };
            let (events, r) = resume_events(
                &entry.state,
                last.as_ref().map(Event::event_type),
                now.get(),
            );
            report = r;
            Ok(events.into())
        })?;
        Ok(report)
    }

    /// Forks `source` by reference (DSH v0 rules): the child shares the parent's records for
    /// seqs `0..seedLength`; the log grows by one small record. Returns the child id.
    ///
    /// # Errors
    /// `Fork` with its DSH code, write errors.
    pub fn fork(&self, source: &str, spec: ForkSpec) -> Result<String> {
        self.inner.fork(source, spec)
    }

    /// Compacts the log: every record no session reads any more (of deleted sessions, void
    /// space) is left out of the segments, which are written again; a full checkpoint
    /// follows and the older checkpoints go. Afterwards no file of the store holds a byte of
    /// a deleted session's events (`docs/RELIABILITY.md` says what that does and does not
    /// promise). Runs beside appends and reads; one compaction at a time.
    ///
    /// # Errors
    /// `ReadOnly`, `Corruption` when the log is damaged (repair first), write errors.
    pub fn compact(&self) -> Result<CompactReport> {
        Compaction { store: &self.inner }
            .compact(Run::Apply, Scope::All)
            .map(|o| o.report)
    }

    /// What [`Store::compact`] would leave out, per segment, with the figures the run would
    /// report; changes nothing, so a read-only store (beside a writer) answers it too.
    ///
    /// # Errors
    /// `Closed`, `Corruption`, I/O errors.
    pub fn compact_plan(&self) -> Result<CompactReport> {
        self.reading(Rerun::OrReplaced, || {
            Compaction { store: &self.inner }
                .compact(Run::Plan, Scope::All)
                .map(|o| o.report)
        })
    }

    /// The log's live and dead record bytes, per segment: one read of the whole log (works
    /// read-only, beside a writer). Dead bytes are what [`Store::compact`] gives back.
    ///
    /// # Errors
    /// `Closed`, `Corruption` when the log is damaged, I/O errors.
    pub fn space(&self) -> Result<Space> {
        self.check_open()?;
        self.reading(Rerun::OrReplaced, || {
            Compaction { store: &self.inner }.space()
        })
    }

    /// Deletes a session. Its records stay in the log until a compaction
    /// ([`Store::compact`]) leaves them out; forks of it keep their inherited events.
    ///
    /// # Errors
    /// `SessionNotFound`, write errors.
    pub fn delete_session(&self, session: &str) -> Result<()> {
        self.inner.delete(session)
    }

    /// Deletes every session in `ids`, each as [`Store::delete_session`] does. All are
    /// looked up first: an unknown id deletes nothing.
    ///
    /// # Errors
    /// `SessionNotFound` naming the first unknown id, write errors.
    pub fn delete_sessions(&self, ids: &[&str]) -> Result<()> {
        Retention { store: &self.inner }.delete_all(ids)
    }

    /// Deletes every session whose last event (its creation, when it has none) is older than
    /// `age` by the store's clock; with `dry_run`, only says which (a read-only store
    /// answers that too).
    ///
    /// # Errors
    /// `ReadOnly` (unless `dry_run`), `Closed`, write errors.
    pub fn delete_older_than(
        &self,
        age: std::time::Duration,
        dry_run: bool,
    ) -> Result<RetentionReport> {
        Retention { store: &self.inner }.delete_older_than(age, dry_run)
    }

    /// Applies a retention policy once (the writer applies [`StoreOptions::retention`] by
    /// itself; this is for a policy of the caller's, or to apply it now). With
    /// `max_live_bytes`, the first call reads the whole log to learn the dead bytes.
    ///
    /// # Errors
    /// `ReadOnly`, `Closed`, `Corruption` (reading the log), write errors.
    pub fn apply_retention(
        &self,
        policy: &RetentionPolicy,
        dry_run: bool,
    ) -> Result<RetentionReport> {
        Retention { store: &self.inner }.apply_retention(policy, dry_run)
    }

    /// What the writer's background work (retention, compaction by policy) has done.
    pub fn maintenance(&self) -> MaintenanceStatus {
        self.inner.maintenance.status()
    }

    /// Waits until the background work has nothing running and nothing due (a timer not yet
    /// run out is not due), or `timeout` passes: `false` then.
    pub fn wait_maintenance(&self, timeout: std::time::Duration) -> bool {
        self.inner.maintenance.wait_idle(timeout)
    }

    /// The events of `range`, any range of seqs (`..`, `3..`, `3..=7`, `from..to`), clamped to
    /// the session's length — the one range spelling of every method that takes one.
    ///
    /// # Errors
    /// `SessionNotFound`, read errors.
    pub fn events(&self, session: &str, range: impl RangeBounds<u64>) -> Result<Vec<Event>> {
        let (from, to) = bounds(range);
        self.reading(Rerun::OrReplaced, || {
            let locs = self.locs(session, from, to)?;
            self.inner.segments.read_events(&locs)
        })
    }

    /// Hands the events of `range` to `f` in order, each borrowed from the bytes read (its
    /// checksum checked, no owned event built): the cheapest way to write events out.
    ///
    /// # Errors
    /// `SessionNotFound`, read errors, and any error `f` returns (which stops the visit).
    pub fn visit_events(
        &self,
        session: &str,
        range: impl RangeBounds<u64>,
        mut f: impl FnMut(EventRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let (from, to) = bounds(range);
        self.reading(Rerun::Overtaken, || {
            let locs = self.locs(session, from, to)?;
            self.inner.segments.visit_events(&locs, &mut f)
        })
    }

    /// Runs `read`; when a read-only view's older segments turn out rewritten by a writer
    /// since the view opened (`Error::Overtaken`: it opens them at their first use,
    /// `docs/DESIGN.md` §3.6), builds the view again from the files as they are — as
    /// [`Store::refresh`] does — and runs `read` again, against that view. `read` meets
    /// that error before it hands out anything (`SegmentList::visit_events`). With
    /// [`Rerun::OrReplaced`], a read that took its locations from the view before another
    /// thread built it again, and met damage reading them from the files it has now, runs
    /// again too: the locations were of the view replaced. A view built again while the
    /// writer compacts on may find a file replaced under it again (`refresh` then keeps the
    /// view, and the read is overtaken again): up to [`REREADS`] runs more, as a listing
    /// beside a writer is taken again.
    fn reading<T>(&self, rerun: Rerun, mut read: impl FnMut() -> Result<T>) -> Result<T> {
        let mut tries = 0;
        loop {
            let built = self.inner.segments.replaced();
            match read() {
                Err(Error::Overtaken { .. }) if tries < REREADS => {
                    self.refresh()?;
                }
                Err(Error::Corruption { .. })
                    if tries < REREADS
                        && rerun == Rerun::OrReplaced
                        && self.inner.segments.replaced() != built => {}
                other => return other,
            }
            tries += 1;
        }
    }

    /// The locations of `from..to`, copied under the catalog's read lock.
    fn locs(&self, session: &str, from: u64, to: u64) -> Result<Vec<(u64, EventLoc)>> {
        self.check_open()?;
        let cat = self.inner.catalog.read_with(session)?;
        let e = cat.get(session)?;
        let to = to.min(e.state.next_seq());
        (from..to)
            .filter_map(|s| e.locs.get(s).map(|l| l.map(|l| (s, l))).transpose())
            .collect()
    }

    /// The events of `range` as an iterator that reads a window of events at a time: memory
    /// stays bounded by the window, not the range (an export of a long session, a `show`).
    /// The session's length is taken now; events appended later are not included.
    ///
    /// # Errors
    /// `SessionNotFound` now; each item carries the read errors of its window.
    pub fn iter_events(
        &self,
        session: &str,
        range: impl RangeBounds<u64>,
    ) -> Result<EventIter<'_>> {
        let (from, to) = bounds(range);
        let end = to.min(self.session_len(session)?);
        Ok(EventIter {
            store: self,
            session: session.to_owned(),
            next: from,
            end,
            window: std::collections::VecDeque::new(),
        })
    }

    /// The last `n` events.
    ///
    /// # Errors
    /// As [`Store::events`].
    pub fn last_events(&self, session: &str, n: u64) -> Result<Vec<Event>> {
        let len = self.session_len(session)?;
        self.events(session, len.saturating_sub(n)..len)
    }

    /// The number of events of a session.
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn session_len(&self, session: &str) -> Result<u64> {
        self.with_entry(session, |e| e.state.next_seq())
    }

    /// The header of a session.
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn header(&self, session: &str) -> Result<SessionHeader> {
        self.with_entry(session, |e| e.header.clone())
    }

    /// The derived state of a session (surface, repair state, turn marks).
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn state(&self, session: &str) -> Result<SessionState> {
        self.with_entry(session, |e| e.state.clone())
    }

    /// The surface of a session.
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn surface(&self, session: &str) -> Result<Vec<u64>> {
        self.with_entry(session, |e| e.state.surface().seqs().to_vec())
    }

    /// `deriveMessages()`: the message of every surface node, its JSON exactly as stored (as
    /// [`crate::Session::messages`], owning the bytes read from the log).
    ///
    /// # Errors
    /// As [`Store::events`].
    pub fn messages(&self, session: &str) -> Result<Vec<Message>> {
        self.reading(Rerun::OrReplaced, || self.messages_once(session))
    }

    /// [`Store::messages`], from the view as it is.
    fn messages_once(&self, session: &str) -> Result<Vec<Message>> {
        let locs: Vec<(u64, EventLoc)> = self.with_entry(session, |e| {
            e.state
                .surface()
                .seqs()
                .iter()
                .filter_map(|&s| e.locs.get(s).map(|l| l.map(|l| (s, l))).transpose())
                .collect::<Result<_>>()
        })??;
        // Each event borrowed where it was read: only the message's own bytes are copied.
        let mut out = Vec::with_capacity(locs.len());
        self.inner.segments.visit_events(&locs, &mut |e| {
            if let Some(m) = derive_message_parts(e.seq(), e.event_type(), e.data()) {
                out.push(m.into_owned());
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Every live session, in id order.
    ///
    /// # Errors
    /// As [`Store::list_by`].
    pub fn list(&self) -> Result<Vec<SessionInfo>> {
        self.list_by(ListOptions::default())
    }

    /// The live sessions `options` asks for: in its order (ties by id) from the end it
    /// names, at most its limit. Only the sessions returned are copied out: the first 20 of
    /// 100,000 by last update are picked by the keys the checkpoint's index holds, then only
    /// those 20 are decoded (a session not read since the open stays undecoded).
    ///
    /// ```
    /// # use sessdb::{Store, StoreOptions, SessionHeader};
    /// # use sessdb::store::{Direction, ListOptions, ListOrder};
    /// # let dir = std::env::temp_dir().join(format!("sessdb-doc-list-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let store = Store::open(&dir, StoreOptions::default())?;
    /// for (id, at) in [("a", 3), ("b", 1), ("c", 2)] {
    ///     store.create_session(SessionHeader::new(id, at), Vec::new())?;
    /// }
    /// let newest = store.list_by(
    ///     ListOptions::new(ListOrder::Created)
    ///         .with_direction(Direction::Descending)
    ///         .with_limit(2),
    /// )?;
    /// let ids: Vec<&str> = newest.iter().map(|s| s.header.id.as_str()).collect();
    /// assert_eq!(ids, ["a", "c"]);
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), sessdb::Error>(())
    /// ```
    /// # Errors
    /// `Corruption` when a session's entry in the checkpoint's index is damaged (sessions are
    /// decoded from it when first used: `sessdb verify` names the damage, `repair` rebuilds
    /// the checkpoint from the log).
    pub fn list_by(&self, options: ListOptions) -> Result<Vec<SessionInfo>> {
        let cat = self.inner.catalog.read();
        crate::store::catalog::listing::list(&cat, options)
    }

    /// As [`Store::list_by`], each row handed to `f` with its header as the JSON line the
    /// store keeps: for a caller that writes the rows out (the CLI's `ls --json`, the Node
    /// binding), a session not read since the open costs its entry's check, not a header
    /// parsed and written again. The catalog is read-locked while `f` runs.
    ///
    /// # Errors
    /// As [`Store::list_by`].
    pub fn list_each(&self, options: ListOptions, f: impl FnMut(&ListedRow<'_>)) -> Result<()> {
        let cat = self.inner.catalog.read();
        crate::store::catalog::listing::list_each(&cat, options, f)
    }

    /// One session's row of [`Store::list`], if it exists.
    pub fn info(&self, session: &str) -> Option<SessionInfo> {
        let cat = self.inner.catalog.read_with(session).ok()?;
        cat.sessions
            .get(session)
            .map(crate::store::catalog::listing::info_of)
    }

    /// Figures about the store.
    pub fn stats(&self) -> StoreStats {
        let (sessions, events) = {
            let cat = self.inner.catalog.read();
            (cat.len(), cat.events())
        };
        // Judges the older segments a writable open left, once (`SegmentList`); counted as
        // judged so far when they cannot be (the reads that need them say why).
        let segs = self
            .inner
            .segments
            .full()
            .unwrap_or_else(|_| self.inner.segments.judged());
        // Read-only: where the last scan ended (the file may hold allocated space beyond).
        let end_lsn = self.inner.writer.end().lsn;
        let chain = self.inner.checkpointer.chain();
        StoreStats {
            sessions,
            events,
            segments: segs.len(),
            end_lsn,
            checkpoint_lsn: chain.covered_lsn,
            checkpoint_generation: chain.generation,
        }
    }

    /// The bytes the store's files take on disk (segments, with compaction's tables and the
    /// space allocated ahead of appends, and checkpoints), from their metadata: no record
    /// is read.
    ///
    /// # Errors
    /// `Closed`, I/O errors of listing or opening a file.
    pub fn disk_usage(&self) -> Result<DiskUsage> {
        self.check_open()?;
        let storage = &*self.inner.storage;
        let stat = |path: &str| -> Result<u64> {
            let file = storage.open_file(path, crate::storage::OpenMode::Read)?;
            file.at(path).len()
        };
        let mut usage = DiskUsage::default();
        for seg in self.reading(Rerun::OrReplaced, || self.inner.segments.full())? {
            usage.segment_bytes += seg.file.at(&seg.path).len()?;
        }
        let dir = crate::codec::checkpoint::CHECKPOINTS_DIR;
        let names = storage.list_dir(dir)?;
        for name in names {
            match stat(&format!("{dir}/{name}")) {
                Ok(len) => usage.checkpoint_bytes += len,
                // Removed by the writer meanwhile (a newer checkpoint replaced it).
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(usage)
    }

    /// The newest record this store (or read-only view) holds, by position and checksum;
    /// `None` for an empty log. With [`Store::holds_record`], a way for a consumer that
    /// remembers how far it read to tell later whether the log is still the one it read.
    pub fn last_record(&self) -> Option<LogMark> {
        let (link, own) = self.inner.writer.end_and_epoch();
        let l = link?;
        let epoch = match own {
            // This open wrote the newest records: they are of its epoch.
            Some(epoch) => Some(epoch),
            None => self.inner.writer.epoch_at(&self.inner.segments, l.lsn),
        };
        Some(LogMark {
            lsn: l.lsn,
            crc: l.crc,
            epoch,
        })
    }

    /// Whether the log holds `mark`'s record — a frame at its position whose header names its
    /// checksum (16 bytes read: cheap enough to ask every round; the record's bytes are checked
    /// by every read, `verify` and salvage) — or held it until a compaction left it out: its
    /// position lies in a hole compaction left and the epoch in force there is the mark's
    /// (the writer that wrote the record wrote the log there: `docs/DESIGN.md` §3.7), or its
    /// segment's tombstone names the position and checksum (records from before epochs:
    /// `docs/FORMAT.md` §2.1). `false` for a store restored from a backup older than the
    /// record (its next writer wrote there under another epoch), or one whose log was
    /// rewritten there (salvage voids damaged and dropped records).
    pub fn holds_record(&self, mark: LogMark) -> bool {
        use crate::store::log::record_at::{crc_field_at, in_hole, left_out};
        let segments = &self.inner.segments;
        // A read-only view overtaken before it judged the older segments the mark lies in
        // is built again first: else a record there would read as not held. (Where it
        // cannot be, the answer below is `false`, as for any record it cannot read.)
        if let Err(Error::Overtaken { .. }) = segments.from(mark.lsn) {
            self.refresh().ok();
        }
        if let Some(crc) = crc_field_at(segments, mark.lsn) {
            return crc == mark.crc;
        }
        left_out(segments, mark.lsn, mark.crc)
            || mark.epoch.is_some_and(|e| {
                in_hole(segments, mark.lsn)
                    && self.inner.writer.epoch_at(segments, mark.lsn) == Some(e)
            })
    }

    /// What the resident index and the surfaces cost in memory.
    pub fn memory_usage(&self) -> MemoryUsage {
        let cat = self.inner.catalog.read();
        let mut seen = std::collections::BTreeSet::new();
        let mut index_bytes = 0;
        let mut indexed_events = 0;
        let (mut surface_entries, mut surface_bytes) = (0, 0);
        let mut mapped_index_bytes = 0;
        for e in cat.sessions.values() {
            index_bytes += e.locs.heap_bytes(|addr, bytes| {
                if seen.insert(addr) {
                    index_bytes += bytes;
                }
            });
            e.locs.mapped_bytes(|addr, bytes| {
                if seen.insert(addr) {
                    mapped_index_bytes += bytes;
                }
            });
            indexed_events += e.state.next_seq() - e.parent.as_ref().map_or(0, |(_, n)| *n);
            surface_entries += e.state.surface().seqs().len();
            surface_bytes += e.state.surface().heap_bytes();
        }
        MemoryUsage {
            decoded_sessions: cat.sessions.len(),
            undecoded_sessions: cat.cold().map_or(0, |c| c.len()),
            indexed_events,
            index_bytes,
            mapped_index_bytes,
            surface_entries,
            surface_bytes,
        }
    }

    /// A read-only store: reads what a live writer appended since the open (or the last
    /// refresh). Returns the number of records read; wakes subscribers when there were some.
    /// While a salvage rewrites the log beside it, the view is kept as it is (0) and built
    /// from the salvaged log by a refresh after it (`docs/FORMAT.md` §6).
    ///
    /// # Errors
    /// `Corruption` and I/O errors, as on open. A writable store has nothing to catch up
    /// with and returns 0.
    pub fn refresh(&self) -> Result<u64> {
        self.check_open()?;
        if !(self.inner.writer.access() == Access::Read) {
            return Ok(0);
        }
        let n = refresh::refresh(&self.inner)?;
        if n > 0 {
            self.inner.writer.notify();
        }
        Ok(n)
    }

    /// Follows a session from `from_seq` on.
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn subscribe(&self, session: &str, from_seq: u64) -> Result<Subscription> {
        self.with_entry(session, |_| ())?;
        Ok(Subscription {
            inner: Arc::clone(&self.inner),
            session: session.to_owned(),
            next_seq: from_seq,
        })
    }

    /// Makes every acknowledged record durable.
    ///
    /// # Errors
    /// Sync errors (they poison the store); `Poisoned` once a write or sync has failed, until
    /// the store is reopened.
    pub fn sync(&self) -> Result<()> {
        self.inner.writer.check_poison()?;
        let end = self.inner.writer.tail().as_ref().map_or(0, |t| t.next_lsn);
        self.inner.writer.sync_to(end)
    }

    /// Writes a checkpoint now (a delta, or a full one every `checkpoint_merge_every`);
    /// returns what it covers, or `None` if nothing changed since the last one.
    ///
    /// # Errors
    /// Write errors.
    pub fn checkpoint(&self) -> Result<Option<CheckpointInfo>> {
        Ok(self
            .inner
            .checkpoint(crate::store::checkpoint::files::CheckpointKind::Delta)?
            .map(|m| CheckpointInfo {
                generation: m.generation,
                covered_lsn: m.covered_lsn,
                full: m.base == 0,
            }))
    }

    /// Whether this store was opened read-only ([`Store::open_read_only`]): it writes
    /// nothing, holds no lock, and catches up with a writer through [`Store::refresh`].
    ///
    /// ```
    /// # use sessdb::{Store, StoreOptions};
    /// # let dir = std::env::temp_dir().join(format!("sessdb-doc-ro-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let writer = Store::open(&dir, StoreOptions::default())?;
    /// let reader = Store::open_read_only(&dir, StoreOptions::default())?;
    /// assert!(!writer.is_read_only() && reader.is_read_only());
    /// # drop((writer, reader));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), sessdb::Error>(())
    /// ```
    pub fn is_read_only(&self) -> bool {
        self.inner.writer.access() == Access::Read
    }

    /// Whether [`Store::close`] was called (on this store or a clone). After it every call
    /// that returns a `Result` is `Closed`; `list`, `info`, `stats` and `memory_usage`
    /// describe the store as it was when closed.
    pub fn is_closed(&self) -> bool {
        self.inner.writer.is_closed()
    }

    /// Checkpoints, syncs, releases the writer lock. Later calls on any clone that return a
    /// `Result` fail with `Closed`, reads as writes; subscribers are woken.
    ///
    /// # Errors
    /// Checkpoint or sync errors; `Poisoned` when a write or sync had failed (the lock is
    /// released all the same: reopening recovers what is durable).
    pub fn close(&self) -> Result<()> {
        if self.inner.writer.close() {
            return Ok(());
        }
        // The background work stops between two steps, and the checkpointer's thread after
        // the checkpoint it is writing, before the last checkpoint.
        self.inner.maintenance.stop();
        self.inner.checkpointer.stop();
        let result = if self.inner.writer.access() == Access::Read {
            Ok(())
        } else {
            self.inner.writer.check_poison().and_then(|()| {
                self.inner
                    .checkpoint_unchecked(crate::store::checkpoint::files::CheckpointKind::Delta)
                    .map(|_| ())
            })
        };
        let trimmed = self.inner.writer.quiesce();
        self.inner.lock.lock().take();
        self.inner.writer.notify();
        result.and(trimmed)
    }

    /// One rule after [`Store::close`]: every call that can fail is `Closed` (reads as
    /// writes); before, reads went on while appends said `Closed`.
    fn check_open(&self) -> Result<()> {
        if self.inner.writer.is_closed() {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn with_entry<T>(&self, session: &str, f: impl FnOnce(&SessionEntry) -> T) -> Result<T> {
        self.check_open()?;
        let cat = self.inner.catalog.read_with(session)?;
        cat.get(session).map(f)
    }
}

/// How many times a read runs again after its view was overtaken or built again under it
/// ([`Store::reading`]).
const REREADS: u32 = 8;

/// When a read may run again ([`Store::reading`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rerun {
    /// Only after `Overtaken`, which it meets before it hands anything out (a visit that
    /// hands each event out as it reads it).
    Overtaken,
    /// Also after damage met while another thread built the view again (a read that hands
    /// nothing out until it returns).
    OrReplaced,
}

/// Events of one session read a window at a time ([`Store::iter_events`]).
#[derive(Debug)]
pub struct EventIter<'a> {
    store: &'a Store,
    session: String,
    next: u64,
    end: u64,
    window: std::collections::VecDeque<Event>,
}

impl EventIter<'_> {
    /// Events read per window.
    const WINDOW: u64 = 512;
}

impl Iterator for EventIter<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        if let Some(e) = self.window.pop_front() {
            return Some(Ok(e));
        }
        if self.next >= self.end {
            return None;
        }
        let to = self.end.min(self.next.saturating_add(Self::WINDOW));
        match self.store.events(&self.session, self.next..to) {
            Ok(events) if !events.is_empty() => {
                self.next += events.len() as u64;
                self.window = events.into();
                self.window.pop_front().map(Ok)
            }
            Ok(_) => {
                self.next = self.end;
                None
            }
            Err(e) => {
                // One error ends the iteration.
                self.next = self.end;
                Some(Err(e))
            }
        }
    }
}

/// A directory `Store::open` may make a store of: missing, empty, or holding a store's own
/// names (`segments/`, `checkpoints/`, the lock file) — never one that holds only other files.
fn refuse_foreign_dir(dir: &std::path::Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        // Not a directory, unreadable: the creation below says what is wrong.
        Err(_) => return Ok(()),
    };
    let mut any = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if [
            crate::codec::segment::SEGMENTS_DIR,
            crate::codec::checkpoint::CHECKPOINTS_DIR,
            crate::codec::LOCK_FILE,
        ]
        .iter()
        .any(|own| name == *own)
        {
            return Ok(());
        }
        any = true;
    }
    if any {
        return Err(Error::NotAStore {
            path: dir.display().to_string(),
        });
    }
    Ok(())
}

/// A range of seqs as `from..to` (half open; `to` may be `u64::MAX`: to the end).
fn bounds(range: impl RangeBounds<u64>) -> (u64, u64) {
    let from = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let to = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => u64::MAX,
    };
    (from, to)
}

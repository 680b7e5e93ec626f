//! The Node.js binding of sessdb: the durable store from JavaScript through N-API (napi-rs),
//! so one build serves every Node version with N-API 4 (Node ≥ 20 here). Every call that does
//! I/O runs on libuv's thread pool and returns a Promise; a `Sync` store's appends resolve only
//! once durable. Events cross as JSON text lines (DSH's JSONL event lines), so JavaScript
//! parses each event once and sessdb validates the bytes it will store. `index.js` loads this
//! addon and gives errors their stable `code`; `index.d.ts` declares the API.

// napi-derive's macros expand to the FFI glue, which is `unsafe`; no unsafe is written here.
#![allow(unsafe_code)]

mod error;
mod follow;
mod packed;
mod snapshots;
mod task;

use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Either};
use napi_derive::napi;
use sessdb::store::{Direction, ListOptions, ListOrder};
use sessdb::{Durability, Event, ForkSpec, Limits, SessionHeader, Store, StoreOptions, TryAppend};

use error::{invalid, to_js};
use sessdb_formats::legacy;
use task::Job;

/// How a store is opened.
#[napi(object)]
pub struct OpenOptions {
    /// `"buffered"` (the default: an append is in the page cache when it resolves) or
    /// `"sync"` (durable when it resolves).
    pub durability: Option<String>,
    /// Open read-only, beside a live writer.
    pub read_only: Option<bool>,
    /// The writer's background compaction (default: on, a segment written again once half
    /// of it is dead).
    pub compaction: Option<CompactionOptions>,
    /// Which sessions the writer deletes by itself (default: none).
    pub retention: Option<RetentionOptions>,
}

/// [`OpenOptions::compaction`].
#[napi(object)]
pub struct CompactionOptions {
    /// `false`: no background compaction (`compact()` still works).
    pub background: Option<bool>,
    /// A segment is written again once this fraction of it is dead, in (0, 1]. Default 0.5.
    pub dead_fraction: Option<f64>,
    /// ... and once at least this many of its bytes are. Default 65536.
    pub min_dead_bytes: Option<i64>,
}

/// [`OpenOptions::retention`].
#[napi(object)]
pub struct RetentionOptions {
    /// Sessions last written longer ago than this many milliseconds are deleted.
    pub max_age_ms: Option<i64>,
    /// While the live sessions' bytes are more than this, the oldest is deleted.
    pub max_live_bytes: Option<i64>,
    /// How often the policy is applied (milliseconds; default 60000).
    pub check_every_ms: Option<i64>,
}

/// What [`NativeStore::compact`] did (or in a dry run would do).
#[napi(object)]
pub struct CompactResult {
    /// Only planned: nothing changed.
    pub dry_run: bool,
    /// Bytes given back.
    pub reclaimed_bytes: i64,
    /// Segments written again.
    pub segments: i64,
    /// Deleted sessions of which nothing is left.
    pub sessions_erased: i64,
    /// Deleted sessions of which records stay because a live fork reads them.
    pub sessions_kept: i64,
}

/// What the writer's background work has done ([`NativeStore::maintenance`]).
#[napi(object)]
pub struct Maintenance {
    /// Background compactions that wrote at least one segment.
    pub compactions: i64,
    /// Bytes they gave back.
    pub bytes_reclaimed: i64,
    /// Sessions the retention policy deleted.
    pub sessions_expired: i64,
    /// The last error of a background step, if any.
    pub last_error: Option<String>,
}

/// The log's live and dead record bytes ([`NativeStore::space`]).
#[napi(object)]
pub struct Space {
    /// Record bytes some session reads.
    pub live_bytes: i64,
    /// Record bytes a compaction gives back.
    pub dead_bytes: i64,
    /// Bytes of compaction's run and tombstone tables beside the records.
    pub table_bytes: i64,
}

/// What [`NativeStore::repair`] appended.
#[napi(object)]
pub struct RepairResult {
    /// Seqs of the closers of an open turn.
    pub closers: Vec<i64>,
    /// Seq of the `session/end-seed` marker, unless the log already ended with one.
    pub end_seed: Option<i64>,
}

/// The range of seqs a batch took.
#[napi(object)]
pub struct AppendResult {
    /// The first seq.
    pub from: i64,
    /// One past the last seq.
    pub to: i64,
}

/// Figures of the store.
#[napi(object)]
pub struct Stats {
    /// Live sessions.
    pub sessions: i64,
    /// Events over all sessions.
    pub events: i64,
    /// Segment files.
    pub segments: i64,
    /// The log's end position (a position, not a size: compaction leaves gaps).
    pub end_lsn: i64,
    /// The bytes the store's files take (segments and checkpoints), from their metadata.
    pub disk_bytes: i64,
    /// The newest checkpoint generation (0: none).
    pub checkpoint_generation: i64,
}

/// What the open found and did.
#[napi(object)]
pub struct OpenFacts {
    /// The checkpoint generation the state came from.
    pub checkpoint: Option<i64>,
    /// Log records replayed after it.
    pub records_replayed: i64,
    /// Bytes of a torn tail cut (writable opens).
    pub bytes_truncated: i64,
    /// Bytes after the last whole record left alone (read-only opens beside a writer).
    pub torn_tail_ignored: i64,
}

/// An open store.
#[napi]
pub struct NativeStore {
    store: Store,
    root: String,
}

fn n(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A read's `from` and `to` (exclusive; none: the end).
fn seq_range(from: i64, to: Option<i64>) -> napi::Result<(u64, u64)> {
    Ok((
        seq_arg(from, "from")?,
        to.map_or(Ok(u64::MAX), |t| seq_arg(t, "to"))?,
    ))
}

fn seq_arg(v: i64, what: &str) -> napi::Result<u64> {
    u64::try_from(v).map_err(|_| invalid(format!("{what} must be a non-negative integer")))
}

fn events_of(lines: &[String]) -> napi::Result<Vec<Event>> {
    let limits = Limits::default();
    lines
        .iter()
        .map(|l| Event::from_jsonl(l.as_bytes(), &limits).map_err(|e| to_js(&e)))
        .collect()
}

/// `count` events given as their JSON lines joined by `\n` (none holds a raw newline:
/// `index.js` sends a batch holding such a line as separate strings): the whole batch in one
/// string, one crossing instead of one per event.
fn events_of_text(text: &str, count: u32) -> napi::Result<Vec<Event>> {
    let limits = Limits::default();
    // Room for the lines the text can hold, whatever `count` says.
    let mut events = Vec::with_capacity((count as usize).min(text.len() / 2 + 1));
    if count > 0 {
        for line in text.split('\n') {
            events.push(Event::from_jsonl(line.as_bytes(), &limits).map_err(|e| to_js(&e))?);
        }
    }
    if events.len() != count as usize || (count == 0 && !text.is_empty()) {
        return Err(invalid(format!(
            "{count} events were announced and {} lines came",
            if count == 0 { 1 } else { events.len() }
        )));
    }
    Ok(events)
}

/// `batch_start`: the batch's first event is marked as where a writer's batch began (the
/// event's frame start): the session's JSONL text breaks packed chunk rows there and a zstd
/// export starts a frame there, as DSH's JSONL writer does for each batch it writes.
fn mark_batch_start(events: &mut [Event], batch_start: Option<bool>) {
    if batch_start.unwrap_or(false)
        && let Some(first) = events.first_mut()
    {
        *first = first.clone().with_frame_start(true);
    }
}

/// The seqs a batch took, as JavaScript sees them.
fn range_of(r: std::ops::Range<u64>) -> AppendResult {
    AppendResult {
        from: n(r.start),
        to: n(r.end),
    }
}

fn lines_of(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| String::from_utf8_lossy(&e.to_jsonl()).into_owned())
        .collect()
}

fn header_of(json: &str) -> napi::Result<SessionHeader> {
    SessionHeader::from_json(json.as_bytes()).map_err(|e| to_js(&e))
}

/// Bytes the store wrote as a JavaScript string: moved when they are UTF-8 (always, for
/// what the store writes), copied with replacement characters otherwise.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Opens (creating if needed) the store in directory `path`.
#[napi]
pub fn open(
    path: String,
    options: Option<OpenOptions>,
) -> napi::Result<AsyncTask<Job<NativeStore>>> {
    let options = options.unwrap_or(OpenOptions {
        durability: None,
        read_only: None,
        compaction: None,
        retention: None,
    });
    let read_only = options.read_only.unwrap_or(false);
    let durability = match options.durability.as_deref() {
        None | Some("buffered") => Durability::Buffered,
        Some("sync") => Durability::Sync,
        Some(other) => {
            return Err(invalid(format!(
                "durability must be \"buffered\" or \"sync\", not {other:?}"
            )));
        }
    };
    let compaction = compaction_of(options.compaction)?;
    let retention = retention_of(options.retention)?;
    Ok(AsyncTask::new(Job::new(move || {
        let store = if read_only {
            Store::open_read_only(&path, sessdb::StoreOptions::default())
        } else {
            let o = StoreOptions::default()
                .with_durability(durability)
                .with_compaction(compaction)
                .with_retention(retention);
            Store::open(&path, o)
        }
        .map_err(|e| to_js(&e))?;
        let root = std::fs::canonicalize(&path).map_or(path, |p| p.display().to_string());
        Ok(NativeStore { store, root })
    })))
}

fn non_negative(v: Option<i64>, what: &str) -> napi::Result<Option<u64>> {
    v.map(|v| {
        u64::try_from(v).map_err(|_| invalid(format!("{what} must be a non-negative integer")))
    })
    .transpose()
}

fn compaction_of(o: Option<CompactionOptions>) -> napi::Result<Option<sessdb::CompactionPolicy>> {
    let mut policy = sessdb::CompactionPolicy::default();
    let Some(o) = o else {
        return Ok(Some(policy));
    };
    if o.background == Some(false) {
        return Ok(None);
    }
    if let Some(f) = o.dead_fraction {
        if !(f > 0.0 && f <= 1.0) {
            return Err(invalid("compaction.deadFraction must be in (0, 1]"));
        }
        policy = sessdb::CompactionPolicy::dead_fraction(f);
    }
    if let Some(b) = non_negative(o.min_dead_bytes, "compaction.minDeadBytes")? {
        policy = policy.with_min_dead_bytes(b);
    }
    Ok(Some(policy))
}

fn retention_of(o: Option<RetentionOptions>) -> napi::Result<Option<sessdb::RetentionPolicy>> {
    let Some(o) = o else {
        return Ok(None);
    };
    let mut policy = sessdb::RetentionPolicy::default();
    if let Some(ms) = non_negative(o.max_age_ms, "retention.maxAgeMs")? {
        policy = policy.with_max_age(Duration::from_millis(ms));
    }
    if let Some(b) = non_negative(o.max_live_bytes, "retention.maxLiveBytes")? {
        policy = policy.with_max_live_bytes(b);
    }
    if let Some(ms) = non_negative(o.check_every_ms, "retention.checkEveryMs")? {
        if ms == 0 {
            return Err(invalid("retention.checkEveryMs must be at least 1"));
        }
        policy = policy.with_check_every(Duration::from_millis(ms));
    }
    Ok(Some(policy))
}

impl NativeStore {
    /// The creation of both ways in, on the pool.
    fn create_now(
        &self,
        header: SessionHeader,
        mut events: Vec<Event>,
        exact: Option<bool>,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<AsyncTask<Job<i64>>> {
        mark_batch_start(&mut events, batch_start);
        if migrate_legacy.unwrap_or(false) && events.iter().any(legacy::may_be_legacy) {
            legacy::migrate(&header.id, &mut events);
        }
        Ok(self.job(move |s| {
            if exact.unwrap_or(false) {
                s.restore_session(header, events)
            } else {
                s.create_session(header, events).and_then(|h| h.len())
            }
            .map(n)
        }))
    }

    /// The append of both ways in: on this thread when nothing waits, else on the pool.
    fn append_now(
        &self,
        session: String,
        mut events: Vec<Event>,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<Either<AppendResult, AsyncTask<Job<AppendResult>>>> {
        mark_batch_start(&mut events, batch_start);
        let migrate = migrate_legacy.unwrap_or(false) && events.iter().any(legacy::may_be_legacy);
        if !migrate {
            // The hop to the pool and back took ~70 of the ~150 µs a 44-event append cost
            // here; the append itself a few µs (PERFORMANCE.md).
            match self.store.try_append_events(&session, events) {
                Ok(TryAppend::Appended(r)) => return Ok(Either::A(range_of(r))),
                Ok(TryAppend::WouldWait(back)) => events = back,
                Err(e) => return Err(to_js(&e)),
            }
        }
        Ok(Either::B(self.job(move |s| {
            let mut events = events;
            if migrate {
                // A legacy replacement takes the id of the message it replaces: the one stored
                // event a migration reads, read alone.
                legacy::migrate_appended(&session, &mut events, |seq| {
                    let e = s.events(&session, seq..seq + 1).ok()?.pop()?;
                    legacy::message_id_of(&e).map(<[u8]>::to_vec)
                });
            }
            s.append_events(&session, events).map(range_of)
        })))
    }

    /// A job on a clone of the store (clones share it).
    fn job<T>(
        &self,
        work: impl FnOnce(&Store) -> sessdb::Result<T> + Send + 'static,
    ) -> AsyncTask<Job<T>>
    where
        T: napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName + Send + 'static,
    {
        let store = self.store.clone();
        AsyncTask::new(Job::new(move || work(&store).map_err(|e| to_js(&e))))
    }
}

/// The revision of a session: the store's directory, the session's incarnation (which creation of
/// the id it is), and its length (a session only grows; a repair appends).
fn revision(root: &str, incarnation: sessdb::store::Incarnation, events: u64) -> String {
    format!("{}{incarnation}:{events}", revision_prefix(root))
}

/// What every revision of the store at `root` starts with (a listing's rows carry their
/// revisions whole: `snapshots::write_revision`).
fn revision_prefix(root: &str) -> String {
    format!("sessdb:{root}#")
}

#[napi]
impl NativeStore {
    /// Creates a session from its header (JSON text) and events (JSON lines, seq from 0).
    /// `exact`: store them as given (DSH materializing a session with its first batch);
    /// otherwise the seed gets `session/end-seed` unless it ends with one. `migrate_legacy`:
    /// events in DSH's pre-identity message shapes are stored as DSH's loader reads them
    /// (FORMATS.md §1.1). Resolves to the session's length.
    #[napi]
    pub fn create_session(
        &self,
        header: String,
        events: Vec<String>,
        exact: Option<bool>,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<AsyncTask<Job<i64>>> {
        let header = header_of(&header)?;
        self.create_now(
            header,
            events_of(&events)?,
            exact,
            migrate_legacy,
            batch_start,
        )
    }

    /// [`Self::create_session`] with the events' lines joined by `\n` (none holding a raw
    /// newline), `count` of them: one string for the batch, as [`Self::append_lines`].
    #[napi]
    pub fn create_session_lines(
        &self,
        header: String,
        lines: String,
        count: u32,
        exact: Option<bool>,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<AsyncTask<Job<i64>>> {
        let header = header_of(&header)?;
        let events = events_of_text(&lines, count)?;
        self.create_now(header, events, exact, migrate_legacy, batch_start)
    }

    /// Appends a batch of events (JSON lines whose seqs continue the session), atomically.
    /// `migrate_legacy`: as for `create_session` (a replacement in an old shape takes the id
    /// of the stored message it replaces). Appended here, on the JavaScript thread, when
    /// nothing on the way waits (`Store::try_append_events`: a `buffered` store, no lock
    /// held elsewhere, no roll or sync); else on the thread pool, a Promise.
    #[napi]
    pub fn append_batch(
        &self,
        session: String,
        events: Vec<String>,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<Either<AppendResult, AsyncTask<Job<AppendResult>>>> {
        self.append_now(session, events_of(&events)?, migrate_legacy, batch_start)
    }

    /// [`Self::append_batch`] of `count` events given as their JSON lines joined by `\n`
    /// (none holding a raw newline): one string for the batch. `index.js` sends a batch this
    /// way unless one of its lines, given as a string, holds a raw newline.
    #[napi]
    pub fn append_lines(
        &self,
        session: String,
        lines: String,
        count: u32,
        migrate_legacy: Option<bool>,
        batch_start: Option<bool>,
    ) -> napi::Result<Either<AppendResult, AsyncTask<Job<AppendResult>>>> {
        self.append_now(
            session,
            events_of_text(&lines, count)?,
            migrate_legacy,
            batch_start,
        )
    }

    /// The events from seq `from` (to `to`, exclusive, or the end) as their JSON lines joined
    /// by `\n`, in one string for one crossing into JavaScript; each written from the bytes
    /// read (its checksum checked), with no owned event built.
    #[napi]
    pub fn read_lines(
        &self,
        session: String,
        from: i64,
        to: Option<i64>,
    ) -> napi::Result<AsyncTask<Job<String>>> {
        let (from, to) = seq_range(from, to)?;
        Ok(self.job(move |s| {
            let mut out = Vec::new();
            s.visit_events(&session, from..to, |e| {
                if !out.is_empty() {
                    out.push(b'\n');
                }
                e.write_jsonl(&mut out);
                Ok(())
            })?;
            // Stored events are UTF-8 (validated when written); checked once here.
            Ok(text(out))
        }))
    }

    /// The events from seq `from` (to `to`, exclusive, or the end) as one JSON array with
    /// the runs of streamed chunks packed (`packed.rs`; `index.js` expands them): what `read`
    /// parses, a fraction of the bytes of the events' lines.
    #[napi]
    pub fn read_packed(
        &self,
        session: String,
        from: i64,
        to: Option<i64>,
    ) -> napi::Result<AsyncTask<Job<String>>> {
        let (from, to) = seq_range(from, to)?;
        Ok(self.job(move |s| {
            // Room for the events asked for at the packed form's ~40 bytes each (a chunk's
            // text and time), so the output is not copied as it doubles.
            let events = s.info(&session).map_or(0, |i| i.events);
            let wanted = events.min(to).saturating_sub(from).min(1 << 20);
            let mut out = packed::Packed::with_capacity(usize::try_from(wanted).unwrap_or(0) * 40);
            s.visit_events(&session, from..to, |e| {
                // A chunk whose line is only its envelope and data: no other key to keep.
                let plain = e.event_type() == "assistant/chunk"
                    && e.surface_op().is_none()
                    && e.sources().is_none()
                    && !e.ignorable();
                let chunk = plain.then(|| packed::chunk_of(e.data())).flatten();
                out.push(e.seq(), e.time(), chunk, |o| e.write_jsonl(o));
                Ok(())
            })?;
            let bytes = out.finish();
            Ok(text(bytes))
        }))
    }

    /// The session as its DSH `session.jsonl` text (the header line, then the events; with
    /// `pack` (the default) chunk runs packed as DSH packs them, within each batch marked by
    /// `batch_start`): the file DSH's own JSONL writer writes; `null` when there is no such
    /// session.
    #[napi]
    pub fn raw_jsonl(&self, session: String, pack: Option<bool>) -> AsyncTask<Job<Option<String>>> {
        let pack = pack.unwrap_or(true);
        let store = self.store.clone();
        AsyncTask::new(Job::new(move || {
            if store.info(&session).is_none() {
                return Ok(None);
            }
            let mut out = Vec::new();
            sessdb_formats::jsonl::write_session_jsonl(
                &store,
                &session,
                &mut out,
                pack,
                std::path::Path::new("session.jsonl"),
            )
            .map_err(|e| error::formats_to_js(&e))?;
            Ok(Some(text(out)))
        }))
    }

    /// The header line of a session as JSON text.
    #[napi]
    pub fn header(&self, session: String) -> AsyncTask<Job<String>> {
        self.job(move |s| s.header(&session).map(|h| text(h.to_json())))
    }

    /// Every session, in id order, with what its revision is made of: one JSON array
    /// (`[revision prefix, [header, events, "incarnation", turn open 0/1], …]`, the header as
    /// the JSON line the store keeps), parsed once in JavaScript, which builds the rows
    /// index.js returns: an object per session built through N-API took about twice as long
    /// (`docs/PERFORMANCE.md`, listing the sessions).
    ///
    /// `sort` (`id`, `created`, `updated`, `events`, `stored`: no order; default `id`),
    /// `descending`, and `limit` choose which sessions and in what order: only those are
    /// copied out of the catalog (`Store::list_each`).
    #[napi]
    pub fn list(
        &self,
        sort: Option<String>,
        descending: Option<bool>,
        limit: Option<i64>,
    ) -> napi::Result<AsyncTask<Job<String>>> {
        let order = match sort.as_deref().unwrap_or("id") {
            "id" => ListOrder::Id,
            "created" => ListOrder::Created,
            "updated" => ListOrder::Updated,
            "events" => ListOrder::Events,
            "stored" => ListOrder::Stored,
            other => {
                return Err(invalid(format!(
                    "sort must be one of id, created, updated, events, stored, not {other:?}"
                )));
            }
        };
        let mut options = ListOptions::new(order);
        if descending.unwrap_or(false) {
            options = options.with_direction(Direction::Descending);
        }
        if let Some(n) = limit {
            let n = usize::try_from(seq_arg(n, "limit")?)
                .map_err(|_| invalid("limit is too large".to_owned()))?;
            options = options.with_limit(n);
        }
        let open = snapshots::open_revision(&revision_prefix(&self.root));
        Ok(self.job(move |s| {
            s.refresh()?;
            // `[[header, events, revision, turn open 0/1], …]`: the header as the line the
            // store keeps (not parsed and written again), the revision whole (joining its
            // parts in JavaScript cost more than parsing it, `snapshots.rs`).
            let mut out = Vec::with_capacity(64 * 1024);
            out.push(b'[');
            let mut first = true;
            s.list_each(options, |row| {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.push(b'[');
                out.extend_from_slice(row.header_json);
                out.push(b',');
                sessdb::json::write_u64(&mut out, row.events);
                out.push(b',');
                snapshots::write_revision(&mut out, &open, row.incarnation.get(), row.events);
                out.extend_from_slice(if row.turn_open { b",1]" } else { b",0]" });
            })?;
            out.push(b']');
            Ok(text(out))
        }))
    }

    /// Every session as DSH's `listSnapshots` returns it, in no order, handed to `deliver`
    /// a piece at a time while the listing goes on (`snapshots.rs`: each piece one JSON array
    /// `[revision prefix, header, incarnation, events, header, …]`, each header the stored
    /// line without its `"type"` key — DSH's `SessionHeader`). Resolves to the number of
    /// pieces handed over, once the last is on its way; each session's entry read once and
    /// nothing sorted.
    #[napi]
    pub fn list_snapshots(
        &self,
        deliver: napi::threadsafe_function::ThreadsafeFunction<String>,
    ) -> AsyncTask<Job<u32>> {
        let prefix = revision_prefix(&self.root);
        self.job(move |s| snapshots::list(s, &prefix, &deliver))
    }

    /// The revision of one session, or `null` when there is none; reads no event.
    #[napi]
    pub fn revision(&self, session: String) -> AsyncTask<Job<Option<String>>> {
        let root = self.root.clone();
        self.job(move |s| {
            s.refresh()?;
            Ok(s.info(&session)
                .map(|i| revision(&root, i.incarnation, i.events)))
        })
    }

    /// Prepares a session for writing after a crash (DSH resume): closes an open last turn
    /// and appends `session/end-seed` unless the log ends with one. One record.
    #[napi]
    pub fn repair(&self, session: String) -> AsyncTask<Job<RepairResult>> {
        self.job(move |s| {
            s.resume(&session).map(|r| RepairResult {
                closers: r.closers.into_iter().map(n).collect(),
                end_seed: r.end_seed.map(n),
            })
        })
    }

    /// Forks `session` by reference after seq `at` (default: its last event); resolves to the
    /// child's id.
    #[napi]
    pub fn fork(
        &self,
        session: String,
        at: Option<i64>,
        child_id: Option<String>,
    ) -> napi::Result<AsyncTask<Job<String>>> {
        let boundary = at.map(|a| seq_arg(a, "at")).transpose()?;
        Ok(self.job(move |s| {
            s.fork(&session, {
                let mut spec = ForkSpec::default();
                spec.boundary = boundary;
                spec.child_id = child_id;
                spec
            })
        }))
    }

    /// Deletes a session (its forks keep what they inherited).
    #[napi]
    pub fn delete_session(&self, session: String) -> AsyncTask<Job<()>> {
        self.job(move |s| s.delete_session(&session))
    }

    /// Deletes every session last written more than `age_ms` ago (`dry_run`: only lists
    /// them); resolves to their ids, oldest first.
    #[napi]
    pub fn delete_older_than(
        &self,
        age_ms: i64,
        dry_run: bool,
    ) -> napi::Result<AsyncTask<Job<Vec<String>>>> {
        let age = seq_arg(age_ms, "ageMs")?;
        Ok(self.job(move |s| {
            s.delete_older_than(Duration::from_millis(age), dry_run)
                .map(|r| r.deleted.into_iter().map(|(id, _)| id).collect())
        }))
    }

    /// Writes the log again without what no session reads (deleted sessions): afterwards no
    /// file of the store holds their events. `dry_run`: only says what would go.
    #[napi]
    pub fn compact(&self, dry_run: bool) -> AsyncTask<Job<CompactResult>> {
        self.job(move |s| {
            let r = if dry_run {
                s.compact_plan()
            } else {
                s.compact()
            }?;
            Ok(CompactResult {
                dry_run: r.dry_run,
                reclaimed_bytes: n(r.reclaimed_bytes()),
                segments: n(r.segments.len() as u64),
                sessions_erased: n(r.sessions_erased as u64),
                sessions_kept: n(r.sessions_kept as u64),
            })
        })
    }

    /// What the writer's background work (retention, compaction) has done (no I/O).
    #[napi]
    pub fn maintenance(&self) -> Maintenance {
        let m = self.store.maintenance();
        Maintenance {
            compactions: n(m.compactions),
            bytes_reclaimed: n(m.bytes_reclaimed),
            sessions_expired: n(m.sessions_expired),
            last_error: m.last_error,
        }
    }

    /// Resolves once the background work has nothing running and nothing due (`true`), or
    /// after `timeout_ms` (`false`).
    #[napi]
    pub fn wait_maintenance(&self, timeout_ms: i64) -> napi::Result<AsyncTask<Job<bool>>> {
        let ms = seq_arg(timeout_ms, "timeoutMs")?;
        Ok(self.job(move |s| Ok(s.wait_maintenance(Duration::from_millis(ms)))))
    }

    /// The log's live and dead record bytes (one read of the whole log).
    #[napi]
    pub fn space(&self) -> AsyncTask<Job<Space>> {
        self.job(|s| {
            let sp = s.space()?;
            Ok(Space {
                live_bytes: n(sp.live_bytes()),
                dead_bytes: n(sp.dead_bytes()),
                table_bytes: n(sp.table_bytes()),
            })
        })
    }

    /// Follows `session` from seq `from`: `callback(err, lines)` gets each batch of event
    /// lines as they are appended (call `ack()` on the returned follower once taken), or the
    /// error that ended it. Runs on a thread of its own, not libuv's pool; a writer in another
    /// process is seen every `poll_ms` (1 to 60000).
    #[napi]
    pub fn follow(
        &self,
        session: String,
        from: i64,
        poll_ms: i64,
        callback: napi::threadsafe_function::ThreadsafeFunction<Vec<String>>,
    ) -> napi::Result<follow::Follower> {
        let from = seq_arg(from, "from")?;
        let poll_ms = u64::try_from(poll_ms)
            .ok()
            .filter(|p| (1..=60_000).contains(p))
            .ok_or_else(|| invalid("pollMs must be an integer from 1 to 60000"))?;
        Ok(follow::start(
            self.store.clone(),
            session,
            from,
            Duration::from_millis(poll_ms),
            callback,
        ))
    }

    /// Figures of the store.
    #[napi]
    pub fn stats(&self) -> AsyncTask<Job<Stats>> {
        self.job(|s| {
            if s.is_closed() {
                return Err(sessdb::Error::Closed);
            }
            let st = s.stats();
            let disk = s.disk_usage()?;
            Ok(Stats {
                sessions: n(st.sessions as u64),
                events: n(st.events),
                segments: n(st.segments as u64),
                end_lsn: n(st.end_lsn),
                disk_bytes: n(disk.total()),
                checkpoint_generation: n(st.checkpoint_generation),
            })
        })
    }

    /// What the open found and did (no I/O).
    #[napi]
    pub fn open_facts(&self) -> OpenFacts {
        let r = self.store.open_report();
        OpenFacts {
            checkpoint: r.checkpoint.map(n),
            records_replayed: n(r.records_replayed),
            bytes_truncated: n(r.bytes_truncated),
            torn_tail_ignored: n(r.torn_tail_ignored),
        }
    }

    /// Makes every acknowledged append durable; `CLOSED` after `close` (as every other call).
    #[napi]
    pub fn sync(&self) -> AsyncTask<Job<()>> {
        self.job(|s| {
            if s.is_closed() {
                return Err(sessdb::Error::Closed);
            }
            s.sync()
        })
    }

    /// Checkpoints, syncs and releases the writer lock; later calls fail with `CLOSED`, a
    /// second `close` too (the first one's outcome is the one to act on).
    #[napi]
    pub fn close(&self) -> AsyncTask<Job<()>> {
        self.job(|s| {
            if s.is_closed() {
                return Err(sessdb::Error::Closed);
            }
            s.close()
        })
    }
}

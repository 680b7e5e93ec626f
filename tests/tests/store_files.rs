//! The store on real files: the writer lock, read-only opens beside a live writer, reads of
//! sealed segments through the memory map, concurrent appenders sharing fsyncs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Clock, Draft, Durability, Error, Event, LogType, SessionHeader, Store, StoreOptions};
use sessdb_workload::{WorkloadSpec, generate, payload as p};

fn options() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(1_000))
}

#[test]
fn a_second_writer_gets_locked_naming_the_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let err = Store::open(dir.path(), options()).unwrap_err();
    match &err {
        Error::Locked { lock_file } => assert!(lock_file.ends_with("LOCK"), "{lock_file}"),
        other => panic!("expected Locked, got {other}"),
    }
    assert!(
        err.to_string().contains("read-only"),
        "the message says what to do: {err}"
    );
    store.close().unwrap();
    Store::open(dir.path(), options()).unwrap().close().unwrap();
}

#[test]
fn a_reader_opens_beside_a_live_writer_and_reads_sealed_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), options()).unwrap();
    let summary = generate(
        &WorkloadSpec {
            sessions: 2,
            max_turns: 3,
            max_chunks: 8,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    assert!(store.stats().segments > 2);
    let reader = Store::open_read_only(dir.path(), sessdb::StoreOptions::default()).unwrap();
    for id in &summary.sessions {
        let ours = store.events(id, ..).unwrap();
        let theirs = reader.events(id, ..).unwrap();
        assert_eq!(theirs, ours, "{id}");
        assert_eq!(reader.messages(id).unwrap(), store.messages(id).unwrap());
    }
    // The writer goes on; the reader sees its snapshot and repairs nothing.
    let id = &summary.sessions[0];
    store
        .append(
            id,
            Draft::log(LogType::new("plugin/note").unwrap(), &b"{}"[..]).ignorable(),
        )
        .unwrap();
    assert_eq!(
        reader.session_len(id).unwrap() + 1,
        store.session_len(id).unwrap()
    );
    assert_eq!(reader.open_report().bytes_truncated, 0);
    store.close().unwrap();
}

#[test]
fn concurrent_appenders_under_sync_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options().with_durability(Durability::Sync)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let id = format!("t{t}");
                store
                    .create_session(SessionHeader::new(id.clone(), 0), Vec::new())
                    .unwrap();
                for turn in 1..=25 {
                    store
                        .append(
                            &id,
                            Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
                        )
                        .unwrap();
                    store
                        .append(
                            &id,
                            Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let before: Vec<Vec<Event>> = (0..4)
        .map(|t| store.events(&format!("t{t}"), ..).unwrap())
        .collect();
    assert!(before.iter().all(|e| e.len() == 51));
    drop(store);
    let reopened = Store::open(dir.path(), options()).unwrap();
    let after: Vec<Vec<Event>> = (0..4)
        .map(|t| reopened.events(&format!("t{t}"), ..).unwrap())
        .collect();
    assert_eq!(after, before);
}

#[test]
fn verify_beside_a_live_writer_reports_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    store
        .create_session(SessionHeader::new("w", 0), Vec::new())
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (store, stop, done) = (
            store.clone(),
            std::sync::Arc::clone(&stop),
            std::sync::Arc::clone(&done),
        );
        std::thread::spawn(move || {
            let mut turn = 1;
            // Tiny segments and checkpoint intervals: rolls, checkpoints, merges and
            // retention all happen while verify reads.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                store
                    .append(
                        "w",
                        Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
                    )
                    .unwrap();
                store
                    .append(
                        "w",
                        Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
                    )
                    .unwrap();
                done.store(turn, std::sync::atomic::Ordering::Relaxed);
                turn += 1;
            }
            turn
        })
    };
    let storage: std::sync::Arc<dyn sessdb::storage::Storage> =
        std::sync::Arc::new(sessdb::storage::FsStorage::new(dir.path()));
    let mut runs = 0;
    let mut problems = Vec::new();
    // Verify runs until the writer has gone through many rolls and checkpoints meanwhile.
    while runs < 15 || done.load(std::sync::atomic::Ordering::Relaxed) < 3000 {
        let report = sessdb::store::verify(std::sync::Arc::clone(&storage)).unwrap();
        problems.extend(report.problems);
        runs += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let turns = writer.join().unwrap();
    assert!(problems.is_empty(), "{runs} runs: {problems:?}");
    assert!(
        turns > 10,
        "the writer made progress during the runs: {turns}"
    );
    store.close().unwrap();
}

/// A store in `dir` with one empty session `s`.
fn store_with_session(dir: &std::path::Path, options: &StoreOptions) -> Store {
    let store = Store::open(dir, options.clone()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    store
}

/// Reopens the closed store in `dir`: session `s` reads back as `before`, and `verify` finds
/// nothing wrong.
fn reopen_reads_back_and_verifies(
    dir: &std::path::Path,
    options: StoreOptions,
    before: &[sessdb::Event],
) {
    let reopened = Store::open(dir, options).unwrap();
    assert_eq!(reopened.events("s", ..).unwrap(), before);
    reopened.close().unwrap();
    let report =
        sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(dir))).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Appends `n` events to session `s`, the i-th padded with `i % pad` bytes (records of many
/// sizes, so windows and segments are crossed at every offset).
fn append_padded(store: &Store, n: u32, pad: u32) {
    let note = LogType::new("plugin/note").unwrap();
    for i in 0..n {
        let data = format!(
            "{{\"i\":{i},\"pad\":\"{}\"}}",
            "x".repeat((i % pad) as usize)
        );
        store
            .append("s", Draft::log(&note, data).ignorable())
            .unwrap();
    }
}

/// `Buffered` appends through the write window with the prefault helper faulting windows in
/// on its own thread, across many windows and segment rolls (each roll waits for the helper
/// before it cuts the sealed segment): everything reads back after a reopen, and verifies.
#[test]
fn buffered_appends_across_windows_and_rolls_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default()
        .with_durability(Durability::Buffered)
        .with_segment_bytes_max(256 << 10)
        .with_preallocate_bytes(64 << 10);
    let store = store_with_session(dir.path(), &options);
    append_padded(&store, 4000, 700);
    let before = store.events("s", ..).unwrap();
    assert!(store.stats().segments >= 6, "{:?}", store.stats());
    store.close().unwrap();
    drop(store);
    reopen_reads_back_and_verifies(dir.path(), options, &before);
}

/// `Sync` appends go out with `pwrite` into space allocated (and written with zeros) ahead of
/// them: across preallocations and segment rolls everything reads back after a reopen, the
/// active segment holds zeros past its last record, and the store verifies. (Whether the
/// zeros were written or only allocated reads the same; the speed that buys is measured in
/// `docs/PERFORMANCE.md`, not here.)
#[test]
fn sync_appends_into_zero_written_space_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_segment_bytes_max(256 << 10)
        .with_preallocate_bytes(64 << 10);
    let store = store_with_session(dir.path(), &options);
    let note = LogType::new("plugin/note").unwrap();
    for i in 0..300u32 {
        let batch = (0..10)
            .map(|j| {
                Draft::log(
                    &note,
                    format!(
                        "{{\"i\":{i},\"j\":{j},\"pad\":\"{}\"}}",
                        "y".repeat((i % 300) as usize)
                    ),
                )
                .ignorable()
            })
            .collect();
        store.append_batch("s", batch).unwrap();
    }
    let before = store.events("s", ..).unwrap();
    assert!(store.stats().segments >= 3, "{:?}", store.stats());
    // The active segment: allocated past its records, and zeros there.
    let mut segments: Vec<_> = std::fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    let active = std::fs::read(segments.last().unwrap()).unwrap();
    let used = active.len() - active.iter().rev().take_while(|&&b| b == 0).count();
    assert!(
        active.len() > used + 1024,
        "space allocated ahead: {} of {}",
        used,
        active.len()
    );
    drop(active);
    store.close().unwrap();
    drop(store);
    reopen_reads_back_and_verifies(dir.path(), options, &before);
}

/// Real files whose `preallocate_written` (the `Sync` store's zero-fill, run on the helper
/// thread) is slow and watched: while one runs, any write or cut of the same file at or past
/// where the zero-fill starts is recorded. The appender must never write into space a
/// zero-fill is still writing zeros to (the zeros would land over its record), nor the roll
/// cut it.
#[derive(Debug, Clone)]
struct WatchedZeroFill {
    inner: std::sync::Arc<sessdb::storage::FsStorage>,
    /// The zero-fill running: the file's path and the length it started from.
    running: std::sync::Arc<std::sync::Mutex<Option<(String, u64)>>>,
    fills: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Zero-fills run on a thread other than the helper's: the appender's own.
    on_appender: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    overlaps: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Every zero-fill on the helper thread fails with EIO after allocating (as a write
    /// error halfway would); the appender's own, later, succeeds.
    fail: bool,
    /// Each zero-fill also checks, for a while before it writes, whether the store's writer
    /// lock is still held, and records it if not (a fill after the lock went).
    watch_lock: bool,
}

#[derive(Debug)]
struct WatchedFile {
    inner: Box<dyn sessdb::storage::StorageFile>,
    path: String,
    storage: WatchedZeroFill,
}

impl WatchedFile {
    fn check(&self, what: &str, at: u64) {
        if let Some((path, from)) = &*self.storage.running.lock().unwrap()
            && *path == self.path
            && at + 1 > *from
        {
            self.storage
                .overlaps
                .lock()
                .unwrap()
                .push(format!("{what} at {at} into a zero-fill from {from}"));
        }
    }
}

impl WatchedZeroFill {
    fn new(dir: &std::path::Path, fail: bool, watch_lock: bool) -> Self {
        Self {
            inner: std::sync::Arc::new(sessdb::storage::FsStorage::new(dir)),
            running: Default::default(),
            fills: Default::default(),
            on_appender: Default::default(),
            overlaps: Default::default(),
            fail,
            watch_lock,
        }
    }
}

sessdb_tests::delegate_storage!(WatchedZeroFill, |this, path, file| WatchedFile {
    inner: file,
    path: path.to_owned(),
    storage: this.clone(),
});

impl sessdb::storage::StorageFile for WatchedFile {
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.check("write", offset + buf.len() as u64 - 1);
        self.inner.write_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.check("cut", len);
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.inner.sync_data()
    }
    fn view(&self) -> std::io::Result<sessdb::storage::FileView> {
        self.inner.view()
    }
    fn preallocate(&self, len: u64) -> std::io::Result<bool> {
        self.inner.preallocate(len)
    }
    fn preallocate_written(&self, from: u64, len: u64) -> std::io::Result<bool> {
        let on_helper = std::thread::current().name() == Some("sessdb-prefault");
        if !on_helper {
            self.storage
                .on_appender
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        *self.storage.running.lock().unwrap() = Some((self.path.clone(), from));
        self.storage
            .fills
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Slow on purpose: an appender that did not wait gets many chances to write here.
        for _ in 0..200 {
            std::thread::yield_now();
        }
        if self.storage.watch_lock {
            // Long enough for a `close()` that does not wait to finish and let the lock go.
            for _ in 0..20_000 {
                if sessdb::storage::Storage::try_lock(&*self.storage.inner, "LOCK")?.is_some() {
                    self.storage
                        .overlaps
                        .lock()
                        .unwrap()
                        .push("a zero-fill ran after the writer lock was released".into());
                    break;
                }
            }
        }
        let result = if self.storage.fail && on_helper {
            self.inner
                .preallocate(len)
                .and(Err(std::io::Error::other("injected EIO")))
        } else {
            self.inner.preallocate_written(from, len)
        };
        *self.storage.running.lock().unwrap() = None;
        result
    }
    fn writes_zeros_ahead(&self) -> bool {
        true
    }
}

/// `Sync` appends while the helper thread zero-fills the space ahead of them: no write lands
/// in, and no roll cuts, space a zero-fill is still writing; across many zero-fills and rolls
/// everything reads back after a reopen, and the store verifies.
#[test]
fn sync_appends_never_write_where_the_helper_is_still_writing_zeros() {
    sync_appends_beside_the_helpers_zero_fill(false);
}

/// The same with every zero-fill on the helper failing (EIO after the allocation): no
/// append fails for it — the appender allocates what it needs itself, as without the
/// helper — and everything reads back.
#[test]
fn a_failing_zero_fill_ahead_fails_no_append() {
    sync_appends_beside_the_helpers_zero_fill(true);
}

fn sync_appends_beside_the_helpers_zero_fill(fail: bool) {
    let dir = tempfile::tempdir().unwrap();
    let storage = WatchedZeroFill::new(dir.path(), fail, false);
    let options = StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_segment_bytes_max(256 << 10)
        .with_preallocate_bytes(16 << 10);
    let store = Store::open_with(std::sync::Arc::new(storage.clone()), options.clone()).unwrap();
    store
        .create_session(SessionHeader::new("s", 1_000), Vec::new())
        .unwrap();
    append_padded(&store, 3000, 400);
    let before = store.events("s", ..).unwrap();
    assert!(store.stats().segments >= 3, "{:?}", store.stats());
    store.close().unwrap();
    drop(store);
    let fills = storage.fills.load(std::sync::atomic::Ordering::Relaxed);
    if fail {
        // A failure is not retried ahead at that length; each segment tries again.
        assert!(fills >= 3, "the helper tried {fills} times");
    } else {
        assert!(fills > 20, "the helper zero-filled ahead {fills} times");
        // The first record of each segment extended the file itself: no zeros written on
        // the appender's thread, at a roll either.
        let own = storage
            .on_appender
            .load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(own, 0, "zero-fills on the appender's thread");
    }
    let overlaps = storage.overlaps.lock().unwrap().clone();
    assert!(overlaps.is_empty(), "{overlaps:?}");
    reopen_reads_back_and_verifies(dir.path(), options, &before);
}

/// The first `Sync` append after an open — after a clean close gave the space allocated ahead
/// back — writes its record by extending the file and leaves the zeros after it to the
/// helper (written on the appender, the zeros and their sync made that append ~10× slower
/// than the next: `docs/PERFORMANCE.md`). The records read back and the store verifies.
#[test]
fn the_first_sync_append_after_an_open_writes_no_zeros_itself() {
    let dir = tempfile::tempdir().unwrap();
    let storage = WatchedZeroFill::new(dir.path(), false, false);
    let options = StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_preallocate_bytes(64 << 10);
    let open = || Store::open_with(std::sync::Arc::new(storage.clone()), options.clone()).unwrap();
    let store = open();
    store
        .create_session(SessionHeader::new("s", 1_000), Vec::new())
        .unwrap();
    append_padded(&store, 50, 40);
    let written = store.events("s", ..).unwrap().len();
    store.close().unwrap();
    drop(store);
    for round in 0..3 {
        let store = open();
        let before = storage.fills.load(std::sync::atomic::Ordering::SeqCst);
        // The first record after the open's epoch record, and four after it.
        append_padded(&store, 5, 40);
        store.close().unwrap();
        drop(store);
        let own = storage
            .on_appender
            .load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            own, 0,
            "round {round}: zeros written on the appender's thread"
        );
        assert!(
            storage.fills.load(std::sync::atomic::Ordering::SeqCst) > before,
            "round {round}: the helper prepared the space after the first record"
        );
    }
    let overlaps = storage.overlaps.lock().unwrap().clone();
    assert!(overlaps.is_empty(), "{overlaps:?}");
    let store = open();
    let events = store.events("s", ..).unwrap();
    assert_eq!(events.len(), written + 3 * 5);
    store.close().unwrap();
    drop(store);
    reopen_reads_back_and_verifies(dir.path(), options.clone(), &events);
}

/// Closing a `Sync` store while the helper zero-fills ahead: `close()` returns only once the
/// fill is done and the helper stopped, so nothing of this store writes the segment after
/// its writer lock is released (the next writer — this process reopening, or another — may
/// be appending there at once). Closed right after a fill began, five times over.
#[test]
fn closing_waits_for_the_helpers_zero_fill_before_the_lock_goes() {
    let dir = tempfile::tempdir().unwrap();
    let storage = WatchedZeroFill::new(dir.path(), false, true);
    let options = StoreOptions::default()
        .with_durability(Durability::Sync)
        .with_preallocate_bytes(16 << 10);
    let note = LogType::new("plugin/note").unwrap();
    let fills = || storage.fills.load(std::sync::atomic::Ordering::SeqCst);
    for round in 0..5 {
        let store =
            Store::open_with(std::sync::Arc::new(storage.clone()), options.clone()).unwrap();
        if round == 0 {
            store
                .create_session(SessionHeader::new("s", 1_000), Vec::new())
                .unwrap();
        }
        let before = fills();
        let mut i = 0u32;
        while fills() == before {
            assert!(i < 100_000, "round {round}: no zero-fill began");
            let data = format!("{{\"round\":{round},\"i\":{i}}}");
            store
                .append("s", Draft::log(&note, data).ignorable())
                .unwrap();
            i += 1;
        }
        store.close().unwrap();
        assert!(
            storage.running.lock().unwrap().is_none(),
            "round {round}: a zero-fill still runs after close"
        );
        let at_close = fills();
        drop(store);
        assert_eq!(
            fills(),
            at_close,
            "round {round}: a zero-fill ran after close"
        );
    }
    let overlaps = storage.overlaps.lock().unwrap().clone();
    assert!(overlaps.is_empty(), "{overlaps:?}");
}

/// A clean close cuts off the space the writer allocated ahead (the next open reads no zeros
/// past the last record); the closed store's last handle, dropped after another writer has
/// opened the store and appended, cuts nothing of that writer's records. Regression: a cut
/// judged by the file's length, run again when the last handle went, cut the next writer's
/// record (DSH's backend test: a `Sync` store created and closed, reopened, one deletion
/// written, closed, opened again — the deletion was missing).
#[test]
fn a_dropped_closed_store_never_cuts_the_next_writers_records() {
    for durability in [Durability::Sync, Durability::Buffered] {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions::default()
            .with_durability(durability)
            .with_preallocate_bytes(64 << 10);
        let first = store_with_session(dir.path(), &options);
        append_padded(&first, 20, 30);
        let written_first = first.events("s", ..).unwrap().len();
        first.close().unwrap();
        let segment = std::fs::read_dir(dir.path().join("segments"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .max()
            .unwrap();
        let records_end = sessdb::codec::segment::SEGMENT_HEADER_LEN as u64 + first.stats().end_lsn;
        assert_eq!(
            std::fs::metadata(&segment).unwrap().len(),
            records_end,
            "{durability:?}: a closed store's active segment ends at its last record"
        );
        let second = Store::open(dir.path(), options.clone()).unwrap();
        append_padded(&second, 3, 30);
        let before = second.events("s", ..).unwrap();
        assert_eq!(before.len(), written_first + 3);
        drop(first);
        second.close().unwrap();
        drop(second);
        reopen_reads_back_and_verifies(dir.path(), options, &before);
    }
}

/// A reader beside the writers of a store of many small segments reads on across a writer's
/// clean close (which cuts the active segment's allocated space under it) and the next
/// writer's appends into the same segment (which allocate it again), and verify finds
/// nothing wrong.
#[test]
fn a_reader_beside_reads_on_across_a_clean_close_and_the_next_writer() {
    for durability in [Durability::Buffered, Durability::Sync] {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions::default()
            .with_durability(durability)
            .with_segment_bytes_max(8 << 10)
            .with_preallocate_bytes(4 << 10);
        let first = store_with_session(dir.path(), &options);
        append_padded(&first, 300, 90);
        let reader = Store::open_read_only(dir.path(), options.clone()).unwrap();
        assert!(reader.stats().segments >= 4, "{:?}", reader.stats());
        assert_eq!(
            reader.events("s", ..).unwrap(),
            first.events("s", ..).unwrap()
        );
        append_padded(&first, 40, 90);
        let written = first.events("s", ..).unwrap();
        first.close().unwrap();
        drop(first);
        reader.refresh().unwrap();
        assert_eq!(reader.events("s", ..).unwrap(), written, "{durability:?}");
        let second = Store::open(dir.path(), options.clone()).unwrap();
        append_padded(&second, 40, 90);
        reader.refresh().unwrap();
        assert_eq!(
            reader.events("s", ..).unwrap(),
            second.events("s", ..).unwrap(),
            "{durability:?}"
        );
        let before = second.events("s", ..).unwrap();
        second.close().unwrap();
        drop(second);
        drop(reader);
        reopen_reads_back_and_verifies(dir.path(), options, &before);
    }
}

/// A store whose segments another sessdb version wrote (the header's format version differs,
/// its checksum valid) is refused as such — not reported as damage, and never salvaged: the
/// advice is to export with that version and import here. Nothing on disk changes.
#[test]
fn a_store_of_another_format_version_is_refused_not_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default();
    let store = store_with_session(dir.path(), &options);
    store.close().unwrap();
    drop(store);
    let segment = std::fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    // Format version 2 (offset 8), the header checksum (offset 36) made valid again.
    bytes[8] = 2;
    let crc = crc32fast::hash(&bytes[..36]);
    bytes[36..40].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&segment, &bytes).unwrap();
    let refused = |e: sessdb::Error| {
        assert!(
            matches!(
                e,
                sessdb::Error::UnsupportedStore {
                    found: 2,
                    expected: 6,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("export it with that version"), "{e}");
    };
    refused(Store::open(dir.path(), options.clone()).unwrap_err());
    refused(Store::open_read_only(dir.path(), sessdb::StoreOptions::default()).unwrap_err());
    let storage = sessdb::storage::FsStorage::new(dir.path());
    refused(sessdb::store::salvage_plan(&storage, &options).unwrap_err());
    assert_eq!(std::fs::read(&segment).unwrap(), bytes);
}

/// Before: a read-only open of a path that does not exist (a typo) returned an empty store.
/// Now it is `NotFound`, as rusqlite's read-only open is; so is a directory holding no store.
#[test]
fn regression_a_read_only_open_of_no_store_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    for path in [dir.path().join("no-such-store"), dir.path().to_owned()] {
        match Store::open_read_only(&path, StoreOptions::default()) {
            Err(Error::Io { source, .. }) => {
                assert_eq!(
                    source.kind(),
                    std::io::ErrorKind::NotFound,
                    "{}",
                    path.display()
                );
            }
            other => panic!("{}: {other:?}", path.display()),
        }
        assert!(!path.join("segments").exists(), "nothing created");
    }
    // A store there opens.
    Store::open(dir.path().join("s"), StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    Store::open_read_only(dir.path().join("s"), StoreOptions::default()).unwrap();
}

/// Before: `Store::open` made a store of any directory — a project's, a home directory —
/// given by mistake. Now a directory that holds other files and no store is refused
/// (`NotAStore`), nothing created in it; a missing or empty one becomes a store, and a store
/// opens as before.
#[test]
fn regression_a_writable_open_of_a_directory_of_other_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.txt"), b"mine").unwrap();
    match Store::open(&project, StoreOptions::default()) {
        Err(Error::NotAStore { path }) => assert_eq!(path, project.display().to_string()),
        other => panic!("{other:?}"),
    }
    let names: Vec<_> = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("notes.txt")],
        "nothing created"
    );
    // Missing and empty directories become stores; a store with files of its users beside
    // (a ship id, a demo's marker) opens.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for path in [dir.path().join("new"), empty.clone()] {
        Store::open(&path, StoreOptions::default())
            .unwrap()
            .close()
            .unwrap();
    }
    std::fs::write(empty.join("ship-id"), b"x\n").unwrap();
    Store::open(&empty, StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
}

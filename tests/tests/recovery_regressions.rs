//! The six recovery failures found under injected faults, each a named regression test (each
//! failed before recovery went through one log cursor and one decision table):
//! 1. one EIO during a segment roll with concurrent appenders left a store that could not be
//!    reopened, and salvage's report of it was false;
//! 2. a follower beside a live buffered writer reported damage that was a write in flight;
//! 3. a follower across a salvage reported corruption;
//! 4. a log cut at a record boundary below the checkpoint's coverage was silently shorter;
//! 5. a refused writable open changed the store;
//! 6. `close()` returned `Ok` on a poisoned store.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io;
use std::sync::Arc;

use sessdb::CorruptionKind;
use sessdb::codec::frame::{FrameCheck, check_frame};
use sessdb::codec::segment::SEGMENT_HEADER_LEN;
use sessdb::storage::{
    CrashStorage, FileView, LockGuard, MemStorage, OpenMode, Storage, StorageFile, WriteWindow,
};
use sessdb::store::{salvage_plan, verify};
use sessdb::{Clock, Draft, Durability, Error, LogType, SessionHeader, Store, StoreOptions};
use sessdb_tests::Backend;
use sessdb_workload::{WorkloadSpec, generate, payload as p};
use std::sync::Mutex;

fn eio() -> io::Error {
    io::Error::other("injected EIO")
}

/// The storage operations of a segment roll, in the order a roll does them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RollStep {
    /// Cutting the old segment's allocated space to its records.
    TruncateOld,
    /// Creating the new segment file.
    Create,
    /// Writing its header.
    HeaderWrite,
    /// Syncing it.
    HeaderSync,
    /// Syncing the `segments/` directory.
    DirSync,
}

const ROLL_STEPS: [RollStep; 5] = [
    RollStep::TruncateOld,
    RollStep::Create,
    RollStep::HeaderWrite,
    RollStep::HeaderSync,
    RollStep::DirSync,
];

#[derive(Debug, Default)]
struct Armed {
    step: Option<RollStep>,
    hit: bool,
}

/// Memory storage that fails one operation of the next segment roll with EIO.
#[derive(Debug, Clone)]
struct RollFaults {
    inner: MemStorage,
    armed: Arc<Mutex<Armed>>,
}

impl RollFaults {
    fn take(&self, step: RollStep) -> bool {
        let mut a = self.armed.lock().unwrap();
        if a.step == Some(step) && !a.hit {
            a.hit = true;
            return true;
        }
        false
    }
}

fn is_segment(path: &str) -> bool {
    path.starts_with("segments/") && path.ends_with(".seg")
}

impl Storage for RollFaults {
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        self.inner.list_with_ids(dir)
    }
    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let new_segment = mode == OpenMode::CreateNew && is_segment(path);
        if new_segment && self.take(RollStep::Create) {
            return Err(eio());
        }
        Ok(Box::new(FaultFile {
            inner: self.inner.open(path, mode)?,
            storage: self.clone(),
            new_segment,
            segment: is_segment(path),
        }))
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        if dir == "segments" && self.take(RollStep::DirSync) {
            return Err(eio());
        }
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        self.inner.try_lock(path)
    }
    fn describe(&self, path: &str) -> String {
        self.inner.describe(path)
    }
}

#[derive(Debug)]
struct FaultFile {
    inner: Box<dyn StorageFile>,
    storage: RollFaults,
    new_segment: bool,
    segment: bool,
}

impl StorageFile for FaultFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.new_segment && offset == 0 && self.storage.take(RollStep::HeaderWrite) {
            return Err(eio());
        }
        self.inner.write_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        if self.segment && self.storage.take(RollStep::TruncateOld) {
            return Err(eio());
        }
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        if self.new_segment && self.storage.take(RollStep::HeaderSync) {
            return Err(eio());
        }
        self.inner.sync_data()
    }
    fn view(&self) -> io::Result<FileView> {
        self.inner.view()
    }
    fn preallocate(&self, len: u64) -> io::Result<bool> {
        self.inner.preallocate(len)
    }
    fn map_window(&self, start: u64, end: u64) -> io::Result<Option<WriteWindow>> {
        self.inner.map_window(start, end)
    }
    fn identity(&self) -> Option<(u64, u64)> {
        self.inner.identity()
    }
}

fn turn_pair(store: &Store, session: &str, turn: u64) -> sessdb::Result<u64> {
    store.append(
        session,
        Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
    )?;
    store.append(
        session,
        Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
    )
}

#[test]
fn regression_an_eio_at_any_step_of_a_roll_with_eight_appenders_leaves_a_store_that_reopens() {
    let mut runs = 0;
    for durability in [Durability::Sync, Durability::Buffered] {
        for step in ROLL_STEPS {
            for round in 0..4 {
                let what = format!("{durability:?}, {step:?}, round {round}");
                let storage = RollFaults {
                    inner: MemStorage::new(),
                    armed: Arc::new(Mutex::new(Armed::default())),
                };
                let options = StoreOptions::tiny()
                    .with_durability(durability)
                    .with_clock(Clock::fixed(1_000))
                    .with_segment_bytes_max(2048)
                    .with_preallocate_bytes(512);
                let store = Store::open_with(Arc::new(storage.clone()), options.clone()).unwrap();
                for t in 0..8 {
                    store
                        .create_session(SessionHeader::new(format!("s{t}"), 0), Vec::new())
                        .unwrap();
                }
                storage.armed.lock().unwrap().step = Some(step);
                let threads: Vec<_> = (0..8)
                    .map(|t| {
                        let store = store.clone();
                        std::thread::spawn(move || {
                            let mut acked = None;
                            for turn in 1..=40 {
                                match turn_pair(&store, &format!("s{t}"), turn) {
                                    Ok(seq) => acked = Some(seq),
                                    Err(_) => break,
                                }
                            }
                            acked
                        })
                    })
                    .collect();
                let acked: Vec<Option<u64>> =
                    threads.into_iter().map(|h| h.join().unwrap()).collect();
                assert!(
                    storage.armed.lock().unwrap().hit,
                    "{what}: the fault was never hit"
                );
                runs += 1;
                assert!(
                    matches!(store.sync(), Err(Error::Poisoned { .. })),
                    "{what}: poisoned after the failed roll"
                );
                drop(store);
                // The files as the failed process left them.
                let files = storage.inner.files();
                let image = || Arc::new(MemStorage::from_files(files.clone()));
                let report = verify(image()).unwrap();
                assert!(report.ok(), "{what}: {:?}", report.problems);
                let plan = salvage_plan(&*image(), &options).unwrap();
                assert!(plan.is_empty(), "{what}: nothing to salvage: {plan:?}");
                let after = Store::open_with(image(), options.clone())
                    .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
                for (t, acked) in acked.iter().enumerate() {
                    let len = after.session_len(&format!("s{t}")).unwrap();
                    if let Some(seq) = acked {
                        assert!(len > *seq, "{what}: s{t} acked {seq}, holds {len}");
                    }
                }
                // And it takes writes again.
                turn_pair(&after, "s0", 1000).unwrap();
                after.close().unwrap();
            }
        }
    }
    eprintln!(
        "{runs} runs of eight appenders with one EIO in a roll: each store reopened, verified \
         clean, nothing to salvage, every acknowledged event there"
    );
}

#[test]
fn regression_salvage_names_the_records_of_every_segment_it_removes() {
    // A store whose second segment no longer continues the first (as a failed roll that
    // was written past used to leave): salvage removes it and every later one, and its
    // report counts exactly the records they held and names their sessions.
    let storage = MemStorage::new();
    let options = StoreOptions::tiny().with_clock(Clock::fixed(1_000));
    let store = Store::open_with(Arc::new(storage.clone()), options.clone()).unwrap();
    for t in 0..3 {
        store
            .create_session(SessionHeader::new(format!("s{t}"), 0), Vec::new())
            .unwrap();
    }
    for turn in 1..=120 {
        turn_pair(&store, &format!("s{}", turn % 3), turn).unwrap();
    }
    store.close().unwrap();
    let mut files = storage.files();
    files.retain(|(p, _)| !p.starts_with("checkpoints/"));
    let segments: Vec<String> = files
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| p.starts_with("segments/"))
        .collect();
    assert!(segments.len() >= 4, "{segments:?}");
    // Cut the first segment short by its last record: the second no longer continues it.
    let first = &segments[0];
    let bytes = files.iter().find(|(p, _)| p == first).unwrap().1.clone();
    let boundaries = record_boundaries(&bytes);
    let cut = boundaries[boundaries.len() - 2];
    files
        .iter_mut()
        .find(|(p, _)| p == first)
        .unwrap()
        .1
        .truncate(cut);
    // The records in the segments salvage must remove, counted independently (a writer's
    // epoch record, first in each segment, is no session's: not a record lost).
    let mut removed = 0;
    for (p, b) in &files {
        if p.starts_with("segments/") && p != first {
            let starts = record_boundaries(b);
            removed += starts[..starts.len() - 1]
                .iter()
                .filter(|&&at| b[at + 8] != sessdb::codec::frame::RecordKind::Epoch as u8)
                .count();
        }
    }
    let image = MemStorage::from_files(files);
    let plan = salvage_plan(&image, &options).unwrap();
    assert_eq!(plan.records_dropped, removed as u64, "{plan:?}");
    assert!(!plan.sessions.is_empty(), "{plan:?}");
    let salvaged = Store::open_with(Arc::new(image), options.with_salvage(true)).unwrap();
    let report = salvaged.open_report().salvaged.clone().unwrap();
    for loss in &report.sessions {
        assert_eq!(
            salvaged.session_len(&loss.session).unwrap_or(0),
            loss.kept,
            "{loss:?}"
        );
    }
}

/// File offsets of every frame start in a segment's bytes, and of the end of its records.
fn record_boundaries(segment: &[u8]) -> Vec<usize> {
    let mut out = vec![SEGMENT_HEADER_LEN];
    let mut pos = SEGMENT_HEADER_LEN;
    while let FrameCheck::Valid { frame_len, .. } = check_frame(&segment[pos..], u32::MAX) {
        pos += frame_len;
        out.push(pos);
    }
    out
}

/// A turn of `chunks` streamed text chunks of about 3 KB each: frames that span pages, so a
/// reader's `pread` can see part of one beside later ones.
fn chunky_turn(store: &Store, session: &str, turn: u64, chunks: u64) -> sessdb::Result<u64> {
    let text = "x".repeat(3000);
    store.append(
        session,
        Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
    )?;
    store.append(
        session,
        Draft::log(&LogType::STEP_START, p::step(turn, 1).into_bytes()),
    )?;
    for i in 0..chunks {
        store.append(
            session,
            Draft::log(
                &LogType::ASSISTANT_CHUNK,
                p::text_delta(turn, 1, i, &text).into_bytes(),
            ),
        )?;
    }
    store.append(
        session,
        Draft::log(&LogType::STEP_END, p::step(turn, 1).into_bytes()),
    )?;
    store.append(
        session,
        Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
    )
}

#[test]
fn regression_a_follower_beside_a_buffered_writer_never_reports_damage() {
    let dir = tempfile::tempdir().unwrap();
    // Many rolls and write windows while the follower reads.
    let options = StoreOptions::default()
        .with_durability(Durability::Buffered)
        .with_clock(Clock::fixed(1_000))
        .with_segment_bytes_max(1 << 20)
        .with_preallocate_bytes(64 << 10)
        .with_checkpoint_interval_bytes(4 << 20);
    let store = Store::open(dir.path(), options).unwrap();
    let writers = 3;
    for w in 0..writers {
        store
            .create_session(SessionHeader::new(format!("w{w}"), 0), Vec::new())
            .unwrap();
    }
    let reader = Store::open_read_only(dir.path(), sessdb::StoreOptions::default()).unwrap();
    let mut subs: Vec<_> = (0..writers)
        .map(|w| reader.subscribe(&format!("w{w}"), 0).unwrap())
        .collect();
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                let id = format!("w{w}");
                for turn in 1..=60 {
                    chunky_turn(&store, &id, turn, 40).unwrap();
                }
                store.session_len(&id).unwrap()
            })
        })
        .collect();
    let mut seen = vec![0u64; writers];
    let mut refreshes = 0u64;
    loop {
        let finished = threads.iter().all(std::thread::JoinHandle::is_finished);
        reader
            .refresh()
            .unwrap_or_else(|e| panic!("refresh {refreshes} after {seen:?} events: {e}"));
        refreshes += 1;
        for (w, sub) in subs.iter_mut().enumerate() {
            while let Some(e) = sub
                .try_next()
                .unwrap_or_else(|e| panic!("read after {seen:?} events: {e}"))
            {
                assert_eq!(e.seq(), seen[w]);
                seen[w] += 1;
            }
        }
        if finished {
            break;
        }
    }
    let lens: Vec<u64> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        seen, lens,
        "the follower read every event ({refreshes} refreshes)"
    );
    assert!(store.stats().segments > 4);
    store.close().unwrap();
    assert!(
        verify(Arc::new(sessdb::storage::FsStorage::new(dir.path())))
            .unwrap()
            .ok()
    );
}

fn demo_store(storage: &Backend) -> Vec<String> {
    store_of(
        storage,
        &WorkloadSpec {
            sessions: 4,
            ..WorkloadSpec::default()
        },
    )
}

fn store_of(storage: &Backend, spec: &WorkloadSpec) -> Vec<String> {
    let mut store = Store::open_with(
        storage.storage(),
        StoreOptions::default().with_clock(Clock::fixed(1_000)),
    )
    .unwrap();
    let summary = generate(spec, &mut store).unwrap();
    store.close().unwrap();
    summary.sessions
}

fn the_segment(storage: &Backend) -> (String, Vec<u8>) {
    let mut segs: Vec<_> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .collect();
    assert_eq!(segs.len(), 1);
    segs.pop().unwrap()
}

#[test]
fn regression_a_follower_across_a_salvage_goes_on() {
    for (name, storage) in [("mem", Backend::mem()), ("fs", Backend::fs())] {
        let sessions = demo_store(&storage);
        // Damage one record of the first session (4 bytes inside its first append).
        let (path, mut bytes) = the_segment(&storage);
        let reader =
            Store::open_read_only_with(storage.storage(), StoreOptions::default()).unwrap();
        // Two root sessions with no fork between them: one is damaged, the other followed.
        let roots: Vec<String> = reader
            .list()
            .unwrap()
            .into_iter()
            .filter(|s| s.header.parent_session.is_none())
            .map(|s| s.header.id)
            .filter(|id| {
                !reader
                    .list()
                    .unwrap()
                    .iter()
                    .any(|c| c.header.parent_session.as_deref() == Some(id))
            })
            .collect();
        assert!(roots.len() >= 2, "{sessions:?}");
        let (victim, follow) = (&roots[0], &roots[1]);
        // A record of the victim in the second half of the log.
        let of_victim: Vec<usize> = record_boundaries(&bytes)
            .into_iter()
            .filter(|&b| b + 40 < bytes.len() && names(&bytes[b..], victim))
            .collect();
        let first_loc = of_victim[of_victim.len() / 2];
        for b in &mut bytes[first_loc + 20..first_loc + 24] {
            *b ^= 0x5a;
        }
        storage.put(&path, bytes);
        let len = reader.session_len(follow).unwrap();
        let mut sub = reader.subscribe(follow, len).unwrap();
        // Salvage, then a writer goes on with every session.
        let store = Store::open_with(
            storage.storage(),
            StoreOptions::default()
                .with_salvage(true)
                .with_clock(Clock::fixed(2_000)),
        )
        .unwrap();
        let salvaged = store.open_report().salvaged.clone().unwrap();
        assert!(!salvaged.damage.is_empty());
        for id in store.list().unwrap().into_iter().map(|s| s.header.id) {
            store.resume(&id).unwrap();
        }
        store
            .append(
                follow,
                Draft::log(&LogType::TURN_START, p::turn_start(900).into_bytes()),
            )
            .unwrap();
        store.close().unwrap();
        let got = drained_after_refresh(&reader, &mut sub, name);
        assert_eq!(reader.session_len(follow).unwrap(), len + got.len() as u64);
    }
}

/// After a salvage and one more `turn/start` by the writer: the follower's refresh succeeds
/// and its subscription yields the events since, ending with that `turn/start`; their types.
fn drained_after_refresh(
    reader: &Store,
    sub: &mut sessdb::store::Subscription,
    name: &str,
) -> Vec<String> {
    reader
        .refresh()
        .unwrap_or_else(|e| panic!("{name}: the follower across the salvage: {e}"));
    let mut got = Vec::new();
    while let Some(e) = sub.try_next().unwrap() {
        got.push(e.event_type().to_owned());
    }
    assert_eq!(
        got.last().map(String::as_str),
        Some("turn/start"),
        "{name}: {got:?}"
    );
    got
}

/// Whether the frame at the start of `frame` is a record of session `id` (every record kind
/// but void starts its payload with the session id, a `u16` length and the bytes).
fn names(frame: &[u8], id: &str) -> bool {
    let n = usize::from(u16::from_le_bytes([frame[16], frame[17]]));
    frame.get(18..18 + n) == Some(id.as_bytes())
}

/// Sessions as `(id, events as JSONL lines)`.
fn contents(store: &Store) -> Vec<(String, Vec<Vec<u8>>)> {
    store
        .list()
        .unwrap()
        .into_iter()
        .map(|s| {
            let id = s.header.id;
            let events = store
                .events(&id, ..)
                .unwrap()
                .iter()
                .map(sessdb::Event::to_jsonl)
                .collect();
            (id, events)
        })
        .collect()
}

#[test]
fn regression_a_log_cut_below_the_checkpoint_at_any_record_boundary_is_refused_and_salvaged() {
    let storage = Backend::mem();
    // Small sessions (with a fork) keep one case quick: every boundary is a case.
    store_of(
        &storage,
        &WorkloadSpec {
            sessions: 2,
            max_turns: 2,
            max_chunks: 5,
            ..WorkloadSpec::default()
        },
    );
    let original =
        contents(&Store::open_read_only_with(storage.storage(), StoreOptions::default()).unwrap());
    let (path, bytes) = the_segment(&storage);
    let boundaries = record_boundaries(&bytes);
    let end = *boundaries.last().unwrap();
    assert!(boundaries.len() > 40, "{}", boundaries.len());
    let mut cases = 0;
    for (n, &cut) in boundaries.iter().enumerate() {
        if cut == end {
            continue;
        }
        for zero_filled in [false, true] {
            let mut cut_bytes = bytes[..cut].to_vec();
            if zero_filled {
                cut_bytes.resize(bytes.len(), 0);
            }
            // Every fourth boundary zero-filled keeps the test quick; every one is cut.
            if zero_filled && n % 4 != 0 {
                continue;
            }
            cases += 1;
            let what = format!("cut at {cut} (record {n}), zero-filled {zero_filled}");
            let image = storage.image_with(&path, &cut_bytes);
            // Reads refuse.
            match Store::open_read_only_with(image.storage(), StoreOptions::default()) {
                Err(Error::Corruption {
                    kind: CorruptionKind::MissingRecords { vouched_to },
                    ..
                }) => assert_eq!(vouched_to, (end - SEGMENT_HEADER_LEN) as u64, "{what}"),
                other => panic!("{what}: a reader must refuse: {other:?}"),
            }
            // verify names the missing range.
            let report = verify(image.storage()).unwrap();
            assert!(
                report.problems.iter().any(|p| p.contains(&format!(
                    "vouches for records up to LSN {}",
                    end - SEGMENT_HEADER_LEN
                ))),
                "{what}: {:?}",
                report.problems
            );
            // A writable open refuses and writes nothing.
            let before = image.fingerprint();
            assert!(
                matches!(
                    Store::open_with(image.storage(), StoreOptions::default()),
                    Err(Error::Corruption { .. })
                ),
                "{what}"
            );
            assert_eq!(image.fingerprint(), before, "{what}: a refused open wrote");
            // Salvage ends in a store that opens, every session a prefix of what it was,
            // each shorter one named.
            let salvaged =
                Store::open_with(image.storage(), StoreOptions::default().with_salvage(true))
                    .unwrap_or_else(|e| panic!("{what}: salvage: {e}"));
            let report = salvaged.open_report().salvaged.clone().unwrap();
            assert!(
                report
                    .damage
                    .iter()
                    .any(|d| matches!(d.kind, CorruptionKind::MissingRecords { .. })),
                "{what}: {report:?}"
            );
            let now = contents(&salvaged);
            for (id, events) in &original {
                let kept = now
                    .iter()
                    .find(|(i, _)| i == id)
                    .map_or(&[][..], |(_, e)| e.as_slice());
                assert_eq!(kept, &events[..kept.len()], "{what}: {id} is not a prefix");
                let named = report.sessions.iter().find(|l| &l.session == id);
                if kept.len() < events.len() {
                    let loss = named.unwrap_or_else(|| panic!("{what}: {id} lost events unnamed"));
                    assert_eq!(loss.kept, kept.len() as u64, "{what}");
                } else {
                    assert!(named.is_none(), "{what}: {id} named but whole");
                }
            }
            salvaged.close().unwrap();
            Store::open_with(image.storage(), StoreOptions::default())
                .unwrap_or_else(|e| panic!("{what}: reopen after salvage: {e}"))
                .close()
                .unwrap();
        }
    }
    assert!(cases > 40);
    eprintln!(
        "{cases} cuts below the checkpoint: each refused by a reader, verify and a writer (which \
         wrote nothing), then salvaged to a store that reopens"
    );
}

#[test]
fn regression_a_refused_writable_open_leaves_every_file_as_it_was() {
    for (name, storage) in [("mem", Backend::mem()), ("fs", Backend::fs())] {
        demo_store(&storage);
        let (path, bytes) = the_segment(&storage);
        for zero_filled in [false, true] {
            // 13 bytes: a short segment header, as an interrupted creation would leave it,
            // but the checkpoint vouches for the whole log.
            let mut cut = bytes[..13].to_vec();
            if zero_filled {
                cut.resize(bytes.len(), 0);
                cut[..13].copy_from_slice(&bytes[..13]);
            }
            let image = storage.image_with(&path, &cut);
            let before = image.fingerprint();
            let err = Store::open_with(image.storage(), StoreOptions::default()).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Corruption {
                        kind: CorruptionKind::MissingRecords { .. },
                        ..
                    }
                ),
                "{name} {zero_filled}: {err}"
            );
            assert_eq!(
                image.fingerprint(),
                before,
                "{name} {zero_filled}: a refused open wrote"
            );
            // Salvage still works on it, and the store then opens.
            let salvaged =
                Store::open_with(image.storage(), StoreOptions::default().with_salvage(true))
                    .unwrap_or_else(|e| panic!("{name} {zero_filled}: salvage: {e}"));
            let report = salvaged.open_report().salvaged.clone().unwrap();
            assert!(!report.sessions.is_empty(), "{report:?}");
            salvaged.close().unwrap();
            Store::open_with(image.storage(), StoreOptions::default()).unwrap();
        }
    }
}

#[test]
fn regression_close_after_a_failed_sync_returns_the_poison_error() {
    let storage = CrashStorage::new();
    let store = Store::open_with(Arc::new(storage.clone()), StoreOptions::tiny()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    store
        .append(
            "s",
            Draft::log(&LogType::TURN_START, p::turn_start(1).into_bytes()),
        )
        .unwrap();
    storage.fail_at(storage.ops() + 1);
    assert!(matches!(store.sync(), Err(Error::Io { .. })));
    assert!(
        matches!(store.close(), Err(Error::Poisoned { .. })),
        "close after a failed sync"
    );
    // The lock is released all the same: the store reopens.
    Store::open_with(Arc::new(storage.crash()), StoreOptions::tiny()).unwrap();
}

#[test]
fn stats_never_report_a_placeholder_coverage() {
    let storage = Backend::mem();
    demo_store(&storage);
    let store = Store::open_with(storage.storage(), StoreOptions::default()).unwrap();
    // A second checkpoint, so the open below falls back from the newer one to an older one.
    store
        .append(
            &store.list().unwrap()[0].header.id,
            Draft::log(&LogType::TURN_START, p::turn_start(500).into_bytes()),
        )
        .unwrap();
    assert!(store.checkpoint().unwrap().is_some());
    store.close().unwrap();
    // Damage the newest checkpoint's table (the part its header's CRC covers): the open falls
    // back to the older one.
    let mut ckpts: Vec<_> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("checkpoints/"))
        .collect();
    let (path, mut bytes) = ckpts.pop().unwrap();
    bytes[sessdb::codec::checkpoint::CHECKPOINT_HEADER_LEN + 12] ^= 1;
    storage.put(&path, bytes);
    let store = Store::open_with(storage.storage(), StoreOptions::default()).unwrap();
    assert!(!store.open_report().checkpoints_discarded.is_empty());
    let stats = store.stats();
    assert!(stats.checkpoint_lsn <= stats.end_lsn, "{stats:?}");
}

#[test]
fn regression_verify_reports_every_damaged_place() {
    let storage = Backend::mem();
    demo_store(&storage);
    let (path, mut bytes) = the_segment(&storage);
    let b = record_boundaries(&bytes);
    let (first, second) = (b[b.len() / 4], b[b.len() * 3 / 4]);
    for at in [first, second] {
        bytes[at + 20] ^= 0x40;
    }
    storage.put(&path, bytes);
    let report = verify(storage.storage()).unwrap();
    assert!(!report.ok());
    for at in [first, second] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.contains(&format!("at byte {at}:"))),
            "{at}: {:?}",
            report.problems
        );
    }
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert_eq!(report.segments, 1);
}

/// Before: a follower across `repair --salvage` of a 9-segment store failed in 10 of 10
/// rounds ("record contradicts the log: a stored event is refused"): salvage renames the
/// replaced segments one at a time, and a refresh between two renames built its view from
/// old and new segments together. Now a refresh in every gap (before and after every rename
/// and removal) keeps its view while the salvage marker is there, and after the salvage the
/// follower goes on with the salvaged log.
#[test]
fn regression_a_follower_across_a_salvage_of_many_segments_goes_on() {
    for (name, storage) in [("mem", Backend::mem()), ("fs", Backend::fs())] {
        let options = || {
            StoreOptions::default()
                .with_segment_bytes_max(64 * 1024)
                .with_clock(Clock::fixed(1_000))
        };
        let mut store = Store::open_with(storage.storage(), options()).unwrap();
        generate(
            &WorkloadSpec {
                seed: 77,
                sessions: 12,
                min_turns: 3,
                max_turns: 6,
                ..WorkloadSpec::default()
            },
            &mut store,
        )
        .unwrap();
        store.close().unwrap();
        drop(store);
        let mut segs: Vec<(String, Vec<u8>)> = storage
            .files()
            .into_iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .collect();
        assert!(segs.len() >= 6, "{name}: {} segments", segs.len());
        let reader =
            std::sync::Arc::new(Store::open_read_only_with(storage.storage(), options()).unwrap());
        // A session with records in the last segment is followed; one record in each of
        // three earlier segments is damaged.
        let followed = reader
            .list()
            .unwrap()
            .into_iter()
            .max_by_key(|i| i.last_time)
            .unwrap()
            .header
            .id;
        let len = reader.session_len(&followed).unwrap();
        let mut sub = reader.subscribe(&followed, len).unwrap();
        let n = segs.len();
        for (path, bytes) in segs.iter_mut().take(n - 1).skip(1).step_by(2).take(3) {
            let b = record_boundaries(bytes);
            let at = b[b.len() / 2] + 20;
            for x in &mut bytes[at..at + 4] {
                *x ^= 0x5a;
            }
            storage.put(path, bytes.clone());
        }
        let refreshes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let between = {
            let reader = std::sync::Arc::clone(&reader);
            let refreshes = std::sync::Arc::clone(&refreshes);
            move |what: &str| {
                reader.refresh().unwrap_or_else(|e| {
                    panic!("{what}: a refresh between two of the salvage's changes: {e}")
                });
                refreshes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let salvaging = sessdb_tests::Hooked::new(storage.storage()).on_change(between);
        let store =
            Store::open_with(std::sync::Arc::new(salvaging), options().with_salvage(true)).unwrap();
        let salvaged = store.open_report().salvaged.clone().unwrap();
        assert!(salvaged.damage.len() >= 3, "{name}: {salvaged:?}");
        assert!(
            refreshes.load(std::sync::atomic::Ordering::Relaxed) >= 8,
            "{name}: a refresh in every gap"
        );
        store.resume(&followed).ok();
        store
            .append(
                &followed,
                Draft::log(&LogType::TURN_START, p::turn_start(900).into_bytes()),
            )
            .unwrap();
        store.close().unwrap();
        drop(store);
        drained_after_refresh(&reader, &mut sub, name);
        // The view is the salvaged log, as a fresh read-only open reads it.
        let fresh = Store::open_read_only_with(storage.storage(), options()).unwrap();
        assert_eq!(contents(&reader), contents(&fresh), "{name}");
        assert!(
            !storage.files().iter().any(|(p, _)| p == "SALVAGING"),
            "{name}"
        );
    }
}

/// Found beside busy loops (`store_files.rs` `verify_beside_a_live_writer_reports_no_damage`,
/// 1 run in a `cargo test` beside two `yes > /dev/null`): `verify` beside a writer rolling
/// 4 KiB segments reported "segment does not continue the log (expected first LSN 490586)"
/// for a segment three segments on. A directory listing taken while files are created may
/// leave out files created during it and still return later ones (readdir's order is the
/// directory's hash order, not creation order), so a reader saw a gap that was never on
/// disk. A reader now takes the listing again when it shows a gap, as it does when a listed
/// file is gone; a gap that stays is reported. Here the first listing of `segments/` leaves
/// out two files from the middle.
#[test]
fn regression_a_listing_that_missed_segments_created_during_it_is_taken_again() {
    let inner = MemStorage::new();
    let writer = Store::open_with(Arc::new(inner.clone()), StoreOptions::tiny()).unwrap();
    writer
        .create_session(SessionHeader::new("w", 0), Vec::new())
        .unwrap();
    for turn in 1..=200 {
        writer
            .append(
                "w",
                Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
            )
            .unwrap();
        writer
            .append(
                "w",
                Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
            )
            .unwrap();
    }
    let listings = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let missed = {
        let listings = Arc::clone(&listings);
        sessdb_tests::Hooked::new(Arc::new(inner.clone())).on_list(move |dir, mut names| {
            if dir.starts_with("segments")
                && listings.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0
            {
                names.sort();
                assert!(names.len() >= 6, "{names:?}");
                names.drain(2..4);
            }
            Ok(names)
        })
    };
    // The open judges the newest segments only (the files missed lie among the older ones);
    // the first read of the older ones lists them again, finds names the open's listing
    // lacked, and builds the view again from a whole listing.
    let reader = Store::open_read_only_with(Arc::new(missed), StoreOptions::tiny()).unwrap();
    assert_eq!(
        reader.events("w", ..).unwrap(),
        writer.events("w", ..).unwrap()
    );
    assert!(listings.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    // A gap that is there in every listing is damage, and said so.
    let always = sessdb_tests::Hooked::new(Arc::new(inner.clone())).on_list(|dir, mut names| {
        if dir.starts_with("segments") {
            names.sort();
            names.drain(2..4);
        }
        Ok(names)
    });
    // (The open judges the newest segments; the read that needs the older ones meets it.)
    let view = Store::open_read_only_with(Arc::new(always), StoreOptions::tiny()).unwrap();
    match view.events("w", ..) {
        Err(Error::Corruption {
            kind: CorruptionKind::SegmentGap { .. },
            ..
        }) => {}
        other => panic!("expected a gap, got {other:?}"),
    }
}

//! An open judges only the newest segments; the older ones are listed by name and opened,
//! checked and judged at their first use (`docs/DESIGN.md` §3.6), so an open does not grow
//! with the history. What must not change with it: every event reads back as written, damage
//! in an older segment is refused (by the first use that meets it, naming the file), a
//! merge's leftover among them is told from damage (and removed by a writable store), and a
//! read-only view whose older segments a writer rewrote before it first read them reads the
//! files as they are — never a record of another file under a name it listed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sessdb::storage::{MemStorage, Storage};
use sessdb::{CorruptionKind, Draft, Error, LogType, SessionHeader, Store, StoreOptions};
use sessdb_tests::Hooked;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_segment_bytes_max(8 << 10)
        .with_preallocate_bytes(0)
}

/// An ignorable note of about 1 KB, numbered `i`.
fn note(i: u64) -> Draft {
    let text = format!("{i:04}").repeat(250);
    Draft::log(
        LogType::new("plugin/note").unwrap(),
        format!("{{\"i\":{i},\"text\":\"{text}\"}}").into_bytes(),
    )
    .ignorable()
}

/// Notes of the session written last: they fit in the newest segment.
const NEW: u64 = 3;

/// A store of two sessions, closed: `old` written first, `events` notes spread over the
/// oldest segments, then `new`, [`NEW`] notes in the newest.
fn written(storage: &Arc<MemStorage>, events: u64) {
    fill(
        Store::open_with(Arc::clone(storage) as Arc<dyn Storage>, options()).unwrap(),
        events,
    );
}

/// [`written`]'s sessions, into `store`, then closed.
fn fill(store: Store, events: u64) {
    for (id, events) in [("old", events), ("new", NEW)] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        for i in 0..events {
            store.append(id, note(i)).unwrap();
        }
    }
    store.close().unwrap();
}

fn segment_names(storage: &MemStorage) -> Vec<String> {
    let mut names: Vec<String> = storage
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("segments/") && p.ends_with(".seg"))
        .collect();
    names.sort();
    names
}

/// `storage` with every open of a segment file counted.
fn counted(storage: &Arc<MemStorage>) -> (Arc<dyn Storage>, Arc<AtomicUsize>) {
    let opens = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&opens);
    let hooked = Hooked::new(Arc::clone(storage) as Arc<dyn Storage>).on_open(move |path| {
        if path.starts_with("segments/") {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    });
    (Arc::new(hooked), opens)
}

fn check_notes(store: &Store, id: &str, events: u64) {
    let got = store.events(id, 1..events + 1).unwrap();
    assert_eq!(got.len() as u64, events, "{id}");
    for (i, e) in got.iter().enumerate() {
        let want = note(i as u64).into_event(i as u64 + 1, 0);
        assert_eq!(e.data(), want.data(), "{id} seq {}", i + 1);
    }
}

#[test]
fn a_writable_open_opens_the_newest_segments_and_the_older_ones_at_their_first_read() {
    let storage = Arc::new(MemStorage::new());
    written(&storage, 40);
    let segments = segment_names(&storage).len();
    assert!(segments >= 5, "{segments} segments");
    let (hooked, opens) = counted(&storage);
    let store = Store::open_with(hooked, options()).unwrap();
    assert_eq!(
        opens.load(Ordering::SeqCst),
        2,
        "the open judged the newest two"
    );
    // The newest session's events are in the newest segments: nothing older opened.
    store.append("new", note(NEW)).unwrap();
    check_notes(&store, "new", NEW + 1);
    assert_eq!(opens.load(Ordering::SeqCst), 2);
    // The oldest session's: every older segment opened and judged, once.
    check_notes(&store, "old", 40);
    assert_eq!(opens.load(Ordering::SeqCst), segments);
    check_notes(&store, "old", 40);
    assert_eq!(opens.load(Ordering::SeqCst), segments);
    assert_eq!(store.stats().segments, segments);
    store.close().unwrap();
    // A read-only view alike: the newest two at open, the older ones at the first read
    // that needs them.
    let (hooked, opens) = counted(&storage);
    let view = Store::open_read_only_with(hooked, options()).unwrap();
    assert_eq!(
        opens.load(Ordering::SeqCst),
        2,
        "the view judged the newest two"
    );
    check_notes(&view, "new", NEW + 1);
    assert_eq!(opens.load(Ordering::SeqCst), 2);
    check_notes(&view, "old", 40);
    assert_eq!(opens.load(Ordering::SeqCst), segments);
    // Over a storage that lists no file identities, a view cannot pin what it has not
    // opened: it opens every segment at once, as before.
    let (hooked, opens) = counted(&storage);
    let unpinned: Arc<dyn Storage> = Arc::new(NoIds { inner: hooked });
    let view = Store::open_read_only_with(unpinned, options()).unwrap();
    assert_eq!(opens.load(Ordering::SeqCst), segments);
    check_notes(&view, "old", 40);
}

/// `inner` listed without file identities ([`Storage::list_with_ids`]'s default): a read-only
/// view over it cannot tell a file replaced after its listing, so it judges every segment
/// at open — the reference the lazily judged opens are held to.
#[derive(Debug)]
struct NoIds {
    inner: Arc<dyn Storage>,
}

impl Storage for NoIds {
    fn create_dir_all(&self, dir: &str) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &str) -> std::io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn open(
        &self,
        path: &str,
        mode: sessdb::storage::OpenMode,
    ) -> std::io::Result<Box<dyn sessdb::storage::StorageFile>> {
        self.inner.open(path, mode)
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &str) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &str) -> std::io::Result<Option<sessdb::storage::LockGuard>> {
        self.inner.try_lock(path)
    }
    fn describe(&self, path: &str) -> String {
        self.inner.describe(path)
    }
}

#[test]
fn damage_in_an_older_segment_is_refused_by_the_first_read_that_needs_it() {
    let storage = Arc::new(MemStorage::new());
    written(&storage, 40);
    let names = segment_names(&storage);
    let damaged = names[1].clone();
    let mut bytes = storage
        .files()
        .into_iter()
        .find(|(p, _)| *p == damaged)
        .unwrap()
        .1;
    bytes[3] ^= 0x40; // the header's magic
    storage.put(&damaged, bytes);
    let before = storage.files();
    let is_damage = |e: &Error| matches!(e, Error::Corruption { segment, kind: CorruptionKind::SegmentHeader(_), .. } if *segment == damaged);
    // A view judging every segment at open refuses there, naming the file.
    let unpinned: Arc<dyn Storage> = Arc::new(NoIds {
        inner: Arc::clone(&storage) as Arc<dyn Storage>,
    });
    let refused = Store::open_read_only_with(unpinned, options())
        .err()
        .unwrap();
    assert!(is_damage(&refused), "{refused:?}");
    // A read-only view judging the newest opens, reads the newest session, and refuses the
    // read that needs the damaged file with the same damage (it is no overtaken view: the
    // files are the ones it listed).
    let view =
        Store::open_read_only_with(Arc::clone(&storage) as Arc<dyn Storage>, options()).unwrap();
    check_notes(&view, "new", NEW);
    for _ in 0..2 {
        let e = view.events("old", 1..41).err().unwrap();
        assert!(is_damage(&e), "{e:?}");
    }
    // A writable store opens (the newest segments are whole) and takes appends to them.
    let store = Store::open_with(Arc::clone(&storage) as Arc<dyn Storage>, options()).unwrap();
    check_notes(&store, "new", NEW);
    // The read that needs the damaged file is refused with the same damage, every time.
    for _ in 0..2 {
        let e = store.events("old", 1..41).err().unwrap();
        assert!(is_damage(&e), "{e:?}");
    }
    assert!(store.compact().is_err(), "compaction meets the damage too");
    store.close().unwrap();
    assert!(before == storage.files(), "no file changed");
}

#[test]
fn an_older_segment_gone_is_a_gap_found_by_the_first_read_that_needs_it() {
    let storage = Arc::new(MemStorage::new());
    written(&storage, 40);
    let names = segment_names(&storage);
    let gone = names[names.len() - 4].clone();
    storage.remove(&gone).unwrap();
    let store = Store::open_with(Arc::clone(&storage) as Arc<dyn Storage>, options()).unwrap();
    check_notes(&store, "new", NEW);
    let e = store.events("old", 1..41).err().unwrap();
    assert!(
        matches!(
            &e,
            Error::Corruption {
                kind: CorruptionKind::SegmentGap { .. },
                ..
            }
        ),
        "{e:?}"
    );
    let view =
        Store::open_read_only_with(Arc::clone(&storage) as Arc<dyn Storage>, options()).unwrap();
    check_notes(&view, "new", NEW);
    let refused = view.events("old", 1..41).err();
    assert!(
        matches!(
            refused,
            Some(Error::Corruption {
                kind: CorruptionKind::SegmentGap { .. },
                ..
            })
        ),
        "{refused:?}"
    );
}

/// Five sessions interleaved over 2 KiB segments, four of them deleted (what compaction keeps
/// of each segment is small enough to merge), then a session written after them over three
/// segments of its own — so the newest two segments are ones appends wrote, after every
/// segment a compaction rewrites or merges.
fn merge_store(storage: &sessdb::storage::CrashStorage) -> Store {
    let options = || {
        StoreOptions::default()
            .with_durability(sessdb::Durability::Sync)
            .with_clock(sessdb::Clock::fixed(1_000))
            .with_segment_bytes_max(2048)
            .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
            .with_compaction(Some(
                sessdb::CompactionPolicy::default().with_staged_bytes_max(0),
            ))
    };
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    for id in ["a", "b", "c", "d", "e"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    let small = |text: String| {
        Draft::log(
            LogType::new("plugin/note").unwrap(),
            format!("{{\"note\":\"{text}\"}}").into_bytes(),
        )
        .ignorable()
    };
    for round in 0..18 {
        for id in ["a", "b", "c", "d", "e"] {
            store.append(id, small(format!("{id}-{round}"))).unwrap();
        }
    }
    for id in ["b", "c", "d", "e"] {
        store.delete_session(id).unwrap();
    }
    store
        .create_session(SessionHeader::new("z", 0), Vec::new())
        .unwrap();
    for i in 0..3 {
        store.append("z", note(i)).unwrap();
    }
    store.close().unwrap();
    drop(store);
    Store::open_with(
        Arc::new(storage.clone()),
        options().with_segment_bytes_max(8192),
    )
    .unwrap()
}

/// A merge cut between its rename and its removals leaves files wholly inside the merged one.
/// Among the older segments, a writable open does not see them; their first use tells them
/// from damage (nothing lost) and removes them, as an open that judged them would.
#[test]
fn a_merges_leftover_among_the_older_segments_is_told_from_damage_at_first_use() {
    use sessdb::storage::{CrashStorage, Fault};
    let full = CrashStorage::new();
    let (start, end, expected) = {
        let store = merge_store(&full);
        let start = full.ops();
        let expected = sessdb_tests::dump_store(&store);
        let report = store.compact().unwrap();
        assert!(report.segments_merged > 0, "{report:?}");
        (start, full.ops(), expected)
    };
    let mut found = 0;
    for n in start + 1..=end {
        let storage = CrashStorage::new();
        let store = merge_store(&storage);
        storage.fail_at_with(n, Fault::Eio);
        let report = store.compact();
        drop(store);
        let Err(Error::Io {
            op: "remove", path, ..
        }) = report
        else {
            continue;
        };
        if !path.starts_with("segments/") {
            continue;
        }
        found += 1;
        let image = storage.live_image();
        let before = segment_names(&image).len();
        let image: Arc<dyn Storage> = Arc::new(image);
        let opens = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&opens);
        let hooked = Hooked::new(Arc::clone(&image)).on_open(move |p| {
            if p.starts_with("segments/") {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        });
        let writer = Store::open_with(Arc::new(hooked), StoreOptions::default()).unwrap();
        assert_eq!(opens.load(Ordering::SeqCst), 2, "op {n}: the newest two");
        assert_eq!(
            sessdb_tests::dump_store(&writer),
            expected,
            "op {n}: writable"
        );
        drop(writer);
        let after = image
            .list("segments")
            .unwrap()
            .iter()
            .filter(|p| p.ends_with(".seg"))
            .count();
        assert!(
            after < before,
            "op {n}: the leftovers removed ({before} -> {after})"
        );
        let v = sessdb::store::verify(image).unwrap();
        assert!(v.problems.is_empty(), "op {n}: {v:?}");
    }
    assert!(
        found > 0,
        "no fault point fell between a merge's rename and its removals"
    );
}

/// What happens to one of the older segments (never the newest two, which every open judges).
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Byte `at` (modulo the file's length) XOR `mask`.
    Flip {
        at: usize,
        mask: u8,
    },
    /// Cut to `keep` bytes (modulo the file's length).
    Cut {
        keep: usize,
    },
    /// Removed.
    Gone,
}

fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Damage::None),
        (any::<usize>(), 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        // The header's bytes, often: what only judging reads.
        (0usize..40, 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        any::<usize>().prop_map(|keep| Damage::Cut { keep }),
        Just(Damage::Gone),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(sessdb_tests::proptest_cases(64)))]

    /// Judged at first use or at open, the same store reads the same: what a read-only open
    /// judging every segment at once reads whole, a writable store and a read-only view
    /// judging the older ones at first use read whole and alike; what it refuses, they refuse
    /// too — at their open, or at the first read or call that judges the older segments —
    /// never reading past.
    #[test]
    fn older_segments_judged_at_first_use_read_as_when_judged_at_open(
        events in 20u64..60,
        which in proptest::prelude::any::<usize>(),
        hurt in damage(),
    ) {
        let storage = Arc::new(MemStorage::new());
        written(&storage, events);
        let names = segment_names(&storage);
        proptest::prop_assume!(names.len() >= 3);
        let victim = names[which % (names.len() - 2)].clone();
        let bytes = storage.files().into_iter().find(|(p, _)| *p == victim).unwrap().1;
        match hurt {
            Damage::None => {}
            Damage::Flip { at, mask } => {
                let mut b = bytes.clone();
                let i = at % b.len();
                b[i] ^= mask;
                storage.put(&victim, b);
            }
            Damage::Cut { keep } => storage.put(&victim, bytes[..keep % bytes.len()].to_vec()),
            Damage::Gone => storage.remove(&victim).unwrap(),
        }
        let files = storage.files();
        let eager = Store::open_read_only_with(
            Arc::new(NoIds {
                inner: Arc::new(MemStorage::from_files(files.clone())),
            }),
            options(),
        )
        .and_then(|view| sessdb_tests::try_dump_store(&view));
        let view_storage = Arc::new(MemStorage::from_files(files.clone()));
        let view = Store::open_read_only_with(Arc::clone(&view_storage) as Arc<dyn Storage>, options())
            .and_then(|view| {
                let dump = sessdb_tests::try_dump_store(&view);
                view.disk_usage().map(drop).and(dump)
            });
        let lazy_storage = Arc::new(MemStorage::from_files(files.clone()));
        let lazy = Store::open_with(Arc::clone(&lazy_storage) as Arc<dyn Storage>, options())
            .and_then(|store| {
                let dump = sessdb_tests::try_dump_store(&store);
                let usage = store.disk_usage().map(drop);
                store.close()?;
                usage.and(dump)
            });
        for (subject, got) in [("writable", &lazy), ("read-only", &view)] {
            match (&eager, got) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b, "{}", subject),
                (Err(_), Err(_)) => {}
                _ => proptest::prop_assert!(
                    false,
                    "judged at open: {:?}; at first use ({}): {:?}",
                    eager.as_ref().map(|d| d.len()),
                    subject,
                    got.as_ref().map(|d| d.len())
                ),
            }
        }
        // Nothing judged at first use changed a file (no leftover here to remove).
        proptest::prop_assert!(lazy_storage.files() == files);
        proptest::prop_assert!(view_storage.files() == files);
    }
}

/// The store in `dir`, opened writable with its segment opens counted.
fn open_counted(dir: &std::path::Path) -> (Store, Arc<AtomicUsize>) {
    let storage: Arc<dyn Storage> = Arc::new(sessdb::storage::FsStorage::new(dir));
    let opens = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&opens);
    let hooked = Hooked::new(storage).on_open(move |path| {
        if path.starts_with("segments/") {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    });
    (
        Store::open_with(Arc::new(hooked), options()).unwrap(),
        opens,
    )
}

/// A reader beside a writer whose older segments wait reads what the writer reads, before
/// and after the writer's compaction judges and rewrites them; a copy taken by `backup` and
/// opened writable later reads as the store did when it was taken.
#[test]
fn a_reader_beside_and_a_restored_copy_read_as_a_writer_whose_older_segments_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (src, copy) = (dir.path().join("store"), dir.path().join("copy"));
    fill(Store::open(&src, options()).unwrap(), 40);
    let report = sessdb::store::backup(&src, &copy).unwrap();
    let at_backup = sessdb_tests::dump_store(&Store::open_read_only(&src, options()).unwrap());
    assert_eq!(at_backup.len(), 2, "{report:?}");

    let (writer, opens) = open_counted(&src);
    assert_eq!(
        opens.load(Ordering::SeqCst),
        2,
        "the writer judged its newest two"
    );
    let reader = Store::open_read_only(&src, options()).unwrap();
    assert_eq!(sessdb_tests::dump_store(&reader), at_backup);
    writer.delete_session("old").unwrap();
    writer.append("new", note(NEW)).unwrap();
    writer.compact().unwrap();
    assert!(
        opens.load(Ordering::SeqCst) > 2,
        "compaction judged the older segments"
    );
    reader.refresh().unwrap();
    let now = sessdb_tests::dump_store(&writer);
    assert_eq!(sessdb_tests::dump_store(&reader), now);
    assert_eq!(now.len(), 1);
    writer.close().unwrap();

    // The older copy, restored: opened writable, its older segments judged at first use.
    let (restored, opens) = open_counted(&copy);
    assert_eq!(
        opens.load(Ordering::SeqCst),
        2,
        "the restored copy's newest two"
    );
    assert_eq!(sessdb_tests::dump_store(&restored), at_backup);
    assert!(opens.load(Ordering::SeqCst) > 2);
    restored.close().unwrap();
    let v = sessdb::store::verify(Arc::new(sessdb::storage::FsStorage::new(&copy))).unwrap();
    assert!(v.ok(), "{v:?}");
}

/// Two sessions interleaved over the older segments (`keep` and `gone`, 40 notes each), then
/// `new`'s [`NEW`] notes in the newest; closed.
fn interleaved(storage: Arc<dyn Storage>) {
    let store = Store::open_with(storage, options()).unwrap();
    for id in ["keep", "gone"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    for i in 0..40 {
        for id in ["keep", "gone"] {
            store.append(id, note(i)).unwrap();
        }
    }
    store
        .create_session(SessionHeader::new("new", 0), Vec::new())
        .unwrap();
    for i in 0..NEW {
        store.append("new", note(i)).unwrap();
    }
    store.close().unwrap();
}

/// A read-only view opens its older segments at their first use; a writer's compaction may
/// rewrite them first (renamed over the names the view listed, merged ones removed). The
/// view's first read of them then finds other files — told by their identity, before a byte
/// of theirs is read — and the view is built again from the files as they are, as `refresh`
/// builds it: the read answers as a fresh view would (a session deleted and compacted away
/// meanwhile is gone), never from another file's records at the positions its catalog
/// names. Where the older segments were not rewritten, the view keeps what it opened (a
/// session deleted since still reads whole), as a view that opened every file did. Where
/// the view cannot be built again (a salvage's marker is there), the read says `Overtaken`,
/// naming the file, and reads once the marker is gone. On the file system (identities are
/// inode numbers from the directory listing) and in memory.
#[test]
fn a_view_overtaken_by_compaction_before_it_read_its_older_segments_reads_the_files_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let backends: [(&str, Arc<dyn Storage>); 2] = [
        ("fs", Arc::new(sessdb::storage::FsStorage::new(dir.path()))),
        ("mem", Arc::new(MemStorage::new())),
    ];
    for (name, storage) in backends {
        interleaved(Arc::clone(&storage));
        let writer = Store::open_with(Arc::clone(&storage), options()).unwrap();
        let opened_at = |label: &str| {
            let opens = Arc::new(AtomicUsize::new(0));
            let seen = Arc::clone(&opens);
            let hooked = Hooked::new(Arc::clone(&storage)).on_open(move |path| {
                if path.starts_with("segments/") {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            });
            let view = Store::open_read_only_with(Arc::new(hooked), options()).unwrap();
            assert_eq!(
                opens.load(Ordering::SeqCst),
                2,
                "{name} {label}: the newest two"
            );
            view
        };
        let gone_events = writer.events("gone", ..).unwrap();
        assert_eq!(gone_events.len(), 41, "{name}");

        // Not rewritten: the view keeps what it opened.
        let kept = opened_at("kept");
        let overtaken = opened_at("overtaken");
        let blocked = opened_at("blocked");
        let measured = opened_at("measured");
        let planned = opened_at("planned");
        writer.delete_session("gone").unwrap();
        writer.append("new", note(NEW)).unwrap();
        assert_eq!(kept.events("gone", ..).unwrap(), gone_events, "{name}");
        check_notes(&kept, "keep", 40);

        // Rewritten: compaction drops `gone`'s records from every older segment.
        let report = writer.compact().unwrap();
        assert!(
            report.segments.len() >= 3,
            "{name}: older segments rewritten: {report:?}"
        );
        // The salvage marker keeps the view from being built again: the read says so.
        let marker = storage
            .open("SALVAGING", sessdb::storage::OpenMode::CreateNew)
            .unwrap();
        drop(marker);
        match blocked.events("keep", ..) {
            Err(Error::Overtaken { segment }) => {
                assert!(segment.starts_with("segments/"), "{name}: {segment}");
            }
            other => panic!(
                "{name}: expected Overtaken, got {:?}",
                other.map(|events| events.len())
            ),
        }
        storage.remove("SALVAGING").unwrap();
        // What reads the whole log read-only (`sessdb stats`, a dry run) is built again too.
        let space = measured.space().unwrap();
        assert_eq!(space, writer.space().unwrap(), "{name}");
        let plan = planned.compact_plan().unwrap();
        assert!(plan.dry_run, "{name}");
        for view in [&overtaken, &blocked] {
            check_notes(view, "keep", 40);
            assert!(
                matches!(view.events("gone", ..), Err(Error::SessionNotFound { .. })),
                "{name}: the view built again no longer holds the deleted session"
            );
            assert_eq!(
                sessdb_tests::dump_store(view),
                sessdb_tests::dump_store(&writer),
                "{name}"
            );
        }
        // The view that kept its files still reads them as it opened them.
        assert_eq!(kept.events("gone", ..).unwrap(), gone_events, "{name}");
        writer.close().unwrap();
    }
}

/// A note naming its session: a record read from anywhere else cannot pass for it.
fn own_note(id: &str, i: u64) -> Draft {
    let text = format!("{id}/{i:04}/").repeat(40);
    Draft::log(
        LogType::new("plugin/note").unwrap(),
        format!("{{\"i\":{i},\"text\":\"{text}\"}}").into_bytes(),
    )
    .ignorable()
}

/// Views opened beside a writer that appends, deletes and compacts (renaming over older
/// segments and removing merged ones at any moment between a view's open and its reads):
/// every session a view lists reads back exactly as written — each event its own session's
/// note of its seq — or, deleted and compacted away since, is not found; never damage, never
/// another record. On the file system, two threads.
#[test]
fn views_opened_beside_compaction_read_exactly_or_move_forward() {
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let options = || {
        StoreOptions::default()
            .with_segment_bytes_max(8 << 10)
            .with_preallocate_bytes(0)
            // A checkpoint every round or so: a view replays from it, in the newest segments.
            .with_checkpoint_interval_bytes(4 << 10)
            .with_checkpoint_writes(sessdb::CheckpointWrites::Inline)
            .with_compaction(Some(
                sessdb::CompactionPolicy::default().with_staged_bytes_max(0),
            ))
    };
    let writer = Store::open(dir.path(), options()).unwrap();
    for k in 0..4 {
        let id = format!("keep-{k}");
        writer
            .create_session(SessionHeader::new(&id, 0), Vec::new())
            .unwrap();
        // Live notes over the oldest segments, which compaction leaves as they are.
        for i in 0..15 {
            writer.append(&id, own_note(&id, i)).unwrap();
        }
    }
    let done = AtomicBool::new(false);
    let round = std::sync::atomic::AtomicU64::new(0);
    let (views, compactions) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut views = 0u64;
            let mut checked = 0u64;
            let mut waiting = std::collections::VecDeque::new();
            // Each view read by two threads at once, one from each end of its listing: one
            // may build the view again while the other reads locations it took before.
            let read = |view: Store, n: u64, checked: &mut u64| {
                let ids: Vec<String> = view
                    .list()
                    .unwrap()
                    .into_iter()
                    .map(|i| i.header.id)
                    .collect();
                let read_one = |id: &String| match view.events(id, 1..) {
                    Ok(events) => {
                        for e in &events {
                            let want = own_note(id, e.seq() - 1).into_event(e.seq(), 0);
                            assert_eq!(e.data(), want.data(), "{id} seq {}", e.seq());
                        }
                        events.len() as u64
                    }
                    Err(Error::SessionNotFound { .. }) if id.starts_with("tmp-") => 0,
                    Err(e) => panic!("view {n}: {id}: {e}"),
                };
                std::thread::scope(|s| {
                    let back = s.spawn(|| ids.iter().rev().map(read_one).sum::<u64>());
                    *checked += ids.iter().map(read_one).sum::<u64>();
                    *checked += back.join().unwrap();
                });
            };
            // One view opened at each of the writer's rounds, read three rounds later: the
            // writer deletes, compacts and merges in between.
            let mut opened_at = None;
            loop {
                let now = round.load(Ordering::Acquire);
                if opened_at != Some(now) {
                    waiting.push_back((Store::open_read_only(dir.path(), options()).unwrap(), now));
                    views += 1;
                    opened_at = Some(now);
                }
                while let Some((view, n)) = waiting.pop_front_if(|(_, at)| *at + 3 <= now) {
                    read(view, n, &mut checked);
                }
                if done.load(Ordering::Acquire) {
                    break;
                }
                std::thread::yield_now();
            }
            for (view, n) in waiting {
                read(view, n, &mut checked);
            }
            (views, checked)
        });
        let mut compactions = 0;
        for round_no in 0..24u64 {
            let tmp = format!("tmp-{round_no}");
            writer
                .create_session(SessionHeader::new(&tmp, 0), Vec::new())
                .unwrap();
            for i in 0..8 {
                writer.append(&tmp, own_note(&tmp, i)).unwrap();
            }
            let keep = format!("keep-{}", round_no % 4);
            let len = writer.session_len(&keep).unwrap();
            writer.append(&keep, own_note(&keep, len - 1)).unwrap();
            // Deleted three rounds on: its records then lie in segments older than the
            // newest two of a view opened before the deletion.
            if round_no >= 3 {
                writer
                    .delete_session(&format!("tmp-{}", round_no - 3))
                    .unwrap();
            }
            if writer.compact().is_ok_and(|r| !r.segments.is_empty()) {
                compactions += 1;
            }
            // A segment's worth of live notes after the compaction: the newest two segments
            // a view opens next are ones appends wrote (a compacted one among them has every
            // segment judged at open, `discover_newest`).
            for _ in 0..24 {
                let len = writer.session_len(&keep).unwrap();
                writer.append(&keep, own_note(&keep, len - 1)).unwrap();
            }
            round.store(round_no + 1, Ordering::Release);
        }
        done.store(true, Ordering::Release);
        let (views, checked) = reader.join().unwrap();
        assert!(checked > 0);
        (views, compactions)
    });
    assert!(compactions > 10, "{compactions} compactions");
    assert!(views >= 20, "{views} views");
    let view = Store::open_read_only(dir.path(), options()).unwrap();
    assert_eq!(
        sessdb_tests::dump_store(&view),
        sessdb_tests::dump_store(&writer)
    );
    writer.close().unwrap();
}

/// A compaction that finds dead records in the active segment seals it and rewrites it, so
/// the newest segment before the active one is often compacted — and a compacted segment
/// might be a merge's leftover, told only by the segments before it. The open then judges
/// from the nearest segment appends wrote (each file on the way opened once), not every
/// segment; what it reads is what an open judging everything reads.
#[test]
fn a_compacted_newest_segment_has_the_open_judge_from_the_nearest_one_appends_wrote() {
    let storage = Arc::new(MemStorage::new());
    written(&storage, 40);
    {
        let store = Store::open_with(Arc::clone(&storage) as Arc<dyn Storage>, options()).unwrap();
        store
            .create_session(SessionHeader::new("brief", 0), Vec::new())
            .unwrap();
        for i in 0..3 {
            store.append("brief", note(i)).unwrap();
        }
        store.delete_session("brief").unwrap();
        let report = store.compact().unwrap();
        assert!(report.rolled, "the active segment sealed: {report:?}");
        store.append("new", note(NEW)).unwrap();
        store.close().unwrap();
    }
    let segments = segment_names(&storage).len();
    let reference = Store::open_read_only_with(
        Arc::new(NoIds {
            inner: Arc::clone(&storage) as Arc<dyn Storage>,
        }),
        options(),
    )
    .map(|view| sessdb_tests::dump_store(&view))
    .unwrap();
    for access in ["writable", "read-only"] {
        let (hooked, opens) = counted(&storage);
        let store = match access {
            "writable" => Store::open_with(hooked, options()),
            _ => Store::open_read_only_with(hooked, options()),
        }
        .unwrap();
        let at_open = opens.load(Ordering::SeqCst);
        assert!(
            (3..segments).contains(&at_open),
            "{access}: {at_open} of {segments} segments opened: back past the compacted one only"
        );
        check_notes(&store, "new", NEW + 1);
        assert_eq!(opens.load(Ordering::SeqCst), at_open, "{access}");
        assert_eq!(sessdb_tests::dump_store(&store), reference, "{access}");
        assert_eq!(opens.load(Ordering::SeqCst), segments, "{access}");
        store.close().unwrap();
    }
}

/// Found beside busy loops (`tools/sessdb/tests/follow.rs`, `sessdb stats` beside a writer's
/// background compaction: "a stored event is refused"): a read-only open itself may need its
/// older segments — to confirm its checkpoint, or to replay a record whose rules read earlier
/// events of its session (a fork at a boundary replays the inherited prefix, a prune reads
/// the result it replaces) — after a compaction replaced them since its listing. It then
/// meets `Overtaken`, or, through a record's rules, the record's refusal; either way the open
/// now judges every segment and opens again before it reports anything (damage only if that
/// open sees it too). Here the writer compacts inside the reader's listing.
#[test]
fn regression_a_read_only_open_meeting_older_segments_replaced_since_its_listing_opens() {
    use std::sync::atomic::AtomicBool;
    let storage = Arc::new(MemStorage::new());
    interleaved(Arc::clone(&storage) as Arc<dyn Storage>);
    let open = || {
        Store::open_with(
            Arc::clone(&storage) as Arc<dyn Storage>,
            options().with_compaction(None),
        )
        .unwrap()
    };
    // `gone` deleted (what the compaction drops), and a segment's worth of notes after it:
    // the deletion lies among the older segments too. Closed: a checkpoint.
    let writer = open();
    writer.delete_session("gone").unwrap();
    for i in NEW..NEW + 12 {
        writer.append("new", note(i)).unwrap();
    }
    writer.close().unwrap();
    // After that checkpoint: a fork inheriting `keep`'s first 20 events, which lie in the
    // older segments.
    let writer = Arc::new(open());
    writer
        .fork(
            "keep",
            sessdb::ForkSpec::default()
                .with_boundary(20)
                .with_child_id("child"),
        )
        .unwrap();
    let compacted = Arc::new(AtomicBool::new(false));
    let hooked = {
        let (writer, compacted) = (Arc::clone(&writer), Arc::clone(&compacted));
        Hooked::new(Arc::clone(&storage) as Arc<dyn Storage>).on_list(move |dir, names| {
            if dir == "segments" && !compacted.swap(true, Ordering::SeqCst) {
                let report = writer.compact().unwrap();
                assert!(
                    report.segments.len() >= 2 && !report.rolled,
                    "older segments rewritten, the newest not: {report:?}"
                );
            }
            Ok(names)
        })
    };
    let view = Store::open_read_only_with(Arc::new(hooked), options()).unwrap();
    assert!(compacted.load(Ordering::SeqCst));
    assert_eq!(
        sessdb_tests::dump_store(&view),
        sessdb_tests::dump_store(&writer)
    );
    assert_eq!(
        view.events("child", ..20).unwrap(),
        writer.events("keep", ..20).unwrap()
    );
}

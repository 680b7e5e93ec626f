//! `sessdb::store::backup`: a consistent copy of a store taken beside its live writer. Found
//! by attack: the copy a user makes without it (`cp -r` of a live store), taken 12 times
//! beside `sessdb stress --churn`, was refused once at its open (a checkpoint vouching for a
//! record the copy had torn) and salvage then cut a session (`docs/RELIABILITY.md`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sessdb::{Draft, Durability, LogType, SessionHeader, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_durability(Durability::Buffered)
        .with_segment_bytes_max(64 << 10)
        .with_checkpoint_interval_bytes(32 << 10)
}

fn note(session: u64, i: u64) -> Draft {
    Draft::log(
        LogType::new("plugin/note").unwrap(),
        format!(
            "{{\"s\":{session},\"i\":{i},\"pad\":\"{}\"}}",
            "x".repeat(150)
        )
        .into_bytes(),
    )
    .ignorable()
}

fn verify_clean(dir: &Path) {
    let report =
        sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(dir))).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Each session's notes in `store`, by id.
fn notes_of(store: &Store) -> HashMap<String, Vec<Vec<u8>>> {
    store
        .list()
        .unwrap()
        .into_iter()
        .map(|info| {
            let id = info.header.id;
            let data = store
                .events(&id, 1..)
                .unwrap()
                .iter()
                .map(|e| e.data().to_vec())
                .collect();
            (id, data)
        })
        .collect()
}

#[test]
fn backups_taken_beside_a_live_writer_each_open_as_the_store_at_one_moment() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let store = Store::open(&src, options()).unwrap();
    let stop = AtomicBool::new(false);
    let written = AtomicU64::new(0);
    let backups: Vec<_> = std::thread::scope(|s| {
        // The writer: sessions of up to 60 notes, every third one deleted once written, a
        // compaction now and then (renaming over segments a backup may be copying).
        let writer = s.spawn(|| {
            let mut all: HashMap<String, Vec<Vec<u8>>> = HashMap::new();
            let mut session = 0u64;
            while !stop.load(Ordering::Relaxed) || session < 12 {
                let id = format!("s{session}");
                store
                    .create_session(SessionHeader::new(&id, 0), Vec::new())
                    .unwrap();
                let notes = all.entry(id.clone()).or_default();
                for i in 0..(session % 60) {
                    let draft = note(session, i);
                    notes.push(draft.clone().into_event(1, 0).data().to_vec());
                    store.append(&id, draft).unwrap();
                    written.fetch_add(1, Ordering::Relaxed);
                }
                if session % 3 == 2 {
                    store.delete_session(&id).unwrap();
                }
                if session % 10 == 9 {
                    store.compact().unwrap();
                }
                session += 1;
            }
            all
        });
        let mut backups = Vec::new();
        for b in 0..8 {
            // Each backup after the writer has gone on by some notes.
            let from = written.load(Ordering::Relaxed);
            while written.load(Ordering::Relaxed) < from + 200 {
                std::hint::spin_loop();
            }
            let dest = dir.path().join(format!("backup-{b}"));
            let report = sessdb::store::backup(&src, &dest).unwrap();
            assert!(report.segments > 0 && report.records > 0, "{report:?}");
            backups.push((dest, report));
        }
        stop.store(true, Ordering::Relaxed);
        let all = writer.join().unwrap();
        backups
            .into_iter()
            .map(|(dest, report)| (dest, report, all.clone()))
            .collect()
    });
    store.close().unwrap();
    let mut ends = Vec::new();
    for (dest, report, all) in &backups {
        verify_clean(dest);
        let copy = Store::open(dest, options()).unwrap();
        assert_eq!(
            copy.open_report().records_replayed,
            0,
            "the backup opens from its checkpoint"
        );
        let held = notes_of(&copy);
        assert_eq!(held.len(), report.sessions);
        for (id, notes) in &held {
            let wrote = &all[id];
            assert!(
                notes.len() <= wrote.len() && notes[..] == wrote[..notes.len()],
                "{}: {id} holds {} notes, not a prefix of the {} written",
                dest.display(),
                notes.len(),
                wrote.len()
            );
        }
        // One moment: of the sessions the writer made before the newest one held, only
        // deleted ones are missing, each whole one before it holds every note.
        let newest = held
            .keys()
            .filter_map(|id| id[1..].parse::<u64>().ok())
            .max()
            .unwrap();
        for n in 0..newest {
            let id = format!("s{n}");
            match held.get(&id) {
                Some(notes) => assert!(
                    notes == &all[&id],
                    "{}: {id} holds {} notes of {}",
                    dest.display(),
                    notes.len(),
                    all[&id].len()
                ),
                None => assert_eq!(n % 3, 2, "{}: {id} missing", dest.display()),
            }
        }
        // Written on: the backup is a store like any other.
        copy.create_session(SessionHeader::new("after", 0), Vec::new())
            .unwrap();
        copy.close().unwrap();
        ends.push(report.log_end);
    }
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
}

#[test]
fn a_backup_never_writes_over_a_directory_and_leaves_nothing_when_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let store = Store::open(&src, options()).unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for i in 0..500 {
        store.append("s", note(0, i)).unwrap();
    }
    store.close().unwrap();
    // What an interrupted backup left beside the destination is removed, not taken in.
    let dest = dir.path().join("copy");
    let partial = dir.path().join("copy.sessdb-backup-partial");
    std::fs::create_dir_all(partial.join("segments")).unwrap();
    std::fs::write(partial.join("segments/junk.seg"), b"junk").unwrap();
    let report = sessdb::store::backup(&src, &dest).unwrap();
    assert!(!partial.exists());
    assert_eq!(report.sessions, 1);
    // A store no writer has open is copied whole.
    let (a, b) = (
        Store::open_read_only(&src, options()).unwrap(),
        Store::open_read_only(&dest, options()).unwrap(),
    );
    let (na, nb) = (notes_of(&a), notes_of(&b));
    assert!(
        na == nb,
        "the copy differs: {} notes against {}",
        na["s"].len(),
        nb.get("s").map_or(0, Vec::len)
    );
    assert_eq!(b.open_report().records_replayed, 0);
    drop((a, b));
    // An existing destination is refused, and left as it is.
    let err = sessdb::store::backup(&src, &dest).unwrap_err();
    assert!(err.to_string().contains("there already"), "{err}");
    assert_eq!(
        Store::open_read_only(&dest, options())
            .unwrap()
            .session_len("s")
            .unwrap(),
        501
    );
    // A damaged store is not copied: refused, with nothing left beside the destination.
    let segment = std::fs::read_dir(src.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[200] ^= 0x40;
    std::fs::write(&segment, bytes).unwrap();
    let damaged = dir.path().join("damaged-copy");
    let err = sessdb::store::backup(&src, &damaged).unwrap_err();
    assert!(matches!(err, sessdb::Error::Corruption { .. }), "{err:?}");
    assert!(!damaged.exists());
    assert!(
        !dir.path()
            .join("damaged-copy.sessdb-backup-partial")
            .exists()
    );
}

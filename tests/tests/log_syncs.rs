//! One sync of a segment file at a time (`engine/src/store/writer/syncs.rs`): a group-commit
//! leader's `fdatasync` and a roll's of the same segment never overlap. Linux reports a
//! write-back error once per open file description; two syncs of the store's one description
//! at once could split it — the roll's sync takes the error, the leader's returns success for
//! lost pages and acknowledges its waiters before the roll's failure poisons the store.
//!
//! The storage here counts the syncs in flight per file and notes any second one; each sync
//! yields the CPU a few hundred times inside, so that a sync beside it, where the code allows
//! one, is there to be seen. Several threads append with `Sync` into segments of 4 KiB (a
//! roll every few records) while group commit syncs their records.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sessdb::storage::MemStorage;
use sessdb::{Clock, Draft, Durability, LogType, SessionHeader, Store, StoreOptions};
use sessdb_tests::SyncHooked;

/// Syncs in flight per path, the most ever at once beside another of the same file, and how
/// many ran.
#[derive(Debug, Default)]
struct Watch {
    in_flight: Mutex<HashMap<String, usize>>,
    overlapping: AtomicUsize,
    syncs: AtomicUsize,
}

impl Watch {
    /// `sync` of the file at `path`, counted while it runs.
    fn sync(&self, path: &str, sync: &dyn Fn() -> io::Result<()>) -> io::Result<()> {
        let segment = path.starts_with("segments/");
        if segment {
            let mut in_flight = self.in_flight.lock().unwrap();
            let n = in_flight.entry(path.to_owned()).or_default();
            *n += 1;
            if *n > 1 {
                self.overlapping.fetch_add(1, Ordering::SeqCst);
            }
            self.syncs.fetch_add(1, Ordering::SeqCst);
        }
        // A sync takes a while on a disk: the window another sync of the file could enter.
        for _ in 0..300 {
            std::thread::yield_now();
        }
        let result = sync();
        if segment {
            let mut in_flight = self.in_flight.lock().unwrap();
            if let Some(n) = in_flight.get_mut(path) {
                *n -= 1;
            }
        }
        result
    }
}

#[test]
fn a_roll_never_syncs_its_segment_beside_a_group_commit_leader() {
    let watch = Arc::new(Watch::default());
    let storage = Arc::new(SyncHooked::new(Arc::new(MemStorage::new()), {
        let watch = Arc::clone(&watch);
        move |path, sync| watch.sync(path, sync)
    }));
    let options = StoreOptions::tiny()
        .with_clock(Clock::fixed(1_000))
        .with_durability(Durability::Sync);
    let store = Arc::new(Store::open_with(storage.clone(), options).unwrap());
    const THREADS: usize = 4;
    const APPENDS: usize = 150;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let store = Arc::clone(&store);
            s.spawn(move || {
                let id = format!("s{t}");
                store
                    .create_session(SessionHeader::new(&id, 0), Vec::new())
                    .unwrap();
                for i in 0..APPENDS {
                    let data =
                        format!("{{\"note\":\"thread {t} append {i} {}\"}}", "x".repeat(200));
                    store
                        .append(
                            &id,
                            Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes())
                                .ignorable(),
                        )
                        .unwrap();
                }
            });
        }
    });
    let segments = sessdb::storage::Storage::list(&**storage.inner(), "segments")
        .unwrap()
        .into_iter()
        .filter(|n| !n.ends_with(".tmp"))
        .count();
    // The workload did what the test needs: many rolls, many syncs.
    assert!(segments >= 20, "{segments} segments: too few rolls");
    assert!(watch.syncs.load(Ordering::SeqCst) >= 100);
    assert_eq!(
        watch.overlapping.load(Ordering::SeqCst),
        0,
        "a segment synced twice at once"
    );
    // Everything appended is there.
    let store = Arc::into_inner(store).unwrap();
    for t in 0..THREADS {
        let events = store.events(&format!("s{t}"), ..).unwrap();
        let notes = events
            .iter()
            .filter(|e| e.event_type() == "plugin/note")
            .count();
        assert_eq!(notes, APPENDS);
    }
    store.close().unwrap();
}

//! The append path allocates nothing per event in steady state (`docs/PERFORMANCE.md`): a
//! `Buffered` store on files, after a warm-up, takes 2,000 appends of streamed chunks and of
//! user messages (their drafts built before counting) with at most a handful of allocations
//! in all — the index vectors doubling — where it once made about five per event.
//!
//! Counted on this thread only (`allocation-counter`), so the prefault helper's work is not
//! in it; the store's own threads do no per-event work.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Draft, Durability, LogType, SessionHeader, Store, StoreOptions};
use sessdb_workload::payload as p;

fn user(i: u64) -> Draft {
    Draft::surface(
        sessdb::SurfaceType::UserMessage,
        p::user_message(
            &format!("u{i}"),
            "user",
            "read the config and then fix the build",
        )
        .into_bytes(),
        sessdb::SurfaceIntent::append(),
    )
}

fn chunk() -> Draft {
    Draft::log(
        LogType::ASSISTANT_CHUNK,
        p::text_delta(1, 1, 0, "the quick brown fox ").into_bytes(),
    )
}

#[test]
fn appends_allocate_nothing_per_event_in_steady_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        StoreOptions::default().with_durability(Durability::Buffered),
    )
    .unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    for i in 0..3_000 {
        store.append("s", chunk()).unwrap();
        store.append("s", user(i)).unwrap();
    }
    let drafts: Vec<Draft> = (0..1_000).flat_map(|i| [chunk(), user(i)]).collect();
    let info = allocation_counter::measure(|| {
        for d in drafts {
            store.append("s", d).unwrap();
        }
    });
    // 2,000 appends; a growing vector (the session's locations) may double once or twice.
    assert!(
        info.count_total <= 4,
        "{} allocations for 2,000 appends",
        info.count_total
    );
    assert_eq!(store.session_len("s").unwrap(), 8_001);
}

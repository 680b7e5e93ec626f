//! The writer's background work: compaction when the policy wants a segment (a deletion
//! wakes it; what an earlier process left dead is found by the first read of the log),
//! retention by age and by live bytes, deleting several sessions, and readers and followers
//! beside it. Waits are on the store's own condition (`Store::wait_maintenance`), never a
//! sleep.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sessdb::{Clock, CompactionPolicy, Error, RetentionPolicy, SessionHeader, Store, StoreOptions};
use sessdb_tests::{Backend, on_both_storages};

#[path = "support/store.rs"]
mod support;
use support::*;

const WAIT: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Compacts as soon as a segment is half dead (no byte minimum); reads the log at open only
/// after `first`.
fn policy(first: Duration) -> CompactionPolicy {
    CompactionPolicy::dead_fraction(0.5)
        .with_min_dead_bytes(1)
        .with_first_check_after(first)
}

fn a_deletion_wakes_the_compaction_of_the_segments_it_left_dead(storage: &Backend) {
    let store = Store::open_with(
        storage.storage(),
        opts().with_compaction(Some(policy(HOUR))),
    )
    .unwrap();
    // Several 4 KiB segments of "gone" alone, then "keep".
    session_with(&store, "gone", "secret-of-gone", 300);
    session_with(&store, "keep", "kept-text", 60);
    assert!(occurrences(storage, "secret-of-gone") >= 300);
    assert!(store.stats().segments >= 4, "{:?}", store.stats());
    let before_delete = store.maintenance();
    assert_eq!(before_delete.compactions, 0, "{before_delete:?}");
    store.delete_session("gone").unwrap();
    let live = dump(&store);
    assert!(store.wait_maintenance(WAIT), "the background work ends");
    let status = store.maintenance();
    assert!(
        status.compactions >= 1 && status.bytes_reclaimed > 0,
        "{status:?}"
    );
    assert_eq!(status.last_error, None);
    // The segments that were (almost) only "gone" are written again without it; what is
    // left of it lies in a segment shared with "keep" under the fraction.
    let left = occurrences(storage, "secret-of-gone");
    assert!(left < 100, "{left} occurrences left: {status:?}");
    assert_eq!(dump(&store), live);
    note(&store, "keep", "after");
    let after = dump(&store);
    store.close().unwrap();
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), after);
    drop(replayed);
    assert_eq!(dump(&open(storage)), after);
}

fn a_segment_under_the_fraction_is_left_as_it_is(storage: &Backend) {
    let store = Store::open_with(
        storage.storage(),
        opts().with_compaction(Some(policy(HOUR))),
    )
    .unwrap();
    // Interleaved: each segment holds a third of "gone".
    store
        .create_session(SessionHeader::new("gone", 0), Vec::new())
        .unwrap();
    for id in ["a", "b"] {
        store
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    for i in 0..40 {
        for id in ["gone", "a", "b"] {
            note(&store, id, &format!("text-of-{id} {i}"));
        }
    }
    store.delete_session("gone").unwrap();
    assert!(store.wait_maintenance(WAIT));
    assert_eq!(
        store.maintenance().compactions,
        0,
        "{:?}",
        store.maintenance()
    );
    let space = store.space().unwrap();
    assert!(space.dead_bytes() > 0, "{space:?}");
    for s in &space.segments {
        assert!(s.dead_bytes * 2 < s.record_bytes.max(1), "{s:?}");
    }
    // An explicit compaction takes what the policy left.
    store.compact().unwrap();
    assert_eq!(occurrences(storage, "text-of-gone"), 0);
    assert_eq!(store.space().unwrap().dead_bytes(), 0);
}

fn the_first_read_finds_what_an_earlier_process_left_dead(storage: &Backend) {
    let store = open(storage); // no background work
    session_with(&store, "gone", "secret-of-gone", 300);
    session_with(&store, "keep", "kept-text", 10);
    store.delete_session("gone").unwrap();
    let live = dump(&store);
    store.close().unwrap();
    assert!(occurrences(storage, "secret-of-gone") >= 300);
    let store = Store::open_with(
        storage.storage(),
        opts().with_compaction(Some(policy(Duration::ZERO))),
    )
    .unwrap();
    assert!(store.wait_maintenance(WAIT));
    let status = store.maintenance();
    assert!(status.compactions >= 1, "{status:?}");
    assert!(occurrences(storage, "secret-of-gone") < 100);
    assert_eq!(dump(&store), live);
}

/// A clock the test moves.
fn clock() -> (Arc<AtomicI64>, Clock) {
    let now = Arc::new(AtomicI64::new(1_000));
    let c = Arc::clone(&now);
    (now, Clock::from_fn(move || c.load(Ordering::SeqCst)))
}

fn retention_by_age_deletes_the_sessions_last_written_before_the_cutoff(storage: &Backend) {
    let (now, clock) = clock();
    let options = opts().with_clock(clock);
    let store = Store::open_with(storage.storage(), options.clone()).unwrap();
    for (i, id) in ["old-1", "old-2", "fresh"].iter().enumerate() {
        now.store(1_000 + i as i64 * 1_000, Ordering::SeqCst);
        session_with(&store, id, id, 3);
    }
    // "old-1" and "old-2" were last written two hours ago; "fresh" ten minutes ago.
    now.store(10_000_000 - 600_000, Ordering::SeqCst);
    note(&store, "fresh", "again");
    now.store(10_000_000, Ordering::SeqCst);
    let policy = RetentionPolicy::max_age(HOUR);
    let plan = store.apply_retention(&policy, true).unwrap();
    let ids: Vec<&str> = plan.deleted.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["old-1", "old-2"], "{plan:?}");
    assert_eq!(store.list().unwrap().len(), 3, "a dry run deletes nothing");
    let done = store.apply_retention(&policy, false).unwrap();
    assert_eq!(done.deleted, plan.deleted);
    let left: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    assert_eq!(left, ["fresh"]);
    // The same rule, as the CLI's `delete --older-than` says it.
    assert!(
        store
            .delete_older_than(HOUR, false)
            .unwrap()
            .deleted
            .is_empty()
    );
    store.close().unwrap();
    let reopened = Store::open_with(storage.storage(), options).unwrap();
    assert_eq!(reopened.list().unwrap().len(), 1);
}

fn retention_by_live_bytes_deletes_the_oldest_first(storage: &Backend) {
    let (now, clock) = clock();
    let store = Store::open_with(storage.storage(), opts().with_clock(clock)).unwrap();
    for (i, id) in ["s0", "s1", "s2", "s3"].iter().enumerate() {
        now.store(1_000 * (i as i64 + 1), Ordering::SeqCst);
        session_with(&store, id, id, 20);
    }
    let live = store.space().unwrap().live_bytes();
    // Room for a bit more than two sessions' bytes: the two oldest go.
    let policy = RetentionPolicy::default().with_max_live_bytes(live * 6 / 10);
    let report = store.apply_retention(&policy, false).unwrap();
    let ids: Vec<&str> = report.deleted.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["s0", "s1"], "{report:?}");
    assert_eq!(report.live_bytes_before, Some(live));
    store.compact().unwrap();
    let after = store.space().unwrap().live_bytes();
    assert!(after <= live * 6 / 10, "{after} <= {}", live * 6 / 10);
    assert!(
        store
            .apply_retention(&policy, false)
            .unwrap()
            .deleted
            .is_empty()
    );
}

fn the_writer_applies_its_retention_policy_at_open(storage: &Backend) {
    let (now, clock) = clock();
    let store = Store::open_with(storage.storage(), opts().with_clock(clock.clone())).unwrap();
    session_with(&store, "old", "old", 3);
    now.store(5 * 3_600_000, Ordering::SeqCst);
    session_with(&store, "new", "new", 3);
    store.close().unwrap();
    let options = opts()
        .with_clock(clock)
        .with_retention(Some(RetentionPolicy::max_age(HOUR)))
        .with_compaction(Some(policy(Duration::ZERO)));
    let store = Store::open_with(storage.storage(), options).unwrap();
    assert!(store.wait_maintenance(WAIT));
    let status = store.maintenance();
    assert_eq!(status.sessions_expired, 1, "{status:?}");
    let left: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    assert_eq!(left, ["new"]);
}

fn deleting_several_checks_every_id_first(storage: &Backend) {
    let store = open(storage);
    for id in ["a", "b", "c"] {
        session_with(&store, id, id, 1);
    }
    let err = store.delete_sessions(&["a", "nope", "b"]).unwrap_err();
    assert!(
        matches!(err, Error::SessionNotFound { ref id } if id == "nope"),
        "{err}"
    );
    assert_eq!(store.list().unwrap().len(), 3, "nothing deleted");
    store.delete_sessions(&["a", "b"]).unwrap();
    let left: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    assert_eq!(left, ["c"]);
}

fn closing_stops_the_background_work_and_the_store_reopens(storage: &Backend) {
    // Many deletions, each waking a compaction, and a close in the middle of them.
    let store = Store::open_with(
        storage.storage(),
        opts().with_compaction(Some(policy(HOUR))),
    )
    .unwrap();
    for i in 0..12 {
        session_with(&store, &format!("s{i}"), "x", 15);
    }
    for i in 0..12 {
        if i % 3 != 0 {
            store.delete_session(&format!("s{i}")).unwrap();
        }
    }
    let live = dump(&store);
    store.close().unwrap();
    assert!(matches!(store.compact(), Err(Error::Closed)));
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), live);
    drop(replayed);
    assert_eq!(dump(&open(storage)), live);
    let v = sessdb::store::verify(storage.storage()).unwrap();
    assert!(v.problems.is_empty(), "{v:?}");
}

on_both_storages!(
    a_deletion_wakes_the_compaction_of_the_segments_it_left_dead,
    a_segment_under_the_fraction_is_left_as_it_is,
    the_first_read_finds_what_an_earlier_process_left_dead,
    retention_by_age_deletes_the_sessions_last_written_before_the_cutoff,
    retention_by_live_bytes_deletes_the_oldest_first,
    the_writer_applies_its_retention_policy_at_open,
    deleting_several_checks_every_id_first,
    closing_stops_the_background_work_and_the_store_reopens,
);

/// A follower and a read-only opener beside a writer that appends, deletes and compacts in
/// the background: neither sees damage, and each ends with exactly the writer's sessions.
#[test]
fn readers_beside_background_compaction_see_no_damage_and_miss_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::tiny()
        .with_segment_bytes_max(16 << 10)
        .with_compaction(Some(policy(HOUR)));
    let writer = Store::open(dir.path(), options.clone()).unwrap();
    writer
        .create_session(SessionHeader::new("followed", 0), Vec::new())
        .unwrap();
    let reader = Store::open_read_only(dir.path(), StoreOptions::tiny()).unwrap();
    let mut sub = reader.subscribe("followed", 0).unwrap();
    let mut seen = 0u64;
    for round in 0..30 {
        session_with(&writer, &format!("tmp-{round}"), "temporary", 20);
        note(&writer, "followed", &format!("round {round}"));
        writer.delete_session(&format!("tmp-{round}")).unwrap();
        // The reader catches up at every step, whatever the compaction has renamed.
        reader.refresh().unwrap();
        while let Some(e) = sub.try_next().unwrap() {
            assert_eq!(e.seq(), seen);
            seen += 1;
        }
        let fresh = Store::open_read_only(dir.path(), StoreOptions::tiny()).unwrap();
        assert_eq!(fresh.session_len("followed").unwrap(), round + 2);
    }
    assert!(writer.wait_maintenance(WAIT));
    reader.refresh().unwrap();
    while let Some(e) = sub.try_next().unwrap() {
        assert_eq!(e.seq(), seen);
        seen += 1;
    }
    assert_eq!(seen, 31);
    let status = writer.maintenance();
    assert!(status.compactions >= 1, "{status:?}");
    assert_eq!(dump(&reader), dump(&writer));
    let fresh = Store::open_read_only(dir.path(), StoreOptions::tiny()).unwrap();
    assert_eq!(dump(&fresh), dump(&writer));
}

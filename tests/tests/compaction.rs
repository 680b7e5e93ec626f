//! Compaction: a deleted session's records leave the segments (no byte of its events in any
//! file), every live session stays byte for byte — also a fork that inherits from a deleted
//! parent — across reopen, checkpoints, and a second compaction.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Draft, ForkSpec, LogType, Store};
use sessdb_tests::{Backend, on_both_storages};

#[path = "support/store.rs"]
mod support;
use support::*;

fn a_deleted_session_leaves_no_byte_and_the_rest_is_kept(storage: &Backend) {
    let store = open(storage);
    // Interleaved, across several segments of the tiny options.
    for round in 0..30 {
        for id in ["keep-a", "gone", "keep-b"] {
            if round == 0 {
                session_with(&store, id, &format!("secret-of-{id}"), 0);
            }
            let data = format!("{{\"note\":\"secret-of-{id} {round}\"}}");
            store
                .append(
                    id,
                    Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
                )
                .unwrap();
        }
    }
    assert!(occurrences(storage, "secret-of-gone") >= 30);
    store.delete_session("gone").unwrap();
    let before = dump(&store);
    let log_before: usize = storage
        .files()
        .iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .map(|(_, b)| b.len())
        .sum();
    let report = store.compact().unwrap();
    assert_eq!(report.sessions_erased, 1, "{report:?}");
    assert!(!report.segments.is_empty());
    assert_eq!(occurrences(storage, "secret-of-gone"), 0, "{report:?}");
    assert!(occurrences(storage, "secret-of-keep-a") >= 30);
    assert_eq!(dump(&store), before);
    // Appends go on after it; a reopen (from the new checkpoint, and by full replay) agrees.
    store
        .append(
            "keep-a",
            Draft::log(LogType::new("plugin/note").unwrap(), b"{\"after\":1}").ignorable(),
        )
        .unwrap();
    let after = dump(&store);
    store.close().unwrap();
    let reopened = open(storage);
    assert_eq!(dump(&reopened), after);
    drop(reopened);
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), after);
    drop(replayed);
    let log_after: usize = storage
        .files()
        .iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .map(|(_, b)| b.len())
        .sum();
    assert!(log_after < log_before, "{log_after} < {log_before}");
    // The deletion itself goes in the second pass: the id is gone from every file too.
    assert_eq!(occurrences(storage, "\"gone\""), 0);
    let verified = sessdb::store::verify(storage.storage()).unwrap();
    assert!(
        verified.problems.is_empty() && verified.compared,
        "{verified:?}"
    );
    // `verify` reports the bytes of the records it read, not the log's end position (sparse
    // after a compaction: it once reported the position).
    let reader = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    let space = reader.space().unwrap();
    assert_eq!(verified.log_bytes, space.record_bytes(), "{verified:?}");
    assert!(verified.log_bytes < reader.stats().end_lsn, "{verified:?}");
}

fn a_fork_of_a_deleted_parent_keeps_what_it_inherits(storage: &Backend) {
    let store = open(storage);
    session_with(&store, "parent", "inherited-part", 20);
    let child = store
        .fork("parent", ForkSpec::default().with_child_id("child"))
        .unwrap();
    let data = "{\"note\":\"parent-after-fork\"}";
    for _ in 0..20 {
        store
            .append(
                "parent",
                Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
            )
            .unwrap();
    }
    store.delete_session("parent").unwrap();
    let before = dump(&store);
    let report = store.compact().unwrap();
    // The parent is kept in part (what the fork inherited), and said so; not erased.
    assert_eq!(
        (report.sessions_kept, report.sessions_erased),
        (1, 0),
        "{report:?}"
    );
    assert_eq!(dump(&store), before);
    assert_eq!(occurrences(storage, "parent-after-fork"), 0);
    assert!(occurrences(storage, "inherited-part") >= 20);
    store.close().unwrap();
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), before);
    assert_eq!(replayed.session_len(&child).unwrap(), 22);
}

fn a_dry_run_changes_nothing(storage: &Backend) {
    let store = open(storage);
    session_with(&store, "a", "x", 50);
    session_with(&store, "b", "y", 50);
    store.delete_session("a").unwrap();
    let files = storage.fingerprint();
    let plan = store.compact_plan().unwrap();
    assert!(plan.dry_run && plan.reclaimed_bytes() > 0, "{plan:?}");
    assert_eq!(storage.fingerprint(), files);
    let done = store.compact().unwrap();
    assert_eq!(done.sessions_erased, plan.sessions_erased);
    assert_eq!((done.sessions_kept, plan.sessions_kept), (0, 0));
    // Nothing left to do.
    let again = store.compact().unwrap();
    assert!(again.segments.is_empty(), "{again:?}");
}

/// A consumer remembering a record (the shipper) still finds it after a compaction left it
/// out — the epoch in force where it was is the one it was written under — and tells another
/// log apart.
fn a_remembered_record_compaction_left_out_is_still_told_from_another_log(storage: &Backend) {
    let store = open(storage);
    session_with(&store, "keep", "kept", 30);
    session_with(&store, "gone", "secret-of-gone", 30);
    let mark = store.last_record().unwrap();
    assert!(mark.epoch.is_some(), "{mark:?}");
    assert!(store.holds_record(mark));
    store.delete_session("gone").unwrap();
    // The mark is no longer the newest record: no tombstone is kept for it.
    note(&store, "keep", "after the deletion");
    store.compact().unwrap();
    assert_eq!(occurrences(storage, "secret-of-gone"), 0);
    assert_eq!(
        store.space().unwrap().tombstones(),
        0,
        "no tombstone: the epoch confirms what was left out"
    );
    assert!(store.holds_record(mark), "the epoch where it was is its");
    let other_epoch = sessdb::store::LogMark {
        epoch: mark.epoch.map(|e| e ^ 1),
        ..mark
    };
    assert!(!store.holds_record(other_epoch));
    let no_epoch = sessdb::store::LogMark {
        epoch: None,
        ..mark
    };
    assert!(!store.holds_record(no_epoch), "and no tombstone names it");
    store.close().unwrap();
    assert!(open(storage).holds_record(mark), "after a reopen too");
    // Another log with a record at the same position is not this one.
    let other = Backend::mem();
    let o = open(&other);
    session_with(&o, "keep", "kept", 30);
    session_with(&o, "gone", "other-text-of-go", 30);
    o.delete_session("gone").unwrap();
    o.compact().unwrap();
    assert!(!o.holds_record(mark));
}

/// The compaction's checkpoint comes before any record goes, so it may name one the
/// compaction leaves out — here the deletion that ended the log. The segment's tombstone
/// confirms it: the open starts from that checkpoint and replays nothing, and a checkpoint
/// written after it names the record again without tripping the writer's own check.
fn a_checkpoint_naming_a_record_compaction_left_out_still_opens(storage: &Backend) {
    let store = open(storage);
    session_with(&store, "keep", "kept", 20);
    session_with(&store, "gone", "secret-of-gone", 20);
    store.delete_session("gone").unwrap();
    store.compact().unwrap();
    let live = dump(&store);
    store.close().unwrap();
    drop(store);
    let reopened = open(storage);
    let report = reopened.open_report();
    assert!(report.checkpoint.is_some(), "{report:?}");
    assert!(report.checkpoints_discarded.is_empty(), "{report:?}");
    assert_eq!(report.records_replayed, 0, "{report:?}");
    assert_eq!(dump(&reopened), live);
    reopened.checkpoint().unwrap();
    note(&reopened, "keep", "after");
    reopened.close().unwrap();
    assert_eq!(dump(&open(storage)).len(), live.len());
    assert_eq!(occurrences(storage, "secret-of-gone"), 0);
}

/// Sessions "keep" and "gone" with 40 notes each ("keep note 00" …), interleaved over 1 KiB
/// segments, "gone" deleted, the store closed; returns how to open it again.
fn kept_and_deleted_on_small_segments(storage: &Backend) -> impl Fn() -> Store + '_ {
    let small =
        || Store::open_with(storage.storage(), opts().with_segment_bytes_max(1024)).unwrap();
    let store = small();
    for round in 0..40 {
        for id in ["keep", "gone"] {
            if round == 0 {
                session_with(&store, id, "first", 0);
            }
            note(&store, id, &format!("{id} note {round:02}"));
        }
    }
    store.delete_session("gone").unwrap();
    store.close().unwrap();
    drop(store);
    small
}

/// Compaction copies only frames it checked: a log damaged in two segments is refused, the
/// first damage in log order named (the segments are read on several threads, and a later
/// one may be read first), and no file changes.
fn a_damaged_log_is_refused_naming_its_first_damage(storage: &Backend) {
    let small = kept_and_deleted_on_small_segments(storage);
    let segments = segment_paths(storage);
    assert!(segments.len() >= 5, "{segments:?}");
    // A byte of the first record's payload in the second segment and in the last sealed one:
    // an open from the checkpoint reads neither.
    let damaged = [&segments[1], &segments[segments.len() - 2]];
    let at = sessdb::codec::segment::SEGMENT_HEADER_LEN as u64 + 20;
    for path in damaged {
        let file = storage
            .storage()
            .open(path, sessdb::storage::OpenMode::ReadWrite)
            .unwrap();
        let mut byte = [0u8; 1];
        file.read_at(&mut byte, at).unwrap();
        file.write_at(&[byte[0] ^ 0x55], at).unwrap();
    }
    let store = small();
    let before = storage.files();
    match store.compact() {
        Err(sessdb::Error::Corruption { segment, .. }) => assert_eq!(&segment, damaged[0]),
        other => panic!("{other:?}"),
    }
    assert_eq!(storage.files(), before);
}

/// Compaction reads only what a frame's own checksum covers (kind, ids, seqs, lengths, the
/// events' checksums) and copies events byte for byte: a byte changed inside an event's
/// fields is carried as it is — still caught by every read of that event and by `verify` —
/// or goes with its deleted session. Never read back as other bytes.
fn damage_inside_an_event_is_copied_as_it_is_and_still_caught(storage: &Backend) {
    let small = kept_and_deleted_on_small_segments(storage);
    // One byte of the data of "keep note 03" and of "gone note 04", both in sealed segments.
    for text in ["keep note 03", "gone note 04"] {
        let (path, bytes) = storage
            .files()
            .into_iter()
            .find(|(p, b)| {
                p.starts_with("segments/") && b.windows(12).any(|w| w == text.as_bytes())
            })
            .unwrap();
        let at = bytes
            .windows(12)
            .position(|w| w == text.as_bytes())
            .unwrap()
            + 5;
        let file = storage
            .storage()
            .open(&path, sessdb::storage::OpenMode::ReadWrite)
            .unwrap();
        file.write_at(&[bytes[at] ^ 0x01], at as u64).unwrap();
    }
    let store = small();
    store.compact().unwrap();
    assert_eq!(
        occurrences(storage, "gone note"),
        0,
        "the deleted session's records went"
    );
    assert_eq!(
        occurrences(storage, "keep note 03"),
        0,
        "the changed byte stays changed"
    );
    assert_eq!(occurrences(storage, "keep oote 03"), 1);
    match store.events("keep", ..) {
        Err(sessdb::Error::Corruption { .. }) => {}
        other => panic!("a damaged event read back: {other:?}"),
    }
    // Every other event of the session reads as it was.
    assert!(store.events("keep", 5..).is_ok());
    drop(store);
    let v = sessdb::store::verify(storage.storage()).unwrap();
    assert!(!v.ok(), "verify reports the damage: {v:?}");
}

on_both_storages!(
    damage_inside_an_event_is_copied_as_it_is_and_still_caught,
    a_damaged_log_is_refused_naming_its_first_damage,
    a_checkpoint_naming_a_record_compaction_left_out_still_opens,
    a_remembered_record_compaction_left_out_is_still_told_from_another_log,
    a_deleted_session_leaves_no_byte_and_the_rest_is_kept,
    a_fork_of_a_deleted_parent_keeps_what_it_inherits,
    a_dry_run_changes_nothing,
    regression_a_compaction_leaves_no_empty_segment_behind,
    a_reader_beside_tells_records_left_out_by_their_epoch,
);

/// A read-only view beside the writer, over many small segments: the marks it takes name the
/// writer's epoch (found by walking the segment, as the reader wrote nothing), and after the
/// writer compacted them away and the view refreshed, it still holds them — a record of each
/// segment, left out — while a mark of another epoch at the same place is not held.
fn a_reader_beside_tells_records_left_out_by_their_epoch(storage: &Backend) {
    let writer = open(storage);
    let mut marks = Vec::new();
    let reader = Store::open_read_only_with(storage.storage(), opts()).unwrap();
    for round in 0..200 {
        for id in ["keep", "gone"] {
            if round == 0 {
                session_with(&writer, id, &format!("text-of-{id}"), 0);
            }
            note(&writer, id, &format!("{id} note {round}"));
        }
        reader.refresh().unwrap();
        // The newest record is "gone"'s: what a shipper reading beside would remember.
        marks.push(reader.last_record().unwrap());
    }
    assert!(
        segment_files(storage).len() >= 4,
        "{:?}",
        segment_files(storage)
    );
    let theirs = writer.last_record().unwrap();
    assert_eq!(
        marks.last(),
        Some(&theirs),
        "the reader names what the writer does"
    );
    assert!(
        marks
            .iter()
            .all(|m| m.epoch == theirs.epoch && m.epoch.is_some())
    );
    writer.delete_session("gone").unwrap();
    note(&writer, "keep", "after the deletion");
    writer.compact().unwrap();
    assert_eq!(occurrences(storage, "text-of-gone"), 0);
    reader.refresh().unwrap();
    for m in &marks {
        assert!(reader.holds_record(*m), "{m:?}");
        assert!(writer.holds_record(*m), "{m:?}");
        let other = sessdb::store::LogMark {
            epoch: m.epoch.map(|e| e.wrapping_add(1)),
            ..*m
        };
        assert!(!reader.holds_record(other), "{other:?}");
    }
}

fn segment_files(storage: &Backend) -> Vec<String> {
    let mut names: Vec<String> = storage
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("segments/") && p.ends_with(".seg"))
        .collect();
    names.sort();
    names
}

/// Compaction seals the active segment to write it; the next one is created by the next
/// write, not by the roll or an open. Before, a store of one segment held two after
/// `compact` (the second 40 bytes, a header and nothing), and each reopen kept it.
fn regression_a_compaction_leaves_no_empty_segment_behind(storage: &Backend) {
    let store = open(storage);
    session_with(&store, "keep", "kept", 10);
    session_with(&store, "gone", "secret-of-gone", 10);
    store.delete_session("gone").unwrap();
    assert_eq!(segment_files(storage).len(), 1);
    let report = store.compact().unwrap();
    assert!(report.rolled, "{report:?}");
    let after = segment_files(storage);
    assert_eq!(after.len(), 1, "{after:?}");
    let live = dump(&store);
    store.close().unwrap();
    drop(store);
    // An open that writes nothing creates nothing; a read-only one neither.
    let reopened = open(storage);
    assert_eq!(dump(&reopened), live);
    reopened.close().unwrap();
    drop(reopened);
    drop(Store::open_read_only_with(storage.storage(), opts()).unwrap());
    assert_eq!(segment_files(storage), after);
    // The first write creates the next segment where the compacted one ends.
    let store = open(storage);
    note(&store, "keep", "after the compaction");
    let now = segment_files(storage);
    assert_eq!(now.len(), 2, "{now:?}");
    let with_note = dump(&store);
    store.close().unwrap();
    drop(store);
    assert_eq!(dump(&open(storage)), with_note);
    let replayed =
        Store::open_with(storage.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), with_note);
}

/// A store compacted by the first compacted layout (format version 4: no tombstone table, a
/// `u64` run count) opens and reads the same; this code reads it as version 5 with none.
#[test]
fn a_version_4_compacted_segment_still_opens() {
    use sessdb::codec::compacted::{FOOTER_LEN, Footer, Runs};
    use sessdb::codec::segment::{SEGMENT_HEADER_LEN, SegmentHeader};
    let storage = Backend::mem();
    let store = open(&storage);
    session_with(&store, "keep", "kept", 40);
    session_with(&store, "gone", "secret-of-gone", 40);
    store.delete_session("gone").unwrap();
    store.compact().unwrap();
    // The first layout's compaction checkpointed after its renames, at a record it kept
    // (this one's checkpoint, taken first, may name one it left out: a tombstone confirms it).
    note(&store, "keep", "after the compaction");
    store.checkpoint().unwrap();
    let live = dump(&store);
    store.close().unwrap();
    drop(store);
    let mut rewritten = 0;
    let files: Vec<(String, Vec<u8>)> = storage
        .files()
        .into_iter()
        .map(|(path, bytes)| {
            let Ok(h) = SegmentHeader::decode(&bytes) else {
                return (path, bytes);
            };
            if !h.compacted || !path.starts_with("segments/") {
                return (path, bytes);
            }
            let len = bytes.len() as u64;
            let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], len).unwrap();
            let end = footer.records_end(len);
            let table = &bytes[usize::try_from(end).unwrap()..bytes.len() - FOOTER_LEN];
            let runs = Runs::decode(table, &footer, h.first_lsn, end).unwrap();
            let v4 = Runs::new(runs.runs().to_vec(), h.first_lsn, end, footer.end_lsn).unwrap();
            let mut out = h.encode().to_vec();
            // The version field, and the header CRC over bytes 0..36 again.
            out[8..10].copy_from_slice(&4u16.to_le_bytes());
            let crc = crc32fast::hash(&out[..36]);
            out[36..40].copy_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&bytes[SEGMENT_HEADER_LEN..usize::try_from(end).unwrap()]);
            // Version 4's run table: wide, no tombstones.
            out.extend_from_slice(&v4.encode_as(sessdb::codec::compacted::RunTable::Wide));
            rewritten += 1;
            (path, out)
        })
        .collect();
    assert!(rewritten > 0);
    let old = storage.image(files);
    let reopened = open(&old);
    assert_eq!(dump(&reopened), live);
    drop(reopened);
    let replayed = Store::open_with(old.storage(), opts().with_ignore_checkpoints(true)).unwrap();
    assert_eq!(dump(&replayed), live);
    let v = sessdb::store::verify(old.storage()).unwrap();
    assert!(v.problems.is_empty(), "{v:?}");
}

/// Options whose clock the test sets (from 1,000 ms) and whose tombstones live an hour (no
/// background check in the test's time).
fn hour_ttl_options() -> (
    std::sync::Arc<std::sync::atomic::AtomicI64>,
    sessdb::StoreOptions,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};
    let now = Arc::new(AtomicI64::new(1_000));
    let clock = {
        let now = Arc::clone(&now);
        sessdb::Clock::from_fn(move || now.load(Ordering::SeqCst))
    };
    let options = opts().with_clock(clock).with_compaction(Some(
        sessdb::CompactionPolicy::default()
            .with_tombstone_ttl(std::time::Duration::from_secs(3600))
            .with_first_check_after(std::time::Duration::from_secs(86_400)),
    ));
    (now, options)
}

/// A record of this release left out by a compaction is confirmed by its epoch, which does
/// not expire: no tombstone is written for it, none goes dead, and the mark holds after
/// `CompactionPolicy::tombstone_ttl` and the next compaction. (Tombstones of records written
/// before epochs still expire: `previous_layout.rs`.)
#[test]
fn a_left_out_record_of_this_release_is_confirmed_past_the_tombstone_ttl() {
    use std::sync::atomic::Ordering;
    let (now, options) = hour_ttl_options();
    let storage = Backend::mem();
    let store = Store::open_with(storage.storage(), options).unwrap();
    session_with(&store, "keep", "kept", 30);
    session_with(&store, "gone", "secret-of-gone", 30);
    let mark = store.last_record().unwrap();
    store.delete_session("gone").unwrap();
    note(&store, "keep", "after the deletion");
    store.compact().unwrap();
    assert!(store.holds_record(mark));
    let space = store.space().unwrap();
    assert_eq!(
        (space.dead_bytes(), space.tombstones()),
        (0, 0),
        "{space:?}"
    );
    let live = dump(&store);
    now.store(1_000 + 2 * 3_600_000, Ordering::SeqCst);
    assert_eq!(store.space().unwrap().dead_bytes(), 0);
    store.compact().unwrap();
    assert!(store.holds_record(mark), "an epoch does not expire");
    assert_eq!(dump(&store), live);
    store.close().unwrap();
    let reopened = open(&storage);
    assert_eq!(dump(&reopened), live);
    assert!(reopened.holds_record(mark), "after a reopen too");
}

/// The checkpoint a compaction writes first may name a record it then leaves out; after a
/// restart the writer names it again (its checkpoint's link). When that record's tombstone
/// expires, the compaction that drops the other tombstones keeps this one — in a segment
/// written now, so it is fresh again — and every checkpoint stays confirmable: the store
/// reopens from its checkpoint, replaying nothing.
#[test]
fn a_tombstone_the_writer_still_names_outlives_its_expiry() {
    use std::sync::atomic::Ordering;
    let (now, options) = hour_ttl_options();
    let storage = Backend::mem();
    let store = Store::open_with(storage.storage(), options.clone()).unwrap();
    session_with(&store, "keep", "kept", 30);
    session_with(&store, "gone", "secret-of-gone", 30);
    store.delete_session("gone").unwrap();
    store.compact().unwrap();
    let live = dump(&store);
    store.close().unwrap();
    drop(store);
    // A restart: the writer's last record is the checkpoint's, the deletion left out.
    let store = Store::open_with(storage.storage(), options.clone()).unwrap();
    assert_eq!(store.open_report().records_replayed, 0);
    now.store(1_000 + 2 * 3_600_000, Ordering::SeqCst);
    store.compact().unwrap();
    store.checkpoint().unwrap();
    store.close().unwrap();
    drop(store);
    let reopened = Store::open_with(storage.storage(), options).unwrap();
    let report = reopened.open_report();
    assert!(report.checkpoints_discarded.is_empty(), "{report:?}");
    assert_eq!(report.records_replayed, 0, "{report:?}");
    assert_eq!(dump(&reopened), live);
}

//! A store the previous release compacted (`tests/fixtures/store-compacted-v7/`: a compacted
//! segment of format 7 — wide run table, a tombstone per record left out — no epoch records)
//! opens and reads what that release read; its tombstones still confirm what they name; it
//! compacts again into format 8 (narrow runs) keeping them, takes new writes under an epoch,
//! and stays `verify`-clean.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails loudly"
)]

#[path = "support/store.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sessdb::codec::compacted::{FOOTER_LEN, Footer, RunTable, Runs};
use sessdb::codec::segment::SegmentHeader;
use sessdb::store::LogMark;
use sessdb::{Store, StoreOptions};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/store-compacted-v7")
}

fn copy_of_fixture() -> tempfile::TempDir {
    sessdb_tests::copy_of_store_fixture(&fixture())
}

/// Each compacted segment's header version, run table and tombstones.
fn compacted(dir: &Path) -> Vec<(u16, RunTable, Vec<LogMark>)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| {
            let b = std::fs::read(p).unwrap();
            let h = SegmentHeader::decode(&b).ok().filter(|h| h.compacted)?;
            let len = b.len() as u64;
            let footer = Footer::decode(&b[b.len() - FOOTER_LEN..], len).unwrap();
            let end = footer.records_end(len);
            let table = &b[usize::try_from(end).unwrap()..b.len() - FOOTER_LEN];
            let runs = Runs::decode(table, &footer, h.first_lsn, end).unwrap();
            let marks = runs
                .tombstones()
                .iter()
                .map(|t| LogMark {
                    lsn: t.lsn,
                    crc: t.crc,
                    epoch: None,
                })
                .collect();
            Some((h.version, footer.table, marks))
        })
        .collect()
}

fn listing(store: &Store) -> String {
    let mut rows: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| format!("{} {} {}", i.header.id, i.events, i.surface_len))
        .collect();
    rows.sort();
    rows.join("\n") + "\n"
}

fn verify_clean(dir: &Path) {
    let v = sessdb::store::verify(Arc::new(sessdb::storage::FsStorage::new(dir))).unwrap();
    assert!(v.ok() && v.compared, "{v:?}");
}

#[test]
fn a_store_the_previous_release_compacted_opens_compacts_and_keeps_its_tombstones() {
    let dir = copy_of_fixture();
    let before = compacted(dir.path());
    assert_eq!(before.len(), 1, "one compacted segment");
    let (version, table, marks) = &before[0];
    assert_eq!((*version, *table), (7, RunTable::Wide));
    assert_eq!(marks.len(), 447);
    let expected = std::fs::read_to_string(fixture().join("expected.txt")).unwrap();
    let read_only = Store::open_read_only(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(listing(&read_only), expected);
    assert!(marks.iter().all(|m| read_only.holds_record(*m)));
    drop(read_only);
    verify_clean(dir.path());

    // Writable: another session deleted, a note under this open's epoch, compacted again —
    // by a clock an hour after that compaction (its tombstones young: a wall clock would
    // see them expire a week after the fixture was made).
    let first = std::fs::read(dir.path().join("segments/00000000000000000000.seg")).unwrap();
    let made = SegmentHeader::decode(&first).unwrap().created_ms;
    let options = StoreOptions::default().with_clock(sessdb::Clock::fixed(made + 3_600_000));
    let store = Store::open(dir.path(), options.clone()).unwrap();
    assert_eq!(listing(&store), expected);
    support::note(&store, "session-a5532366-0003", "written after the upgrade");
    let new_mark = store.last_record().unwrap();
    assert!(new_mark.epoch.is_some(), "{new_mark:?}");
    store.delete_session("session-2feb6e95-0000-fork").unwrap();
    store.compact().unwrap();
    let kept = listing(&store);
    assert_eq!(kept.lines().count(), 2, "{kept}");
    // The old tombstones, younger than their TTL, are kept.
    assert!(marks.iter().all(|m| store.holds_record(*m)));
    assert!(store.holds_record(new_mark));
    drop(store);
    let after = compacted(dir.path());
    assert!(
        after
            .iter()
            .any(|(v, t, _)| *v == 8 && *t == RunTable::Narrow),
        "{:?}",
        after
            .iter()
            .map(|(v, t, m)| (*v, *t, m.len()))
            .collect::<Vec<_>>()
    );
    let carried: usize = after.iter().map(|(_, _, m)| m.len()).sum();
    assert!(carried >= marks.len(), "{carried}");
    let reopened = Store::open(dir.path(), options).unwrap();
    assert_eq!(listing(&reopened), kept);
    assert!(reopened.holds_record(marks[0]) && reopened.holds_record(new_mark));
    drop(reopened);
    verify_clean(dir.path());
}

//! What an adversarial test found of shipping and pulling, each case failing before its fix
//! (docs/RELIABILITY.md): a store restored from a backup, a session re-created after a pull,
//! rows tampered with in PostgreSQL, a pull racing the old owner, one session that must not
//! stop the others, a fork whose parent is gone, rows removed behind a running shipper.
//! A private PostgreSQL cluster per test (SKIPPED without the server's binaries).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::time::Duration;

use sessdb::{Draft, LogType, Store, StoreOptions};
use sessdb_postgres::{Error, Pull, Shipper, connect, pull};
use sessdb_tests::pg::Cluster;
use sessdb_tests::{Backend, dump_store, mem_store};
use sessdb_workload::{WorkloadSpec, generate};

/// A plain client for the test's own SQL (the crate's `Connection` is for `pull`).
fn sql(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

fn open_as(b: &Backend, options: StoreOptions) -> Store {
    Store::open_with(b.storage(), options).unwrap()
}

fn workload(store: &mut Store, seed: u64, sessions: usize) {
    generate(
        &WorkloadSpec {
            seed,
            sessions,
            max_turns: 4,
            ..WorkloadSpec::default()
        },
        store,
    )
    .unwrap();
}

fn turns(store: &Store, id: &str, first: u64, n: u64) {
    for t in first..first + n {
        store
            .append(
                id,
                Draft::log(
                    &LogType::TURN_START,
                    format!("{{\"turn\":{t}}}").into_bytes(),
                ),
            )
            .unwrap();
    }
}

/// A store on files with `sessions` sessions of workload `seed`, shipped as `store-a`, then
/// closed: the store, a backup of its files, the shipper, and the session ids.
fn shipped_and_backed_up(
    pg: &Cluster,
    options: &StoreOptions,
    seed: u64,
    sessions: usize,
) -> (Backend, Backend, Shipper, Vec<String>) {
    let a = Backend::fs();
    let mut store = open_as(&a, options.clone());
    workload(&mut store, seed, sessions);
    let ids: Vec<String> = store
        .list()
        .unwrap()
        .iter()
        .map(|i| i.header.id.clone())
        .collect();
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.ship(&store).unwrap();
    store.close().unwrap();
    drop(store);
    let backup = a.image(a.files());
    (a, backup, shipper, ids)
}

/// `(seq, data_text)` of every row PostgreSQL holds of `id`.
fn rows(client: &mut postgres::Client, id: &str) -> Vec<(i64, String)> {
    client
        .query(
            "SELECT seq, data_text FROM sessdb_events WHERE session_id = $1 ORDER BY seq",
            &[&id],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn store_rows(store: &Store, id: &str) -> Vec<(i64, String)> {
    store
        .events(id, ..)
        .unwrap()
        .iter()
        .map(|e| {
            (
                e.seq() as i64,
                String::from_utf8(e.data().to_vec()).unwrap(),
            )
        })
        .collect()
}

fn owner(client: &mut postgres::Client, id: &str) -> String {
    client
        .query_one(
            "SELECT owner_store FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .unwrap()
        .get(0)
}

/// The attack: ship A; back it up; A appends 10 events to S and creates T, ships; A is lost
/// and the backup restored; the restored store appends 15 other events to S and ships. Before:
/// "shipped 5 event(s)", PostgreSQL holding the lost seqs followed by the restored store's,
/// and T deleted. Now: S is refused (PostgreSQL keeps the lost history whole), T is kept under
/// `lost/ID`, the other sessions ship, and a reset ships the restored S whole.
#[test]
fn regression_a_store_restored_from_a_backup_never_ships_onto_the_lost_history() {
    // One segment, and many small ones (the record the shipper remembers then lies in a
    // sealed segment of the lost store, past the restored store's end).
    restored_from_a_backup(StoreOptions::default(), 1);
    restored_from_a_backup(StoreOptions::default().with_segment_bytes_max(16 * 1024), 4);
}

fn restored_from_a_backup(options: StoreOptions, segments_at_least: usize) {
    let Some(pg) = Cluster::start() else { return };
    let (a, backup, mut shipper, ids) = shipped_and_backed_up(&pg, &options, 11, 3);
    let (s, other) = (ids[0].clone(), ids[1].clone());

    let store = open_as(&a, options.clone());
    turns(&store, &s, 0, 10);
    store
        .create_session(sessdb::SessionHeader::new("t-after-backup", 7), Vec::new())
        .unwrap();
    turns(&store, "t-after-backup", 0, 3);
    let t_len = store.session_len("t-after-backup").unwrap();
    shipper.ship(&store).unwrap();
    let mut client = sql(&pg.url());
    let lost = rows(&mut client, &s);
    assert_eq!(lost, store_rows(&store, &s));
    store.close().unwrap();
    drop(store);
    drop(shipper);

    let restored = backup.image(backup.files());
    let store = open_as(&restored, options.clone());
    assert!(
        store.stats().segments >= segments_at_least,
        "{:?}",
        store.stats()
    );
    turns(&store, &s, 100, 15);
    turns(&store, &other, 200, 2);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    let report = shipper.ship(&store).unwrap();
    assert_eq!(
        report
            .refused
            .iter()
            .map(|(i, _)| i.as_str())
            .collect::<Vec<_>>(),
        vec![s.as_str()],
        "{report:?}"
    );
    assert!(report.refused[0].1.contains("--reset"), "{report:?}");
    assert_eq!(
        rows(&mut client, &s),
        lost,
        "the lost history is kept whole"
    );
    assert_eq!(report.kept, vec!["t-after-backup".to_owned()]);
    assert!(report.removed.is_empty(), "{report:?}");
    assert_eq!(owner(&mut client, "t-after-backup"), "lost/store-a");
    // The other session shipped its two new events.
    assert_eq!(report.events, 2);
    assert_eq!(rows(&mut client, &other), store_rows(&store, &other));
    // Every later round refuses S again, and keeps T (its log continues now: no deletion).
    let again = shipper.ship(&store).unwrap();
    assert_eq!(again.refused.len(), 1);
    assert!(again.removed.is_empty());
    assert_eq!(owner(&mut client, "t-after-backup"), "lost/store-a");
    // T can be taken back by a pull.
    let back = mem_store();
    pull(
        &mut connect(&pg.url()).unwrap(),
        &back,
        "store-c",
        &["t-after-backup".to_owned()],
    )
    .unwrap();
    assert_eq!(back.session_len("t-after-backup").unwrap(), t_len);
    // The way on for S: reset, then the restored copy ships whole.
    assert_eq!(
        shipper.reset(std::slice::from_ref(&s)).unwrap(),
        vec![s.clone()]
    );
    let after = shipper.ship(&store).unwrap();
    assert!(after.refused.is_empty(), "{after:?}");
    assert_eq!(rows(&mut client, &s), store_rows(&store, &s));
    // A reset of a session another store owns is refused.
    assert!(matches!(
        shipper.reset(&["t-after-backup".to_owned()]),
        Err(Error::Conflict { .. })
    ));
}

/// A session deleted from the store while its log continues is still deleted from
/// PostgreSQL (the guard above keeps only what a diverged log lacks).
#[test]
fn a_deletion_in_a_store_whose_log_continues_is_shipped() {
    let Some(pg) = Cluster::start() else { return };
    let mut store = mem_store();
    workload(&mut store, 12, 2);
    let id = store.list().unwrap()[0].header.id.clone();
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.ship(&store).unwrap();
    store.delete_session(&id).unwrap();
    let report = shipper.ship(&store).unwrap();
    assert_eq!(report.removed, vec![id.clone()]);
    assert!(report.kept.is_empty());
    let mut client = sql(&pg.url());
    assert!(rows(&mut client, &id).is_empty());
}

/// Before: after a pull, the pulling store's copy kept `store_created_lsn` NULL, so a session
/// it deleted and created again under the same id was appended to PostgreSQL's old rows.
#[test]
fn regression_a_pulled_session_created_again_is_shipped_anew() {
    let Some(pg) = Cluster::start() else { return };
    let mut a = mem_store();
    workload(&mut a, 13, 2);
    let id = a.list().unwrap()[0].header.id.clone();
    Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&a)
        .unwrap();
    let b = mem_store();
    let mut client = sql(&pg.url());
    let mut conn = connect(&pg.url()).unwrap();
    pull(&mut conn, &b, "store-b", std::slice::from_ref(&id)).unwrap();
    let created: Option<i64> = client
        .query_one(
            "SELECT store_created_lsn FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .unwrap()
        .get(0);
    assert_eq!(created, Some(b.info(&id).unwrap().incarnation.get() as i64));
    let mut ship_b = Shipper::new(&pg.url(), "store-b").unwrap();
    ship_b.ship(&b).unwrap();
    // Deleted and created again with other events (the same header, another history).
    let header = b.header(&id).unwrap();
    b.delete_session(&id).unwrap();
    b.create_session(header, Vec::new()).unwrap();
    turns(&b, &id, 0, 20);
    let report = ship_b.ship(&b).unwrap();
    assert!(report.removed.contains(&id), "{report:?}");
    assert_eq!(rows(&mut client, &id), store_rows(&b, &id));
}

/// Rows that were tampered with but still parse are refused by pull, which then writes
/// nothing; each edit is undone before the next.
#[test]
fn regression_pull_refuses_rows_that_are_not_the_ones_shipped() {
    let Some(pg) = Cluster::start() else { return };
    let mut a = mem_store();
    workload(&mut a, 14, 2);
    let info = a
        .list()
        .unwrap()
        .into_iter()
        .max_by_key(|i| i.events)
        .unwrap();
    let id = info.header.id.clone();
    let n = info.events as i64;
    Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&a)
        .unwrap();
    let mut client = sql(&pg.url());
    let mut conn = connect(&pg.url()).unwrap();
    let chunk_seqs: Vec<i64> = client
        .query(
            "SELECT seq FROM sessdb_events WHERE session_id = $1 AND type = 'assistant/chunk' AND data_text LIKE '%text%' ORDER BY seq LIMIT 2",
            &[&id],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(chunk_seqs.len(), 2, "the workload streams chunks");
    let (c1, c2) = (chunk_seqs[0], chunk_seqs[1]);
    let edits: Vec<(&str, String, String)> = vec![
        (
            "data_text edited, no longer its jsonb",
            format!(
                "UPDATE sessdb_events SET data_text = data_text || ' ' WHERE session_id = '{id}' AND seq = 0"
            ),
            format!(
                "UPDATE sessdb_events SET data_text = rtrim(data_text) WHERE session_id = '{id}' AND seq = 0"
            ),
        ),
        (
            "data jsonb edited",
            format!(
                "UPDATE sessdb_events SET data = '{{\"x\":1}}' WHERE session_id = '{id}' AND seq = 0"
            ),
            format!(
                "UPDATE sessdb_events SET data = data_text::jsonb WHERE session_id = '{id}' AND seq = 0"
            ),
        ),
        (
            "two chunks' texts swapped",
            format!(
                "UPDATE sessdb_events e SET data_text = o.data_text, data = o.data FROM sessdb_events o WHERE e.session_id = '{id}' AND o.session_id = '{id}' AND ((e.seq = {c1} AND o.seq = {c2}) OR (e.seq = {c2} AND o.seq = {c1}))"
            ),
            format!(
                "UPDATE sessdb_events e SET data_text = o.data_text, data = o.data FROM sessdb_events o WHERE e.session_id = '{id}' AND o.session_id = '{id}' AND ((e.seq = {c1} AND o.seq = {c2}) OR (e.seq = {c2} AND o.seq = {c1}))"
            ),
        ),
        (
            "a time changed",
            format!(
                "UPDATE sessdb_events SET time = time + 1 WHERE session_id = '{id}' AND seq = 1"
            ),
            format!(
                "UPDATE sessdb_events SET time = time - 1 WHERE session_id = '{id}' AND seq = 1"
            ),
        ),
        (
            "a type changed",
            format!(
                "UPDATE sessdb_events SET type = 'plugin/x' WHERE session_id = '{id}' AND seq = {c1}"
            ),
            format!(
                "UPDATE sessdb_events SET type = 'assistant/chunk' WHERE session_id = '{id}' AND seq = {c1}"
            ),
        ),
        (
            "events lowered, the extra rows left",
            format!("UPDATE sessdb_sessions SET events = 5 WHERE id = '{id}'"),
            format!("UPDATE sessdb_sessions SET events = {n} WHERE id = '{id}'"),
        ),
        (
            "events lowered, the extra rows removed too",
            format!(
                "UPDATE sessdb_sessions SET events = 5 WHERE id = '{id}'; CREATE TABLE keep AS SELECT * FROM sessdb_events WHERE session_id = '{id}' AND seq >= 5; DELETE FROM sessdb_events WHERE session_id = '{id}' AND seq >= 5"
            ),
            format!(
                "UPDATE sessdb_sessions SET events = {n} WHERE id = '{id}'; INSERT INTO sessdb_events SELECT * FROM keep; DROP TABLE keep"
            ),
        ),
        (
            "the header names another session",
            format!(
                "UPDATE sessdb_sessions SET header_json = replace(header_json, '{id}', 'someone-else') WHERE id = '{id}'"
            ),
            format!(
                "UPDATE sessdb_sessions SET header_json = replace(header_json, 'someone-else', '{id}') WHERE id = '{id}'"
            ),
        ),
        (
            "a header column changed",
            format!("UPDATE sessdb_sessions SET created_at = created_at + 1 WHERE id = '{id}'"),
            format!("UPDATE sessdb_sessions SET created_at = created_at - 1 WHERE id = '{id}'"),
        ),
    ];
    for (what, tamper, undo) in &edits {
        client.batch_execute(tamper).unwrap();
        let read = Pull::read(&mut conn, std::slice::from_ref(&id));
        assert!(
            matches!(read, Err(Error::Tampered { .. } | Error::BadRow { .. })),
            "{what}: {read:?}"
        );
        client.batch_execute(undo).unwrap();
    }
    // Undone, it pulls, and the pulled session is A's.
    let b = mem_store();
    pull(&mut conn, &b, "store-b", std::slice::from_ref(&id)).unwrap();
    assert_eq!(dump_store(&b), {
        let only = mem_store();
        pull(&mut conn, &only, "store-c", std::slice::from_ref(&id)).unwrap();
        dump_store(&only)
    });
    assert_eq!(store_rows(&b, &id), store_rows(&a, &id));
    assert_eq!(owner(&mut client, &id), "store-c");
}

/// Before: a pull read 3,036 events while the owner kept shipping; ownership moved at the
/// owner's later count and the events in between never shipped again. Now the move checks
/// PostgreSQL still holds what was read, and reads and imports what was added.
#[test]
fn regression_a_pull_racing_the_old_owner_takes_every_event_it_shipped() {
    let Some(pg) = Cluster::start() else { return };
    let mut a = mem_store();
    workload(&mut a, 15, 1);
    let id = a.list().unwrap()[0].header.id.clone();
    let mut ship_a = Shipper::new(&pg.url(), "store-a").unwrap();
    ship_a.ship(&a).unwrap();
    let mut client = sql(&pg.url());
    let mut conn = connect(&pg.url()).unwrap();
    let read = Pull::read(&mut conn, std::slice::from_ref(&id)).unwrap();
    // The owner ships more between the read and the move.
    turns(&a, &id, 0, 7);
    assert_eq!(ship_a.ship(&a).unwrap().events, 7);
    let b = mem_store();
    read.into_store(&mut conn, &b, "store-b").unwrap();
    assert_eq!(store_rows(&b, &id), store_rows(&a, &id));
    assert_eq!(owner(&mut client, &id), "store-b");
    // The old owner's later events are named owned elsewhere, never shipped.
    turns(&a, &id, 7, 1);
    let r = ship_a.ship(&a).unwrap();
    assert_eq!(r.events, 0);
    assert_eq!(r.owned_elsewhere.len(), 1);
}

/// Before: a pull of a fork whose parent was deleted (and so removed from PostgreSQL) said
/// "parent is not in PostgreSQL" and pulled nothing.
#[test]
fn regression_a_fork_whose_parent_is_gone_is_pulled() {
    let Some(pg) = Cluster::start() else { return };
    let mut a = mem_store();
    workload(&mut a, 16, 2);
    // The workload's own fork, continued; then its parent deleted.
    let f = a
        .list()
        .unwrap()
        .into_iter()
        .find(|i| i.header.parent_session.is_some())
        .expect("the workload forks a session");
    let (fork, parent) = (
        f.header.id.clone(),
        f.header.parent_session.clone().unwrap(),
    );
    turns(&a, &fork, 0, 2);
    a.delete_session(&parent).unwrap();
    Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&a)
        .unwrap();
    let mut conn = connect(&pg.url()).unwrap();
    let b = mem_store();
    let other = a
        .list()
        .unwrap()
        .into_iter()
        .find(|i| i.header.id != fork)
        .unwrap()
        .header
        .id;
    pull(&mut conn, &b, "store-b", &[fork.clone(), other.clone()]).unwrap();
    assert_eq!(store_rows(&b, &fork), store_rows(&a, &fork));
    assert_eq!(store_rows(&b, &other), store_rows(&a, &other));
}

/// Before: a running shipper never noticed rows removed in PostgreSQL for a session with
/// nothing new. Now its recheck does, and ships the session again.
#[test]
fn regression_a_running_shipper_notices_rows_removed_behind_its_back() {
    let Some(pg) = Cluster::start() else { return };
    let mut a = mem_store();
    workload(&mut a, 17, 2);
    let id = a.list().unwrap()[0].header.id.clone();
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.set_recheck_every(Duration::ZERO);
    shipper.ship(&a).unwrap();
    let mut client = sql(&pg.url());
    client
        .execute("DELETE FROM sessdb_sessions WHERE id = $1", &[&id])
        .unwrap();
    let r = shipper.ship(&a).unwrap();
    assert_eq!(r.events, a.session_len(&id).unwrap());
    assert_eq!(rows(&mut client, &id), store_rows(&a, &id));
}

/// Before: a message of PostgreSQL's own (a duplicate key) printed as "db error".
#[test]
fn regression_postgres_errors_carry_the_servers_message() {
    let Some(pg) = Cluster::start() else { return };
    let url = format!(
        "{} user=nobody-here",
        pg.url().replace(" user=postgres", "")
    );
    let e = Shipper::new(&url, "store-a").unwrap_err().to_string();
    assert!(
        e.contains("role \"nobody-here\" does not exist") && e.contains("28000"),
        "{e}"
    );
    let gone = format!("host={}/nowhere dbname=postgres", pg.socket_dir().display());
    let e = Shipper::new(&gone, "store-a").unwrap_err().to_string();
    assert!(e.contains("No such file or directory"), "{e}");
}

/// Retention deletes a session whose record is the one the shipper remembers, and a
/// compaction leaves that record out: the shipper still knows the log for the one it shipped
/// from (the writer epoch in force where the record was is the one it remembered; no
/// tombstone is kept for it) and ships the deletion. Before tombstones it took the log for
/// another and kept the session under `lost/`.
#[test]
fn a_retention_deletion_compacted_away_is_shipped() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};
    let Some(pg) = Cluster::start() else { return };
    let now = Arc::new(AtomicI64::new(1_000_000_000));
    let clock = {
        let now = Arc::clone(&now);
        sessdb::Clock::from_fn(move || now.load(Ordering::SeqCst))
    };
    let b = Backend::fs();
    let options = StoreOptions::default()
        .with_compaction(None)
        .with_clock(clock);
    let mut store = open_as(&b, options.clone());
    workload(&mut store, 13, 2);
    // Written last (its record is the newest), by a clock that says long ago.
    now.store(1_000, Ordering::SeqCst);
    store
        .create_session(sessdb::SessionHeader::new("old", 0), Vec::new())
        .unwrap();
    turns(&store, "old", 0, 5);
    now.store(1_000_000_000, Ordering::SeqCst);
    let mark = store.last_record().unwrap();
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.ship(&store).unwrap();
    let mut client = sql(&pg.url());
    assert_eq!(rows(&mut client, "old").len(), 6);
    // Retention: everything last written over a day ago.
    let policy = sessdb::RetentionPolicy::max_age(Duration::from_secs(86_400));
    let expired = store.apply_retention(&policy, false).unwrap();
    assert_eq!(expired.deleted.len(), 1, "{expired:?}");
    let compacted = store.compact().unwrap();
    assert_eq!(compacted.sessions_erased, 1);
    assert!(mark.epoch.is_some(), "{mark:?}");
    assert!(store.holds_record(mark), "its epoch confirms it");
    assert_eq!(
        store.space().unwrap().tombstones(),
        1,
        "one tombstone: the deletion the compaction's checkpoint names"
    );
    let report = shipper.ship(&store).unwrap();
    assert_eq!(report.removed, vec!["old".to_owned()], "{report:?}");
    assert!(
        report.kept.is_empty() && report.refused.is_empty(),
        "{report:?}"
    );
    assert!(rows(&mut client, "old").is_empty());
    // The others are untouched, and the next round has nothing to do.
    for info in store.list().unwrap() {
        assert_eq!(
            rows(&mut client, &info.header.id),
            store_rows(&store, &info.header.id)
        );
    }
    let again = shipper.ship(&store).unwrap();
    assert!(
        again.removed.is_empty() && again.kept.is_empty() && again.events == 0,
        "{again:?}"
    );
}

/// A store restored from a backup that then compacts its own records where the lost store's
/// remembered record lay is still told apart: its writer wrote those positions under an
/// epoch of its own, not the remembered one, so the session created after the backup is kept
/// under `lost/`, not deleted.
#[test]
fn a_restored_store_that_compacted_is_still_not_the_one_shipped_from() {
    let Some(pg) = Cluster::start() else { return };
    let options = StoreOptions::default().with_compaction(None);
    let (a, backup, mut shipper, _) = shipped_and_backed_up(&pg, &options, 14, 2);
    let store = open_as(&a, options.clone());
    store
        .create_session(sessdb::SessionHeader::new("z", 0), Vec::new())
        .unwrap();
    turns(&store, "z", 0, 5);
    let mark = store.last_record().unwrap();
    shipper.ship(&store).unwrap();
    store.close().unwrap();
    drop(store);
    drop(shipper);

    let restored = backup.image(backup.files());
    let store = open_as(&restored, options);
    // Its own session over the same positions, deleted and compacted away.
    store
        .create_session(sessdb::SessionHeader::new("y", 0), Vec::new())
        .unwrap();
    turns(&store, "y", 0, 40);
    assert!(store.stats().end_lsn > mark.lsn);
    store.delete_session("y").unwrap();
    store.compact().unwrap();
    assert!(!store.holds_record(mark));
    // The remembered position lies in a hole this compaction left, under another epoch.
    let theirs = store.last_record().unwrap();
    assert!(
        theirs.epoch.is_some() && theirs.epoch != mark.epoch,
        "{theirs:?} {mark:?}"
    );
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    let report = shipper.ship(&store).unwrap();
    assert_eq!(report.kept, vec!["z".to_owned()], "{report:?}");
    assert!(report.removed.is_empty(), "{report:?}");
    let mut client = sql(&pg.url());
    assert_eq!(owner(&mut client, "z"), "lost/store-a");
    assert_eq!(rows(&mut client, "z").len(), 6);
}

/// Before: `ship A; backup; delete S1 S2; compact A; ship A` removed S1 and S2 from
/// PostgreSQL, and the backup restored, given a new session and shipped, put them back whole
/// (exit 0) — and `ship A` then kept them under `lost/` for good: the deleted text stayed.
/// Now PostgreSQL remembers what the store's lineage erased (ids and positions, no content):
/// the restored store ships its new session and refuses the erased two, naming `--reset`.
#[test]
fn regression_a_restored_backup_does_not_ship_erased_sessions_again() {
    let Some(pg) = Cluster::start() else { return };
    let options = StoreOptions::default().with_compaction(None);
    let (a, backup, mut shipper, ids) = shipped_and_backed_up(&pg, &options, 21, 4);
    let erased = [ids[0].clone(), ids[1].clone()];

    let store = open_as(&a, options.clone());
    for id in &erased {
        store.delete_session(id).unwrap();
    }
    store.compact().unwrap();
    let report = shipper.ship(&store).unwrap();
    let mut removed = report.removed.clone();
    removed.sort();
    assert_eq!(removed, erased.to_vec(), "{report:?}");
    store.close().unwrap();
    drop(store);
    drop(shipper);

    let restored = backup.image(backup.files());
    let store = open_as(&restored, options.clone());
    store
        .create_session(
            sessdb::SessionHeader::new("new-after-restore", 0),
            Vec::new(),
        )
        .unwrap();
    turns(&store, "new-after-restore", 0, 3);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    let report = shipper.ship(&store).unwrap();
    let mut refused: Vec<&str> = report.refused.iter().map(|(i, _)| i.as_str()).collect();
    refused.sort_unstable();
    assert_eq!(
        refused,
        vec![erased[0].as_str(), erased[1].as_str()],
        "{report:?}"
    );
    for (_, why) in &report.refused {
        assert!(why.contains("--reset") && why.contains("erased"), "{why}");
    }
    let mut client = sql(&pg.url());
    for id in &erased {
        assert!(rows(&mut client, id).is_empty(), "{id} shipped again");
    }
    assert_eq!(rows(&mut client, "new-after-restore").len(), 4);
    // Every later round refuses them again.
    assert_eq!(shipper.ship(&store).unwrap().refused.len(), 2);
    let erasures: i64 = client
        .query_one("SELECT count(*) FROM sessdb_erased", &[])
        .unwrap()
        .get(0);
    assert_eq!(erasures, 2);
    // The way on, when the restored copy is wanted: a reset forgets the erasure.
    assert_eq!(
        shipper.reset(std::slice::from_ref(&erased[0])).unwrap(),
        vec![erased[0].clone()]
    );
    let after = shipper.ship(&store).unwrap();
    assert_eq!(after.refused.len(), 1, "{after:?}");
    assert_eq!(
        rows(&mut client, &erased[0]),
        store_rows(&store, &erased[0])
    );
}

/// A session deleted, erased from PostgreSQL and then created again under its id (a later
/// incarnation) ships: only the erased incarnation is refused.
#[test]
fn a_session_created_again_after_its_erasure_ships() {
    let Some(pg) = Cluster::start() else { return };
    let store = mem_store();
    store
        .create_session(sessdb::SessionHeader::new("again", 0), Vec::new())
        .unwrap();
    turns(&store, "again", 0, 3);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.ship(&store).unwrap();
    store.delete_session("again").unwrap();
    assert_eq!(
        shipper.ship(&store).unwrap().removed,
        vec!["again".to_owned()]
    );
    store
        .create_session(sessdb::SessionHeader::new("again", 0), Vec::new())
        .unwrap();
    turns(&store, "again", 10, 5);
    let report = shipper.ship(&store).unwrap();
    assert!(report.refused.is_empty(), "{report:?}");
    let mut client = sql(&pg.url());
    assert_eq!(rows(&mut client, "again"), store_rows(&store, "again"));
    // A shipper made afresh (positions and erasures read back) agrees.
    drop(shipper);
    let again = Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&store)
        .unwrap();
    assert!(again.refused.is_empty() && again.events == 0, "{again:?}");
}

//! Shipping to and pulling from a real PostgreSQL server (a private cluster per test, on a Unix
//! socket in a temp dir): every row compared with the store, exactly once across restarts of
//! the shipper and of the server, one shipper per store, pulled sessions continued elsewhere
//! and never overwritten by the store they left. Without the server's binaries each test says
//! SKIPPED on stderr.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Draft, LogType, Store, SurfaceOp};
use sessdb_postgres::{Error, Shipper, connect, pull};
use sessdb_tests::pg::Cluster;
use sessdb_tests::{dump_store, mem_store};
use sessdb_workload::{WorkloadSpec, generate};

/// A plain client for the test's own SQL (the crate's `Connection` is for `pull`).
fn sql(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

fn workload_store(seed: u64, sessions: usize) -> Store {
    let mut store = mem_store();
    generate(
        &WorkloadSpec {
            seed,
            sessions,
            max_turns: 6,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    store
}

/// Every event row, surface row and session row PostgreSQL holds equals the store's.
fn assert_rows_match(client: &mut postgres::Client, store: &Store) {
    let list = store.list().unwrap();
    let count: i64 = client
        .query_one("SELECT count(*) FROM sessdb_sessions", &[])
        .unwrap()
        .get(0);
    assert_eq!(count as usize, list.len());
    for info in list {
        let id = &info.header.id;
        let row = client
            .query_one(
                "SELECT header_json, events FROM sessdb_sessions WHERE id = $1",
                &[id],
            )
            .unwrap();
        assert_eq!(row.get::<_, String>(0).as_bytes(), info.header.to_json());
        assert_eq!(row.get::<_, i64>(1) as u64, info.events);
        let rows = client
            .query(
                "SELECT seq, type, time, data_text, source_event_seqs, surface_op, replace_start, replace_end, ignorable, data IS NOT NULL, inherited FROM sessdb_events WHERE session_id = $1 ORDER BY seq",
                &[id],
            )
            .unwrap();
        let events = store.events(id, ..).unwrap();
        assert_eq!(rows.len(), events.len(), "{id}");
        let inherited = if info.header.parent_session.is_some() {
            info.header.seed_length.unwrap_or(0)
        } else {
            0
        };
        for (r, e) in rows.iter().zip(&events) {
            assert_eq!(r.get::<_, i64>(0) as u64, e.seq());
            assert_eq!(r.get::<_, String>(1), e.event_type());
            assert_eq!(r.get::<_, i64>(2), e.time());
            assert_eq!(
                r.get::<_, String>(3).as_bytes(),
                e.data(),
                "{id} {}",
                e.seq()
            );
            let sources: Option<Vec<i64>> = r.get(4);
            assert_eq!(
                sources.map(|v| v.into_iter().map(|s| s as u64).collect::<Vec<_>>()),
                e.sources().map(<[u64]>::to_vec)
            );
            let op = match (
                r.get::<_, Option<String>>(5).as_deref(),
                r.get::<_, Option<i64>>(6),
                r.get::<_, Option<i64>>(7),
            ) {
                (None, None, None) => None,
                (Some("append"), None, None) => Some(SurfaceOp::Append),
                (Some("replace"), Some(s), Some(t)) => Some(SurfaceOp::Replace {
                    start: s as u64,
                    end: t as u64,
                }),
                other => panic!("{other:?}"),
            };
            assert_eq!(op, e.surface_op());
            assert_eq!(r.get::<_, bool>(8), e.ignorable());
            assert!(r.get::<_, bool>(9), "jsonb holds the workload's data");
            assert_eq!(r.get::<_, bool>(10), e.seq() < inherited);
        }
        let surface: Vec<i64> = client
            .query(
                "SELECT seq FROM sessdb_surface WHERE session_id = $1 ORDER BY position",
                &[id],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let want: Vec<i64> = store
            .surface(id)
            .unwrap()
            .iter()
            .map(|&s| s as i64)
            .collect();
        assert_eq!(surface, want, "{id}");
        let messages: i64 = client
            .query_one(
                "SELECT count(*) FROM sessdb_messages WHERE session_id = $1",
                &[id],
            )
            .unwrap()
            .get(0);
        assert_eq!(messages as usize, store.messages(id).unwrap().len(), "{id}");
    }
}

#[test]
fn a_store_ships_row_for_row_then_only_what_is_new() {
    let Some(pg) = Cluster::start() else { return };
    let store = workload_store(3, 8);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    let first = shipper.ship(&store).unwrap();
    assert_eq!(first.events, store.stats().events);
    let mut client = sql(&pg.url());
    assert_rows_match(&mut client, &store);
    // FORMATS.md §4.1's example queries answer on it.
    let doc = include_str!("../../docs/FORMATS.md");
    let queries = sessdb_tests::sql_block(doc, "### 4.1 Tables", 2);
    let statements: Vec<&str> = queries
        .split(';')
        .filter(|q| !q.trim().is_empty())
        .collect();
    assert_eq!(statements.len(), 3);
    for q in statements {
        assert!(!client.query(q, &[]).unwrap().is_empty(), "{q}");
    }
    // Nothing new: nothing shipped. New events, a new session, a deletion: only those.
    assert_eq!(shipper.ship(&store).unwrap().events, 0);
    let id = store.list().unwrap()[0].header.id.clone();
    store
        .append(&id, Draft::log(&LogType::TURN_START, br#"{"turn":99}"#))
        .unwrap();
    let gone = store.list().unwrap()[1].header.id.clone();
    store.delete_session(&gone).unwrap();
    let again = shipper.ship(&store).unwrap();
    assert_eq!(again.events, 1);
    assert_eq!(again.removed, vec![gone]);
    assert_rows_match(&mut client, &store);
    // A new shipper (a restart) resumes from the positions PostgreSQL holds.
    drop(shipper);
    let mut restarted = Shipper::new(&pg.url(), "store-a").unwrap();
    assert_eq!(restarted.ship(&store).unwrap().events, 0);
    // A session's rows removed by hand behind the shipper's back: its next change ships the
    // whole session again (PostgreSQL's row, not the shipper's memory, is the position).
    client
        .execute("DELETE FROM sessdb_sessions WHERE id = $1", &[&id])
        .unwrap();
    store
        .append(&id, Draft::log(&LogType::TURN_START, br#"{"turn":100}"#))
        .unwrap();
    let whole = restarted.ship(&store).unwrap();
    assert_eq!(whole.events, store.session_len(&id).unwrap());
    assert_rows_match(&mut client, &store);
}

#[test]
fn a_second_shipper_of_the_same_store_is_refused() {
    let Some(pg) = Cluster::start() else { return };
    let _first = Shipper::new(&pg.url(), "store-a").unwrap();
    match Shipper::new(&pg.url(), "store-a") {
        Err(Error::Locked { store_id }) => assert_eq!(store_id, "store-a"),
        other => panic!("{other:?}"),
    }
    // Another store ships beside it.
    Shipper::new(&pg.url(), "store-b").unwrap();
}

#[test]
fn a_pulled_session_continues_on_another_store_and_the_first_never_overwrites_it() {
    let Some(pg) = Cluster::start() else { return };
    let a = workload_store(5, 3);
    let mut ship_a = Shipper::new(&pg.url(), "host-a").unwrap();
    ship_a.ship(&a).unwrap();
    let id = a.list().unwrap()[0].header.id.clone();

    let b = mem_store();
    let mut client = sql(&pg.url());
    let mut conn = connect(&pg.url()).unwrap();
    let report = pull(&mut conn, &b, "host-b", std::slice::from_ref(&id)).unwrap();
    assert!(report.sessions.iter().any(|s| s.id == id));
    assert_eq!(b.events(&id, ..).unwrap(), a.events(&id, ..).unwrap());
    // Pulled again: nothing new, skipped (import is idempotent).
    let again = pull(&mut conn, &b, "host-b", std::slice::from_ref(&id)).unwrap();
    assert!(
        again
            .sessions
            .iter()
            .all(|s| s.outcome == sessdb_formats::Outcome::Skipped)
    );

    // B continues the session and ships it.
    b.append(&id, Draft::log(&LogType::TURN_START, br#"{"turn":500}"#))
        .unwrap();
    let mut ship_b = Shipper::new(&pg.url(), "host-b").unwrap();
    assert_eq!(ship_b.ship(&b).unwrap().events, 1);
    // A writes more to its old copy: its shipper names the session as owned elsewhere and
    // does not touch it.
    a.append(&id, Draft::log(&LogType::TURN_START, br#"{"turn":600}"#))
        .unwrap();
    let report = ship_a.ship(&a).unwrap();
    assert!(
        report
            .owned_elsewhere
            .iter()
            .any(|(s, owner)| *s == id && owner == "host-b"),
        "{report:?}"
    );
    let rows: Vec<String> = client
        .query(
            "SELECT data_text FROM sessdb_events WHERE session_id = $1 AND type = 'turn/start' ORDER BY seq DESC LIMIT 1",
            &[&id],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, vec![r#"{"turn":500}"#.to_owned()]);
    // Everything of B is in PostgreSQL as B holds it.
    let b_rows = dump_store(&b);
    assert_eq!(b_rows.len(), 1);
}

#[test]
fn a_server_restart_mid_stream_loses_and_doubles_nothing() {
    let Some(pg) = Cluster::start() else { return };
    let store = workload_store(9, 4);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    shipper.ship(&store).unwrap();
    let id = store.list().unwrap()[0].header.id.clone();
    for turn in 0..5 {
        store
            .append(
                &id,
                Draft::log(
                    &LogType::TURN_START,
                    format!("{{\"turn\":{}}}", 1000 + turn).into_bytes(),
                ),
            )
            .unwrap();
    }
    pg.restart();
    // The old connection is gone: the round fails, a new shipper resumes.
    assert!(shipper.ship(&store).is_err());
    drop(shipper);
    let mut shipper = Shipper::new(&pg.url(), "store-a").unwrap();
    assert_eq!(shipper.ship(&store).unwrap().events, 5);
    let mut client = sql(&pg.url());
    assert_rows_match(&mut client, &store);
}

/// FORMATS.md §4.1's DDL is the code's.
#[test]
fn the_documented_ddl_is_the_one_created() {
    let doc = include_str!("../../docs/FORMATS.md");
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let ddl = sessdb_tests::sql_block(doc, "### 4.1 Tables", 1);
    assert_eq!(norm(ddl), norm(sessdb_postgres::DDL));
}

#[test]
fn data_jsonb_cannot_hold_is_kept_exact_in_text_and_null_in_jsonb() {
    let Some(pg) = Cluster::start() else { return };
    let store = mem_store();
    let s = store
        .create_session(sessdb::SessionHeader::new("nul", 0), Vec::new())
        .unwrap();
    let odd = br#"{"turn":1,"note":"a\u0000b \ud800"}"#;
    let seq = s
        .append(Draft::log(&LogType::TURN_START, &odd[..]))
        .unwrap();
    Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&store)
        .unwrap();
    let mut client = sql(&pg.url());
    let mut conn = connect(&pg.url()).unwrap();
    let row = client
        .query_one(
            "SELECT data IS NULL, data_text FROM sessdb_events WHERE session_id = 'nul' AND seq = $1",
            &[&(seq as i64)],
        )
        .unwrap();
    assert!(
        row.get::<_, bool>(0),
        "jsonb refuses \\u0000: the column is NULL"
    );
    assert_eq!(row.get::<_, String>(1).as_bytes(), &odd[..]);
    // Pulled back, the event is the same bytes.
    let back = mem_store();
    pull(&mut conn, &back, "store-b", &["nul".to_owned()]).unwrap();
    assert_eq!(
        back.events("nul", ..).unwrap(),
        store.events("nul", ..).unwrap()
    );
}

#[test]
fn tables_of_another_layout_version_are_refused() {
    let Some(pg) = Cluster::start() else { return };
    drop(Shipper::new(&pg.url(), "store-a").unwrap());
    let mut client = sql(&pg.url());
    client
        .execute("UPDATE sessdb_layout SET version = 1", &[])
        .unwrap();
    match Shipper::new(&pg.url(), "store-b") {
        Err(Error::Layout { found, expected }) => assert_eq!((found, expected), (1, 4)),
        other => panic!("{other:?}"),
    }
}

/// Tables of layout 2 (before `sessdb_erased` and `record_epoch`) are brought to 4: the table
/// and the column added, the rows kept, and the shipper goes on where it was.
#[test]
fn tables_of_layout_2_are_brought_to_4() {
    let Some(pg) = Cluster::start() else { return };
    let store = workload_store(5, 2);
    Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&store)
        .unwrap();
    let mut client = sql(&pg.url());
    client
        .batch_execute(
            "DROP TABLE sessdb_erased; ALTER TABLE sessdb_stores DROP COLUMN record_epoch;
             UPDATE sessdb_layout SET version = 2",
        )
        .unwrap();
    let report = Shipper::new(&pg.url(), "store-a")
        .unwrap()
        .ship(&store)
        .unwrap();
    assert_eq!(report.events, 0, "{report:?}");
    let version: i32 = client
        .query_one("SELECT version FROM sessdb_layout", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 4);
    let epoch: Option<i64> = client
        .query_one("SELECT record_epoch FROM sessdb_stores", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        epoch, None,
        "nothing shipped since: the old mark, without its epoch"
    );
    let erased: i64 = client
        .query_one("SELECT count(*) FROM sessdb_erased", &[])
        .unwrap()
        .get(0);
    assert_eq!(erased, 0);
    assert_rows_match(&mut client, &store);
}

//! `sessdb ship --follow` under SIGKILL beside a live `sessdb stress` writer, on a private
//! PostgreSQL cluster: killed at varying moments (before it connects, mid-stream) and
//! restarted 24 times, it must leave PostgreSQL holding exactly the store's events, row for
//! row, each once. Also `pull` onto a second store and a refused second shipper, through the
//! CLI. Without PostgreSQL's server binaries the tests say SKIPPED.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use sessdb::{Store, StoreOptions};
use sessdb_tests::pg::Cluster;

fn sessdb() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sessdb"));
    c.stdin(Stdio::null());
    c
}

/// Runs `cmd` to the end; it must succeed (its stderr is the failure message).
fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// PostgreSQL holds exactly the store's events (the store read now), row for row.
fn assert_postgres_holds(url: &str, store_dir: &Path) {
    let store = Store::open_read_only(store_dir, StoreOptions::default()).unwrap();
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let ids: Vec<String> = client
        .query("SELECT id FROM sessdb_sessions ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut local: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    local.sort();
    assert_eq!(ids, local);
    let mut total = 0;
    for id in &local {
        let rows: Vec<(i64, String)> = client
            .query(
                "SELECT seq, data_text FROM sessdb_events WHERE session_id = $1 ORDER BY seq",
                &[id],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let events = store.events(id, ..).unwrap();
        assert_eq!(rows.len(), events.len(), "{id}");
        for ((seq, data), e) in rows.iter().zip(&events) {
            assert_eq!(*seq as u64, e.seq(), "{id}");
            assert_eq!(data.as_bytes(), e.data(), "{id} seq {seq}");
        }
        total += events.len();
    }
    assert!(total > 0);
}

#[test]
fn ship_follow_killed_24_times_beside_a_writer_ships_every_event_exactly_once() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let mut writer = sessdb()
        .args(["stress"])
        .arg(&store)
        .args(["--seconds", "12", "--sessions", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The store exists once the writer acknowledged a write.
    let mut acks = BufReader::new(writer.stdout.take().unwrap()).lines();
    acks.next().unwrap().unwrap();
    // Keep reading the acks so the writer never blocks on a full pipe.
    let drain = std::thread::spawn(move || acks.count());
    for round in 0..24u64 {
        // Killed before it connects, during its first round, or after some rounds of the
        // follow loop (each round that ships says so on stderr); a round that waits longer
        // than its moment for a note is killed at that moment.
        let kill_after = [0usize, 1, 2, 3, 1, 4][(round % 6) as usize];
        let moment =
            std::time::Duration::from_millis([0, 30, 120, 400, 900, 60][(round % 6) as usize]);
        let mut shipper = sessdb()
            .arg("ship")
            .arg(&store)
            .args(["--postgres", &pg.url(), "--follow", "--interval-ms", "5"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let notes = BufReader::new(shipper.stderr.take().unwrap()).lines();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in notes {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let deadline = std::time::Instant::now() + moment;
        let mut seen = 0;
        while seen < kill_after {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    assert!(
                        line.starts_with("shipped")
                            || line.starts_with("reconnected")
                            || line.starts_with("connected"),
                        "round {round}: {line}"
                    );
                    seen += 1;
                }
                Err(_) => break,
            }
        }
        shipper.kill().unwrap();
        let status = shipper.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "round {round}: {status}");
        reader.join().unwrap();
    }
    let status = writer.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(drain.join().unwrap() > 0);
    // One last shipper catches up with what the writer wrote last.
    run_ok(
        sessdb()
            .arg("ship")
            .arg(&store)
            .args(["--postgres", &pg.url()]),
    );
    assert_postgres_holds(&pg.url(), &store);
}

#[test]
fn pull_continues_a_session_on_another_store_and_a_second_shipper_is_refused() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    run_ok(
        sessdb()
            .args(["demo"])
            .arg(&a)
            .args(["--sessions", "3", "--turns", "2"]),
    );
    let ship = |store: &Path| {
        sessdb()
            .arg("ship")
            .arg(store)
            .args(["--postgres", &pg.url()])
            .output()
            .unwrap()
    };
    assert!(ship(&a).status.success());
    assert_postgres_holds(&pg.url(), &a);
    // A follower holds the store's lock: a second shipper of the same store is refused (5).
    let mut follower = sessdb()
        .arg("ship")
        .arg(&a)
        .args(["--postgres", &pg.url(), "--follow"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut notes = BufReader::new(follower.stderr.take().unwrap()).lines();
    notes.next().unwrap().unwrap(); // it has shipped: it holds the lock
    let second = ship(&a);
    assert_eq!(
        second.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(String::from_utf8_lossy(&second.stderr).contains("already being shipped"));
    follower.kill().unwrap();
    follower.wait().unwrap();

    // Pull one session onto store b: the same events there, and b owns it now.
    let store_a = Store::open_read_only(&a, StoreOptions::default()).unwrap();
    let id = store_a.list().unwrap()[0].header.id.clone();
    let b = dir.path().join("b");
    run_ok(
        sessdb()
            .arg("pull")
            .arg(&b)
            .args(["--postgres", &pg.url(), "--session", &id]),
    );
    let store_b = Store::open_read_only(&b, StoreOptions::default()).unwrap();
    assert_eq!(
        store_b.events(&id, ..).unwrap(),
        store_a.events(&id, ..).unwrap()
    );
    drop(store_b);
    // Store a ships again: the pulled session is named as owned elsewhere, not shipped.
    let again = ship(&a);
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("owned by store"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // An unknown session: not found (6).
    let missing = sessdb()
        .arg("pull")
        .arg(&b)
        .args(["--postgres", &pg.url(), "--session", "no-such-session"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(6));
}

/// `sessdb demo` of `sessions` sessions of two turns, as `DIR/a`.
fn demo_store(dir: &Path, sessions: &str) -> std::path::PathBuf {
    let a = dir.join("a");
    run_ok(sessdb().args(["demo"]).arg(&a).args([
        "--sessions",
        sessions,
        "--turns",
        "2",
        "--quiet",
    ]));
    a
}

/// The lines a follower writes on stderr, as they come.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let notes = BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in notes {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for a line starting with `prefix`; returns the lines seen up to it.
fn wait_for(rx: &std::sync::mpsc::Receiver<String>, prefix: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(line) => {
                let done = line.starts_with(prefix);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(e) => panic!("no line starting {prefix:?} ({e}); saw {seen:?}"),
        }
    }
}

/// Before: `ship --follow` ended with exit 1 when the server went away during its first
/// catch-up (5 of 5 kills), and when the server was not up at its start.
#[test]
fn regression_ship_follow_waits_for_the_server_and_reconnects_during_its_first_catch_up() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // A backlog of several transactions (50,000 events each), the same every run.
    let total = {
        let mut s = Store::open(&store, StoreOptions::default()).unwrap();
        sessdb_workload::generate(
            &sessdb_workload::WorkloadSpec {
                seed: 5,
                sessions: 700,
                min_turns: 6,
                max_turns: 8,
                ..sessdb_workload::WorkloadSpec::default()
            },
            &mut s,
        )
        .unwrap();
        let n = s.stats().events as i64;
        s.close().unwrap();
        n
    };
    assert!(total > 2 * 50_000, "a backlog of several rounds: {total}");
    pg.stop();
    let mut follower = sessdb()
        .arg("ship")
        .arg(&store)
        .args(["--postgres", &pg.url(), "--follow", "--interval-ms", "20"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut follower);
    let waiting = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
    assert!(waiting.contains("retrying until it answers"), "{waiting}");
    pg.start_again();
    // Once its first transaction of the backlog committed, the server is killed.
    let mut client = loop {
        if let Ok(c) = postgres::Client::connect(&pg.url(), postgres::NoTls) {
            break c;
        }
    };
    let held = loop {
        let n: i64 = match client.query_one("SELECT count(*) FROM sessdb_events", &[]) {
            Ok(r) => r.get(0),
            // The follower may not have made the tables yet.
            Err(_) => 0,
        };
        if n > 0 {
            break n;
        }
    };
    assert!(held < total, "killed during the backlog: {held} of {total}");
    pg.restart();
    let seen = wait_for(&rx, "shipped");
    assert!(
        seen.iter().any(|l| l.starts_with("reconnected after")),
        "{seen:?}"
    );
    follower.kill().unwrap();
    let status = follower.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "it was still following: {status}");
    assert_postgres_holds(&pg.url(), &store);
}

/// Before: one session PostgreSQL held more of (a store restored from a backup, or cut by
/// salvage) stopped every session from shipping, with no way out.
#[test]
fn regression_one_refused_session_does_not_stop_the_others_and_reset_replaces_it() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = demo_store(dir.path(), "3");
    let ship = |extra: &[&str]| {
        sessdb()
            .arg("ship")
            .arg(&a)
            .args(["--postgres", &pg.url()])
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(ship(&[]).status.success());
    let backup = dir.path().join("backup");
    run_ok(Command::new("cp").arg("-a").arg(&a).arg(&backup));
    let append = |n: u64, first: u64, which: usize| {
        let store = Store::open(&a, StoreOptions::default()).unwrap();
        let ids: Vec<String> = store
            .list()
            .unwrap()
            .into_iter()
            .filter(|i| !i.turn_open)
            .map(|i| i.header.id)
            .collect();
        for t in first..first + n {
            store
                .append(
                    &ids[which],
                    sessdb::Draft::log(
                        &sessdb::LogType::TURN_START,
                        format!("{{\"turn\":{t}}}").into_bytes(),
                    ),
                )
                .unwrap();
        }
        store.close().unwrap();
        ids[which].clone()
    };
    let s = append(10, 1000, 0);
    assert!(ship(&[]).status.success());
    std::fs::remove_dir_all(&a).unwrap();
    run_ok(Command::new("cp").arg("-a").arg(&backup).arg(&a));
    assert_eq!(append(15, 2000, 0), s);
    let other = append(3, 3000, 1);
    let out = ship(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("session \"{s}\" not shipped (the others were)"))
            && err.contains("--reset"),
        "{err}"
    );
    // The other session's three new events are there.
    let mut client = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    let events: i64 = client
        .query_one(
            "SELECT events FROM sessdb_sessions WHERE id = $1",
            &[&other],
        )
        .unwrap()
        .get(0);
    let store = Store::open_read_only(&a, StoreOptions::default()).unwrap();
    assert_eq!(events as u64, store.session_len(&other).unwrap());
    drop(store);
    // The way on: reset it; the store's copy ships whole.
    let out = ship(&["--reset", &s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_postgres_holds(&pg.url(), &a);
}

/// Before: a pull refused by its checks had already made the store and its ship id.
#[test]
fn regression_a_refused_pull_writes_nothing() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = demo_store(dir.path(), "2");
    run_ok(sessdb().arg("ship").arg(&a).args(["--postgres", &pg.url()]));
    let id = Store::open_read_only(&a, StoreOptions::default())
        .unwrap()
        .list()
        .unwrap()[0]
        .header
        .id
        .clone();
    let mut client = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    client
        .execute(
            "UPDATE sessdb_events SET time = time + 1 WHERE session_id = $1 AND seq = 0",
            &[&id],
        )
        .unwrap();
    let b = dir.path().join("b");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for target in [&b, &empty] {
        let out = sessdb()
            .arg("pull")
            .arg(target)
            .args(["--postgres", &pg.url(), "--session", &id])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(err.contains("not hold it as it was shipped"), "{err}");
    }
    assert!(!b.exists());
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    let owner: String = client
        .query_one(
            "SELECT owner_store FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        owner,
        std::fs::read_to_string(a.join("ship-id")).unwrap().trim()
    );
}

/// Before: only `--postgres URL` (a password on the command line). Now `$DATABASE_URL`, or
/// libpq's `PG*` variables, when it is not given; neither is a usage error naming them.
#[test]
fn regression_ship_and_pull_take_the_connection_from_the_environment() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = demo_store(dir.path(), "2");
    let bare = |c: &mut Command| {
        for v in [
            "DATABASE_URL",
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGPASSWORD",
            "PGDATABASE",
        ] {
            c.env_remove(v);
        }
    };
    let mut c = sessdb();
    bare(&mut c);
    let out = c.arg("ship").arg(&a).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("DATABASE_URL"));
    let mut c = sessdb();
    bare(&mut c);
    run_ok(c.arg("ship").arg(&a).env("DATABASE_URL", pg.url()));
    let mut c = sessdb();
    bare(&mut c);
    let id = Store::open_read_only(&a, StoreOptions::default())
        .unwrap()
        .list()
        .unwrap()[0]
        .header
        .id
        .clone();
    run_ok(
        c.arg("pull")
            .arg(dir.path().join("b"))
            .args(["--session", &id])
            .env("PGHOST", pg.socket_dir())
            .env("PGPORT", "5432")
            .env("PGUSER", "postgres")
            .env("PGDATABASE", "postgres"),
    );
    assert_postgres_holds(&pg.url(), &a);
}

/// `ship --json` prints one object per round (the first always), `pull --json` one object;
/// a refused session is named in the round and then the error object follows, exit 4.
#[test]
fn ship_and_pull_report_in_json() {
    let Some(pg) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = demo_store(dir.path(), "2");
    let run = |args: &[&str]| {
        let out = sessdb().args(args).output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let a_str = a.to_str().unwrap();
    let value = |line: &str| -> serde_json::Value { serde_json::from_str(line).unwrap() };
    let (status, first) = run(&["ship", a_str, "--postgres", &pg.url(), "--json"]);
    assert_eq!(status, Some(0), "{first}");
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 1, "{first}");
    let round = value(lines[0]);
    assert!(round["events"].as_u64().unwrap() > 0, "{first}");
    let stored = Store::open_read_only(&a, StoreOptions::default())
        .unwrap()
        .list()
        .unwrap()
        .len();
    assert_eq!(
        round["sessions"].as_array().unwrap().len(),
        stored,
        "{first}"
    );
    assert_eq!(round["refused"], serde_json::json!([]));
    let (_, again) = run(&["ship", a_str, "--postgres", &pg.url(), "--json"]);
    assert_eq!(value(again.trim_end())["events"], 0, "{again}");
    let id = round["sessions"][0].as_str().unwrap().to_owned();
    let b = dir.path().join("b");
    let (status, pulled) = run(&[
        "pull",
        b.to_str().unwrap(),
        "--postgres",
        &pg.url(),
        "--session",
        &id,
        "--json",
    ]);
    assert_eq!(status, Some(0), "{pulled}");
    let pulled = value(pulled.trim_end());
    assert_eq!(pulled["sessions"][0]["id"], id.as_str());
    assert_eq!(pulled["sessions"][0]["outcome"], "pulled");
    assert!(pulled["storeId"].as_str().is_some_and(|s| !s.is_empty()));
    // The session now belongs to b: shipping a again finds it owned elsewhere.
    let (_, owned) = run(&["ship", a_str, "--postgres", &pg.url(), "--json"]);
    let owned = value(owned.trim_end());
    assert_eq!(
        owned["ownedElsewhere"][0]["session"],
        id.as_str(),
        "{owned}"
    );
}

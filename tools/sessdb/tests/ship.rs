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
    let mut local: Vec<String> = store.list().into_iter().map(|i| i.header.id).collect();
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
        let events = store.events(id, 0, u64::MAX).unwrap();
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
                        line.starts_with("shipped") || line.starts_with("reconnected"),
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
    let id = store_a.list()[0].header.id.clone();
    let b = dir.path().join("b");
    run_ok(
        sessdb()
            .arg("pull")
            .arg(&b)
            .args(["--postgres", &pg.url(), "--session", &id]),
    );
    let store_b = Store::open_read_only(&b, StoreOptions::default()).unwrap();
    assert_eq!(
        store_b.events(&id, 0, u64::MAX).unwrap(),
        store_a.events(&id, 0, u64::MAX).unwrap()
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
